"""encoding/json output for plain values (Go's float format, HTML escaping, sorted map keys)."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from .errors import FuncError
from .values import GoObject, sorted_keys


def _float(f: float) -> str:
    if math.isnan(f) or math.isinf(f):
        raise FuncError(f"json: unsupported value: {'NaN' if math.isnan(f) else '+Inf' if f > 0 else '-Inf'}")
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    a = abs(f)
    if 1e-6 <= a < 1e21:
        r = repr(f)
        if "e" in r or "E" in r:
            # Python switches to exponent form at 1e16; expand to plain digits like Go's 'f'.

            r = format(Decimal(r), "f")
        if r.endswith(".0"):
            r = r[:-2]
        return r
    r = repr(f)  # shortest digits, exponent form
    mant, _, exp = r.partition("e")
    if mant.endswith(".0"):
        mant = mant[:-2]
    e = int(exp)
    return f"{mant}e{'-' if e < 0 else '+'}{abs(e)}"


def _string(s: str, escape_html: bool) -> str:
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif c < 0x20:
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch) or f"\\u{c:04x}")
        elif escape_html and ch in "<>&" or c in (0x2028, 0x2029):
            out.append(f"\\u{c:04x}")
        elif 0xD800 <= c <= 0xDFFF:
            out.append("\\ufffd")  # invalid UTF-8 (a raw byte) is written as the escape
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def marshal(v: Any, *, escape_html: bool = True, indent: str = "", _level: int = 0) -> str:
    if _level > 1000:
        raise FuncError("json: unsupported value: encountered a cycle")
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, str):
        return _string(v, escape_html)
    nl = "\n" + indent * (_level + 1) if indent else ""
    end = "\n" + indent * _level if indent else ""
    if isinstance(v, (list, tuple)):
        if not v:
            return "null" if getattr(v, "go_nil", False) else "[]"
        items = [marshal(x, escape_html=escape_html, indent=indent, _level=_level + 1) for x in v]
        return "[" + nl + ("," + nl).join(items) + end + "]"
    if isinstance(v, dict):
        if not v:
            return "null" if getattr(v, "go_nil", False) else "{}"
        sep = ": " if indent else ":"
        items = [
            _string(str(k), escape_html) + sep + marshal(v[k], escape_html=escape_html, indent=indent, _level=_level + 1)
            for k in sorted_keys(v)
        ]
        return "{" + nl + ("," + nl).join(items) + end + "}"
    if isinstance(v, GoObject):  # *semver.Version marshals as its string form, time.Time as RFC 3339
        return _string(v.go_json() if hasattr(v, "go_json") else v.go_string(), escape_html)
    if isinstance(v, complex):
        raise FuncError("json: unsupported type: complex128")
    raise FuncError(f"json: unsupported type: {type(v).__name__}")


class UnmarshalError(FuncError):
    """A number out of float64 range: Go stores nil there, decodes the rest and fails."""

    def __init__(self, message: str, partial: Any) -> None:
        super().__init__(message)
        self.partial = partial


def unmarshal(s: str) -> Any:
    """json.Unmarshal into interface{}: every number becomes float64, invalid surrogate escapes
    become U+FFFD."""
    overflow: list[str] = []

    def number(text: str) -> Any:
        f = float(text)
        if math.isinf(f):
            overflow.append(text)
            return None
        return f

    try:
        v = json.loads(s, parse_int=number, parse_float=number, parse_constant=_bad_constant)
    except ValueError as e:
        raise FuncError(_go_json_error(s, e)) from None
    except RecursionError:
        raise FuncError("exceeded max depth") from None
    if "\\u" in s or "\\U" in s:
        v = _fix_surrogates(v)
    if overflow:
        raise UnmarshalError(f"json: cannot unmarshal number {overflow[0]} into Go value of type float64", v)
    return v


def _fix_surrogates(v: Any) -> Any:
    if isinstance(v, str):
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in v) if not v.isascii() else v
    if isinstance(v, list):
        return [_fix_surrogates(x) for x in v]
    if isinstance(v, dict):
        return {_fix_surrogates(k): _fix_surrogates(x) for k, x in v.items()}
    return v


def _bad_constant(name: str) -> Any:
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


def _go_json_error(s: str, e: ValueError) -> str:
    if not s.strip():
        return "unexpected end of JSON input"
    msg = str(e)
    if msg.startswith("invalid character"):
        return msg
    if isinstance(e, json.JSONDecodeError):
        if e.pos >= len(s):
            return "unexpected end of JSON input"
        return f"invalid character {_char(s[e.pos])} looking for beginning of value"
    return msg


def _char(c: str) -> str:
    if c == "'":
        return "'\\''"
    if c == '"':
        return "'\"'"
    return f"'{c}'"
