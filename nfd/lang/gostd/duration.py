"""Go's time.ParseDuration and Duration.String in integer nanoseconds, with Go's errors
(``time: unknown unit "d" in duration "1d"``) and the time package's own quoting of inputs.

Apart from ``nfd.lang.gostd.time`` (which re-exports these) so that a flag or config parser does
not load ``datetime`` and the layouts: every daemon parses durations at start.
"""

from __future__ import annotations

from nfd.lang.gostd import go_bytes

# --- durations ---------------------------------------------------------------

NANOSECOND = 1
MICROSECOND = 1000
MILLISECOND = 10**6
SECOND = 10**9
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
MAX_DURATION = (1 << 63) - 1

# "µs" is U+00B5 (micro sign), "μs" U+03BC (Greek mu): Go accepts both
UNITS = {"ns": NANOSECOND, "us": MICROSECOND, "µs": MICROSECOND, "μs": MICROSECOND, "ms": MILLISECOND,
         "s": SECOND, "m": MINUTE, "h": HOUR}


class DurationError(ValueError):
    """A duration ParseDuration refuses; ``str()`` is Go's error text."""


def quote(s: str) -> str:
    """The time package's quote (not strconv.Quote): the string's bytes in double quotes,
    bytes outside printable ASCII as ``\\xNN``, quote and backslash escaped."""
    out = ['"']
    for b in go_bytes(s):
        if b >= 0x80 or b < 0x20:
            out.append(f"\\x{b:02x}")
        elif b in (0x22, 0x5C):
            out.append("\\" + chr(b))
        else:
            out.append(chr(b))
    out.append('"')
    return "".join(out)


def _leading_int(s: str) -> tuple[int, str, bool]:
    """Leading ASCII digits of ``s`` as a number, the rest, and whether it overflowed int64."""
    i, x = 0, 0
    while i < len(s) and "0" <= s[i] <= "9":
        x = x * 10 + ord(s[i]) - 48
        if x > 1 << 63:
            return 0, "", True
        i += 1
    return x, s[i:], False


def _leading_fraction(s: str) -> tuple[int, float, str]:
    """Leading digits after a decimal point: their value while it fits int64 (later digits
    are dropped, as Go does), the matching power of ten, and the rest."""
    i, x, scale, full = 0, 0, 1.0, False
    while i < len(s) and "0" <= s[i] <= "9":
        if not full:
            y = x * 10 + ord(s[i]) - 48
            if y > 1 << 63 or x > MAX_DURATION // 10:
                full = True
            else:
                x, scale = y, scale * 10
        i += 1
    return x, scale, s[i:]


def parse_duration(text: str) -> int:
    """time.ParseDuration: nanoseconds of a signed sequence of decimal numbers with units
    (``300ms``, ``-1.5h``, ``2h45m``; ``0`` alone needs none); beyond int64 is an error."""
    s, neg = text, False
    if s[:1] in ("+", "-"):
        neg, s = s[0] == "-", s[1:]
    if s == "0":
        return 0
    if not s:
        raise DurationError(f"time: invalid duration {quote(text)}")
    total = 0
    while s:
        if not (s[0] == "." or "0" <= s[0] <= "9"):
            raise DurationError(f"time: invalid duration {quote(text)}")
        before = len(s)
        v, s, overflow = _leading_int(s)
        if overflow:
            raise DurationError(f"time: invalid duration {quote(text)}")
        pre = len(s) != before
        f, scale, post = 0, 1.0, False
        if s[:1] == ".":
            s = s[1:]
            before = len(s)
            f, scale, s = _leading_fraction(s)
            post = len(s) != before
        if not pre and not post:
            raise DurationError(f"time: invalid duration {quote(text)}")
        i = 0
        while i < len(s) and s[i] != "." and not "0" <= s[i] <= "9":
            i += 1
        if i == 0:
            raise DurationError(f"time: missing unit in duration {quote(text)}")
        u, s = s[:i], s[i:]
        unit = UNITS.get(u)
        if unit is None:
            raise DurationError(f"time: unknown unit {quote(u)} in duration {quote(text)}")
        if v > (1 << 63) // unit:
            raise DurationError(f"time: invalid duration {quote(text)}")
        v *= unit
        if f > 0:
            v += int(float(f) * (float(unit) / scale))  # Go computes the fraction in float64
            if v > 1 << 63:
                raise DurationError(f"time: invalid duration {quote(text)}")
        total += v
        if total > 1 << 63:
            raise DurationError(f"time: invalid duration {quote(text)}")
    if neg:
        return -total
    if total > MAX_DURATION:
        raise DurationError(f"time: invalid duration {quote(text)}")
    return total


def format_duration(ns: int) -> str:
    """Duration.String: ``1h2m3.5s``, ``1.5ms``, ``0s``; under a second in ns/µs/ms."""
    if ns == 0:
        return "0s"
    u = -ns if ns < 0 else ns
    if u < SECOND:
        size, unit = (1, "ns") if u < MICROSECOND else (MICROSECOND, "µs") if u < MILLISECOND else (MILLISECOND, "ms")
        out = _frac(u, size) + unit
    else:
        h, rem = divmod(u, HOUR)
        m, rem = divmod(rem, MINUTE)
        out = (f"{h}h" if h else "") + (f"{m}m" if h or m else "") + _frac(rem, SECOND) + "s"
    return ("-" if ns < 0 else "") + out


def _frac(v: int, size: int) -> str:
    whole, frac = divmod(v, size)
    if not frac:
        return str(whole)
    return f"{whole}." + f"{frac:0{len(str(size)) - 1}d}".rstrip("0")
