"""The CLI computes what nfd-master would through the master's library (nfd.nodestate), never
through the master's process package (issue #48): no chain of imports, direct or not, deferred or
under TYPE_CHECKING, leads from nfd.cli to nfd.master (also import-linter's contract ``cli``)."""

from __future__ import annotations

import grimp


def test_the_cli_imports_nothing_of_the_master() -> None:
    graph = grimp.build_graph("nfd", cache_dir=None)
    assert "nfd.cli.fleet" in graph.modules and "nfd.master.core" in graph.modules
    chain = graph.find_shortest_chain(importer="nfd.cli", imported="nfd.master", as_packages=True)
    assert chain is None, " -> ".join(chain or ())
