"""Runtime values and errors of the CEL compiler.

CEL values are plain Python objects so compiled closures do no wrapping: bool, int (int64),
``UInt`` (uint64), float (double), str, bytes, None (null), list/tuple/set (list; flag sets stay
sets so ``in`` is O(1)), dict (map), plus the two extension types ``Version`` and ``Quantity``.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from nfd.rules.version import parse_version

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1


class CelError(Exception):
    """A CEL runtime error: ``&&``, ``||``, ``all`` and ``exists`` may absorb it, like CEL does."""


class CostLimitExceeded(BaseException):  # noqa: N818 - not an Exception on purpose
    """The evaluation step budget ran out. A BaseException so no error absorption swallows it."""


class UInt(int):
    """CEL ``uint``: a distinct type from ``int`` (``1u == 1`` compares values, ``1u + 1`` is an error)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


def check_int(v: int) -> int:
    if v < INT64_MIN or v > INT64_MAX:
        raise CelError("integer overflow")
    return v


def check_uint(v: int) -> UInt:
    if v < 0 or v > UINT64_MAX:
        raise CelError("unsigned integer overflow")
    return UInt(v)


# -- version ------------------------------------------------------------------------------------

class Version:
    """``version(s)``: compares as upstream's ``type: version`` (major.minor.patch, pre-release ignored)."""

    __slots__ = ("key", "text")

    def __init__(self, key: tuple[int, int, int], text: str) -> None:
        self.key = key
        self.text = text

    @classmethod
    def parse(cls, s: str) -> Version:
        # the same parser as upstream's `type: version` (pre-release dropped), shared with the
        # matchExpressions engine so `version()` and `type: version` never disagree
        key = parse_version(s)
        if key is None:
            raise CelError(f"invalid version {s!r}")
        return cls(key, s)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __lt__(self, other: Version) -> bool:
        return self.key < other.key

    def __le__(self, other: Version) -> bool:
        return self.key <= other.key

    def __gt__(self, other: Version) -> bool:
        return self.key > other.key

    def __ge__(self, other: Version) -> bool:
        return self.key >= other.key

    def __repr__(self) -> str:
        return f"version({self.text!r})"


# -- quantity -----------------------------------------------------------------------------------

_QTY_RE = re.compile(r"([+-]?)([0-9]+\.?[0-9]*|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")
_QTY_SUFFIX = {
    "Ki": Fraction(1 << 10), "Mi": Fraction(1 << 20), "Gi": Fraction(1 << 30),
    "Ti": Fraction(1 << 40), "Pi": Fraction(1 << 50), "Ei": Fraction(1 << 60),
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
}


class Quantity:
    """``quantity(s)``: a Kubernetes resource quantity (``1Gi``, ``500m``, ``1e3``), exact."""

    __slots__ = ("value", "text")

    def __init__(self, value: Fraction, text: str) -> None:
        self.value = value
        self.text = text

    @classmethod
    def parse(cls, s: str) -> Quantity:
        m = _QTY_RE.fullmatch(s)
        if m is None or len(s) > 256:
            raise CelError(f"invalid quantity {s!r}")
        sign, num, suffix = m.group(1), m.group(2), m.group(3) or ""
        if suffix not in _QTY_SUFFIX:  # a decimal exponent, e.g. e3
            exp = int(suffix[1:])
            if abs(exp) > 1000:
                raise CelError(f"invalid quantity {s!r}: exponent out of range")
            mult = Fraction(10) ** exp
        else:
            mult = _QTY_SUFFIX[suffix]
        v = Fraction(num) * mult
        return cls(-v if sign == "-" else v, s)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        return self.value <= other.value

    def __gt__(self, other: Quantity) -> bool:
        return self.value > other.value

    def __ge__(self, other: Quantity) -> bool:
        return self.value >= other.value

    def __repr__(self) -> str:
        return f"quantity({self.text!r})"


def type_name(v: Any) -> str:
    """The CEL type name of a runtime value, for error messages."""
    t = type(v)
    if t is bool:
        return "bool"
    if t is int:
        return "int"
    if t is UInt:
        return "uint"
    if t is float:
        return "double"
    if t is str:
        return "string"
    if t is bytes:
        return "bytes"
    if v is None:
        return "null_type"
    if isinstance(v, list | tuple | set | frozenset):
        return "list"
    if isinstance(v, dict):
        return "map"
    if t is Version:
        return "version"
    if t is Quantity:
        return "quantity"
    return t.__name__
