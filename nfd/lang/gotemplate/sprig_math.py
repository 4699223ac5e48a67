"""Sprig arithmetic: int64 ops via cast.ToInt64, float ops via shopspring/decimal semantics."""

from __future__ import annotations

import math
from decimal import Decimal, DivisionByZero, InvalidOperation, localcontext
from typing import Any

from . import funcs as K
from .conv import strval, to_float64, to_int64, wrap64
from .errors import FuncError
from .funcs import Func
from .values import Int64


def add(*vs: Any) -> int:
    return wrap64(sum(to_int64(v) for v in vs))


def add1(v: Any) -> int:
    return wrap64(to_int64(v) + 1)


def sub(a: Any, b: Any) -> int:
    return wrap64(to_int64(a) - to_int64(b))


def _quo(a: int, b: int) -> int:
    """Go integer division truncates toward zero."""
    if b == 0:
        raise FuncError("runtime error: integer divide by zero")
    q = abs(a) // abs(b)
    return wrap64(q if (a >= 0) == (b >= 0) else -q)


def div(a: Any, b: Any) -> int:
    return _quo(to_int64(a), to_int64(b))


def mod(a: Any, b: Any) -> int:
    x, y = to_int64(a), to_int64(b)
    if y == 0:
        raise FuncError("runtime error: integer divide by zero")
    return x - _quo(x, y) * y


def mul(a: Any, *vs: Any) -> int:
    r = to_int64(a)
    for v in vs:
        r = wrap64(r * to_int64(v))
    return r


def max_(a: Any, *vs: Any) -> int:
    return max([to_int64(a)] + [to_int64(v) for v in vs])


def min_(a: Any, *vs: Any) -> int:
    return min([to_int64(a)] + [to_int64(v) for v in vs])


def _go_max(a: float, b: float) -> float:
    if math.isinf(a) and a > 0 or math.isinf(b) and b > 0:
        return math.inf
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return max(a, b)


def _go_min(a: float, b: float) -> float:
    if math.isinf(a) and a < 0 or math.isinf(b) and b < 0:
        return -math.inf
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return min(a, b)


def maxf(a: Any, *vs: Any) -> float:
    r = to_float64(a)
    for v in vs:
        r = _go_max(r, to_float64(v))
    return r


def minf(a: Any, *vs: Any) -> float:
    r = to_float64(a)
    for v in vs:
        r = _go_min(r, to_float64(v))
    return r


def floor(a: Any) -> float:
    f = to_float64(a)
    return math.copysign(float(math.floor(f)), f) if math.isfinite(f) else f  # keeps -0


def ceil(a: Any) -> float:
    f = to_float64(a)
    return math.copysign(float(math.ceil(f)), f) if math.isfinite(f) else f  # ceil(-0.5) is -0


def round_(a: Any, p: int, *opt: float) -> float:
    round_on = opt[0] if opt else 0.5
    val = to_float64(a)
    pw = math.pow(10, float(p))
    digit = pw * val
    if not math.isfinite(digit):
        return digit / pw
    frac = math.modf(digit)[0]
    r = math.ceil(digit) if frac >= round_on else math.floor(digit)
    return r / pw


def _dec(v: Any) -> Decimal:
    f = to_float64(v)
    if not math.isfinite(f):
        raise FuncError("Cannot create a Decimal from " + ("NaN" if math.isnan(f) else "+Inf" if f > 0 else "-Inf"))
    return Decimal(repr(f))


def _decimal_op(a: Any, bs: tuple[Any, ...], op: str) -> float:
    with localcontext() as ctx:
        ctx.prec = 60
        r = _dec(a)
        for b in bs:
            d = _dec(b)
            if op == "+":
                r = r + d
            elif op == "-":
                r = r - d
            elif op == "*":
                r = r * d
            else:
                try:
                    r = (r / d).quantize(Decimal(1).scaleb(-16)) if d != 0 else r / d
                except (DivisionByZero, InvalidOperation):
                    raise FuncError("decimal division by 0") from None
        f = float(r)
        return 0.0 if f == 0 else f  # decimal has no negative zero


def to_decimal(v: Any) -> int:
    s = strval(v)
    try:
        if not s or not all(c in "01234567" for c in s.lstrip("+-")) or not s.lstrip("+-"):
            return 0
        r = int(s, 8)
    except ValueError:
        return 0
    return r if -(1 << 63) <= r < (1 << 63) else 0


def _f(fn: Any, *params: str, variadic: str | None = None) -> Func:
    return Func(fn, tuple(params), variadic)


def _i64(fn: Any) -> Any:
    """Mark an int64-returning Sprig function's result type (for typeOf / %T)."""

    def wrapped(*args: Any) -> Int64:
        return Int64(fn(*args))

    return wrapped


A, N = K.ANY, K.INT

MATH_FUNCS: dict[str, Func] = {
    "add1": _f(_i64(add1), A),
    "add": _f(_i64(add), variadic=A),
    "sub": _f(_i64(sub), A, A),
    "div": _f(_i64(div), A, A),
    "mod": _f(_i64(mod), A, A),
    "mul": _f(_i64(mul), A, variadic=A),
    "add1f": _f(lambda a: _decimal_op(a, (1,), "+"), A),
    "addf": _f(lambda *vs: _decimal_op(0.0, vs, "+"), variadic=A),
    "subf": _f(lambda a, *vs: _decimal_op(a, vs, "-"), A, variadic=A),
    "divf": _f(lambda a, *vs: _decimal_op(a, vs, "/"), A, variadic=A),
    "mulf": _f(lambda a, *vs: _decimal_op(a, vs, "*"), A, variadic=A),
    "biggest": _f(_i64(max_), A, variadic=A),
    "max": _f(_i64(max_), A, variadic=A),
    "min": _f(_i64(min_), A, variadic=A),
    "maxf": _f(maxf, A, variadic=A),
    "minf": _f(minf, A, variadic=A),
    "ceil": _f(ceil, A),
    "floor": _f(floor, A),
    "round": _f(round_, A, N, variadic=K.FLOAT),
    "int64": _f(_i64(to_int64), A),
    "int": _f(lambda v: int(to_int64(v)), A),
    "float64": _f(to_float64, A),
    "toDecimal": _f(_i64(to_decimal), A),
}
