"""Go value semantics for plain Python data: truth, kinds, type names and `%v` printing.

Data is JSON-like: None (nil), bool, int, float, str, list, dict. Go distinctions that
Python lacks (int vs int64, []string vs []interface{}) collapse to the Go types that
template data and Sprig results most often have.
"""

from __future__ import annotations

import math
from typing import Any

from nfd.common.goquote import go_quote as go_quote  # strconv.Quote, shared with the logs


class GoObject:
    """A non-map Go value with fields (e.g. *semver.Version); printed via its String method."""

    type_name = "struct"

    def go_string(self) -> str:
        return ""

    def field(self, name: str) -> Any:
        raise KeyError(name)

    def method(self, name: str) -> Any:
        """The funcs.Method called `name`, or None (Go: can't evaluate field)."""
        return None

    def go_syntax(self) -> str:
        """fmt's %#v."""
        return self.go_string()


class TypedList(list):  # type: ignore[type-arg]
    """A list that remembers the Go slice type a function returned ([]string, []int)."""

    go_type = "[]interface {}"


class StringList(TypedList):
    go_type = "[]string"


class IntList(TypedList):
    go_type = "[]int"


class TypedMap(dict):  # type: ignore[type-arg]
    """A map of a Go type other than map[string]interface{} (NFD's template data is
    ``map[string]domainMatchedFeatures`` down to ``MatchedElement`` string maps): `%T` names it,
    ``index`` of a missing key gives the element type's zero value, Sprig's
    map[string]interface{} functions reject it, and a nil one marshals as JSON null.
    Subclasses fix the type in class attributes, so building one is a plain dict copy."""

    go_type = "map[string]interface {}"
    zero: Any = None
    go_nil = False

    def __init__(self, data: Any = (), *, go_type: str, zero: Any = None, go_nil: bool = False) -> None:
        super().__init__(data)
        self.go_type = go_type
        self.zero = zero
        self.go_nil = go_nil


def typed_list(items: list[Any], go_type: str, *, go_nil: bool = False) -> TypedList:
    """A slice of a named element type; ``go_nil``: a nil slice (JSON null, otherwise empty)."""
    out = TypedList(items)
    out.go_type = go_type
    out.go_nil = go_nil  # type: ignore[attr-defined]
    return out


class Int64(int):
    """An int64 result (Sprig arithmetic); behaves as an int."""

    go_type = "int64"


class Uint64(int):
    """A uint64 result (semver's Major/Minor/Patch)."""

    go_type = "uint64"


class Uint8(int):
    """A byte (indexing a string yields one)."""

    go_type = "uint8"


def is_true(v: Any) -> bool:
    """Go template truth: false, 0, nil, and empty string/list/map are false."""
    if v is None:
        return False
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float, complex)):
        return v != 0
    if isinstance(v, (str, list, tuple, dict)):
        return len(v) > 0
    return True


def type_name(v: Any) -> str:
    """The Go type name `%T` would print for a value of this shape."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return getattr(v, "go_type", "int")
    if isinstance(v, float):
        return "float64"
    if isinstance(v, complex):
        return "complex128"
    if isinstance(v, str):
        return "string"
    if isinstance(v, TypedList):
        return v.go_type
    if isinstance(v, (list, tuple)):
        return "[]interface {}"
    if isinstance(v, TypedMap):
        return v.go_type
    if isinstance(v, dict):
        return "map[string]interface {}"
    if isinstance(v, GoObject):
        return v.type_name
    return type(v).__name__


def kind_name(v: Any) -> str:
    """reflect.Kind name as Sprig's kindOf reports it."""
    if v is None:
        return "invalid"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return str(getattr(v, "go_kind", None) or getattr(v, "go_type", "int"))
    if isinstance(v, float):
        return "float64"
    if isinstance(v, complex):
        return "complex128"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (list, tuple)):
        return "slice"
    if isinstance(v, dict):
        return "map"
    if isinstance(v, GoObject):
        return "ptr" if v.type_name.startswith("*") else "struct"
    return "struct"


def _shortest_digits(f: float) -> tuple[str, int]:
    """Shortest round-trip decimal digits and decimal-point position (Go's digs.d, digs.dp)."""
    r = repr(abs(f))
    mant, _, exp = r.partition("e")
    e = int(exp) if exp else 0
    intpart, _, frac = mant.partition(".")
    digits = (intpart + frac).lstrip("0")
    dp = len(intpart) + e
    if not digits:
        return "0", 1
    # Leading zeros stripped from the integer part shift the decimal point.
    lead = len(intpart + frac) - len((intpart + frac).lstrip("0"))
    dp -= lead
    digits = digits.rstrip("0") or "0"
    return digits, dp


def format_float_g(f: float, *, upper: bool = False) -> str:
    """Go's strconv.FormatFloat(f, 'g', -1, 64): shortest digits, %e when exp < -4 || exp >= 6."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    sign = "-" if f < 0 or (f == 0 and math.copysign(1.0, f) < 0) else ""
    if f == 0:
        return sign + "0"
    digits, dp = _shortest_digits(f)
    exp = dp - 1
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        es = "-" if exp < 0 else "+"
        ae = abs(exp)
        return f"{sign}{mant}{'E' if upper else 'e'}{es}{ae:02d}"
    if dp <= 0:
        return sign + "0." + "0" * (-dp) + digits
    if dp >= len(digits):
        return sign + digits + "0" * (dp - len(digits))
    return sign + digits[:dp] + "." + digits[dp:]


def format_value(v: Any) -> str:
    """fmt's `%v` for a value (strings raw, nil as <nil>, maps with sorted keys)."""
    if isinstance(v, str):
        return v
    if v is None:
        return "<nil>"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return v.go_string() if isinstance(v, GoObject) else str(v)  # time.Month... are Stringers
    if isinstance(v, float):
        return format_float_g(v)
    if isinstance(v, complex):
        im = format_float_g(v.imag)
        return f"({format_float_g(v.real)}{'' if im[0] in '+-' else '+'}{im}i)"
    if isinstance(v, (list, tuple)):
        return "[" + " ".join(format_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "map[" + " ".join(f"{format_value(k)}:{format_value(v[k])}" for k in sorted_keys(v)) + "]"
    if isinstance(v, GoObject):
        return v.go_string()
    return str(v)


def sorted_keys(d: dict[Any, Any]) -> list[Any]:
    """Map keys in Go's fmt/range order (strings byte-wise, numbers numerically)."""
    try:
        return sorted(d)
    except TypeError:
        return sorted(d, key=lambda k: (type(k).__name__, str(k)))


def print_value(v: Any) -> str:
    """What an action `{{ pipeline }}` writes: like %v but a nil result is `<no value>`."""
    if isinstance(v, str):
        return v
    if v is None:
        return "<no value>"
    return format_value(v)


def go_bytes(s: str) -> bytes:
    """A Go string's bytes: a string holding raw bytes (b64dec of non-UTF-8 data) keeps them
    as surrogate escapes (U+DC80..U+DCFF), as Python's "surrogateescape" does."""
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return s.encode("utf-8", "replace")


def from_go_bytes(b: bytes) -> str:
    """A Go string from bytes: invalid UTF-8 is kept as surrogate escapes (see go_bytes)."""
    return b.decode("utf-8", "surrogateescape")


def valid_text(s: str) -> str:
    """Output text: raw bytes become U+FFFD, as Go's JSON and any UTF-8 consumer see them."""
    if s.isascii():
        return s
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in s)


def go_len(v: Any) -> int:
    """len() as Go counts it: bytes for strings."""
    if isinstance(v, str):
        return len(v.encode("utf-8", "surrogateescape")) if not v.isascii() else len(v)
    return len(v)
