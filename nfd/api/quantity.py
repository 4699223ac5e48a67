"""Kubernetes ``resource.Quantity`` parsing (k8s.io/apimachinery ParseQuantity), faithfully.

Grammar: ``[+-]digits[.digits]`` followed by a suffix that is a decimal SI suffix
(``n u m "" k M G T P E``), a binary SI suffix (``Ki Mi Gi Ti Pi Ei``) or a decimal exponent
(``e3``, ``E-2``). Upstream quirks kept on purpose: ``"1."`` and ``"."`` are accepted (the
denominator may be empty), a lone sign means zero, and ``K`` is not a suffix (``k`` is).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import MAX_EMAX, MIN_EMIN, Decimal, localcontext
from fractions import Fraction

_DEC_SUFFIX = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BIN_SUFFIX = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_INT64_MAX = (1 << 63) - 1


class QuantityError(ValueError):
    pass


ERR_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
ERR_SUFFIX = "unable to parse quantity's suffix"
ERR_NUMERIC = "unable to parse quantity's numeric part"


def _fast_path(num: str, denom: str, base: int, exp: int) -> bool:
    """Whether ParseQuantity takes its int64 fast path (which needs no digit in the text)."""
    if base == 10:
        precision, scale, mant = 18 - (len(num) + len(denom)), exp, 1
    elif exp >= 0 and not denom:
        precision, scale, mant = 15 - len(num) - int(exp * 3 / 10) - 1, 0, 1 << exp
    else:
        return False
    if precision < 0 or scale - len(denom) < -9:
        return False
    return abs(int(num + denom) * mant) <= _INT64_MAX


@dataclass(frozen=True, slots=True)
class Quantity:
    """A Kubernetes resource.Quantity: exact amount, format and canonical text."""
    amount: Decimal  # exact value
    format: str  # "DecimalSI" | "BinarySI" | "DecimalExponent"
    text: str

    def value(self) -> int:
        """Quantity.Value(): the value rounded away from zero to an integer."""
        return _round_up(self.amount)

    def milli_value(self) -> int:
        return _round_up(self.amount * 1000)

    def fraction(self) -> Fraction:
        """The exact value (Decimal to Fraction loses nothing), for sums and comparisons."""
        return Fraction(self.amount)


def _round_up(x: Decimal) -> int:
    return math.ceil(x) if x >= 0 else math.floor(x)


def _split(s: str) -> tuple[bool, str, str, str, str]:
    """parseQuantityString: (positive, numeric text, numerator, denominator, suffix)."""
    pos, end = 0, len(s)
    positive = True
    if s[0] == "-":
        positive, pos = False, 1
    elif s[0] == "+":
        pos = 1
    while pos < end and s[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    i = pos
    while i < end and s[i].isascii() and s[i].isdigit():
        i += 1
    if i >= end:
        return positive, s, s[pos:], "", ""
    num = s[pos:i] or "0"
    pos = i
    denom = ""
    if pos < end and s[pos] == ".":
        pos += 1
        i = pos
        while i < end and s[i].isascii() and s[i].isdigit():
            i += 1
        denom = s[pos:i]
        pos = i
        if pos >= end:
            return positive, s, num, denom, ""
    value = s[:pos]
    suffix_start = pos
    while pos < end and s[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and s[pos] in "+-":
        pos += 1
    while pos < end and s[pos].isascii() and s[pos].isdigit():
        pos += 1
    if pos < end:
        raise QuantityError(ERR_FORMAT)
    return positive, value, num, denom, s[suffix_start:]


def parse_quantity(s: str) -> Quantity:
    """Parse like resource.ParseQuantity; raises QuantityError with upstream's messages."""
    if not s:
        raise QuantityError(ERR_FORMAT)
    if s == "0":
        return Quantity(Decimal(0), "DecimalSI", s)
    positive, value, num, denom, suffix = _split(s)
    if suffix in _DEC_SUFFIX:
        base, exp, fmt = 10, _DEC_SUFFIX[suffix], "DecimalSI"
    elif suffix in _BIN_SUFFIX:
        base, exp, fmt = 2, _BIN_SUFFIX[suffix], "BinarySI"
    elif len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[:1] in "+-" else digits
        if (
            not body
            or not body.isdigit()
            or not body.isascii()
            or not -_INT64_MAX - 1 <= int(digits) <= _INT64_MAX
        ):
            raise QuantityError(ERR_SUFFIX)
        base, exp, fmt = 10, int(digits), "DecimalExponent"
    else:
        raise QuantityError(ERR_SUFFIX)
    if not _fast_path(num, denom, base, exp) and not any(ch.isdigit() for ch in value):
        # the general path parses the numeric text, which must hold a digit ("Ei" alone does not)
        raise QuantityError(ERR_NUMERIC)
    with localcontext() as ctx:
        ctx.prec = 100
        ctx.Emax, ctx.Emin = MAX_EMAX, MIN_EMIN
        mant = Decimal(f"{num}.{denom or '0'}")
        try:
            amount = mant * (Decimal(base) ** exp)
        except ArithmeticError:
            raise QuantityError("quantity is too large or too small") from None
    return Quantity(amount if positive else -amount, fmt, s)


def is_quantity(s: str) -> bool:
    try:
        parse_quantity(s)
    except QuantityError:
        return False
    return True


def quantity_fraction(value: str | int | float) -> Fraction:
    """The exact value of a quantity as found in an API object (numbers allowed; surrounding
    spaces trimmed, as Quantity.UnmarshalJSON does); QuantityError (a ValueError) otherwise."""
    if isinstance(value, int | float):
        return Fraction(value)
    return parse_quantity(str(value).strip()).fraction()


def same_quantity(a: str, b: str) -> bool:
    """Equal values (``1k`` == ``1000``); texts that are not quantities compare as strings."""
    try:
        return quantity_fraction(a) == quantity_fraction(b)
    except ValueError:
        return a == b
