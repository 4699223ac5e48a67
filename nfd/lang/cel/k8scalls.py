"""Compiler support for Kubernetes' CEL library beyond plain overloads: namespaced functions
(``sets.contains``, ``optional.of``, ``ip.isCanonical``, ``strings.quote``), the ``cel.bind``
macro, type-parametric signatures (``optional(T)``, ``list(A).indexOf(A)``), compile-time
checks (constant ``format`` strings, constant ``find`` patterns) and the optional syntax
(``a.?b``, ``a[?k]``, ``[?x]``, ``{?k: v}``).

``Compiler._call`` asks ``call`` first; None means "an ordinary call". The hooks see the compiler
as a ``Checker`` (nfd.lang.cel.compiled) and never import it.
"""

from __future__ import annotations

from typing import Any

from nfd.lang.cel import library as lib
from nfd.lang.cel import runtime as rt
from nfd.lang.cel import strformat
from nfd.lang.cel.compiled import _C, VARIABLES, Checker
from nfd.lang.cel.syntax import Call, CelSyntaxError, Ident, Index, ListLit, Lit, MapLit, Node, Select
from nfd.lang.cel.types import (
    BOOL,
    DYN,
    FREE,
    INT,
    STRING,
    UINT,
    Type,
    assignable,
    fmt,
    is_list,
    is_map,
    is_optional,
    join,
    list_of,
    map_of,
    optional_of,
)
from nfd.lang.cel.values import OPTIONAL_NONE, CelError, Optional, UInt, type_name

# the method names this module may take over (a cheap first test for every call)
_HOOKED = frozenset({"bind", "of", "ofNonZeroValue", "none", "unwrap", "contains", "equivalent", "intersects",
                     "isCanonical", "quote", "format", "find", "findAll", "value", "orValue", "or", "hasValue",
                     "indexOf", "lastIndexOf", "optMap", "optFlatMap"})


def _mk(t: Type, fn: Any, py: str) -> _C:
    return _C(t, fn, py)


def _compatible(a: Type, b: Type) -> bool:
    """Can the type parameter of ``f(A, A)`` bind both ``a`` and ``b``?"""
    return assignable(a, b) or assignable(b, a)


def _no_overload(n: Call, name: str, types: list[Type]) -> CelSyntaxError:
    return CelSyntaxError(n.pos, f"no matching overload for '{name}' applied to ({', '.join(fmt(t) for t in types)})")


def namespace_of(c: Checker, n: Call) -> str | None:
    """``sets.contains(...)`` is the function ``sets.contains`` unless ``sets`` is a variable."""
    t = n.target
    if not isinstance(t, Ident):
        return None
    qualified = f"{t.name}.{n.name}"
    if qualified not in lib.NAMESPACED or t.name in c.scope or t.name in c.declared:
        return None
    return None if t.name in VARIABLES else qualified


def call(c: Checker, n: Call) -> _C | None:
    if n.name not in _HOOKED:
        return None
    qualified = namespace_of(c, n)
    if qualified is not None:
        return _namespaced(c, n, qualified)
    if n.target is None:
        return None
    if n.name == "format" and isinstance(n.target, Lit) and type(n.target.value) is str \
            and len(n.args) == 1 and isinstance(n.args[0], ListLit):
        shapes = [_shape(c, x) for x in n.args[0].items]
        err = strformat.check(n.target.value, shapes)
        if err is not None:
            raise CelSyntaxError(n.args[0].pos, err)
        return None
    if n.name in ("find", "findAll") and n.args and isinstance(n.args[0], Lit) and type(n.args[0].value) is str:
        try:
            lib.compile_find_regex(n.args[0].value)
        except CelError as e:
            raise CelSyntaxError(n.args[0].pos, str(e)) from None
        return None
    if n.name in ("value", "orValue", "or", "hasValue"):
        return _optional_method(c, n)
    if n.name in ("optMap", "optFlatMap"):
        return _opt_map(c, n)
    if n.name in ("indexOf", "lastIndexOf") and len(n.args) == 1:
        recv = c.compile(n.target)
        if is_list(recv.t):
            arg = c.compile(n.args[0])
            if not _compatible(recv.t[1], arg.t):
                raise _no_overload(n, n.name, [recv.t, arg.t])
            return c.overload(n, n.name, lib.FUNCTIONS[n.name], recv, [arg])
    return None


def _shape(c: Checker, n: Node) -> strformat.Shape:
    """What the format checker needs of an argument: its type's kind, and its literal children."""
    if isinstance(n, ListLit) and not n.optional_indices:
        return ("list", [_shape(c, x) for x in n.items])
    if isinstance(n, MapLit) and not n.optional_indices:
        return ("map", [_shape(c, x) for kv in n.entries for x in kv])
    t = c.compile(n).t
    kind = t[0] if isinstance(t, tuple) else str(t)
    return ("optional_type" if kind == "optional" else kind, None)


def _namespaced(c: Checker, n: Call, name: str) -> _C:
    if name == "cel.bind":
        return _bind(c, n)
    args = [c.compile(x) for x in n.args]
    ts = [a.t for a in args]
    overloads = lib.FUNCTIONS[name]
    if name in ("optional.of", "optional.ofNonZeroValue") and len(args) == 1:
        overloads = [o._replace(params=(ts[0],), result=optional_of(ts[0])) for o in overloads]
    elif name == "optional.none":
        overloads = [o._replace(result=optional_of(FREE)) for o in overloads]
    elif name == "optional.unwrap" and len(args) == 1 and is_list(ts[0]) and is_optional(ts[0][1]):
        overloads = [o._replace(params=(ts[0],), result=list_of(ts[0][1][1])) for o in overloads]
    elif name.startswith("sets.") and len(args) == 2 and all(is_list(t) for t in ts) \
            and not _compatible(ts[0][1], ts[1][1]):
        raise _no_overload(n, name, ts)
    call_node = Call(n.pos, name, None, n.args)
    return c.overload(call_node, name, overloads, None, args)


def _bind(c: Checker, n: Call) -> _C:
    """``cel.bind(x, init, body)``: ``init`` evaluated once, visible as ``x`` in ``body``."""
    if len(n.args) != 3:
        raise CelSyntaxError(n.pos, "cel.bind() takes a variable name, an initial value and an expression")
    var = n.args[0]
    if not isinstance(var, Ident):
        raise CelSyntaxError(var.pos, "cel.bind() variable names must be simple identifiers")
    init = c.compile(n.args[1])
    name = var.name
    missing = object()
    saved = c.scope.get(name, missing)
    c.scope[name] = init.t
    try:
        body = c.compile(n.args[2])
    finally:
        if saved is missing:
            del c.scope[name]
        else:
            c.scope[name] = saved
    inf, bf = init.fn, body.fn
    if not _mentions(n.args[2], name):  # cel-go binds lazily: an unused init is never evaluated
        return body

    def bind(a: Any) -> Any:
        v = a.v
        old = v.get(name, missing)
        v[name] = inf(a)
        try:
            return bf(a)
        finally:
            if old is missing:
                v.pop(name, None)
            else:
                v[name] = old

    return _mk(body.t, bind, f"(lambda v_{name}: {body.py})({init.py})")


def _mentions(n: Any, name: str) -> bool:
    """Does the expression read the identifier ``name`` anywhere (shadowing ignored)?"""
    stack = [n]
    while stack:
        x = stack.pop()
        if isinstance(x, Ident) and x.name == name:
            return True
        if isinstance(x, Node):
            stack.extend(getattr(x, f) for f in x.__dataclass_fields__ if f != "pos")
        elif isinstance(x, list | tuple):
            stack.extend(x)
    return False


def _optional_method(c: Checker, n: Call) -> _C | None:
    assert n.target is not None
    recv = c.compile(n.target)
    if not (is_optional(recv.t) or recv.t == DYN):
        return None  # an ordinary call: it reports the missing overload
    elem = recv.t[1] if is_optional(recv.t) else DYN
    args = [c.compile(x) for x in n.args]
    overloads = lib.FUNCTIONS[n.name]
    if n.name == "value":
        overloads = [o._replace(receiver=recv.t, result=elem) for o in overloads]
    elif n.name == "orValue" and len(args) == 1:
        if not _compatible(elem, args[0].t):
            raise _no_overload(n, n.name, [recv.t, args[0].t])
        overloads = [o._replace(receiver=recv.t, params=(args[0].t,), result=join(elem, args[0].t))
                     for o in overloads]
    elif n.name == "or" and len(args) == 1:
        if not (is_optional(args[0].t) or args[0].t == DYN) or not _compatible(recv.t, args[0].t):
            raise _no_overload(n, n.name, [recv.t, args[0].t])
        overloads = [o._replace(receiver=recv.t, params=(args[0].t,), result=join(recv.t, args[0].t))
                     for o in overloads]
    return c.overload(n, n.name, overloads, recv, args)


def _opt_map(c: Checker, n: Call) -> _C:
    """``o.optMap(x, e)``: none stays none, else ``optional.of(e)`` with ``x`` the value;
    ``o.optFlatMap(x, e)``: ``e`` is itself an optional."""
    assert n.target is not None
    if len(n.args) != 2 or not isinstance(n.args[0], Ident):
        raise CelSyntaxError(n.pos, f"{n.name}() takes a variable name and an expression")
    recv = c.compile(n.target)
    if not (is_optional(recv.t) or recv.t == DYN):
        raise _no_overload(n, n.name, [recv.t])
    name = n.args[0].name
    missing = object()
    saved = c.scope.get(name, missing)
    c.scope[name] = recv.t[1] if is_optional(recv.t) else DYN
    try:
        body = c.compile(n.args[1])
    finally:
        if saved is missing:
            del c.scope[name]
        else:
            c.scope[name] = saved
    flat = n.name == "optFlatMap"
    if flat and not (is_optional(body.t) or body.t == DYN):
        raise CelSyntaxError(n.args[1].pos, f"optFlatMap() needs an optional result, got {fmt(body.t)}")
    rf, bf = recv.fn, body.fn

    def opt_map(a: Any) -> Any:
        o = rf(a)
        if type(o) is not Optional:
            raise CelError(f"no matching overload for '{n.name}' applied to ({type_name(o)})")
        if not o.has_value:
            return _NONE
        v = a.v
        old = v.get(name, missing)
        v[name] = o.value
        try:
            r = bf(a)
        finally:
            if old is missing:
                v.pop(name, None)
            else:
                v[name] = old
        if flat:
            if type(r) is not Optional:
                raise CelError(f"optFlatMap() expression returned {type_name(r)}, not an optional")
            return r
        return Optional(r)

    return _mk(body.t if flat else optional_of(body.t), opt_map, _py_call(c, opt_map))


# -- optional syntax -------------------------------------------------------------------------------

_NONE = OPTIONAL_NONE


def _select_value(v: Any, field: str, optional: bool) -> Any:
    if not isinstance(v, dict):
        raise CelError(f"type '{type_name(v)}' does not support field selection")
    if field in v:
        return Optional(v[field]) if optional else v[field]
    if optional:
        return _NONE
    raise CelError(f"no such key: '{field}'")


def optional_select(c: Checker, n: Select, o: _C) -> _C:
    """``a.?f`` (an optional: none when ``f`` is absent) and ``a.f`` on an optional ``a``."""
    t = o.t[1] if is_optional(o.t) else o.t
    if is_map(t):
        if not assignable(t[1], STRING):
            raise CelSyntaxError(n.pos, f"type '{fmt(o.t)}' does not support field selection")
        vt = t[2]
    elif t == DYN:
        vt = DYN
    else:
        raise CelSyntaxError(n.pos, f"type '{fmt(o.t)}' does not support field selection ('.{n.field}')")
    of, field, opt = o.fn, n.field, n.optional
    chained = is_optional(o.t)

    def select(a: Any) -> Any:
        v = of(a)
        if type(v) is Optional:
            if not v.has_value:
                return _NONE
            return _select_value(v.value, field, True)  # inside a chain, absent is none
        if chained:
            raise CelError(f"expected an optional, got {type_name(v)}")
        return _select_value(v, field, opt)

    return _mk(optional_of(vt), select, _py_call(c, select))


def _py_call(c: Checker, fn: Any) -> str:
    return f"{c.k(fn)}(A)"


def _index_value(v: Any, key: Any, optional: bool) -> Any:
    if isinstance(v, dict):
        found = lib._map_find(v, key)
        if found is not lib._MISSING:
            return Optional(found) if optional else found
        if optional:
            return _NONE
        raise CelError(f"no such key: {key!r}")
    if isinstance(v, list | tuple | set | frozenset):
        i = key
        if type(i) is float and i.is_integer():
            i = int(i)
        if type(i) not in (int, UInt):
            raise CelError(f"invalid list index type {type_name(key)}")
        items = lib.as_list(v)
        if 0 <= i < len(items):
            return Optional(items[i]) if optional else items[i]
        if optional:
            return _NONE
        raise CelError(f"index out of range: {i}")
    raise CelError(f"type '{type_name(v)}' does not support indexing")


def optional_index(c: Checker, n: Index, o: _C) -> _C:
    """``a[?k]`` (none when the key or index is absent) and ``a[k]`` on an optional ``a``."""
    k = c.compile(n.index)
    t = o.t[1] if is_optional(o.t) else o.t
    if is_list(t):
        if k.t not in (INT, UINT, DYN):
            raise CelSyntaxError(n.index.pos, f"list index must be int, not {fmt(k.t)}")
        vt = t[1]
    elif is_map(t):
        if not _compatible(t[1], k.t):
            raise CelSyntaxError(n.index.pos, f"map key must be {fmt(t[1])}, not {fmt(k.t)}")
        vt = t[2]
    elif t == DYN:
        vt = DYN
    else:
        raise CelSyntaxError(n.pos, f"type '{fmt(o.t)}' does not support indexing")
    of, kf, opt, chained = o.fn, k.fn, n.optional, is_optional(o.t)

    def index(a: Any) -> Any:
        v = of(a)
        key = kf(a)
        if type(v) is Optional:
            if not v.has_value:
                return _NONE
            return _index_value(v.value, key, True)
        if chained:
            raise CelError(f"expected an optional, got {type_name(v)}")
        return _index_value(v, key, opt)

    return _mk(optional_of(vt), index, _py_call(c, index))


def _optional_elem(n: Node, t: Type) -> Type:
    if is_optional(t):
        return t[1]
    if t == DYN:
        return DYN
    raise CelSyntaxError(n.pos, f"expected type 'optional_type' but found '{fmt(t)}'")


def optional_list(c: Checker, n: ListLit) -> _C:
    """``[a, ?b]``: ``b`` is an optional; its value is an element only when it has one."""
    items = [c.compile(i) for i in n.items]
    marks = set(n.optional_indices)
    ts = [(_optional_elem(x, i.t) if j in marks else i.t) for j, (x, i) in enumerate(zip(n.items, items, strict=True))]
    t: Type = ts[0] if ts else DYN
    for x in ts[1:]:
        t = join(t, x)
    plan = [(i.fn, j in marks) for j, i in enumerate(items)]

    def build(a: Any) -> list[Any]:
        out = []
        for f, opt in plan:
            v = f(a)
            if opt:
                if type(v) is not Optional:
                    raise CelError(f"expected an optional, got {type_name(v)}")
                if v.has_value:
                    out.append(v.value)
            else:
                out.append(v)
        return out

    return _mk(list_of(t), build, _py_call(c, build))


def optional_map(c: Checker, n: MapLit) -> _C:
    """``{?k: v}``: ``v`` is an optional; the entry is there only when it has a value."""
    entries = [(c.compile(k), c.compile(v)) for k, v in n.entries]
    marks = set(n.optional_indices)
    kt: Type = entries[0][0].t if entries else DYN
    vt: Type = DYN
    for j, ((k, v), (kn, vn)) in enumerate(zip(entries, n.entries, strict=True)):
        if k.t not in (INT, UINT, STRING, BOOL, DYN):
            raise CelSyntaxError(kn.pos, f"map keys must be int, uint, string or bool, not {fmt(k.t)}")
        et = _optional_elem(vn, v.t) if j in marks else v.t
        kt = join(kt, k.t)
        vt = et if j == 0 else join(vt, et)
    plan = [(k.fn, v.fn, j in marks) for j, (k, v) in enumerate(entries)]

    def build(a: Any) -> dict[Any, Any]:
        pairs = []
        for kf, vf, opt in plan:
            key, v = kf(a), vf(a)
            if opt:
                if type(v) is not Optional:
                    raise CelError(f"expected an optional, got {type_name(v)}")
                if not v.has_value:
                    continue
                v = v.value
            pairs.append((key, v))
        return rt.build_map(pairs)

    return _mk(map_of(kt, vt), build, _py_call(c, build))

