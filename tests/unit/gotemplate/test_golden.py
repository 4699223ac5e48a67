"""Differential tests: every case in golden.json was run through Go text/template + Sprig
(see oracle/README.md); our engine must produce the same output or the same error."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from nfd.lang.gotemplate import TemplateError, parse

GOLDEN = json.loads((pathlib.Path(__file__).parent / "golden.json").read_text())

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


@pytest.mark.parametrize("case", GOLDEN, ids=[f"{i}:{c['tpl'][:40]}" for i, c in enumerate(GOLDEN)])
def test_matches_go(case: dict[str, Any]) -> None:
    if any(z in case["tpl"] for z in _MISSING_ZONES):
        pytest.skip("host has no tz database entry for this zone")
    got = _run(case["tpl"], case["data"])
    expected = {k: case[k] for k in ("out", "err", "perr") if k in case}
    assert got == expected


def test_golden_covers_errors_and_outputs() -> None:
    kinds = {k for c in GOLDEN for k in ("out", "err", "perr") if k in c}
    assert kinds == {"out", "err", "perr"}
    assert len(GOLDEN) >= 200
