"""Go/Sprig value conversions: strval, cast.ToInt64/ToFloat64, byte-wise string slicing, DeepEqual."""

from __future__ import annotations

import math
from typing import Any

from nfd.lang.gostd import from_go_bytes, go_bytes, strconv

from .literals import parse_int
from .values import format_value

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


def wrap64(v: int) -> int:
    """Two's-complement int64 overflow, as Go arithmetic does."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v > INT64_MAX else v


def strval(v: Any) -> str:
    """Sprig's strval: strings as-is, everything else via %v."""
    if isinstance(v, str):
        return v
    return format_value(v)


def _trim_zero_decimal(s: str) -> str:
    found_zero = False
    for i in range(len(s), 0, -1):
        c = s[i - 1]
        if c == ".":
            if found_zero:
                return s[: i - 1]
        elif c == "0":
            found_zero = True
        else:
            return s
    return s


def _float_to_int64(f: float) -> int:
    if math.isnan(f) or math.isinf(f):
        return INT64_MIN
    return wrap64(int(f))


def to_int64(v: Any) -> int:
    """cast.ToInt64 with errors swallowed (0), as Sprig uses it."""
    if v is None or v is False:
        return 0
    if v is True:
        return 1
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return _float_to_int64(v)
    if isinstance(v, str):
        i = parse_int(_trim_zero_decimal(v))
        return 0 if i is None else i
    return 0


def parse_go_float(s: str) -> float | None:
    """strconv.ParseFloat(s, 64); None where Go returns an error (syntax, or out of range)."""
    try:
        return strconv.parse_float(s)
    except strconv.NumError:
        return None


def to_float64(v: Any) -> float:
    """cast.ToFloat64 with errors swallowed (0)."""
    if v is None or v is False:
        return 0.0
    if v is True:
        return 1.0
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        f = parse_go_float(v)
        return 0.0 if f is None else f
    return 0.0


def byte_slice(s: str, start: int, end: int | None = None) -> str:
    """s[start:end] over UTF-8 bytes, as Go slices strings; bounds are checked like Go's."""
    if s.isascii():
        n = len(s)
        e = n if end is None else end
        if start < 0 or e > n or start > e:
            raise IndexError(f"runtime error: slice bounds out of range [{start}:{e}]")
        return s[start:e]
    b = go_bytes(s)
    n = len(b)
    e = n if end is None else end
    if start < 0 or e > n or start > e:
        raise IndexError(f"runtime error: slice bounds out of range [{start}:{e}]")
    return from_go_bytes(b[start:e])


def deep_equal(a: Any, b: Any) -> bool:
    """reflect.DeepEqual on plain data: types must match exactly (1 != 1.0, true != 1)."""
    if type(a) is not type(b):
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            pass
        else:
            return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(deep_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return False
    return bool(a == b)
