"""CEL's url() and the templates' urlParse refuse a URL with Go's own url.Parse/ParseRequestURI
error, taken from the Go-oracle cases of nfd/lang/gostd (gostd/cases.json)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from nfd.lang.cel import CelError
from nfd.lang.cel.values import URL
from nfd.lang.gotemplate.errors import FuncError
from nfd.lang.gotemplate.sprig_misc import url_parse

CASES = json.loads((Path(__file__).parent / "gostd" / "cases.json").read_text())


def _wrong(fn: str, call: Callable[[str], object], prefix: str) -> list[str]:
    """The refused URLs of ``fn`` (text only: CEL strings are valid UTF-8) whose error from
    ``call`` is not ``prefix`` + Go's error text."""
    cases = [c for c in CASES if c["fn"] == fn and c["err"] and not any(0xDC80 <= ord(ch) <= 0xDCFF for ch in c["in"])]
    assert len(cases) > 50
    wrong = []
    for c in cases:
        try:
            call(c["in"])
            got = "accepted"
        except (CelError, FuncError) as e:
            got = str(e)
        if got != prefix + c["err"]:
            wrong.append(f"{c['in']!r}: want {prefix + c['err']!r}, got {got!r}")
    return wrong


def test_cel_url_errors_are_gos() -> None:
    wrong = _wrong("url_parse_request", URL.parse, "URL parse error during conversion from string: ")
    assert not wrong, "\n".join(wrong[:20])  # URL.parse is what url(s) and isURL(s) call


def test_template_url_errors_are_gos() -> None:
    wrong = _wrong("url_parse", url_parse, "unable to parse url: ")
    assert not wrong, "\n".join(wrong[:20])


def test_the_bracketed_empty_zone_reads_the_same_in_both() -> None:
    text = 'parse "http://[::1%25]/": invalid host: ParseAddr("::1%"): zone must be a non-empty string'
    with pytest.raises(CelError) as cel:
        URL.parse("http://[::1%25]/")
    with pytest.raises(FuncError) as tpl:
        url_parse("http://[::1%25]/")
    assert (str(cel.value), str(tpl.value)) == (f"URL parse error during conversion from string: {text}",
                                                f"unable to parse url: {text}")
