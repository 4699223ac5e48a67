"""Differential tests: every case in golden.json was run through Go text/template + Sprig
(see oracle/README.md); our engine must produce the same output or the same error."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from nfd.rules.gotemplate import TemplateError, parse

GOLDEN = json.loads((pathlib.Path(__file__).parent / "golden.json").read_text())

# Where the oracle's data typing differs from NFD's: the oracle decodes JSON, so every map is
# map[string]interface{} and a missing `index` key yields <no value>; NFD's matched elements
# are map[string]string, where Go yields "" (the zero string). We follow NFD.
NFD_TYPED: dict[str, str] = {
    '{{ index .pci.device 1 "missing" }}': "",
    '{{ index .strmap "zz" }}': "",
}


def _run(tpl: str, data: Any) -> dict[str, str]:
    try:
        t = parse(tpl)
    except TemplateError as e:
        return {"perr": str(e)}
    try:
        return {"out": t.execute(data)}
    except TemplateError as e:
        return {"err": str(e)}


@pytest.mark.parametrize("case", GOLDEN, ids=[f"{i}:{c['tpl'][:40]}" for i, c in enumerate(GOLDEN)])
def test_matches_go(case: dict[str, Any]) -> None:
    got = _run(case["tpl"], case["data"])
    if case["tpl"] in NFD_TYPED:
        assert got == {"out": NFD_TYPED[case["tpl"]]}
        return
    expected = {k: case[k] for k in ("out", "err", "perr") if k in case}
    assert got == expected


def test_golden_covers_errors_and_outputs() -> None:
    kinds = {k for c in GOLDEN for k in ("out", "err", "perr") if k in c}
    assert kinds == {"out", "err", "perr"}
    assert len(GOLDEN) >= 200
