"""Runtime dependencies are the packages nfd/ imports: every one declared in pyproject.toml is
imported somewhere under nfd/, and benchmark-only packages stay in the ``bench`` extra."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# distribution name -> the top-level module it installs
MODULES = {"kubernetes": "kubernetes", "aiohttp": "aiohttp", "prometheus-client": "prometheus_client",
           "pyyaml": "yaml", "nvidia-ml-py": "pynvml", "google-re2": "re2", "grpcio": "grpc",
           "protobuf": "google.protobuf", "orjson": "orjson", "h2": "h2", "psutil": "psutil", "pyudev": "pyudev",
           "oras": "oras"}


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower()


def _imported(base: Path) -> set[str]:
    out: set[str] = set()
    for path in base.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                out.add(node.module)
    return out


def _uses(imported: set[str], module: str) -> bool:
    return any(m == module or m.startswith(module + ".") for m in imported)


def test_every_runtime_dependency_is_imported_by_nfd() -> None:
    imported = _imported(ROOT / "nfd")
    deps = [_name(r) for r in PYPROJECT["project"]["dependencies"]]
    assert set(deps) <= MODULES.keys(), "name the module of a new dependency in MODULES"
    assert [d for d in deps if not _uses(imported, MODULES[d])] == []


def test_benchmark_only_packages_are_an_extra() -> None:
    imported = _imported(ROOT / "nfd")
    assert not _uses(imported, "psutil") and not _uses(imported, "pyudev")
    assert "psutil" in [_name(r) for r in PYPROJECT["project"]["optional-dependencies"]["bench"]]
    assert _uses(_imported(ROOT / "benchmarks"), "psutil")


def test_google_re2_is_bounded_to_the_private_module_goregex_uses() -> None:
    (re2,) = [r for r in PYPROJECT["project"]["dependencies"] if _name(r) == "google-re2"]
    assert "<1.2" in re2 and ">=1.1" in re2
    assert "from re2 import _re2" in (ROOT / "nfd" / "lang" / "goregex" / "regexp.py").read_text()
