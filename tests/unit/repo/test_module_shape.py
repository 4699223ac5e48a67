"""The shape of nfd/'s modules (issue 48): no function over 100 lines; no two modules with one
name for two jobs; imports at the top of every module, unless deferring one saves a measured part
of the one-shot worker's start-up (``nfd-worker -oneshot``, ``nfd export labels``) or of another
program's or command's (DEFERRED_IMPORTS).

Read from the source with ``ast``: nothing here imports nfd.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
NFD = ROOT / "nfd"

MAX_FUNCTION_LINES = 100

# Known offenders the refactoring of nfd/master, nfd/rules, nfd/cli and nfd/worker (issue 48)
# removes: a function as "path:qualified name", a shared module name as "name.py". Each entry
# must still offend (the test says when one no longer does): empty this list as they go.
LEFT_TO_NODESTATE_REFACTOR: list[str] = []

# Module names that several modules share because they do the same job, each for its own part.
SAME_JOB_NAMES = {
    "__init__.py": "each package's",
    "__main__.py": "each program's entry point (python -m)",
    "daemon.py": "each daemon's long-running composition (nfd-master, nfd-worker)",
    "config.py": "each component's configuration: a daemon's config file, the API client's kubeconfig",
    "metrics.py": "each daemon's metrics",
    "errors.py": "each package's exception types (api, k8s, the template language)",
    "compiler.py": "each language's compiler to its runnable form (CEL, Go templates)",
    "values.py": "each language's runtime values (CEL, Go templates)",
}

# Every module of nfd/ has its imports at the top, but for these.
# (module, module it imports inside a function): why it is deferred. "N ms": what importing it at
# the top would add to a one-shot worker run (~100 ms), on top of the modules that run loads anyway
# (the min of 9 fresh processes on the development machine), or to the start of the program or
# command named; a deferral is kept from 1 ms. The import site says it again in a comment.
_NVML_GPU = "loaded only where used (a GPU node, an nvml config)"
_WORKER_LOOP = "asyncio, ssl: 25 ms, 58 modules; a one-shot run without publishing has no event loop"
_WORKER_API = ("the publish path, nfd.k8s, asyncio, ssl, yaml, h2: 79 ms, 134 modules; only for a run that "
               "publishes (test_worker_imports)")
_KUBECTL_API = "asyncio, ssl, nfd.k8s: 51 ms of `kubectl nfd`; only for the commands that read the cluster"
DEFERRED_IMPORTS = {
    ("nfd.api.validation", "nfd.api.quantity"): "7.6 ms (decimal, fractions); only for an extended resource",
    ("nfd.common.goflags", "argparse"): "1.5 ms with gettext; only for a bad flag value (FlagValues)",
    ("nfd.common.logsetup", "nfd.common.goduration"): "1.3 ms of `nfd export labels`; only for a logged duration",
    ("nfd.common.logsetup", "yaml"): "11.5 ms; only for a logged Dump",
    ("nfd.common.httpserver", "prometheus_client"):
        "18 ms of the worker daemon, which renders its own /metrics (test_worker_imports)",
    ("nfd.compat.oci", "oras.provider"): "an optional dependency (the compat extra)",
    ("nfd.compat.oci", "requests"): "an optional dependency (with oras, the compat extra)",
    ("nfd.sources.custom", "nfd.rules.engine"): "22 ms; the default config's static rules need only the matcher",
    ("nfd.sources.custom", "yaml"): "11.5 ms; only for a custom.d",
    ("nfd.sources.custom", "nfd.common"): "safeyaml, with yaml: 11.5 ms; only for a custom.d",
    ("nfd.sources.local", "datetime"): "1.1 ms; only for a features.d",
    ("nfd.sources.nvml.backend", "nfd.nvml_fake"): "48.6 ms; only with NFD_NVML_PROFILE (and the package cycle)",
    ("nfd.sources.nvml.backend", "pynvml"): "12.4 ms; only where there is a driver",
    ("nfd.sources.nvml.source", "nfd.sources.nvml.sharing"): f"6.4 ms; {_NVML_GPU}",
    ("nfd.sources.nvml.source", "nfd.sources.nvml.health"): f"8.9 ms; {_NVML_GPU}",
    ("nfd.sources.nvml.source", "nfd.sources.nvml.hostinfo"): f"9.5 ms; {_NVML_GPU}",
    ("nfd.sources.nvml.source", "nfd.sources.nvml.collect"): f"13.4 ms; {_NVML_GPU}",
    ("nfd.sources.nvml.source", "nfd.sources.nvml.labels"): f"13.7 ms; {_NVML_GPU}",
    ("nfd.sources.nvml.source", "nfd.sources.nvml.snapshotfeatures"): f"14.8 ms; {_NVML_GPU}",
    ("nfd.sources.nvml.source", "yaml"): f"11.5 ms; {_NVML_GPU}",
    ("nfd.sources.nvml.source", "nfd.common"): f"safeyaml, with yaml: 11.5 ms; {_NVML_GPU}",
    ("nfd.worker.__main__", "asyncio"): _WORKER_LOOP,
    ("nfd.worker.__main__", "nfd.common.httpserver"): _WORKER_LOOP,
    ("nfd.worker.daemon", "asyncio"): _WORKER_LOOP,
    ("nfd.worker.metrics", "nfd.common.httpserver"): f"the /metrics server, {_WORKER_LOOP}",
    ("nfd.worker.metrics", "nfd.common.probes"): f"the /healthz server, {_WORKER_LOOP}",
    ("nfd.worker.daemon", "nfd.worker.publish"): _WORKER_API,
    ("nfd.worker.daemon", "nfd.k8s.client"): _WORKER_API,
    ("nfd.worker.daemon", "nfd.k8s.ownwatch"): _WORKER_API,
    ("nfd.worker.daemon", "nfd.k8s.resources"): _WORKER_API,
    ("nfd.worker.daemon", "nfd.worker.masterless"):
        "nfd-master's node pipeline: 234 ms, 246 modules; only in masterless mode (test_worker_imports)",
    ("nfd.worker.config", "nfd.lang.goregex"): "15 ms and ~4 MiB (RE2, libstdc++); only for core.labelWhiteList",
    ("nfd.worker.config", "yaml"): "14 ms; only for a config file or -options",
    ("nfd.worker.config", "nfd.common"): "safeyaml, with yaml: 14 ms; only for a config file or -options",
    ("nfd.cli.export", "nfd.worker.config"): "4 ms of `nfd export labels`; only for --config",
    ("nfd.cli.export", "yaml"): "12.6 ms of `nfd export labels`; only for --config or -o yaml",
    ("nfd.cli.kubectl_nfd", "asyncio"): _KUBECTL_API,
    ("nfd.cli.kubectl_nfd", "nfd.k8s.client"): _KUBECTL_API,
    ("nfd.cli.kubectl_nfd", "nfd.k8s.config"): _KUBECTL_API,
    ("nfd.cli.kubectl_nfd", "nfd.k8s.errors"): _KUBECTL_API,
    ("nfd.cli.kubectl_nfd", "nfd.k8s.fetching"): _KUBECTL_API,
    ("nfd.cli.kubectl_nfd", "nfd.k8s.resources"): _KUBECTL_API,
    ("nfd.cli.kubectl_nfd", "nfd.cli"): "nfd.cli.fleet, with the API client: 65 ms; only for `test -A|-l`",
    ("nfd.master.controller", "nfd.master.groupstatus"):
        "2.6 ms of masterless mode, which loads nothing of the group pass (test_worker_imports)",
    ("nfd.master.eventsink", "nfd.k8s.events"):
        "2.3 ms of masterless mode, which posts no Events (NoEvents)",
    ("nfd.rules.engine", "nfd.rules.cel"): "the CEL compiler: 68 ms after the engine; only for matchCEL",
    ("nfd.rules.engine", "nfd.lang.gotemplate"): "the Go templates: 102 ms after the engine; only for a template",
    ("nfd.rules.expression", "nfd.lang.goregex"):
        "15 ms and ~4 MiB (RE2, libstdc++) of a one-shot run; only for a regexp (InRegexp)",
    ("nfd.rules.expression", "nfd.lang.semver"): "1.2 ms; only for a version comparison (type: version)",
    ("nfd.rules.lint", "nfd.rules.cel"): "the CEL compiler: 51 ms of `nfd rules validate`; only for matchCEL",
}


def _modules() -> list[Path]:
    return sorted(NFD.rglob("*.py"))


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _dotted(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _functions(tree: ast.AST) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method, by qualified name (Class.method, outer.inner)."""
    out: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((prefix + child.name, child))
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def long_functions(paths: list[Path], root: Path = ROOT) -> dict[str, int]:
    """``path:qualified name`` -> lines, for each function longer than MAX_FUNCTION_LINES."""
    out = {}
    for path in paths:
        for name, fn in _functions(ast.parse(path.read_text(), str(path))):
            lines = (fn.end_lineno or fn.lineno) - fn.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                out[f"{_rel(path, root)}:{name}"] = lines
    return out


def shared_names(paths: list[Path], root: Path = ROOT) -> dict[str, list[str]]:
    """Module file names that more than one module has, but for SAME_JOB_NAMES."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        by_name[path.name].append(_rel(path, root))
    return {name: where for name, where in sorted(by_name.items()) if len(where) > 1 and name not in SAME_JOB_NAMES}


def function_imports(paths: list[Path], root: Path = ROOT) -> dict[tuple[str, str], list[str]]:
    """(module, module imported) -> ``path:line`` of each import statement inside a function."""
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in paths:
        module = _dotted(path, root)
        seen: set[int] = set()  # an import in a nested function is in its outer one's walk too
        for _name, fn in _functions(ast.parse(path.read_text(), str(path))):
            for node in ast.walk(fn):
                if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in seen:
                    continue
                seen.add(id(node))
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else ["." * node.level + (node.module or "")])
                for imported in names:
                    out[(module, imported)].append(f"{_rel(path, root)}:{node.lineno}")
    return dict(out)


def _left(functions: bool) -> set[str]:
    return {e for e in LEFT_TO_NODESTATE_REFACTOR if (":" in e) == functions}


def test_no_function_is_over_100_lines() -> None:
    found = long_functions(_modules())
    over = {k: v for k, v in found.items() if k not in _left(True)}
    assert over == {}, "functions over 100 lines (file:function: lines): " + ", ".join(
        f"{k}: {v}" for k, v in sorted(over.items()))
    assert sorted(_left(True) - found.keys()) == [], "no longer over 100 lines: take it off LEFT_TO_NODESTATE_REFACTOR"


def test_no_two_modules_share_a_name_for_two_jobs() -> None:
    found = shared_names(_modules())
    shared = {k: v for k, v in found.items() if k not in _left(False)}
    assert shared == {}, f"modules sharing a name (rename one, or add a same-job name with its reason): {shared}"
    assert sorted(_left(False) - found.keys()) == [], "no longer shared: take it off LEFT_TO_NODESTATE_REFACTOR"


def test_imports_are_at_the_top_of_modules() -> None:
    paths = _modules()
    assert len(paths) > 100 and NFD / "hostpaths.py" in paths, "no nfd/ found"
    found = function_imports(paths)
    inside = {k: v for k, v in found.items() if k not in DEFERRED_IMPORTS}
    assert inside == {}, "imports inside a function (move them to the top, or measure and add to DEFERRED_IMPORTS): " + \
        ", ".join(f"{mod} imports {imp} at {', '.join(where)}" for (mod, imp), where in sorted(inside.items()))
    assert sorted(DEFERRED_IMPORTS.keys() - found.keys()) == [], "no longer deferred: take it off DEFERRED_IMPORTS"


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    pkg = tmp_path / "nfd"
    (pkg / "a").mkdir(parents=True)
    (pkg / "b").mkdir()
    body = "".join(f"        x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 2))
    (pkg / "a" / "long.py").write_text(f"class C:\n    def m(self):\n{body}        import json\n\n\ndef short():\n    pass\n")
    (pkg / "b" / "long.py").write_text("import os\n\n\ndef f():\n    def g():\n        from . import x\n")
    (pkg / "a" / "config.py").write_text("")
    (pkg / "b" / "config.py").write_text("")
    paths = sorted(pkg.rglob("*.py"))
    assert long_functions(paths, tmp_path) == {}  # 100 lines: the longest allowed
    (pkg / "a" / "long.py").write_text((pkg / "a" / "long.py").read_text().replace("import json", "x = 1\n        import json"))
    assert long_functions(paths, tmp_path) == {"nfd/a/long.py:C.m": 101}
    assert shared_names(paths, tmp_path) == {"long.py": ["nfd/a/long.py", "nfd/b/long.py"]}
    assert function_imports(paths, tmp_path) == {("nfd.a.long", "json"): ["nfd/a/long.py:102"],
                                                 ("nfd.b.long", "."): ["nfd/b/long.py:6"]}
