"""CEL functions and operators: overload signatures for the checker and their Python implementations.

Each overload is ``(receiver type or None, parameter types, result type, implementation)``. The
implementation receives already evaluated arguments (receiver first) and raises CelError.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from fractions import Fraction
from typing import Any, NamedTuple

from nfd.lang.cel import strformat
from nfd.lang.cel.types import (
    BOOL,
    BYTES,
    DOUBLE,
    DYN,
    INT,
    QUANTITY,
    STRING,
    UINT,
    VERSION,
    Type,
    list_of,
    map_of,
)
from nfd.lang.cel.values import (
    INT64_MAX,
    INT64_MIN,
    MISSING,
    CelError,
    KeyedMap,
    Quantity,
    UInt,
    Version,
    check_int,
    check_uint,
    type_name,
)
from nfd.lang.goregex import GoRegexError, GoRegexp, compile_go
from nfd.lang.gostd import strconv
from nfd.lang.gostd import url as gourl


class Overload(NamedTuple):
    receiver: Type | None
    params: tuple[Type, ...]
    result: Type
    impl: Callable[..., Any]
    # steps an operation that builds a value costs, from its arguments and before it runs (the
    # size of the result), so `[s].map(t, t + t).map(t, t + t)...` cannot blow up
    cost: Callable[..., int] | None = None


LIST_DYN = list_of(DYN)
MAP_DYN = map_of(DYN, DYN)
LIST_STRING = list_of(STRING)

# -- equality -----------------------------------------------------------------------------------

_NUM = (int, UInt, float)
_LISTS = (list, tuple, set, frozenset)


def cel_eq(a: Any, b: Any) -> bool:
    """Heterogeneous equality (as cel-go and Kubernetes): numbers by value, other type mixes false."""
    ta, tb = type(a), type(b)
    if ta is tb and ta in _PLAIN_EQ:
        return bool(a == b)
    if ta is tb is Optional:
        return a.has_value == b.has_value and (not a.has_value or cel_eq(a.value, b.value))
    if ta in _NUM and tb in _NUM:
        return bool(a == b)
    if isinstance(a, _LISTS) and isinstance(b, _LISTS):
        if len(a) != len(b):
            return False
        la = sorted(a) if isinstance(a, set | frozenset) else a
        lb = sorted(b) if isinstance(b, set | frozenset) else b
        return all(cel_eq(x, y) for x, y in zip(la, lb, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        if len(a) != len(b):
            return False
        for k, v in a.items():
            found = _map_find(b, k)
            if found is _MISSING or not cel_eq(v, found):
                return False
        return True
    if a is None or b is None:
        return a is b
    return False


_MISSING = MISSING
_PLAIN_EQ: tuple[type, ...] = (str, int, bool, float, bytes, UInt, Version, Quantity)


def _map_find(m: dict[Any, Any], k: Any) -> Any:
    """``m[k]`` with cel-go's key semantics, else _MISSING (see values.make_map for the maps)."""
    if type(k) is str:  # rules' feature maps: a plain lookup (DomainMap.get reads absent as {})
        return m.get(k, _MISSING)
    if type(m) is KeyedMap:
        return m.find(k)
    if type(k) is bool:
        return _MISSING  # a plain dict has no bool key (make_map puts those in a KeyedMap)
    try:
        return m.get(k, _MISSING)  # numbers find equal numbers of another type, as in cel-go
    except TypeError:  # an unhashable key (a list) is in no map
        return _MISSING


def map_get(m: dict[Any, Any], k: Any) -> Any:
    v = _map_find(m, k)
    if v is _MISSING:
        raise CelError(f"no such key: {k!r}")
    return v


def map_has(m: dict[Any, Any], k: Any) -> bool:
    if type(k) is str:
        # presence, also for a map whose reads default (DRA's device.attributes, nfd.dra.slices.DomainMap)
        return k in m
    return _map_find(m, k) is not _MISSING


def cel_in(x: Any, c: Any) -> bool:
    if isinstance(c, dict):
        return map_has(c, x)
    if isinstance(c, set | frozenset):
        if type(x) is str:
            return x in c
        return any(cel_eq(x, e) for e in c)
    if isinstance(c, list | tuple):
        return any(cel_eq(x, e) for e in c)
    raise CelError(f"no matching overload for 'in' applied to ({type_name(x)}, {type_name(c)})")


def list_index(lst: Any, i: Any) -> Any:
    if type(i) is float:
        if not i.is_integer():
            raise CelError(f"invalid list index {i}")
        i = int(i)
    if type(i) not in (int, UInt):
        raise CelError(f"invalid list index type {type_name(i)}")
    if isinstance(lst, set | frozenset):
        lst = sorted(lst)
    if i < 0 or i >= len(lst):
        raise CelError(f"index out of range: {i}")
    return lst[i]


def as_list(v: Any) -> list[Any] | tuple[Any, ...]:
    """Lists keep their order; a flag set becomes a sorted list where order matters."""
    if isinstance(v, set | frozenset):
        return sorted(v)
    return v  # type: ignore[no-any-return]


# -- arithmetic ---------------------------------------------------------------------------------


def _add_int(a: int, b: int) -> int:
    return check_int(a + b)


def _sub_int(a: int, b: int) -> int:
    return check_int(a - b)


def _mul_int(a: int, b: int) -> int:
    return check_int(a * b)


def _div_int(a: int, b: int) -> int:
    if b == 0:
        raise CelError("division by zero")
    q = abs(a) // abs(b)  # truncate toward zero like Go
    return check_int(q if (a < 0) == (b < 0) else -q)


def _mod_int(a: int, b: int) -> int:
    if b == 0:
        raise CelError("modulus by zero")
    r = abs(a) % abs(b)  # result takes the dividend's sign like Go
    return -r if a < 0 else r


def _add_uint(a: int, b: int) -> UInt:
    return check_uint(a + b)


def _sub_uint(a: int, b: int) -> UInt:
    return check_uint(a - b)


def _mul_uint(a: int, b: int) -> UInt:
    return check_uint(a * b)


def _div_uint(a: int, b: int) -> UInt:
    if b == 0:
        raise CelError("division by zero")
    return UInt(a // b)


def _mod_uint(a: int, b: int) -> UInt:
    if b == 0:
        raise CelError("modulus by zero")
    return UInt(a % b)


def _div_double(a: float, b: float) -> float:
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _mul_double(a: float, b: float) -> float:
    return a * b


def _neg_int(a: int) -> int:
    return check_int(-a)


def _add_list(a: Any, b: Any) -> list[Any]:
    return [*as_list(a), *as_list(b)]


# -- conversions --------------------------------------------------------------------------------

def parse_int(s: str) -> int:
    """``int(string)``: strconv.ParseInt(s, 10, 64), as cel-go converts."""
    try:
        return strconv.parse_int(s, 10, 64)
    except strconv.NumError as e:
        raise CelError(f"cannot convert {s!r} to int: {e.err}") from None


def _int_from_double(d: float) -> int:
    if math.isnan(d) or math.isinf(d) or not -(2.0**63) < d < 2.0**63:  # exclusive, like cel-go
        raise CelError("double out of int range")
    return int(d)


def _int_from_uint(u: int) -> int:
    if u > INT64_MAX:
        raise CelError("uint out of int range")
    return int(u)


def _uint_from_string(s: str) -> UInt:
    try:
        return UInt(strconv.parse_uint(s, 10, 64))
    except strconv.NumError as e:
        raise CelError(f"cannot convert {s!r} to uint: {e.err}") from None


def _uint_from_int(i: int) -> UInt:
    if i < 0:
        raise CelError("int out of uint range")
    return UInt(i)


def _uint_from_double(d: float) -> UInt:
    if math.isnan(d) or math.isinf(d) or not 0 <= d < 2.0**64:
        raise CelError("double out of uint range")
    return UInt(int(d))


def _double_from_string(s: str) -> float:
    try:
        return strconv.parse_float(s)
    except strconv.NumError as e:
        raise CelError(f"cannot convert {s!r} to double: {e.err}") from None


def format_double(d: float) -> str:
    """Go's ``strconv.FormatFloat(d, 'g', -1, 64)``, which cel-go's ``string(double)`` uses."""
    return strconv.format_float(d)


def _string_from_bytes(b: bytes) -> str:
    try:
        return b.decode()
    except UnicodeDecodeError:
        raise CelError("invalid UTF-8 in bytes") from None


_BOOL_TEXT = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
              "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def _bool_from_string(s: str) -> bool:
    try:
        return _BOOL_TEXT[s]
    except KeyError:
        raise CelError(f"cannot convert {s!r} to bool") from None


# -- strings ------------------------------------------------------------------------------------

def compile_regex(pattern: str) -> GoRegexp:
    """Compile a pattern for ``matches()``: a Go regexp on RE2, as cel-go's (nfd.lang.goregex)."""
    try:
        return compile_go(pattern)
    except GoRegexError as e:
        raise CelError(f"invalid regular expression: {e}") from None


# matches() charges the expression's step budget for the text RE2 scans (linear in it).
REGEX_CHARS_PER_STEP = 64


def _matches_cost(s: Any, pattern: Any) -> int:
    return len(s) // REGEX_CHARS_PER_STEP if isinstance(s, str) else 0


def _matches(s: str, pattern: str) -> bool:
    return compile_regex(pattern).match_string(s)


def _lower_ascii(s: str) -> str:
    return s.translate(_LOWER)


def _upper_ascii(s: str) -> str:
    return s.translate(_UPPER)


_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_UPPER = {c: c - 32 for c in range(ord("a"), ord("z") + 1)}


def _split(s: str, sep: str, n: int = -1) -> list[str]:
    if n == 0:
        return []
    if sep == "":
        parts = list(s)
        if n > 0 and len(parts) > n:
            parts = [*parts[: n - 1], "".join(parts[n - 1:])]
        return parts
    return s.split(sep, n - 1 if n > 0 else -1)


def _replace(s: str, old: str, new: str, n: int = -1) -> str:
    return s.replace(old, new, n if n >= 0 else -1)


def _index_of(s: str, sub: str, start: int = 0) -> int:
    if start < 0 or start > len(s):
        raise CelError(f"index out of range: {start}")
    return s.find(sub, start)


def _last_index_of(s: str, sub: str, end: int | None = None) -> int:
    if end is None:
        return s.rfind(sub)
    if end < 0 or end >= len(s) and not (end == 0 and s == ""):
        raise CelError(f"index out of range: {end}")
    return s.rfind(sub, 0, end + len(sub))


def _substring(s: str, start: int, end: int | None = None) -> str:
    e = len(s) if end is None else end
    if start < 0 or start > len(s) or e < start or e > len(s):
        raise CelError(f"substring out of range: {start}:{e}")
    return s[start:e]


def _char_at(s: str, i: int) -> str:
    if i < 0 or i > len(s):
        raise CelError(f"index out of range: {i}")
    return s[i:i + 1]


def _join(lst: Any, sep: str = "") -> str:
    items = as_list(lst)
    for x in items:
        if type(x) is not str:
            raise CelError("join: list contains a non-string element")
    return sep.join(items)


# Go's unicode.IsSpace, which cel-go's trim() uses (str.strip() would also trim \x1c-\x1f)
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"


def _trim(s: str) -> str:
    return s.strip(_GO_SPACE)


def _size(v: Any) -> int:
    return len(v)


# -- version and quantity -----------------------------------------------------------------------


def _is_version(s: str) -> bool:
    try:
        Version.parse(s)
    except CelError:
        return False
    return True


def _is_quantity(s: str) -> bool:
    try:
        Quantity.parse(s)
    except CelError:
        return False
    return True


def _compare(a: Any, b: Any) -> int:
    return -1 if a < b else (1 if a > b else 0)


def _q_from(v: Any) -> Fraction:
    return v.value if isinstance(v, Quantity) else Fraction(v)


def _q_add(a: Quantity, b: Any) -> Quantity:
    v = a.value + _q_from(b)
    return Quantity(v, _fraction_text(v))


def _q_sub(a: Quantity, b: Any) -> Quantity:
    v = a.value - _q_from(b)
    return Quantity(v, _fraction_text(v))


def _fraction_text(v: Fraction) -> str:
    return str(v.numerator) if v.denominator == 1 else str(float(v))


def _q_as_integer(q: Quantity) -> int:
    if q.value.denominator != 1 or not INT64_MIN <= q.value.numerator <= INT64_MAX:
        raise CelError(f"quantity {q.text!r} is not an int64 integer")
    return q.value.numerator


def _q_is_integer(q: Quantity) -> bool:
    return q.value.denominator == 1 and INT64_MIN <= q.value.numerator <= INT64_MAX


def _q_sign(q: Quantity) -> int:
    return (q.value > 0) - (q.value < 0)


# -- the table ----------------------------------------------------------------------------------


def _o(recv: Type | None, params: tuple[Type, ...], result: Type, impl: Callable[..., Any],
       cost: Callable[..., int] | None = None) -> Overload:
    return Overload(recv, params, result, impl, cost)


def _concat_size(a: Any, b: Any) -> int:
    return len(a) + len(b)


def _replace_size(s: str, old: str, new: str, n: int = -1) -> int:
    count = s.count(old) if old else len(s) + 1
    if n >= 0:
        count = min(count, n)
    return len(s) + count * max(len(new) - len(old), 0)


def _join_size(lst: Any, sep: str = "") -> int:
    return sum(len(x) if type(x) is str else 0 for x in lst) + len(sep) * max(len(lst) - 1, 0)


_ORDER_PAIRS = [(INT, INT), (INT, UINT), (INT, DOUBLE), (UINT, INT), (UINT, UINT), (UINT, DOUBLE),
                (DOUBLE, INT), (DOUBLE, UINT), (DOUBLE, DOUBLE), (STRING, STRING), (BYTES, BYTES),
                (BOOL, BOOL), (VERSION, VERSION), (QUANTITY, QUANTITY)]


def _relation(op: Callable[[Any, Any], bool]) -> list[Overload]:
    return [_o(None, p, BOOL, _lossy(op) if DOUBLE in p and p[0] != p[1] else op) for p in _ORDER_PAIRS]


def _lossy(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """int/uint against double compare as doubles, as cel-go (and the cel-spec tests):
    ``9223372036854775807 < 9223372036854775808.0`` is false, both being 2^63 as doubles."""
    return lambda a, b: op(float(a), float(b))


FUNCTIONS: dict[str, list[Overload]] = {
    "_+_": [
        _o(None, (INT, INT), INT, _add_int), _o(None, (UINT, UINT), UINT, _add_uint),
        _o(None, (DOUBLE, DOUBLE), DOUBLE, operator.add),
        _o(None, (STRING, STRING), STRING, operator.add, _concat_size),
        _o(None, (BYTES, BYTES), BYTES, operator.add, _concat_size),
        _o(None, (LIST_DYN, LIST_DYN), LIST_DYN, _add_list, _concat_size),
    ],
    "_-_": [_o(None, (INT, INT), INT, _sub_int), _o(None, (UINT, UINT), UINT, _sub_uint),
            _o(None, (DOUBLE, DOUBLE), DOUBLE, operator.sub)],
    "_*_": [_o(None, (INT, INT), INT, _mul_int), _o(None, (UINT, UINT), UINT, _mul_uint),
            _o(None, (DOUBLE, DOUBLE), DOUBLE, _mul_double)],
    "_/_": [_o(None, (INT, INT), INT, _div_int), _o(None, (UINT, UINT), UINT, _div_uint),
            _o(None, (DOUBLE, DOUBLE), DOUBLE, _div_double)],
    "_%_": [_o(None, (INT, INT), INT, _mod_int), _o(None, (UINT, UINT), UINT, _mod_uint)],
    "-_": [_o(None, (INT,), INT, _neg_int), _o(None, (DOUBLE,), DOUBLE, operator.neg)],
    "!_": [_o(None, (BOOL,), BOOL, operator.not_)],
    "_<_": _relation(operator.lt),
    "_<=_": _relation(operator.le),
    "_>_": _relation(operator.gt),
    "_>=_": _relation(operator.ge),
    "size": [
        _o(None, (STRING,), INT, _size), _o(None, (BYTES,), INT, _size), _o(None, (LIST_DYN,), INT, _size),
        _o(None, (MAP_DYN,), INT, _size), _o(STRING, (), INT, _size), _o(BYTES, (), INT, _size),
        _o(LIST_DYN, (), INT, _size), _o(MAP_DYN, (), INT, _size),
    ],
    "int": [_o(None, (INT,), INT, int), _o(None, (UINT,), INT, _int_from_uint),
            _o(None, (DOUBLE,), INT, _int_from_double), _o(None, (STRING,), INT, parse_int)],
    "uint": [_o(None, (UINT,), UINT, UInt), _o(None, (INT,), UINT, _uint_from_int),
             _o(None, (DOUBLE,), UINT, _uint_from_double), _o(None, (STRING,), UINT, _uint_from_string)],
    "double": [_o(None, (DOUBLE,), DOUBLE, float), _o(None, (INT,), DOUBLE, float),
               _o(None, (UINT,), DOUBLE, float), _o(None, (STRING,), DOUBLE, _double_from_string)],
    "string": [_o(None, (STRING,), STRING, str), _o(None, (INT,), STRING, str),
               _o(None, (UINT,), STRING, lambda u: str(int(u))), _o(None, (DOUBLE,), STRING, format_double),
               _o(None, (BOOL,), STRING, lambda b: "true" if b else "false"),
               _o(None, (BYTES,), STRING, _string_from_bytes),
               _o(None, (VERSION,), STRING, lambda v: v.text), _o(None, (QUANTITY,), STRING, lambda q: q.text)],
    "bytes": [_o(None, (BYTES,), BYTES, bytes), _o(None, (STRING,), BYTES, str.encode)],
    "bool": [_o(None, (BOOL,), BOOL, bool), _o(None, (STRING,), BOOL, _bool_from_string)],
    "dyn": [_o(None, (DYN,), DYN, lambda x: x)],
    "matches": [_o(None, (STRING, STRING), BOOL, _matches, _matches_cost),
                _o(STRING, (STRING,), BOOL, _matches, _matches_cost)],
    "contains": [_o(STRING, (STRING,), BOOL, operator.contains)],
    "startsWith": [_o(STRING, (STRING,), BOOL, str.startswith)],
    "endsWith": [_o(STRING, (STRING,), BOOL, str.endswith)],
    "lowerAscii": [_o(STRING, (), STRING, _lower_ascii)],
    "upperAscii": [_o(STRING, (), STRING, _upper_ascii)],
    "trim": [_o(STRING, (), STRING, _trim)],
    "split": [_o(STRING, (STRING,), LIST_STRING, _split), _o(STRING, (STRING, INT), LIST_STRING, _split)],
    "replace": [_o(STRING, (STRING, STRING), STRING, _replace, _replace_size),
                _o(STRING, (STRING, STRING, INT), STRING, _replace, _replace_size)],
    "indexOf": [_o(STRING, (STRING,), INT, _index_of), _o(STRING, (STRING, INT), INT, _index_of)],
    "lastIndexOf": [_o(STRING, (STRING,), INT, _last_index_of),
                    _o(STRING, (STRING, INT), INT, _last_index_of)],
    "substring": [_o(STRING, (INT,), STRING, _substring), _o(STRING, (INT, INT), STRING, _substring)],
    "charAt": [_o(STRING, (INT,), STRING, _char_at)],
    "join": [_o(LIST_STRING, (), STRING, _join, _join_size), _o(LIST_STRING, (STRING,), STRING, _join, _join_size)],
    "version": [_o(None, (STRING,), VERSION, Version.parse)],
    "isVersion": [_o(None, (STRING,), BOOL, _is_version)],
    "quantity": [_o(None, (STRING,), QUANTITY, Quantity.parse)],
    "isQuantity": [_o(None, (STRING,), BOOL, _is_quantity)],
    "major": [_o(VERSION, (), INT, lambda v: v.key[0])],
    "minor": [_o(VERSION, (), INT, lambda v: v.key[1])],
    "patch": [_o(VERSION, (), INT, lambda v: v.key[2])],
    "isGreaterThan": [_o(VERSION, (VERSION,), BOOL, operator.gt), _o(QUANTITY, (QUANTITY,), BOOL, operator.gt)],
    "isLessThan": [_o(VERSION, (VERSION,), BOOL, operator.lt), _o(QUANTITY, (QUANTITY,), BOOL, operator.lt)],
    "compareTo": [_o(VERSION, (VERSION,), INT, _compare), _o(QUANTITY, (QUANTITY,), INT, _compare)],
    "add": [_o(QUANTITY, (QUANTITY,), QUANTITY, _q_add), _o(QUANTITY, (INT,), QUANTITY, _q_add)],
    "sub": [_o(QUANTITY, (QUANTITY,), QUANTITY, _q_sub), _o(QUANTITY, (INT,), QUANTITY, _q_sub)],
    "asInteger": [_o(QUANTITY, (), INT, _q_as_integer)],
    "isInteger": [_o(QUANTITY, (), BOOL, _q_is_integer)],
    "asApproximateFloat": [_o(QUANTITY, (), DOUBLE, lambda q: float(q.value))],
    "sign": [_o(QUANTITY, (), INT, _q_sign)],
}

# Standard CEL functions we do not offer: a clear compile error beats "undeclared reference".
UNSUPPORTED_FUNCTIONS = {"type": "type() is not supported", "timestamp": "timestamps are not supported",
                         "duration": "durations are not supported"}

MACROS = {"all", "exists", "exists_one", "existsOne", "map", "filter", "transformList", "transformMap"}
# Kubernetes' two-variable comprehensions: (index, element) for lists, (key, value) for maps
MACROS2 = {"all", "exists", "exists_one", "existsOne", "transformList", "transformMap"}



# -- Kubernetes' CEL libraries ----------------------------------------------------------------------
# Names and semantics of k8s.io/apiserver/pkg/cel/library (semver, lists, regex, ip, cidr, urls)
# and of the cel-go extensions Kubernetes enables (sets, strings.format, optional types),
# checked against the real thing by tests/unit/lang/cel/test_k8s_library.py.

from nfd.lang.cel.types import (  # noqa: E402
    CIDR_T,
    IP_T,
    SEMVER,
    URL_T,
    optional_of,
)
from nfd.lang.cel.values import (  # noqa: E402
    CIDR,
    IP,
    OPTIONAL_NONE,
    URL,
    Optional,
    Semver,
)
from nfd.lang.goregex import find as _go_find  # noqa: E402
from nfd.lang.goregex import find_all as _go_find_all  # noqa: E402


def _as_int64(v: int) -> int:
    """Go's ``types.Int(uint64)``: a number above int64 wraps around, as in Kubernetes."""
    return v - (1 << 64) if v > INT64_MAX else v


def _is_semver(s: str, normalize: bool = False) -> bool:
    try:
        Semver.parse(s, normalize)
    except CelError:
        return False
    return True


# lists -----------------------------------------------------------------------------------------

_SUMMABLE = {INT: (0, _add_int), UINT: (UInt(0), _add_uint), DOUBLE: (0.0, operator.add)}
_COMPARABLE = (INT, UINT, DOUBLE, BOOL, STRING, BYTES)


def _list_sum(zero: Any, add: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    def total(lst: Any) -> Any:
        acc = zero
        for x in as_list(lst):
            if type(x) is not type(zero):
                raise CelError(f"no such overload: {type_name(acc)} + {type_name(x)}")
            acc = add(acc, x)
        return acc

    return total


def _ordered(x: Any, y: Any) -> int:
    """cel-go's Compare between two list elements (numbers compare across types)."""
    if not (type(x) is type(y) or (type(x) in _NUM and type(y) in _NUM and type(x) is not bool
                                   and type(y) is not bool)):
        raise CelError(f"no such overload: compare {type_name(x)} with {type_name(y)}")
    return -1 if x < y else (1 if x > y else 0)


def _is_sorted(lst: Any) -> bool:
    items = as_list(lst)
    return all(_ordered(items[i - 1], items[i]) != 1 for i in range(1, len(items)))


def _list_pick(name: str, prefer: int) -> Callable[[Any], Any]:
    def pick(lst: Any) -> Any:
        items = as_list(lst)
        if not items:
            raise CelError(f"{name} called on empty list")
        best = items[0]
        for x in items[1:]:
            if _ordered(best, x) == prefer:
                best = x
        return best

    return pick


def _list_index_of(lst: Any, item: Any) -> int:
    for i, x in enumerate(as_list(lst)):
        if cel_eq(x, item):
            return i
    return -1


def _list_last_index_of(lst: Any, item: Any) -> int:
    items = as_list(lst)
    for i in range(len(items) - 1, -1, -1):
        if cel_eq(items[i], item):
            return i
    return -1


# regex -----------------------------------------------------------------------------------------


def compile_find_regex(pattern: str) -> GoRegexp:
    """``find``/``findAll`` patterns: Go regexps on RE2, with Kubernetes' error text."""
    try:
        return compile_go(pattern)
    except GoRegexError as e:
        raise CelError(f"Illegal regex: {e}") from None


def _find(s: str, pattern: str) -> str:
    return _go_find(compile_find_regex(pattern), s)


def _find_all(s: str, pattern: str, n: int = -1) -> list[str]:
    return _go_find_all(compile_find_regex(pattern), s, n)


def _find_all_cost(s: Any, pattern: Any, n: Any) -> int:
    return _matches_cost(s, pattern)


# sets ------------------------------------------------------------------------------------------


def _sets_contains(a: Any, b: Any) -> bool:
    items = as_list(a)
    return all(any(cel_eq(x, y) for x in items) for y in as_list(b))


def _sets_equivalent(a: Any, b: Any) -> bool:
    return _sets_contains(a, b) and _sets_contains(b, a)


def _sets_intersects(a: Any, b: Any) -> bool:
    items = as_list(a)
    return any(any(cel_eq(x, y) for x in items) for y in as_list(b))


# ip and cidr -----------------------------------------------------------------------------------


def _is_ip(s: str) -> bool:
    try:
        IP.parse(s)
    except CelError:
        return False
    return True


def _ip_is_canonical(s: str) -> bool:
    return str(IP.parse(s)) == s


def _is_cidr(s: str) -> bool:
    try:
        CIDR.parse(s)
    except CelError:
        return False
    return True


def _family(ip: IP) -> int:
    return ip.addr.version


def _is_loopback(ip: IP) -> bool:
    return ip.addr.is_loopback


def _is_unspecified(ip: IP) -> bool:
    return ip.addr.is_unspecified


def _is_link_local_multicast(ip: IP) -> bool:
    a = ip.addr
    if a.version == 4:
        return a.packed[:3] == b"\xe0\x00\x00"  # 224.0.0.0/24
    return a.packed[0] == 0xFF and a.packed[1] & 0x0F == 0x02  # ff02::/16 (any flags)


def _is_link_local_unicast(ip: IP) -> bool:
    a = ip.addr
    if a.version == 4:
        return a.packed[:2] == b"\xa9\xfe"  # 169.254.0.0/16
    return a.packed[0] == 0xFE and a.packed[1] & 0xC0 == 0x80  # fe80::/10


def _is_global_unicast(ip: IP) -> bool:
    """Go's netip IsGlobalUnicast: private ranges count as global, as in Go."""
    a = ip.addr
    if a.version == 4 and a.packed == b"\xff\xff\xff\xff":
        return False
    multicast = a.packed[0] >= 0xE0 and a.packed[0] < 0xF0 if a.version == 4 else a.packed[0] == 0xFF
    return not (a.is_unspecified or a.is_loopback or multicast or _is_link_local_unicast(ip))


def _contains_ip(c: CIDR, ip: Any) -> bool:
    return c.contains_ip(ip if isinstance(ip, IP) else IP.parse(ip))


def _contains_cidr(c: CIDR, other: Any) -> bool:
    return c.contains_cidr(other if isinstance(other, CIDR) else CIDR.parse(other))


# urls ------------------------------------------------------------------------------------------


def _is_url(s: str) -> bool:
    try:
        gourl.parse_request_uri(s)
    except gourl.URLError:
        return False
    return True


def _url_text(b: bytes) -> str:
    return b.decode(errors="replace")


def _url_query(u: URL) -> dict[str, list[str]]:
    return {_url_text(k): [_url_text(v) for v in vs] for k, vs in u.u.query().items()}


# optional --------------------------------------------------------------------------------------


def is_zero_value(v: Any) -> bool:
    """cel-go's IsZeroValue, for ``optional.ofNonZeroValue``."""
    if v is None:
        return True
    if type(v) in (bool, int, UInt, float, str, bytes):
        return not v
    if isinstance(v, list | tuple | set | frozenset | dict):
        return len(v) == 0
    return False


def _opt_of(v: Any) -> Optional:
    return Optional(v)


def _opt_of_non_zero(v: Any) -> Optional:
    return OPTIONAL_NONE if is_zero_value(v) else Optional(v)


def _opt_none() -> Optional:
    return OPTIONAL_NONE


def opt_value(o: Optional) -> Any:
    if not o.has_value:
        raise CelError("optional.none() dereference")
    return o.value


def _opt_has_value(o: Optional) -> bool:
    return o.has_value


def _opt_or(o: Optional, other: Optional) -> Optional:
    return o if o.has_value else other


def _opt_or_value(o: Optional, other: Any) -> Any:
    return o.value if o.has_value else other


def _opt_unwrap(lst: Any) -> list[Any]:
    return [o.value for o in as_list(lst) if o.has_value]


def _quote(s: str) -> str:
    """``strings.quote``: ``s`` in double quotes with cel-go's escapes (other characters as is)."""
    return '"' + "".join(_QUOTE_ESC.get(ch, ch) for ch in s) + '"'


_QUOTE_ESC = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
              "\\": "\\\\", '"': '\\"'}


def _semver_major(v: Semver) -> int:
    return _as_int64(v.major)


def _semver_minor(v: Semver) -> int:
    return _as_int64(v.minor)


def _semver_patch(v: Semver) -> int:
    return _as_int64(v.patch)


_K8S: dict[str, list[Overload]] = {
    "semver": [_o(None, (STRING,), SEMVER, Semver.parse), _o(None, (STRING, BOOL), SEMVER, Semver.parse)],
    "isSemver": [_o(None, (STRING,), BOOL, _is_semver), _o(None, (STRING, BOOL), BOOL, _is_semver)],
    "major": [_o(SEMVER, (), INT, _semver_major)],
    "minor": [_o(SEMVER, (), INT, _semver_minor)],
    "patch": [_o(SEMVER, (), INT, _semver_patch)],
    "isGreaterThan": [_o(SEMVER, (SEMVER,), BOOL, lambda a, b: a.compare(b) == 1)],
    "isLessThan": [_o(SEMVER, (SEMVER,), BOOL, lambda a, b: a.compare(b) == -1)],
    "compareTo": [_o(SEMVER, (SEMVER,), INT, lambda a, b: a.compare(b))],
    "isSorted": [_o(list_of(t), (), BOOL, _is_sorted) for t in _COMPARABLE],
    "sum": [_o(list_of(t), (), t, _list_sum(*_SUMMABLE[t])) for t in _SUMMABLE],
    "min": [_o(list_of(t), (), t, _list_pick("min", 1)) for t in _COMPARABLE],
    "max": [_o(list_of(t), (), t, _list_pick("max", -1)) for t in _COMPARABLE],
    "indexOf": [_o(LIST_DYN, (DYN,), INT, _list_index_of)],
    "lastIndexOf": [_o(LIST_DYN, (DYN,), INT, _list_last_index_of)],
    "find": [_o(STRING, (STRING,), STRING, _find, _matches_cost)],
    "findAll": [_o(STRING, (STRING,), LIST_STRING, _find_all, _matches_cost),
                _o(STRING, (STRING, INT), LIST_STRING, _find_all, _find_all_cost)],
    "sets.contains": [_o(None, (LIST_DYN, LIST_DYN), BOOL, _sets_contains)],
    "sets.equivalent": [_o(None, (LIST_DYN, LIST_DYN), BOOL, _sets_equivalent)],
    "sets.intersects": [_o(None, (LIST_DYN, LIST_DYN), BOOL, _sets_intersects)],
    "ip": [_o(None, (STRING,), IP_T, IP.parse), _o(CIDR_T, (), IP_T, lambda c: IP(c.addr))],
    "isIP": [_o(None, (STRING,), BOOL, _is_ip)],
    "ip.isCanonical": [_o(None, (STRING,), BOOL, _ip_is_canonical)],
    "family": [_o(IP_T, (), INT, _family)],
    "isUnspecified": [_o(IP_T, (), BOOL, _is_unspecified)],
    "isLoopback": [_o(IP_T, (), BOOL, _is_loopback)],
    "isLinkLocalMulticast": [_o(IP_T, (), BOOL, _is_link_local_multicast)],
    "isLinkLocalUnicast": [_o(IP_T, (), BOOL, _is_link_local_unicast)],
    "isGlobalUnicast": [_o(IP_T, (), BOOL, _is_global_unicast)],
    "cidr": [_o(None, (STRING,), CIDR_T, CIDR.parse)],
    "isCIDR": [_o(None, (STRING,), BOOL, _is_cidr)],
    "containsIP": [_o(CIDR_T, (STRING,), BOOL, _contains_ip), _o(CIDR_T, (IP_T,), BOOL, _contains_ip)],
    "containsCIDR": [_o(CIDR_T, (STRING,), BOOL, _contains_cidr), _o(CIDR_T, (CIDR_T,), BOOL, _contains_cidr)],
    "prefixLength": [_o(CIDR_T, (), INT, lambda c: c.bits)],
    "masked": [_o(CIDR_T, (), CIDR_T, CIDR.masked)],
    "string": [_o(None, (IP_T,), STRING, str), _o(None, (CIDR_T,), STRING, str)],
    "url": [_o(None, (STRING,), URL_T, URL.parse)],
    "isURL": [_o(None, (STRING,), BOOL, _is_url)],
    "getScheme": [_o(URL_T, (), STRING, lambda u: _url_text(u.u.scheme))],
    "getHost": [_o(URL_T, (), STRING, lambda u: _url_text(u.u.host))],
    "getHostname": [_o(URL_T, (), STRING, lambda u: _url_text(u.u.hostname()))],
    "getPort": [_o(URL_T, (), STRING, lambda u: _url_text(u.u.port()))],
    "getEscapedPath": [_o(URL_T, (), STRING, lambda u: _url_text(u.u.escaped_path()))],
    "getQuery": [_o(URL_T, (), map_of(STRING, LIST_STRING), _url_query)],
    "format": [_o(STRING, (LIST_DYN,), STRING, strformat.format_string)],
    "sign": [_o(None, (QUANTITY,), INT, _q_sign)],  # Kubernetes' sign(q); q.sign() stays as nfd had it
    "strings.quote": [_o(None, (STRING,), STRING, _quote)],
    # optional types: the compiler (nfd/lang/cel/k8scalls.py) gives these their element types
    "optional.of": [_o(None, (DYN,), optional_of(DYN), _opt_of)],
    "optional.ofNonZeroValue": [_o(None, (DYN,), optional_of(DYN), _opt_of_non_zero)],
    "optional.none": [_o(None, (), optional_of(DYN), _opt_none)],
    "optional.unwrap": [_o(None, (list_of(optional_of(DYN)),), LIST_DYN, _opt_unwrap)],
    "hasValue": [_o(optional_of(DYN), (), BOOL, _opt_has_value)],
    "value": [_o(optional_of(DYN), (), DYN, opt_value)],
    "or": [_o(optional_of(DYN), (optional_of(DYN),), optional_of(DYN), _opt_or)],
    "orValue": [_o(optional_of(DYN), (DYN,), DYN, _opt_or_value)],
}
_PLAIN_EQ += (Semver, IP, CIDR, URL)
for _name, _overloads in _K8S.items():
    FUNCTIONS.setdefault(_name, []).extend(_overloads)

# names with a dot that are functions, not a field selection on a variable
NAMESPACED = frozenset(n for n in FUNCTIONS if "." in n) | {"cel.bind"}
