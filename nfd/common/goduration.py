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
