"""The language packages keep their internals: code outside nfd/lang/<x>/ (benchmarks included)
imports nfd.lang.<x> only. That nfd/lang stands on its own (no import cycle among its modules,
nothing imported from the rest of nfd, lang/gostd importing nothing but itself) is checked by
import-linter's contracts "layers", "acyclic" and "lang" (pyproject.toml; docs/architecture.md)."""

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
