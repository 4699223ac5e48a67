"""nfd/lang/gostd against Go itself: every case of cases.json (written by
tests/oracles/gostd/regen_cases.py from Go's strconv, net/netip, net/url and time) must give Go's value and Go's exact error text."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from nfd.lang.gostd import netip, strconv, url
from nfd.lang.gostd import time as gotime

CASES: list[dict[str, Any]] = json.loads((Path(__file__).with_name("cases.json")).read_text())


def _float_bits(f: float) -> str:
    return f"{struct.unpack('<Q', struct.pack('<d', f))[0]:x}"


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _url(u: url.URL) -> dict[str, Any]:
    user = None
    if u.user is not None:
        user = {"name": _text(u.user.username), "password": _text(u.user.password), "set": u.user.password_set,
                "string": _text(u.user.string())}
    return {
        "scheme": _text(u.scheme), "opaque": _text(u.opaque), "user": user, "host": _text(u.host),
        "path": _text(u.path), "raw_path": _text(u.raw_path), "omit_host": u.omit_host,
        "force_query": u.force_query, "raw_query": _text(u.raw_query), "fragment": _text(u.fragment),
        "raw_fragment": _text(u.raw_fragment), "string": _text(u.string()), "hostname": _text(u.hostname()),
        "port": _text(u.port()), "escaped_path": _text(u.escaped_path()),
        "query": [[_text(k), *map(_text, v)] for k, v in sorted(u.query().items())],
    }


def _addr(a: netip.Addr) -> dict[str, Any]:
    return {"string": str(a), "zone": a.zone, "is4": a.is4, "is4in6": a.is4in6}


def _ours(case: dict[str, Any]) -> tuple[Any, str]:
    """(value, error text) as nfd computes them, in the oracle's shapes."""
    fn, s, n, m = case["fn"], case["in"], case.get("n", 0), case.get("m", 0)
    calls: dict[str, Callable[[], Any]] = {
        "quote": lambda: strconv.quote(s),
        "quote_ascii": lambda: strconv.quote(s, ascii_only=True),
        "format_float": lambda: strconv.format_float(struct.unpack("<d", struct.pack("<Q", int(s, 16)))[0], chr(n)),
        "parse_int": lambda: str(strconv.parse_int(s, n, m)),
        "parse_uint": lambda: str(strconv.parse_uint(s, n, m)),
        "atoi": lambda: str(strconv.atoi(s)),
        "parse_float": lambda: _float_bits(strconv.parse_float(s)),
        "parse_addr": lambda: _addr(netip.parse_addr(s)),
        "parse_prefix": lambda: str(netip.parse_prefix(s)),
        "url_parse": lambda: _url(url.parse(s)),
        "url_parse_request": lambda: _url(url.parse_request_uri(s)),
        "parse_duration": lambda: str(gotime.parse_duration(s)),
        "format_duration": lambda: gotime.format_duration(int(s)),
        "time_parse": lambda: gotime.format_time(gotime.parse_time(s, case["b"], UTC),
                                                 "2006-01-02T15:04:05.999999999Z07:00 MST"),
        "time_format": lambda: gotime.format_time(gotime.Time.from_unix(n, UTC, m), s),
    }
    try:
        return calls[fn](), ""
    except ValueError as e:
        return None, str(e)


def _agrees(case: dict[str, Any], ours: Any, err: str) -> bool:
    if err or case["err"]:
        return err == case["err"]  # on error only the text counts (Go's value is a by-product)
    if case["fn"] == "parse_float":
        f = struct.unpack("<d", struct.pack("<Q", int(case["out"], 16)))[0]
        return bool(ours == case["out"] or math.isnan(f) and ours == _float_bits(math.nan))
    return bool(ours == case["out"])


FNS = sorted({c["fn"] for c in CASES})


@pytest.mark.parametrize("fn", FNS)
def test_gostd_matches_go(fn: str) -> None:
    wrong = []
    for case in (c for c in CASES if c["fn"] == fn):
        ours, err = _ours(case)
        if not _agrees(case, ours, err):
            wrong.append(f"{case['in']!r} n={case.get('n')} m={case.get('m')}: go {case['out']!r} {case['err']!r}, "
                         f"nfd {ours!r} {err!r}")
    assert not wrong, f"{len(wrong)} of {fn}:\n" + "\n".join(wrong[:40])


def test_the_cases_cover_every_module() -> None:
    assert set(FNS) >= {"quote", "format_float", "parse_int", "parse_float", "parse_addr", "parse_prefix",
                        "url_parse", "url_parse_request", "parse_duration", "format_duration"}
    assert len(CASES) > 2000


def test_the_bracketed_zone_error_is_gos() -> None:
    with pytest.raises(url.URLError) as e:
        url.parse("http://[::1%25]/")
    assert str(e.value) == 'parse "http://[::1%25]/": invalid host: ParseAddr("::1%"): zone must be a non-empty string'
