"""Test helpers: evaluate any CEL expression (not only bool) with our compiler and with celpy."""

from __future__ import annotations

from typing import Any

from nfd.api.features import Features
from nfd.lang.cel import DEFAULT_STEP_LIMIT, Act
from nfd.lang.cel.compiler import Compiler
from nfd.lang.cel.syntax import parse
from nfd.lang.cel.values import UInt

ERROR = "<error>"


def ours(src: str, features: Features | None = None, node_name: str = "n") -> Any:
    """Value of ``src`` with our compiler, or ERROR on a runtime error. Compile errors raise.

    Runs both backends: the exact closures, and the generated fast path; where the fast path
    completes (raises nothing) its value must be the exact one.
    """
    compiler = Compiler()
    c = compiler.compile(parse(src))
    fast = compiler.source(c)
    assert fast is not None, f"no fast path for {src}"

    def act() -> Act:
        return Act(features or Features(), {"name": node_name}, DEFAULT_STEP_LIMIT)

    try:
        exact = c.fn(act())
    except Exception:
        exact = ERROR
    try:
        quick = fast(act())
    except Exception:
        return exact
    assert same(quick, exact), f"{src}: fast path {quick!r}, exact {exact!r}"
    return exact


def celpy_value(src: str, activation: dict[str, Any] | None = None) -> Any:
    """Value of ``src`` with celpy's reference interpreter, as plain Python, or ERROR."""
    import celpy

    env = celpy.Environment()
    try:
        prg = env.program(env.compile(src))
        return _plain(prg.evaluate(activation or {}))
    except Exception:
        return ERROR


def _plain(v: Any) -> Any:
    from celpy import celtypes as ct

    if isinstance(v, ct.BoolType):
        return bool(v)
    if isinstance(v, ct.UintType):
        return UInt(int(v))
    if isinstance(v, ct.IntType):
        return int(v)
    if isinstance(v, ct.DoubleType):
        return float(v)
    if isinstance(v, ct.StringType):
        return str(v)
    if isinstance(v, ct.BytesType):
        return bytes(v)
    if isinstance(v, ct.ListType | list):
        return [_plain(x) for x in v]
    if isinstance(v, ct.MapType | dict):
        return {_plain(k): _plain(x) for k, x in v.items()}
    return v


def same(a: Any, b: Any) -> bool:
    """Equal values of the same CEL type (1 and 1.0 differ here, unlike CEL's ``==``)."""
    if isinstance(a, dict) and isinstance(b, dict):  # a dict or a KeyedMap: keys differ by CEL type too
        ta, tb = _typed_keys(a), _typed_keys(b)
        return ta.keys() == tb.keys() and all(same(ta[k], tb[k]) for k in ta)
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and a != a:
        return b != b
    return bool(a == b)


def _typed_keys(m: dict[Any, Any]) -> dict[tuple[type, Any], Any]:
    return {(type(k), k): v for k, v in m.items()}
