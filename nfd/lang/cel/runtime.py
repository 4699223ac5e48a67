"""Runtime support for compiled CEL: the activation, CEL's logic operators, macro loops with
the step budget, and value helpers shared by the generated fast path and the exact closures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nfd.lang.cel import library as lib
from nfd.lang.cel.library import as_list
from nfd.lang.cel.values import CelError, CostLimitExceeded, Optional, make_map, type_name


class Act:
    """The per-node activation: features, node map, DRA devices, macro variables and step budget."""

    __slots__ = ("f", "node", "v", "budget", "devices")

    def __init__(self, features: Any, node: dict[str, str], budget: int, devices: Any = ()) -> None:
        self.f = features
        self.node = node
        self.v: dict[str, Any] = {}
        self.budget = budget
        self.devices = devices  # the node's DRA devices (nfd.dra), the `devices` variable


Fn = Callable[[Act], Any]


# -- logic ----------------------------------------------------------------------------------------


def and_static(lf: Fn, rf: Fn) -> Fn:
    def and_(a: Act) -> Any:
        try:
            left = lf(a)
        except Exception:
            try:
                right = rf(a)
            except Exception:
                right = None
            if right is False:
                return False
            raise
        if not left:
            return False
        return rf(a)

    return and_


def or_static(lf: Fn, rf: Fn) -> Fn:
    def or_(a: Act) -> Any:
        try:
            left = lf(a)
        except Exception:
            try:
                right = rf(a)
            except Exception:
                right = None
            if right is True:
                return True
            raise
        if left:
            return True
        return rf(a)

    return or_


def logic_dyn(lf: Fn, rf: Fn, is_or: bool) -> Fn:
    """``&&``/``||`` when an operand is ``dyn``: a non-bool side is an error that may be absorbed."""
    decide = is_or  # the value of one side that decides the result
    op = "||" if is_or else "&&"

    def side(f: Fn, a: Act) -> Any:
        try:
            v = f(a)
        except Exception as e:
            return e
        if type(v) is not bool:
            return CelError(f"no matching overload for '{op}' applied to {type_name(v)}")
        return v

    def logic(a: Act) -> Any:
        left = side(lf, a)
        if left is decide:
            return decide
        right = side(rf, a)
        if right is decide:
            return decide
        if isinstance(left, BaseException):
            raise left
        if isinstance(right, BaseException):
            raise right
        return not decide

    return logic


# -- value helpers the generated source and the closures share -------------------------------------

def select_dyn(m: Any, field: str) -> Any:
    if isinstance(m, dict):
        return lib.map_get(m, field)
    raise CelError(f"type '{type_name(m)}' does not support field selection")


def top_get(features: dict[str, Any], key: Any, default: Any) -> Any:
    if type(key) is not str:
        raise CelError(f"feature names are strings, not {type_name(key)}")
    return features.get(key, default)


def index_dyn(c: Any, key: Any) -> Any:
    if isinstance(c, dict):
        return lib.map_get(c, key)
    if isinstance(c, list | tuple | set | frozenset):
        return lib.list_index(c, key)
    raise CelError(f"type '{type_name(c)}' does not support indexing")


def build_map(pairs: Any) -> dict[Any, Any]:
    """A map literal's value (values.make_map): true and 1 are two keys, a repeated key an error."""
    return make_map(pairs)


def as_bool(v: Any) -> bool:
    if type(v) is not bool:
        raise CelError(f"expected bool, got {type_name(v)}")
    return v


def has_field(m: Any, field: str) -> bool:
    if isinstance(m, dict):
        return field in m
    if type(m) is Optional:  # has() through an optional chain: false when none
        return m.has_value and has_field(m.value, field)
    raise CelError(f"has() does not apply to type '{type_name(m)}'")


# -- macros -----------------------------------------------------------------------------------------
# Cost: a macro charges the size of the collection it iterates when it starts (nested macros
# charge on every entry), against the per-expression step budget. Both paths charge the same.

_ABSENT = object()


def spend(a: Act, n: int) -> None:
    """Charge ``n`` steps: macro iterations, or elements/characters an operation produces."""
    a.budget -= n
    if a.budget < 0:
        raise CostLimitExceeded("evaluation step limit exceeded")


def charge_list(a: Act, c: Any) -> Any:
    """A statically typed list (or flag set): iterate as is."""
    a.budget -= len(c)
    if a.budget < 0:
        raise CostLimitExceeded("evaluation step limit exceeded")
    return c


def charge_any(a: Act, c: Any) -> Any:
    """A map (iterate its keys) or a dyn value that must turn out to be a list or map."""
    if isinstance(c, dict):
        c = list(c)
    elif not isinstance(c, list | tuple | set | frozenset):
        raise CelError(f"cannot iterate over {type_name(c)}")
    spend(a, len(c))
    return c


def charge_ordered(a: Act, c: Any) -> Any:
    """For map() and filter(), which build lists: flag sets iterate in sorted order."""
    c = charge_any(a, c)
    return sorted(c) if isinstance(c, set | frozenset) else c


def charge_pairs(a: Act, c: Any) -> Any:
    """Two-variable comprehensions: (index, element) of a list, (key, value) of a map."""
    if isinstance(c, dict):
        pairs: Any = list(c.items())
    elif isinstance(c, list | tuple | set | frozenset):
        pairs = list(enumerate(as_list(c)))
    else:
        raise CelError(f"cannot iterate over {type_name(c)}")
    spend(a, len(pairs))
    return pairs


Charge = Callable[[Act, Any], Any]
Names = str | tuple[str, str]


class _Bind:
    """Saves, binds and restores the macro variable(s) in ``act.v``."""

    __slots__ = ("names", "v", "saved")

    def __init__(self, names: Names, v: dict[str, Any]) -> None:
        self.names = names
        self.v = v
        self.saved = [(n, v.get(n, _ABSENT)) for n in ((names,) if isinstance(names, str) else names)]

    def set(self, x: Any) -> None:
        if isinstance(self.names, str):
            self.v[self.names] = x
        else:
            self.v[self.names[0]], self.v[self.names[1]] = x

    def restore(self) -> None:
        for n, old in self.saved:
            if old is _ABSENT:
                self.v.pop(n, None)
            else:
                self.v[n] = old


def exists(tf: Fn, names: Names, pf: Fn, charge: Charge) -> Fn:
    return _quantifier(tf, names, pf, charge, decisive=True, macro="exists")


def all_of(tf: Fn, names: Names, pf: Fn, charge: Charge) -> Fn:
    return _quantifier(tf, names, pf, charge, decisive=False, macro="all")


def _quantifier(tf: Fn, names: Names, pf: Fn, charge: Charge, *, decisive: bool, macro: str) -> Fn:
    """exists() (a true element decides) and all() (a false one does). As in CEL, an element
    that errors or is not a bool fails the macro only if no element decides it."""
    one = isinstance(names, str)
    other = not decisive

    def quantifier(a: Act) -> Any:
        coll = charge(a, tf(a))
        v = a.v
        b = _Bind(names, v)
        err: BaseException | None = None
        try:
            for x in coll:
                if one:
                    v[names] = x  # type: ignore[index]
                else:
                    v[names[0]], v[names[1]] = x
                try:
                    r = pf(a)
                except Exception as e:
                    if err is None:
                        err = e
                    continue
                if r is decisive:
                    return decisive
                if r is not other and err is None:
                    err = CelError(f"{macro}() predicate returned {type_name(r)}, not bool")
        finally:
            b.restore()
        if err is not None:
            raise err
        return other

    return quantifier


def exists_one(tf: Fn, names: Names, pf: Fn, charge: Charge) -> Fn:
    def exists_one(a: Act) -> Any:
        coll = charge(a, tf(a))
        b = _Bind(names, a.v)
        count = 0
        try:
            for x in coll:
                b.set(x)
                r = pf(a)
                if r is True:
                    count += 1
                elif r is not False:
                    raise CelError(f"exists_one() predicate returned {type_name(r)}, not bool")
        finally:
            b.restore()
        return count == 1

    return exists_one


def _filtered(a: Act, b: _Bind, coll: Any, pf: Fn | None) -> Any:
    """Yield the elements of ``coll`` (bound as the macro variables) that pass ``pf``."""
    for x in coll:
        b.set(x)
        if pf is not None:
            r = pf(a)
            if r is False:
                continue
            if r is not True:
                raise CelError(f"filter predicate returned {type_name(r)}, not bool")
        yield x


def map_filter(tf: Fn, names: Names, pf: Fn | None, mf: Fn | None, charge: Charge) -> Fn:
    def map_filter(a: Act) -> list[Any]:
        coll = charge(a, tf(a))
        b = _Bind(names, a.v)
        try:
            if mf is None:
                return list(_filtered(a, b, coll, pf))
            return [mf(a) for _ in _filtered(a, b, coll, pf)]
        finally:
            b.restore()

    return map_filter


def transform_map(tf: Fn, names: Names, pf: Fn | None, mf: Fn) -> Fn:
    def transform_map(a: Act) -> dict[Any, Any]:
        coll = charge_pairs(a, tf(a))
        b = _Bind(names, a.v)
        try:
            return make_map([(x[0], mf(a)) for x in _filtered(a, b, coll, pf)])
        finally:
            b.restore()

    return transform_map
