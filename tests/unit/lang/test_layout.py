"""The language packages keep their internals: code outside nfd/lang/<x>/ imports nfd.lang.<x> only.
nfd/lang stands on its own: no import cycle among its modules, nothing imported from the rest of
nfd (nfd.rules above all, which builds on it), and lang/gostd (Go's standard library) imports
nothing but itself."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LANG = ROOT / "nfd" / "lang"
LANGS = ("cel", "gotemplate", "goregex")


def _imports(path: Path) -> list[str]:
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
    return out


def test_no_module_outside_a_language_reaches_into_it() -> None:
    offenders = []
    for base in ("nfd", "benchmarks"):
        for path in sorted((ROOT / base).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for mod in _imports(path):
                parts = mod.split(".")
                reaches_in = len(parts) > 3 and parts[:2] == ["nfd", "lang"] and parts[2] in LANGS
                if reaches_in and not rel.startswith(f"nfd/lang/{parts[2]}/"):
                    offenders.append(f"{rel}: {mod}")
    assert offenders == []


def test_rules_package_holds_no_language_runtime() -> None:
    rules = ROOT / "nfd" / "rules"
    assert not any((rules / name).exists() for name in ("celc", "gotemplate", "goregex.py"))
    assert all((ROOT / "nfd" / "lang" / name / "__init__.py").exists() for name in LANGS)


# -- the import graph of nfd/lang -----------------------------------------------------------------

def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_pkg else parts), is_pkg


def _runtime_imports(path: Path, package: str, modules: set[str]) -> set[str]:
    """Modules ``path`` imports when it runs (function-level imports included, ``if
    TYPE_CHECKING:`` blocks not); ``from pkg import sub`` counts as importing ``pkg.sub``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(n) for n in ast.walk(node))
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in modules else base)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def _lang_graph() -> dict[str, set[str]]:
    files = {(_module_name(p)): p for p in sorted(LANG.rglob("*.py"))}
    modules = {name for name, _ in files}
    graph = {}
    for (name, is_pkg), path in files.items():
        package = name if is_pkg else name.rpartition(".")[0]
        graph[name] = _runtime_imports(path, package, modules)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v] & graph.keys()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_within_lang() -> None:
    graph = _lang_graph()
    assert "nfd.lang.cel.compiler" in graph and "nfd.lang.gostd.url" in graph
    assert _cycles(graph) == []


def test_lang_imports_nothing_from_the_rest_of_nfd() -> None:
    graph = _lang_graph()
    outside = sorted(f"{m}: {i}" for m, imps in graph.items() for i in imps
                     if i.split(".")[0] == "nfd" and not i.startswith("nfd.lang"))
    assert outside == []  # nfd.rules builds on nfd.lang, never the other way round


def test_gostd_imports_only_itself() -> None:
    graph = _lang_graph()
    leaks = sorted(f"{m}: {i}" for m, imps in graph.items() if m.startswith("nfd.lang.gostd")
                   for i in imps if i.startswith("nfd") and not i.startswith("nfd.lang.gostd"))
    assert leaks == []
