"""Go ``time.ParseDuration`` text (``60s``, ``1h30m``, ``500ms``, ``-1.5h``, ``0``) in seconds.

One parser for flags and config files of all processes; callers wrap the ValueError in their
own error type (argparse, ConfigError, ValidationError) so messages name the flag or key.
"""

from __future__ import annotations

import re

# "µs" is U+00B5 (micro sign), "μs" U+03BC (Greek mu): Go accepts both
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_go_duration(text: str) -> float:
    """Seconds; a unit is required except for a lone ``0``; ValueError otherwise."""
    s = text.strip()
    sign = 1.0
    if s[:1] in ("+", "-"):
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    pos, total = 0, 0.0
    while pos < len(s):
        m = _PART.match(s, pos)
        if not m:
            raise ValueError(f"invalid duration {text!r}")
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return sign * total


def format_go_duration(ns: int) -> str:
    """time.Duration.String: 1h2m3.5s, 1.5ms, 0s."""
    if ns == 0:
        return "0s"
    neg = ns < 0
    u = -ns if neg else ns
    if u < 10**9:
        for unit, size in (("ns", 1), ("µs", 1000), ("ms", 10**6)):
            if u < size * 1000:
                out = _frac(u, size) + unit
                break
    else:
        h, rem = divmod(u, 3600 * 10**9)
        m, rem = divmod(rem, 60 * 10**9)
        out = ""
        if h:
            out += f"{h}h"
        if h or m:
            out += f"{m}m"
        out += _frac(rem, 10**9) + "s"
    return ("-" if neg else "") + out


def _frac(v: int, size: int) -> str:
    whole, frac = divmod(v, size)
    if not frac:
        return str(whole)
    digits = len(str(size)) - 1
    return f"{whole}." + f"{frac:0{digits}d}".rstrip("0")
