"""Differential tests: every case in golden.json and golden_go_tables.json was run through Go
text/template + Sprig v3.3.0 (see tests/oracles/gotemplate/oracle/README.md); our engine must produce the same output or
the same error. golden_go_tables.json holds templates from Go's own text/template test tables
(tests/oracles/gotemplate/go_tables.py); cases marked "nfd" get NFD's template data typed as upstream's."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from nfd.lang.gotemplate import TemplateError, parse
from nfd.rules.engine import go_typed_matches

HERE = pathlib.Path(__file__).parent
GOLDEN = json.loads((HERE / "golden.json").read_text())
GO_TABLES = json.loads((HERE / "golden_go_tables.json").read_text())

# Known disagreements, each strict: a fix makes its test fail until the entry is removed.
KNOWN: dict[str, str] = {}


def _run(tpl: str, data: Any) -> dict[str, str]:
    try:
        t = parse(tpl)
    except TemplateError as e:
        return {"perr": str(e)}
    try:
        return {"out": t.execute(data)}
    except TemplateError as e:
        return {"err": str(e)}


def _have_zone(name: str) -> bool:
    try:
        from zoneinfo import ZoneInfo

        ZoneInfo(name)
        return True
    except Exception:
        return False


_ZONES = ("Asia/Kolkata", "America/New_York")
_MISSING_ZONES = [z for z in _ZONES if not _have_zone(z)]


def _check(case: dict[str, Any]) -> None:
    if any(z in case["tpl"] for z in _MISSING_ZONES):
        pytest.skip("host has no tz database entry for this zone")
    data = go_typed_matches(case["data"]) if case.get("nfd") else case["data"]
    got = _run(case["tpl"], data)
    expected = {k: case[k] for k in ("out", "err", "perr") if k in case}
    assert got == expected


def _params(cases: list[dict[str, Any]]) -> list[Any]:
    out = []
    for i, c in enumerate(cases):
        marks = [pytest.mark.xfail(reason=KNOWN[c["tpl"]], strict=True)] if c["tpl"] in KNOWN else []
        out.append(pytest.param(c, id=f"{i}:{c.get('src') or c['tpl'][:40]}", marks=marks))
    return out


@pytest.mark.parametrize("case", _params(GOLDEN))
def test_matches_go(case: dict[str, Any]) -> None:
    _check(case)


@pytest.mark.parametrize("case", _params(GO_TABLES))
def test_go_text_template_tables(case: dict[str, Any]) -> None:
    _check(case)


def test_golden_covers_errors_and_outputs() -> None:
    for cases in (GOLDEN, GO_TABLES):
        kinds = {k for c in cases for k in ("out", "err", "perr") if k in c}
        assert kinds == {"out", "err", "perr"}
    assert len(GOLDEN) >= 600
    assert len(GO_TABLES) >= 500
    assert {c["src"].split(":")[0] for c in GO_TABLES} == {"exec_test.go", "multi_test.go", "parse_test.go"}
