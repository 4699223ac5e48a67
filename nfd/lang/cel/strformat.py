"""``string.format(list)`` as Kubernetes enables it (cel-go ext.Strings version 2, locale en_US).

Clauses: ``%s %d %f %e %b %x %X %o`` and ``%%``, with an optional precision (``%.2f``). The
output matches cel-go's, quirks included: ``%f`` groups thousands (``1,234.50``) and prints
infinities as ``∞``; ``%e`` prints ``1.234500×10⁰³`` and takes the precision as a width; list
and map elements print with CEL quoting and doubles at six decimals.

A constant format string applied to a list literal is checked at compile time against the
elements' static types (``check``), as Kubernetes' validator does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from nfd.lang.cel.values import CelError, type_name
from nfd.lang.gostd.strconv import format_float as format_double
from nfd.lang.gostd.strconv import quote as go_quote

DEFAULT_PRECISION = 6
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


class FormatError(CelError):
    pass


# -- the clause parser shared by run time and compile time -------------------------------------

Clause = Callable[[int, str, int | None], str]  # (argument index, verb, precision) -> text


def _interpolate(fmt: str, size: int, clause: Clause, *, runtime: bool) -> tuple[str, int]:
    """Walk ``fmt``; returns (text, clauses seen). Errors are cel-go's, in cel-go's order."""
    out: list[str] = []
    i, arg, n = 0, 0, len(fmt)
    while i < n:
        c = fmt[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        if i + 1 < n and fmt[i + 1] == "%":
            out.append("%")
            i += 2
            continue
        if runtime and arg >= size:
            raise FormatError(f"index {arg} out of range")
        if i + 1 >= n:
            raise FormatError("unexpected end of string")
        if arg >= size:
            raise FormatError(f"index {arg} out of range")
        j = i + 1
        precision: int | None = None
        if fmt[j] == ".":
            j += 1
            start = j
            while True:
                if j >= n:
                    raise FormatError("could not parse formatting clause: error while parsing precision: "
                                      "could not find end of precision specifier")
                if not ("0" <= fmt[j] <= "9"):
                    break
                j += 1
            digits = fmt[start:j]
            if not digits:
                raise FormatError('could not parse formatting clause: error while parsing precision: error while '
                                  'converting precision to integer: strconv.Atoi: parsing "": invalid syntax')
            precision = int(digits)
        verb = fmt[j]
        if verb not in "sdfebxXo":
            raise FormatError(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')
        try:
            out.append(clause(arg, verb, precision))
        except FormatError as e:
            raise FormatError(f"error during formatting: {e}") from None
        i = j + 1
        arg += 1
    return "".join(out), arg


# -- run time ----------------------------------------------------------------------------------


def format_string(fmt: str, args: Any) -> str:
    items = sorted(args) if isinstance(args, set | frozenset) else list(args)

    def clause(i: int, verb: str, precision: int | None) -> str:
        return _CLAUSES[verb](items[i], precision, verb)

    return _interpolate(fmt, len(items), clause, runtime=True)[0]


_kind = type_name  # the CEL type name the clauses' errors print


def _bytes_text(b: bytes) -> str:
    try:
        return b.decode()
    except UnicodeDecodeError:
        raise FormatError('could not convert argument "invalid UTF-8 in bytes, cannot convert to string" '
                          "to string") from None


def _string(v: Any, precision: int | None = None, verb: str = "s") -> str:
    k = _kind(v)
    if k == "list":
        return _list(v)
    if k == "map":
        return _map(v)
    if k in ("int", "uint"):
        return str(int(v))
    if k == "double":
        return format_double(v)
    if k == "bool":
        return "true" if v else "false"
    if k == "string":
        return str(v)
    if k == "bytes":
        return _bytes_text(v)
    if k == "null_type":
        return "null"
    raise FormatError("string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, "
                      f"types, durations, and timestamps, was given {k}")


def _decimal(v: Any, precision: int | None = None, verb: str = "d") -> str:
    if _kind(v) not in ("int", "uint"):
        raise FormatError(f"decimal clause can only be used on integers, was given {_kind(v)}")
    return str(int(v))


_FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _float_arg(v: Any, what: str) -> float:
    if type(v) is str and v in _FLOAT_WORDS:
        return _FLOAT_WORDS[v]
    if type(v) is not float:
        raise FormatError(f"{what} clause can only be used on doubles, was given {_kind(v)}")
    return float(v)


def _special(d: float) -> str | None:
    if math.isnan(d):
        return "NaN"
    if math.isinf(d):
        return "∞" if d > 0 else "-∞"
    return None


def _fixed(v: Any, precision: int | None, verb: str = "f") -> str:
    d = _float_arg(v, "fixed-point")
    p = DEFAULT_PRECISION if precision is None else precision
    special = _special(d)
    if special is not None:
        return special
    return f"{(d if d != 0 else 0.0):,.{p}f}"  # en_US grouping; x/text drops the sign of -0


def _scientific(v: Any, precision: int | None, verb: str = "e") -> str:
    d = _float_arg(v, "scientific")
    width = DEFAULT_PRECISION if precision is None else precision  # cel-go passes it as a width
    text = _special(d)
    if text is None:
        mant, _, exp = f"{(d if d != 0 else 0.0):.{DEFAULT_PRECISION}e}".partition("e")
        e = int(exp)
        text = f"{mant}×10{'⁻' if e < 0 else ''}{f'{abs(e):02d}'.translate(_SUPERSCRIPT)}"
    return text.rjust(width)


def _go_int(v: int, base: str) -> str:
    digits = format(abs(v), base)
    return "-" + digits if v < 0 else digits


def _binary(v: Any, precision: int | None = None, verb: str = "b") -> str:
    k = _kind(v)
    if k == "bool":
        return "1" if v else "0"
    if k not in ("int", "uint"):
        raise FormatError(f"only integers and bools can be formatted as binary, was given {k}")
    return _go_int(int(v), "b")


def _hex(v: Any, precision: int | None, verb: str) -> str:
    k = _kind(v)
    if k == "string":
        out = str(v).encode().hex()
    elif k == "bytes":
        out = bytes(v).hex()
    elif k in ("int", "uint"):
        out = _go_int(int(v), "x")
    else:
        raise FormatError(f"only integers, byte buffers, and strings can be formatted as hex, was given {k}")
    return out.upper() if verb == "X" else out


def _octal(v: Any, precision: int | None = None, verb: str = "o") -> str:
    if _kind(v) not in ("int", "uint"):
        raise FormatError(f"octal clause can only be used on integers, was given {_kind(v)}")
    return _go_int(int(v), "o")


_CLAUSES: dict[str, Callable[[Any, int | None, str], str]] = {
    "s": _string, "d": _decimal, "f": _fixed, "e": _scientific, "b": _binary, "x": _hex, "X": _hex, "o": _octal,
}


def _member(v: Any) -> str:
    """A list element or map value: formatted by its type, then quoted as CEL would write it."""
    k = _kind(v)
    if k in ("int", "uint"):
        return str(int(v))
    if k == "double":
        if math.isnan(v) or math.isinf(v):
            return go_quote("NaN" if math.isnan(v) else ("+Inf" if v > 0 else "-Inf"))
        return f"{v:.{DEFAULT_PRECISION}f}"
    if k in ("string", "bytes", "bool", "null_type"):
        s = _string(v)
        return go_quote(s) if k == "string" else ("b" + go_quote(s) if k == "bytes" else s)
    if k == "list":
        return _list(v)
    if k == "map":
        return _map(v)
    raise FormatError(f"no formatting function for {k}")


def _list(v: Any) -> str:
    items = sorted(v) if isinstance(v, set | frozenset) else v
    return "[" + ", ".join(_member(x) for x in items) + "]"


def _map(m: dict[Any, Any]) -> str:
    pairs = []
    for key, value in m.items():
        k = _kind(key)
        if k == "string":
            ks = go_quote(key)
        elif k == "bool":
            ks = "true" if key else "false"
        elif k in ("int", "uint"):
            ks = str(int(key))
        else:
            raise FormatError(f"no formatting function for map key of type {k}")
        pairs.append((ks, _member(value)))
    pairs.sort(key=lambda p: p[0].encode())
    return "{" + ", ".join(f"{k}:{v}" for k, v in pairs) + "}"


# -- compile time ------------------------------------------------------------------------------

# A static argument: (CEL type name kind: "int", "list", ... or "dyn", its literal children's
# shapes when it is a list or map literal)
Shape = tuple[str, list["Shape"] | None]

_STRING_KINDS = {"list", "map", "int", "uint", "double", "bool", "string", "timestamp", "bytes", "duration",
                 "type", "null_type", "dyn"}
_ALLOWED = {"d": {"int", "uint"}, "f": {"double", "string"}, "e": {"double", "string"},
            "b": {"int", "uint", "bool"}, "x": {"int", "uint", "string", "bytes"},
            "X": {"int", "uint", "string", "bytes"}, "o": {"int", "uint"}}
_WHAT = {"d": "decimal clause can only be used on integers", "f": "fixed-point clause can only be used on doubles",
         "e": "scientific clause can only be used on doubles",
         "b": "only integers and bools can be formatted as binary",
         "x": "only integers, byte buffers, and strings can be formatted as hex",
         "X": "only integers, byte buffers, and strings can be formatted as hex",
         "o": "octal clause can only be used on integers"}


def _bad_string_shape(s: Shape) -> str | None:
    kind, children = s
    if kind not in _STRING_KINDS:
        return kind
    for c in children or []:
        bad = _bad_string_shape(c)
        if bad is not None:
            return bad
    return None


def check(fmt: str, args: list[Shape]) -> str | None:
    """The compile-time error of ``fmt.format([args...])``, or None."""

    def clause(i: int, verb: str, precision: int | None) -> str:
        kind = args[i][0]
        if verb == "s":
            bad = _bad_string_shape(args[i])
            if bad is not None:
                raise FormatError("string clause can only be used on strings, bools, bytes, ints, doubles, maps, "
                                  f"lists, types, durations, and timestamps, was given {bad}")
        elif kind != "dyn" and kind not in _ALLOWED[verb]:
            raise FormatError(f"{_WHAT[verb]}, was given {kind}")
        return ""

    try:
        _, seen = _interpolate(fmt, len(args), clause, runtime=False)
    except FormatError as e:
        return str(e)
    if len(args) > seen:
        return f"too many arguments supplied to string.format (expected {seen}, got {len(args)})"
    return None
