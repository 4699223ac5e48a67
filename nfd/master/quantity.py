"""Kubernetes resource.Quantity parsing, only as far as comparing extended resource values needs.

Upstream compares ``strconv.FormatInt(capacity.AsInt64())`` with the requested string, so ``1k``
never equals ``1000`` and such a node is re-patched on every pass. We compare values instead.
"""

from __future__ import annotations

import re
from fractions import Fraction

_QTY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$")
_SUFFIX = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}


def parse_quantity(s: str) -> Fraction:
    """The exact value of a quantity string; ValueError when it is not one."""
    m = _QTY.match(s.strip())
    if not m:
        raise ValueError(f"invalid quantity {s!r}")
    num = Fraction(m.group(1))
    suf = m.group(2) or ""
    if suf[:1] in ("e", "E"):
        return num * Fraction(10) ** int(suf[1:])
    return num * _SUFFIX[suf]


def same_quantity(a: str, b: str) -> bool:
    try:
        return parse_quantity(a) == parse_quantity(b)
    except ValueError:
        return a == b
