"""Sprig list and dict functions. Lists come back as new lists; dict setters mutate, as in Go."""

from __future__ import annotations

import copy
import math
from typing import Any

from . import funcs as K
from .budget import charge_items, charge_work
from .conv import deep_equal, strval, to_int64
from .errors import FuncError
from .funcs import Func
from .values import (
    GoObject,
    IntList,
    StringList,
    TypedList,
    TypedMap,
    is_true,
    kind_name,
    sorted_keys,
    type_name,
    typed_list,
)

_NIL_DEREF = "runtime error: invalid memory address or nil pointer dereference"


def _as_list(v: Any, what: str) -> list[Any]:
    if isinstance(v, (list, tuple)):
        return list(v)
    if v is None:
        raise FuncError(_NIL_DEREF)
    raise FuncError(f"Cannot {what} type {kind_name(v)}")


def push(lst: Any, v: Any) -> list[Any]:
    return _as_list(lst, "push on") + [v]


def prepend(lst: Any, v: Any) -> list[Any]:
    return [v] + _as_list(lst, "prepend on")


class _Chunks(TypedList):
    go_type = "[][]interface {}"


def chunk(size: int, lst: Any) -> list[list[Any]]:
    items = _as_list(lst, "chunk")
    if size == 0:
        raise FuncError("runtime error: integer divide by zero")
    if size < 0:
        # Sprig sizes the result as floor((len-1)/size)+1: zero chunks (an empty result) when
        # 1 < len <= 1-size; otherwise a negative length or a negative chunk size panics.
        if math.floor((len(items) - 1) / size) + 1 == 0:
            return _Chunks()
        raise FuncError("runtime error: makeslice: len out of range")
    return _Chunks(items[i : i + size] for i in range(0, len(items), size))


def first(lst: Any) -> Any:
    items = _as_list(lst, "find first on")
    return items[0] if items else None


def last(lst: Any) -> Any:
    items = _as_list(lst, "find last on")
    return items[-1] if items else None


def rest(lst: Any) -> list[Any]:
    # Go returns a nil []interface{}, which prints as [] (not <no value>).
    return _as_list(lst, "find rest on")[1:]


def initial(lst: Any) -> list[Any]:
    return _as_list(lst, "find initial on")[:-1]


def reverse(lst: Any) -> list[Any]:
    return _as_list(lst, "find reverse on")[::-1]


def compact(lst: Any) -> list[Any]:
    return [x for x in _as_list(lst, "compact on") if is_true(x)]


def _in_list(hay: list[Any], needle: Any) -> bool:
    return any(deep_equal(needle, h) for h in hay)


def uniq(lst: Any) -> list[Any]:
    items = _as_list(lst, "find uniq on")
    if all(type(x) is str for x in items):
        return list(dict.fromkeys(items))  # same result, linear time
    charge_work(len(items) * len(items) // 2)  # Go's algorithm (and ours): quadratic
    out: list[Any] = []
    for x in items:
        if not _in_list(out, x):
            out.append(x)
    return out


def without(lst: Any, *omit: Any) -> list[Any]:
    om = list(omit)
    return [x for x in _as_list(lst, "find without on") if not _in_list(om, x)]


def has(needle: Any, hay: Any) -> bool:
    if hay is None:
        return False
    return _in_list(_as_list(hay, "find has on"), needle)


def slice_(lst: Any, *indices: Any) -> Any:
    if not isinstance(lst, (list, tuple)):
        if lst is None:
            raise FuncError(_NIL_DEREF)
        raise FuncError(f"list should be type of slice or array but {kind_name(lst)}")
    n = len(lst)
    if n == 0:
        return None
    start = to_int64(indices[0]) if indices else 0
    end = to_int64(indices[1]) if len(indices) >= 2 else n
    if start < 0 or end > n or start > end:
        raise FuncError("reflect.Value.Slice: slice index out of bounds")
    return list(lst[start:end])


def concat(*lists: Any) -> Any:
    out: list[Any] = []
    for v in lists:
        if not isinstance(v, (list, tuple)):
            if v is None:
                raise FuncError(_NIL_DEREF)
            raise FuncError(f"Cannot concat type {kind_name(v)} as list")
        out.extend(v)
    # Go appends to a nil []interface{}: nothing appended stays nil (toJson gives null).
    return out if out else typed_list([], "[]interface {}", go_nil=True)


def until(count: int) -> list[int]:
    return until_step(0, count, 1 if count >= 0 else -1)


def until_step(start: int, stop: int, step: int) -> list[int]:
    if (stop < start and step >= 0) or (stop >= start and step <= 0):
        return IntList()
    r = range(start, stop, step)
    charge_items(len(r))
    return IntList(r)


def seq(*params: int) -> str:
    n = len(params)
    inc = 1
    if n == 1:
        start, end = 1, params[0]
        if end < start:
            inc = -1
        r = until_step(start, end + inc, inc)
    elif n == 2:
        start, end = params
        step = -1 if end < start else 1
        r = until_step(start, end + step, step)
    elif n == 3:
        start, step, end = params
        if end < start:
            inc = -1
            if step > 0:
                return ""
        r = until_step(start, end + inc, step)
    else:
        return ""
    return " ".join(str(x) for x in r)


# --- dicts ---------------------------------------------------------------


def dict_(*kv: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i in range(0, len(kv), 2):
        key = strval(kv[i])
        out[key] = kv[i + 1] if i + 1 < len(kv) else ""
    return out


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def get(d: Any, key: str) -> Any:
    d = _d(d)
    return d.get(key, "")


def set_(d: Any, key: str, value: Any) -> Any:
    if d is None:
        raise FuncError("assignment to entry in nil map")
    d[key] = value
    return d


def unset(d: Any, key: str) -> Any:
    if d is not None:
        d.pop(key, None)
    return d


def has_key(d: Any, key: str) -> bool:
    return key in _d(d)


def pluck(key: str, *dicts: Any) -> list[Any]:
    return [d[key] for d in dicts if isinstance(d, dict) and key in d]


def keys(*dicts: Any) -> list[str]:
    # Go map order is random; sorted is one of the orders upstream may produce.
    out: list[str] = StringList()
    for d in dicts:
        out.extend(sorted_keys(_d(d)))
    return out


def values(d: Any) -> list[Any]:
    d = _d(d)
    return [d[k] for k in sorted_keys(d)]


def pick(d: Any, *ks: str) -> dict[str, Any]:
    d = _d(d)
    return {k: d[k] for k in ks if k in d}


def omit(d: Any, *ks: str) -> dict[str, Any]:
    om = set(ks)
    return {k: v for k, v in _d(d).items() if k not in om}


def _empty(v: Any) -> bool:
    """mergo's isEmptyValue (dereferencing interfaces)."""
    if v is None or v is False:
        return True
    if isinstance(v, (int, float)) and not isinstance(v, GoObject):
        return v == 0
    if isinstance(v, (str, list, tuple, dict)):
        return len(v) == 0
    return False


def _merge_into(dst: dict[str, Any], src: dict[str, Any], overwrite: bool) -> None:
    """mergo.Merge / MergeWithOverwrite (v1.0.1) of a map[string]interface{} into another, key
    by key as mergo's deepMerge does: nested maps merge into the destination's map, a nil
    source value is copied only when overwriting, and a slice replaces the destination's
    value when overwriting or when the destination map is empty."""
    for k, sv in src.items():
        had = k in dst
        dv = dst.get(k)
        if sv is None:
            if overwrite:
                dst[k] = None
            continue
        if isinstance(sv, dict):
            if isinstance(dv, dict):
                _merge_into(dv, sv, overwrite)
        elif isinstance(sv, (list, tuple)) and (overwrite or not dst):
            dst[k] = sv
        if had and not _empty(dv) and (isinstance(sv, (list, tuple)) or (isinstance(sv, dict) and isinstance(dv, dict))):
            continue
        if overwrite or not had or _empty(dv):
            dst[k] = sv


def merge(dst: Any, *srcs: Any) -> Any:
    if dst is None:
        dst = {}
    for s in srcs:
        _merge_into(dst, _d(s), False)
    return dst


def merge_overwrite(dst: Any, *srcs: Any) -> Any:
    if dst is None:
        dst = {}
    for s in srcs:
        _merge_into(dst, _d(s), True)
    return dst


def _assert_map(v: Any) -> dict[str, Any]:
    """Go's v.(map[string]interface{}): a typed map (NFD's MatchedElement) does not convert."""
    if isinstance(v, dict) and not isinstance(v, TypedMap):
        return v
    shown = "nil" if v is None else type_name(v)
    raise FuncError(f"interface conversion: interface {{}} is {shown}, not map[string]interface {{}}")


def dig(*ps: Any) -> Any:
    if len(ps) < 3:
        raise FuncError("dig needs at least three arguments")
    d = _assert_map(ps[-1])
    default = ps[-2]
    ks = ps[:-2]
    for k in ks:
        if not isinstance(k, str):
            shown = "nil" if k is None else type_name(k)
            raise FuncError(f"interface conversion: interface {{}} is {shown}, not string")
    for i, k in enumerate(ks):
        if k not in d:
            return default
        if i == len(ks) - 1:
            return d[k]
        d = _assert_map(d[k])
    return d


def deep_copy(v: Any) -> Any:
    if v is None:  # copystructure reflects on the nil interface and panics
        raise FuncError("reflect: call of reflect.Value.Type on zero Value")
    return copy.deepcopy(v)


def _f(fn: Any, *params: str, variadic: str | None = None) -> Func:
    return Func(fn, tuple(params), variadic)


A, N, S, M = K.ANY, K.INT, K.STR, K.MAP

COLLECTION_FUNCS: dict[str, Func] = {
    "tuple": _f(lambda *v: list(v), variadic=A),
    "list": _f(lambda *v: list(v), variadic=A),
    "append": _f(push, A, A),
    "push": _f(push, A, A),
    "mustAppend": _f(push, A, A),
    "mustPush": _f(push, A, A),
    "prepend": _f(prepend, A, A),
    "mustPrepend": _f(prepend, A, A),
    "first": _f(first, A),
    "mustFirst": _f(first, A),
    "rest": _f(rest, A),
    "mustRest": _f(rest, A),
    "last": _f(last, A),
    "mustLast": _f(last, A),
    "initial": _f(initial, A),
    "mustInitial": _f(initial, A),
    "reverse": _f(reverse, A),
    "mustReverse": _f(reverse, A),
    "uniq": _f(uniq, A),
    "mustUniq": _f(uniq, A),
    "without": _f(without, A, variadic=A),
    "mustWithout": _f(without, A, variadic=A),
    "has": _f(has, A, A),
    "mustHas": _f(has, A, A),
    "slice": _f(slice_, A, variadic=A),
    "mustSlice": _f(slice_, A, variadic=A),
    "concat": _f(concat, variadic=A),
    "chunk": _f(chunk, N, A),
    "mustChunk": _f(chunk, N, A),
    "compact": _f(compact, A),
    "mustCompact": _f(compact, A),
    "until": _f(until, N),
    "untilStep": _f(until_step, N, N, N),
    "seq": _f(seq, variadic=N),
    "dict": _f(dict_, variadic=A),
    "get": _f(get, M, S),
    "set": _f(set_, M, S, A),
    "unset": _f(unset, M, S),
    "hasKey": _f(has_key, M, S),
    "pluck": _f(pluck, S, variadic=M),
    "keys": _f(keys, variadic=M),
    "values": _f(values, M),
    "pick": _f(pick, M, variadic=S),
    "omit": _f(omit, M, variadic=S),
    "merge": _f(merge, M, variadic=M),
    "mustMerge": _f(merge, M, variadic=M),
    "mergeOverwrite": _f(merge_overwrite, M, variadic=M),
    "mustMergeOverwrite": _f(merge_overwrite, M, variadic=M),
    "dig": _f(dig, variadic=A),
    "deepCopy": _f(deep_copy, A),
    "mustDeepCopy": _f(deep_copy, A),
}
