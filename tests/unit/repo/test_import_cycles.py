"""No import cycle anywhere in nfd/, counting every import (module-level, inside functions, under
TYPE_CHECKING), on grimp's graph (the one import-linter's contracts check, pyproject.toml).

The ``acyclic`` contract forbids cycles between sibling modules and packages; a cycle between a
package's ``__init__`` and one of its own modules has no sibling in it, and is caught here."""

from __future__ import annotations

import grimp


def _cycles(graph: grimp.ImportGraph) -> list[str]:
    """Each import that closes a cycle, shown as the whole cycle."""
    out = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                out.append(" -> ".join((importer, *back)))
    return out


def test_no_import_cycle_in_nfd() -> None:
    graph = grimp.build_graph("nfd", cache_dir=None)
    assert "nfd.master.core" in graph.modules and "nfd.lang.cel.compiler" in graph.modules
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_package_and_its_own_module() -> None:
    graph = grimp.ImportGraph()
    for m in ("pkg", "pkg.a", "pkg.b", "other"):
        graph.add_module(m)
    graph.add_import(importer="pkg", imported="pkg.a")
    graph.add_import(importer="pkg.a", imported="pkg")
    graph.add_import(importer="other", imported="pkg.b")
    assert _cycles(graph) == ["pkg -> pkg.a -> pkg", "pkg.a -> pkg -> pkg.a"]
