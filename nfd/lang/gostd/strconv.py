"""Go's strconv: Quote, QuoteToASCII, FormatFloat 'g' (shortest), ParseInt, ParseUint, Atoi,
ParseFloat, with Go's error texts (``strconv.ParseInt: parsing "x": invalid syntax``).

Strings follow the package convention (see ``nfd.lang.gostd``): raw bytes that are not UTF-8
are surrogate escapes, and Quote writes them as ``\\xNN`` as Go does.
"""

from __future__ import annotations

import math
import re

from nfd.lang.gostd import from_go_bytes, go_bytes

ERR_SYNTAX = "invalid syntax"
ERR_RANGE = "value out of range"


class NumError(ValueError):
    """strconv.NumError: the function, the input and the reason (``err``: ERR_SYNTAX,
    ERR_RANGE, or an invalid base or bit size); ``str()`` is Go's Error()."""

    def __init__(self, func: str, num: str, err: str) -> None:
        super().__init__(f"strconv.{func}: parsing {quote(num)}: {err}")
        self.func, self.num, self.err = func, num, err


# -- quoting ------------------------------------------------------------------------------------

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
            "\t": "\\t", "\v": "\\v"}


def quote(s: str | bytes, *, ascii_only: bool = False) -> str:
    """strconv.Quote (QuoteToASCII with ``ascii_only``): a double-quoted Go string literal;
    control and unprintable characters escaped, bytes that are not UTF-8 as ``\\xNN``."""
    if isinstance(s, bytes):
        s = s.decode("utf-8", "surrogateescape")
    elif not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:  # raw bytes: read them again, as escapes may join into UTF-8
            s = from_go_bytes(go_bytes(s))
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return '"' + s + '"'
    out = ['"']
    for ch in s:
        c = ord(ch)
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif c < 0x20 or c == 0x7F or 0xDC80 <= c <= 0xDCFF:
            out.append(f"\\x{c & 0xFF:02x}")  # a control byte, or a raw byte (surrogate escape)
        elif c < 0x80 or (not ascii_only and ch.isprintable()):
            out.append(ch)
        elif 0xD800 <= c <= 0xDFFF:
            out.append("\\ufffd")  # a lone surrogate is no Go rune: RuneError
        elif c > 0xFFFF:
            out.append(f"\\U{c:08x}")
        else:
            out.append(f"\\u{c:04x}")
    out.append('"')
    return "".join(out)


# -- FormatFloat ----------------------------------------------------------------------------------

def _shortest_digits(f: float) -> tuple[str, int]:
    """The shortest decimal digits that read back as ``abs(f)`` (f != 0) and the position of
    the decimal point (value = 0.<digits> * 10**dp); Python's repr is shortest, as Go's is."""
    mant, _, exp = repr(abs(f)).partition("e")
    intpart, _, frac = mant.partition(".")
    all_digits = intpart + frac
    digits = all_digits.lstrip("0")
    dp = len(intpart) + (int(exp) if exp else 0) - (len(all_digits) - len(digits))
    return digits.rstrip("0") or "0", dp


def format_float(f: float, fmt: str = "g", prec: int = -1) -> str:
    """strconv.FormatFloat(f, fmt, -1, 64) for fmt 'g', 'G', 'e', 'E', 'f': the shortest digits
    that read back as ``f``; 'g' switches to the exponent form when the exponent is < -4 or
    >= 6 (Go's rule for the shortest precision), 'f' never does."""
    if prec != -1 or fmt not in ("g", "G", "e", "E", "f"):
        raise ValueError("format_float models the shortest ('g'/'e'/'f', prec -1) forms only")
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, f) < 0 else ""
    digits, dp = ("0", 1) if f == 0 else _shortest_digits(f)
    exp = dp - 1
    if fmt in "eE" or fmt != "f" and (exp < -4 or exp >= 6):
        e = "E" if fmt in "GE" else "e"
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mant}{e}{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if dp <= 0:
        return sign + "0." + "0" * (-dp) + digits
    if dp >= len(digits):
        return sign + digits + "0" * (dp - len(digits))
    return sign + digits[:dp] + "." + digits[dp:]


# -- ParseUint / ParseInt / Atoi -----------------------------------------------------------------

def _underscore_ok(s: str) -> bool:
    """Underscores only between digits, or between a base prefix and a digit (Go's rule)."""
    if s[:1] in ("+", "-"):
        s = s[1:]
    saw, i, hexa = "^", 0, False  # ^: start, 0: digit or prefix, _: underscore, !: other
    if len(s) >= 2 and s[0] == "0" and s[1] in "bBoOxX":
        i, saw, hexa = 2, "0", s[1] in "xX"
    for c in s[i:]:
        if "0" <= c <= "9" or hexa and c in "abcdefABCDEF":
            saw = "0"
        elif c == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
    return saw != "_"


def _digit(c: str) -> int:
    if "0" <= c <= "9":
        return ord(c) - 48
    if "a" <= c <= "z":
        return ord(c) - 87
    if "A" <= c <= "Z":
        return ord(c) - 55
    return 99


def _check_bits(func: str, s: str, bit_size: int) -> int:
    if bit_size == 0:
        return 64
    if not 0 < bit_size <= 64:
        raise NumError(func, s, f"invalid bit size {bit_size}")
    return bit_size


def parse_uint(s: str, base: int = 10, bit_size: int = 64, *, _func: str = "ParseUint") -> int:
    """strconv.ParseUint: base 0 reads Go's prefixes (0b, 0o, 0x, a leading 0 for octal) and
    underscores; NumError as Go words it (a value too large is ERR_RANGE, seen before any
    later bad digit, as Go scans)."""
    if not s:
        raise NumError(_func, s, ERR_SYNTAX)
    bits = _check_bits(_func, s, bit_size)
    digits, base0 = s, base == 0
    if base0:
        base = 10
        if s[0] == "0":
            base, digits = 8, s[1:]
            if len(s) >= 3 and s[1] in "bBoOxX":
                base, digits = {"b": 2, "o": 8, "x": 16}[s[1].lower()], s[2:]
    elif not 2 <= base <= 36:
        raise NumError(_func, s, f"invalid base {base}")
    limit = (1 << bits) - 1
    if base == 10 and digits.isascii() and digits.isdigit():  # [0-9]+, the common case, at C speed
        n = int(digits)
        if n > limit:
            raise NumError(_func, s, ERR_RANGE)
        return n
    n, underscores = 0, False
    for c in digits:
        if c == "_" and base0:
            underscores = True
            continue
        d = _digit(c)
        if d >= base:
            raise NumError(_func, s, ERR_SYNTAX)
        n = n * base + d
        if n > limit:
            raise NumError(_func, s, ERR_RANGE)
    if underscores and not _underscore_ok(s):
        raise NumError(_func, s, ERR_SYNTAX)
    return n


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def int64_or_none(s: str) -> int | None:
    """ParseInt(s, 10, 64)'s value (Atoi's on 64 bits), or None where it fails, building no
    error: for hot paths that only need to know (a rule's Gt on every node's value)."""
    t = s[1:] if s[:1] in ("+", "-") else s
    if not (t.isascii() and t.isdigit()):  # [+-]?[0-9]+, without a regex
        return None
    v = int(s)
    return v if _INT64_MIN <= v <= _INT64_MAX else None


def parse_int(s: str, base: int = 10, bit_size: int = 64, *, _func: str = "ParseInt") -> int:
    """strconv.ParseInt: an optional sign, then ParseUint's digits, within the signed range."""
    if base == 10 and bit_size in (0, 64):
        v = int64_or_none(s)
        if v is not None:
            return v
    if not s:
        raise NumError(_func, s, ERR_SYNTAX)
    body, neg = s, False
    if s[0] in "+-":
        body, neg = s[1:], s[0] == "-"
    try:
        u = parse_uint(body, base, bit_size, _func=_func)
    except NumError as e:
        raise NumError(_func, s, e.err) from None
    cutoff = 1 << ((bit_size or 64) - 1)
    if (not neg and u >= cutoff) or (neg and u > cutoff):
        raise NumError(_func, s, ERR_RANGE)
    return -u if neg else u


def atoi(s: str) -> int:
    """strconv.Atoi: ParseInt(s, 10, 0) with errors naming Atoi."""
    return parse_int(s, 10, 0, _func="Atoi")


# -- ParseFloat -----------------------------------------------------------------------------------

# compiled on first use (re's cache): most processes never parse a float
_DEC_FLOAT = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_HEX_FLOAT = r"0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+"


def parse_float(s: str) -> float:
    """strconv.ParseFloat(s, 64): Go's decimal and hexadecimal (p exponent required) float
    syntax with underscores between digits, "inf"/"infinity" (signed) and "nan" in any case;
    a value beyond float64's range is ERR_RANGE (Go returns ±Inf with it)."""
    sign, body = 1.0, s
    if s[:1] in ("+", "-"):
        sign, body = (-1.0 if s[0] == "-" else 1.0), s[1:]
    low = body.lower()
    if low in ("inf", "infinity"):
        return sign * math.inf
    if low == "nan" and body is s:
        return math.nan
    if "_" in body:
        if not _underscore_ok(s):
            raise NumError("ParseFloat", s, ERR_SYNTAX)
        body = body.replace("_", "")
    if re.fullmatch(_HEX_FLOAT, body):
        try:
            f = float.fromhex(body)
        except OverflowError:
            raise NumError("ParseFloat", s, ERR_RANGE) from None
    elif re.fullmatch(_DEC_FLOAT, body):
        f = float(body)
    else:
        raise NumError("ParseFloat", s, ERR_SYNTAX)
    if math.isinf(f):
        raise NumError("ParseFloat", s, ERR_RANGE)
    return sign * f
