"""Static CEL types used by the checker: strings for scalars, tuples for list/map.

``("list", E)`` and ``("map", K, V)`` keep types hashable and comparable with ``==``; ``dyn``
unifies with everything and defers checking to run time.
"""

from __future__ import annotations

from typing import Any

from nfd.lang.cel.values import CIDR, IP, URL, Optional, Quantity, Semver, UInt, Version

Type = Any  # str | tuple

DYN = "dyn"
INT = "int"
UINT = "uint"
DOUBLE = "double"
STRING = "string"
BYTES = "bytes"
BOOL = "bool"
NULL = "null_type"
VERSION = "version"
QUANTITY = "quantity"
# Kubernetes' CEL library types, by their cel-go names
SEMVER = "kubernetes.Semver"
IP_T = "net.IP"
CIDR_T = "net.CIDR"
URL_T = "kubernetes.URL"
NUMERIC = (INT, UINT, DOUBLE)


def list_of(elem: Type) -> Type:
    return ("list", elem)


def map_of(key: Type, value: Type) -> Type:
    return ("map", key, value)


def optional_of(elem: Type) -> Type:
    return ("optional", elem)


def is_optional(t: Type) -> bool:
    return isinstance(t, tuple) and t[0] == "optional"


def is_list(t: Type) -> bool:
    return isinstance(t, tuple) and t[0] == "list"


def is_map(t: Type) -> bool:
    return isinstance(t, tuple) and t[0] == "map"


def fmt(t: Type) -> str:
    if is_list(t):
        return f"list({fmt(t[1])})"
    if is_map(t):
        return f"map({fmt(t[1])}, {fmt(t[2])})"
    if is_optional(t):
        return f"optional_type({fmt(t[1])})"
    return str(t)


def assignable(param: Type, arg: Type) -> bool:
    """Can a value of static type ``arg`` be passed where ``param`` is expected?"""
    if param in (DYN, arg) or arg == DYN:
        return True
    if is_list(param) and is_list(arg):
        return assignable(param[1], arg[1])
    if is_map(param) and is_map(arg):
        return assignable(param[1], arg[1]) and assignable(param[2], arg[2])
    if is_optional(param) and is_optional(arg):
        return assignable(param[1], arg[1])
    return False


def join(a: Type, b: Type) -> Type:
    """The type of a value that is either ``a`` or ``b`` (list elements, ternary branches)."""
    if a == b:
        return a
    if is_list(a) and is_list(b):
        return list_of(join(a[1], b[1]))
    if is_map(a) and is_map(b):
        return map_of(join(a[1], b[1]), join(a[2], b[2]))
    if is_optional(a) and is_optional(b):
        return optional_of(join(a[1], b[1]))
    return DYN


def comparable_eq(a: Type, b: Type) -> bool:
    """``==`` is allowed between equal types, any numeric pair, and anything dyn or null."""
    if a in (DYN, NULL) or b in (DYN, NULL):
        return True
    if a in NUMERIC and b in NUMERIC:
        return True
    if is_list(a) and is_list(b):
        return comparable_eq(a[1], b[1])
    if is_map(a) and is_map(b):
        return comparable_eq(a[1], b[1]) and comparable_eq(a[2], b[2])
    if is_optional(a) and is_optional(b):
        return comparable_eq(a[1], b[1])
    return bool(a == b)


def runtime_is(v: Any, t: Type) -> bool:
    """Does runtime value ``v`` belong to static type ``t`` (elements of containers unchecked)?"""
    if t == DYN:
        return True
    if isinstance(t, tuple):
        if t[0] == "list":
            return isinstance(v, list | tuple | set | frozenset)
        if t[0] == "optional":
            return type(v) is Optional
        return isinstance(v, dict)
    return type(v) is _PY.get(t) or (t == NULL and v is None)


_PY: dict[str, type] = {
    INT: int, UINT: UInt, DOUBLE: float, STRING: str, BYTES: bytes, BOOL: bool,
    VERSION: Version, QUANTITY: Quantity, SEMVER: Semver, IP_T: IP, CIDR_T: CIDR, URL_T: URL,
}


class _Free(str):
    """The element type of an empty list or map literal: ``dyn`` everywhere (it compares equal),
    but ``unify`` lets the other side decide, as cel-go's unbound type parameter does, so
    ``[[], [1]]`` is a ``list(list(int))``. Sound because no value of that type exists."""

    __slots__ = ()


FREE: Type = _Free(DYN)
