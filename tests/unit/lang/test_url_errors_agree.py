"""CEL's url() and the templates' urlParse refuse a URL with Go's own url.Parse/ParseRequestURI
error, taken from the Go-oracle cases of nfd/lang/gostd (gostd/cases.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nfd.lang.cel import CelError
from nfd.lang.cel.values import URL
from nfd.lang.gotemplate.errors import FuncError
from nfd.lang.gotemplate.sprig_misc import url_parse

CASES = json.loads((Path(__file__).parent / "gostd" / "cases.json").read_text())


def _refused(fn: str) -> list[dict[str, str]]:
    return [c for c in CASES if c["fn"] == fn and c["err"] and not any(0xDC80 <= ord(ch) <= 0xDCFF for ch in c["in"])]


def test_cel_url_errors_are_gos() -> None:
    cases = _refused("url_parse_request")
    assert len(cases) > 100
    wrong = []
    for c in cases:
        try:
            URL.parse(c["in"])  # what url(s) and isURL(s) call
        except CelError as e:
            got = str(e)
        else:
            got = "accepted"
        want = f"URL parse error during conversion from string: {c['err']}"
        if got != want:
            wrong.append(f"{c['in']!r}: want {want!r}, got {got!r}")
    assert not wrong, "\n".join(wrong[:20])


def test_template_url_errors_are_gos() -> None:
    cases = _refused("url_parse")
    assert len(cases) > 50
    wrong = []
    for c in cases:
        try:
            url_parse(c["in"])
        except FuncError as e:
            got = str(e)
        else:
            got = "accepted"
        if got != f"unable to parse url: {c['err']}":
            wrong.append(f"{c['in']!r}: want {c['err']!r}, got {got!r}")
    assert not wrong, "\n".join(wrong[:20])


def test_the_bracketed_empty_zone_reads_the_same_in_both() -> None:
    text = 'parse "http://[::1%25]/": invalid host: ParseAddr("::1%"): zone must be a non-empty string'
    with pytest.raises(CelError) as cel:
        URL.parse("http://[::1%25]/")
    with pytest.raises(FuncError) as tpl:
        url_parse("http://[::1%25]/")
    assert (str(cel.value), str(tpl.value)) == (f"URL parse error during conversion from string: {text}",
                                                f"unable to parse url: {text}")
