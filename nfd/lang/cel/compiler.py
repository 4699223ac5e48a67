"""Type-check a CEL AST and compile it, in one pass, into two equivalent forms.

- ``fn``: nested closures, ``fn(act) -> value``, with CEL's exact error semantics (``&&``/``||``
  and ``all``/``exists`` absorb an error from one side when the other side decides the result).
- ``py``: Python source for the same expression, built into one function by
  ``Compiler.source``; macros become comprehensions and typed operators plain Python
  operators. It assumes no error happens; when one does, the caller runs ``fn``.

Static types pick the fast forms: ``d.vendor == "10de"`` on a ``map(string, string)`` is a dict
lookup and a ``str`` comparison, with no runtime type dispatch. Where a type is ``dyn`` both
forms check types at run time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nfd.lang.cel import k8scalls
from nfd.lang.cel import library as lib
from nfd.lang.cel import runtime as rt
from nfd.lang.cel.compiled import _C, _NC, VARIABLES
from nfd.lang.cel.runtime import Act, Fn
from nfd.lang.cel.runtime import spend as _spend
from nfd.lang.cel.syntax import Call, CelSyntaxError, Ident, Index, ListLit, Lit, MapLit, Node, Select
from nfd.lang.cel.types import (
    BOOL,
    BYTES,
    DOUBLE,
    DYN,
    FREE,
    INT,
    NULL,
    NUMERIC,
    QUANTITY,
    STRING,
    UINT,
    VERSION,
    Type,
    _Free,
    assignable,
    comparable_eq,
    fmt,
    is_list,
    is_map,
    is_optional,
    join,
    list_of,
    map_of,
    runtime_is,
)
from nfd.lang.cel.values import CelError, CostLimitExceeded, UInt, type_name

_EMPTY: dict[str, Any] = {"flags": frozenset(), "attributes": {}, "instances": ()}

_SCALARS = (INT, UINT, DOUBLE, STRING, BYTES, BOOL, VERSION, QUANTITY)
_FOLD_STRICT = {"version", "quantity", "matches"}  # constant-argument errors are compile errors
FOLD_BUDGET = 100_000  # what building one constant at compile time may cost


def _top_var(name: str) -> Fn:
    if name == "node":
        return lambda a: a.node
    if name == "devices":
        return lambda a: a.devices
    if name == "flags":
        return lambda a: a.f.flags
    if name == "attributes":
        return lambda a: a.f.attributes
    return lambda a: a.f.instances


class Compiler:
    """One compiler per expression; ``scope`` maps macro variables in reach to their types."""

    def __init__(self, *, declared: dict[str, Type] | None = None, checked: bool = True) -> None:
        self.scope: dict[str, Type] = {}
        self.ns: dict[str, Any] = {}  # objects the generated Python source refers to
        # Extra variables, read from ``act.v`` (conformance tests and other embedders).
        self.declared: dict[str, Type] = dict(declared or {})
        # False: cel-go's unchecked mode. Every static type is dyn, so overloads are picked at
        # run time, and undeclared names or functions are errors at run time, not here.
        self.checked = checked

    def k(self, obj: Any) -> str:
        """A name for ``obj`` in the generated source (literals of plain types inline)."""
        t = type(obj)
        if obj is None or t in (bool, int, str) or (t is float and obj == obj and obj not in (_INF, -_INF)):
            return repr(obj)
        name = f"_k{len(self.ns)}"
        self.ns[name] = obj
        return name

    def const(self, v: Any, t: Type) -> _C:
        return _C(t, lambda a: v, self.k(v), v)

    def compile(self, n: Node) -> _C:
        c = self._compile(n)
        if not self.checked and c.t != DYN:
            return c._replace(t=DYN)
        return c

    def _compile(self, n: Node) -> _C:
        if isinstance(n, Lit):
            return self.const(n.value, _lit_type(n.value))
        if isinstance(n, Ident):
            return self._ident(n)
        if isinstance(n, Select):
            return self._select(n)
        if isinstance(n, Index):
            return self._index(n)
        if isinstance(n, Call):
            return self._call(n)
        if isinstance(n, ListLit):
            return self._list(n)
        if isinstance(n, MapLit):
            return self._map(n)
        raise CelSyntaxError(n.pos, "unsupported expression")

    # -- names and member access ----------------------------------------------------------------

    def _is_top(self, n: Node) -> str | None:
        if isinstance(n, Ident) and n.name in VARIABLES and n.name not in self.scope and n.name not in ("node", "devices"):
            return n.name
        return None

    def _ident(self, n: Ident) -> _C:
        name = n.name
        if name in self.scope:
            return _C(self.scope[name], lambda a: a.v[name], f"v_{name}")
        if name in self.declared:
            return _C(self.declared[name], lambda a: a.v[name], f"A.v[{name!r}]")
        if name in VARIABLES:
            return _C(VARIABLES[name], _top_var(name), _TOP_PY[name])
        if name in ("int", "uint", "double", "string", "bool", "bytes", "list", "map", "null_type"):
            msg = "type values are not supported"
        else:
            msg = f"undeclared reference to '{name}' (variables: {', '.join(VARIABLES)})"
        if not self.checked:
            return self._fails(msg)
        raise CelSyntaxError(n.pos, msg)

    def _fails(self, msg: str) -> _C:
        """Unchecked mode: what the checker would refuse is an error when evaluated."""

        def fail(a: Act) -> Any:
            raise CelError(msg)

        return _C(DYN, fail, f"{self.k(fail)}(A)")

    def _select(self, n: Select) -> _C:
        o = self.compile(n.operand)
        if n.optional or is_optional(o.t):
            return k8scalls.optional_select(self, n, o)
        field = n.field
        top = self._is_top(n.operand)
        if top is not None:
            default = _EMPTY[top]
            of = o.fn
            return _C(o.t[2], lambda a: of(a).get(field, default), f"{o.py}.get({field!r}, {self.k(default)})")
        of = o.fn
        if is_map(o.t):
            if not assignable(o.t[1], STRING):
                raise CelSyntaxError(n.pos, f"type '{fmt(o.t)}' does not support field selection")

            def sel(a: Act) -> Any:
                try:
                    return of(a)[field]
                except KeyError:
                    raise CelError(f"no such key: '{field}'") from None

            return _C(o.t[2], sel, f"{o.py}[{field!r}]")
        if o.t == DYN:

            return _C(DYN, lambda a: rt.select_dyn(of(a), field), f"{self.k(rt.select_dyn)}({o.py}, {field!r})")
        raise CelSyntaxError(n.pos, f"type '{fmt(o.t)}' does not support field selection ('.{field}')")

    def _index(self, n: Index) -> _C:
        o = self.compile(n.operand)
        if n.optional or is_optional(o.t):
            return k8scalls.optional_index(self, n, o)
        k = self.compile(n.index)
        of, kf = o.fn, k.fn
        top = self._is_top(n.operand)
        if top is not None:
            if not assignable(STRING, k.t):
                raise CelSyntaxError(n.index.pos, f"feature names are strings, not {fmt(k.t)}")
            default = _EMPTY[top]
            if k.const is not _NC:
                key = k.const
                return _C(o.t[2], lambda a: of(a).get(key, default), f"{o.py}.get({key!r}, {self.k(default)})")
            return _C(o.t[2], lambda a: rt.top_get(of(a), kf(a), default),
                      f"{self.k(rt.top_get)}({o.py}, {k.py}, {self.k(default)})")
        if is_list(o.t):
            if k.t not in (INT, UINT, DYN, DOUBLE):
                raise CelSyntaxError(n.index.pos, f"list index must be int, not {fmt(k.t)}")
            return _C(o.t[1], lambda a: lib.list_index(of(a), kf(a)), f"{self.k(lib.list_index)}({o.py}, {k.py})")
        if is_map(o.t):
            if not comparable_eq(o.t[1], k.t):
                raise CelSyntaxError(n.index.pos, f"map key must be {fmt(o.t[1])}, not {fmt(k.t)}")
            if o.t[1] == STRING and k.const is not _NC:
                key = k.const

                def get_const(a: Act) -> Any:
                    try:
                        return of(a)[key]
                    except KeyError:
                        raise CelError(f"no such key: {key!r}") from None

                return _C(o.t[2], get_const, f"{o.py}[{key!r}]")
            return _C(o.t[2], lambda a: lib.map_get(of(a), kf(a)), f"{self.k(lib.map_get)}({o.py}, {k.py})")
        if o.t == DYN:

            return _C(DYN, lambda a: rt.index_dyn(of(a), kf(a)), f"{self.k(rt.index_dyn)}({o.py}, {k.py})")
        raise CelSyntaxError(n.pos, f"type '{fmt(o.t)}' does not support indexing")

    # -- literals -------------------------------------------------------------------------------

    def _list(self, n: ListLit) -> _C:
        if n.optional_indices:
            return k8scalls.optional_list(self, n)
        items = [self.compile(i) for i in n.items]
        t: Type = items[0].t if items else FREE
        for i in items[1:]:
            t = unify(t, i.t)
        lt = list_of(t)
        if all(i.const is not _NC for i in items):
            return self.const([i.const for i in items], lt)
        fns = [i.fn for i in items]
        return _C(lt, lambda a: [f(a) for f in fns], f"[{', '.join(i.py for i in items)}]")

    def _map(self, n: MapLit) -> _C:
        if n.optional_indices:
            return k8scalls.optional_map(self, n)
        entries = [(self.compile(k), self.compile(v)) for k, v in n.entries]
        kt: Type = entries[0][0].t if entries else FREE
        vt: Type = entries[0][1].t if entries else FREE
        for (k, v), (kn, _) in zip(entries, n.entries, strict=True):
            if k.t not in (INT, UINT, STRING, BOOL, DYN):
                raise CelSyntaxError(kn.pos, f"map keys must be int, uint, string or bool, not {fmt(k.t)}")
            kt, vt = unify(kt, k.t), unify(vt, v.t)
        mt = map_of(kt, vt)
        if all(k.const is not _NC and type(k.const) in _KEY_TYPES and v.const is not _NC for k, v in entries):
            pairs_c = [(k.const, v.const) for k, v in entries]
            try:
                return self.const(rt.build_map(pairs_c), mt)
            except CelError as e:  # a repeated constant key: say which entry repeats
                at = next(i for i in range(len(pairs_c)) if _map_fails(pairs_c[:i + 1]))
                raise CelSyntaxError(n.entries[at][0].pos, str(e)) from None
        pairs = [(k.fn, v.fn) for k, v in entries]
        py = f"{self.k(rt.build_map)}(({''.join(f'({k.py}, {v.py}), ' for k, v in entries)}))"
        return _C(mt, lambda a: rt.build_map([(kf(a), vf(a)) for kf, vf in pairs]), py)

    # -- calls ----------------------------------------------------------------------------------

    def _call(self, n: Call) -> _C:
        name = n.name
        special = k8scalls.call(self, n)  # Kubernetes' library: namespaces, cel.bind, optionals
        if special is not None:
            return special
        if n.target is None:
            if name == "_&&_" or name == "_||_":
                return self._logic(n)
            if name == "_?_:_":
                return self._cond(n)
            if name == "_==_" or name == "_!=_":
                return self._eq(n)
            if name == "@in":
                return self._in(n)
            if name == "has":
                return self._has(n)
        elif name in lib.MACROS and n.args and isinstance(n.args[0], Ident):
            return self._macro(n)
        if name in lib.UNSUPPORTED_FUNCTIONS:
            raise CelSyntaxError(n.pos, lib.UNSUPPORTED_FUNCTIONS[name])
        overloads = lib.FUNCTIONS.get(name)
        if overloads is None:
            what = "method" if n.target is not None else "function"
            if not self.checked:
                return self._fails(f"no such overload: undeclared {what} '{name}'")
            raise CelSyntaxError(n.pos, f"undeclared reference to {what} '{name}'")
        recv = self.compile(n.target) if n.target is not None else None
        args = [self.compile(x) for x in n.args]
        return self.overload(n, name, overloads, recv, args)

    def overload(self, n: Call, name: str, overloads: list[lib.Overload], recv: _C | None,
                  args: list[_C]) -> _C:
        cands = _candidates(name, overloads, recv.t if recv is not None else None, tuple(a.t for a in args))
        all_args = ([recv] if recv is not None else []) + args
        if not cands:
            shown = ", ".join(fmt(a.t) for a in all_args)
            what = _OP_NAMES.get(name, name)
            raise CelSyntaxError(n.pos, f"no matching overload for '{what}' applied to ({shown})")
        results = {o.result for o in cands}
        rt: Type = cands[0].result if len(results) == 1 else DYN
        if name == "_+_" and all(is_list(a.t) for a in all_args):
            rt = join(all_args[0].t, all_args[1].t)
        exact = len(cands) == 1 and all(a.t != DYN for a in all_args)
        costed = any(o.cost is not None for o in cands)
        if exact and not costed:
            impl = cands[0].impl
        else:
            impl = _dispatcher(_OP_NAMES.get(name, name), cands, recv is not None, costed)
        consts = [a.const for a in all_args]
        if all(c is not _NC for c in consts):
            try:
                folding = [Act(None, {}, FOLD_BUDGET)] if costed else []
                return self.const(impl(*folding, *consts), rt)
            except CostLimitExceeded:
                raise CelSyntaxError(n.pos, "constant expression is too large") from None
            except CelError as e:
                if name in _FOLD_STRICT:
                    raise CelSyntaxError(n.pos, str(e)) from None
            except Exception:  # noqa: BLE001 - leave it to run time, where it fails the rule
                pass
        if costed:  # the implementation charges the activation: pass it first
            all_args = [_C(DYN, lambda a: a, "A"), *all_args]
        if exact and name == "matches" and consts[1] is not _NC:
            try:
                rx = lib.compile_regex(consts[1])
            except CelError as e:
                raise CelSyntaxError(n.args[-1].pos, str(e)) from None
            text_arg = all_args[1] if costed else all_args[0]
            sf = text_arg.fn
            match = rx.match_string
            per_step = lib.REGEX_CHARS_PER_STEP

            def matches_const(a: Act) -> bool:
                s = sf(a)
                if isinstance(s, str) and len(s) >= per_step:
                    _spend(a, len(s) // per_step)
                return match(s)

            return _C(rt, matches_const, f"{self.k(matches_const)}(A)")
        py = f"{self.k(impl)}({', '.join(a.py for a in all_args)})"
        return _C(rt, _apply(impl, all_args), py)

    # -- operators with special rules -------------------------------------------------------------

    def _bool_operand(self, n: Node) -> _C:
        c = self.compile(n)
        if c.t not in (BOOL, DYN):
            raise CelSyntaxError(n.pos, f"expected bool, got {fmt(c.t)}")
        return c

    def _logic(self, n: Call) -> _C:
        left, right = (self._bool_operand(x) for x in n.args)
        lf, rf = left.fn, right.fn
        static = left.t == BOOL and right.t == BOOL
        lp, rp = self._bool_py(left), self._bool_py(right)
        if n.name == "_&&_":
            return _C(BOOL, rt.and_static(lf, rf) if static else rt.logic_dyn(lf, rf, False), f"({lp} and {rp})")
        return _C(BOOL, rt.or_static(lf, rf) if static else rt.logic_dyn(lf, rf, True), f"({lp} or {rp})")

    def _bool_py(self, c: _C) -> str:
        """Python source that is ``c`` as a bool, raising (so the exact path runs) if it is not."""
        return c.py if c.t == BOOL else f"{self.k(rt.as_bool)}({c.py})"

    def _cond(self, n: Call) -> _C:
        c = self._bool_operand(n.args[0])
        t, e = self.compile(n.args[1]), self.compile(n.args[2])
        cf, tf, ef = c.fn, t.fn, e.fn

        def cond(a: Act) -> Any:
            v = cf(a)
            if v is True:
                return tf(a)
            if v is False:
                return ef(a)
            raise CelError(f"no matching overload for '_?_:_' applied to ({type_name(v)}, ...)")

        return _C(unify(t.t, e.t), cond, f"({t.py} if {self._bool_py(c)} else {e.py})")

    def _eq(self, n: Call) -> _C:
        left, right = self.compile(n.args[0]), self.compile(n.args[1])
        if not comparable_eq(left.t, right.t):
            op = "==" if n.name == "_==_" else "!="
            raise CelSyntaxError(n.pos, f"no matching overload for '{op}' applied to "
                                        f"({fmt(left.t)}, {fmt(right.t)})")
        lf, rf = left.fn, right.fn
        plain = (left.t == right.t and left.t in _SCALARS) or (left.t in NUMERIC and right.t in NUMERIC)
        eq = n.name == "_==_"
        if left.const is not _NC and right.const is not _NC:
            v = lib.cel_eq(left.const, right.const)
            return self.const(v if eq else not v, BOOL)
        if plain:
            py = f"({left.py} {'==' if eq else '!='} {right.py})"
            if right.const is not _NC:
                c = right.const
                return _C(BOOL, (lambda a: lf(a) == c) if eq else (lambda a: lf(a) != c), py)
            if left.const is not _NC:
                c = left.const
                return _C(BOOL, (lambda a: c == rf(a)) if eq else (lambda a: c != rf(a)), py)
            return _C(BOOL, (lambda a: lf(a) == rf(a)) if eq else (lambda a: lf(a) != rf(a)), py)
        ce = lib.cel_eq
        py = f"{'' if eq else 'not '}{self.k(ce)}({left.py}, {right.py})"
        return _C(BOOL, (lambda a: ce(lf(a), rf(a))) if eq else (lambda a: not ce(lf(a), rf(a))), f"({py})")

    def _in(self, n: Call) -> _C:
        x, c = self.compile(n.args[0]), self.compile(n.args[1])
        if is_list(c.t) or is_map(c.t):
            elem = c.t[1]
        elif c.t == DYN:
            elem = DYN
        else:
            raise CelSyntaxError(n.pos, f"no matching overload for 'in' applied to ({fmt(x.t)}, {fmt(c.t)})")
        if not comparable_eq(x.t, elem):
            raise CelSyntaxError(n.pos, f"no matching overload for 'in' applied to ({fmt(x.t)}, {fmt(c.t)})")
        xf, cf = x.fn, c.fn
        if x.t == STRING and elem == STRING:
            if c.const is not _NC:
                pool = frozenset(c.const)
                return _C(BOOL, lambda a: xf(a) in pool, f"({x.py} in {self.k(pool)})")
            return _C(BOOL, lambda a: xf(a) in cf(a), f"({x.py} in {c.py})")
        ci = lib.cel_in
        return _C(BOOL, lambda a: ci(xf(a), cf(a)), f"{self.k(ci)}({x.py}, {c.py})")

    def _has(self, n: Call) -> _C:
        if len(n.args) != 1 or not isinstance(n.args[0], Select):
            raise CelSyntaxError(n.pos, "has() takes a field selection like has(node.name)")
        sel = n.args[0]
        o = self.compile(sel.operand)
        if not (is_map(o.t) or o.t == DYN or is_optional(o.t)):
            raise CelSyntaxError(sel.pos, f"has() does not apply to type '{fmt(o.t)}'")
        of, field = o.fn, sel.field
        return _C(BOOL, lambda a: rt.has_field(of(a), field), f"{self.k(rt.has_field)}({o.py}, {field!r})")

    def _macro(self, n: Call) -> _C:
        assert n.target is not None
        name = n.name
        if len(n.args) >= 3 and isinstance(n.args[1], Ident) and name in lib.MACROS2:
            return self._macro2(n)
        if name == "existsOne":
            name = "exists_one"
        var = n.args[0]
        assert isinstance(var, Ident)
        want = 3 if name == "map" and len(n.args) == 3 else 2
        if name in ("transformList", "transformMap"):
            raise CelSyntaxError(n.pos, f"{name}() takes two variable names")
        if len(n.args) != want:
            raise CelSyntaxError(n.pos, f"{name}() takes a variable name and an expression")
        target = self.compile(n.target)
        if is_list(target.t) or is_map(target.t):
            vt = target.t[1]
        elif target.t == DYN:
            vt = DYN
        else:
            raise CelSyntaxError(n.pos, f"{name}() applies to lists and maps, not {fmt(target.t)}")
        saved = self.scope.get(var.name, _NC)
        self.scope[var.name] = vt
        try:
            bodies = [self.compile(b) for b in n.args[1:]]
        finally:
            if saved is _NC:
                del self.scope[var.name]
            else:
                self.scope[var.name] = saved
        preds = bodies if name != "map" else bodies[:-1]
        for b, bn in zip(preds, n.args[1:], strict=False):
            if b.t not in (BOOL, DYN):
                raise CelSyntaxError(bn.pos, f"{name}() needs a bool predicate, got {fmt(b.t)}")
        tf = target.fn
        static_list = is_list(target.t)
        v = f"v_{var.name}"
        ordered = name in ("map", "filter")  # these build lists: iterate flag sets sorted
        charge = rt.charge_list if static_list and not ordered else (rt.charge_ordered if ordered else rt.charge_any)
        it = f"{self.k(charge)}(A, {target.py})"
        p = self._bool_py(bodies[0]) if name != "map" or len(bodies) == 2 else ""
        if name == "exists":
            return _C(BOOL, rt.exists(tf, var.name, bodies[0].fn, charge), f"any({p} for {v} in {it})")
        if name == "all":
            return _C(BOOL, rt.all_of(tf, var.name, bodies[0].fn, charge), f"all({p} for {v} in {it})")
        if name == "exists_one":
            return _C(BOOL, rt.exists_one(tf, var.name, bodies[0].fn, charge),
                      f"(sum(1 for {v} in {it} if {p}) == 1)")
        if name == "filter":
            return _C(list_of(vt), rt.map_filter(tf, var.name, bodies[0].fn, None, charge),
                      f"[{v} for {v} in {it} if {p}]")
        if len(bodies) == 2:
            return _C(list_of(bodies[1].t), rt.map_filter(tf, var.name, bodies[0].fn, bodies[1].fn, charge),
                      f"[{bodies[1].py} for {v} in {it} if {p}]")
        return _C(list_of(bodies[0].t), rt.map_filter(tf, var.name, None, bodies[0].fn, charge),
                  f"[{bodies[0].py} for {v} in {it}]")

    def _macro2(self, n: Call) -> _C:
        """``all/exists/existsOne(i, v, p)``, ``transformList/transformMap(i, v, [p,] t)``."""
        assert n.target is not None
        name = "exists_one" if n.name == "existsOne" else n.name
        first, second = n.args[0], n.args[1]
        assert isinstance(first, Ident) and isinstance(second, Ident)
        transform = name in ("transformList", "transformMap")
        if len(n.args) not in ((3, 4) if transform else (3,)):
            raise CelSyntaxError(n.pos, f"{name}() takes two variable names and an expression")
        if first.name == second.name:
            raise CelSyntaxError(second.pos, f"{name}() needs two different variable names")
        target = self.compile(n.target)
        if is_list(target.t):
            kt, vt = INT, target.t[1]
        elif is_map(target.t):
            kt, vt = target.t[1], target.t[2]
        elif target.t == DYN:
            kt = vt = DYN
        else:
            raise CelSyntaxError(n.pos, f"{n.name}() applies to lists and maps, not {fmt(target.t)}")
        saved = {x: self.scope.get(x, _NC) for x in (first.name, second.name)}
        self.scope[first.name], self.scope[second.name] = kt, vt
        try:
            bodies = [self.compile(b) for b in n.args[2:]]
        finally:
            for x, old in saved.items():
                if old is _NC:
                    del self.scope[x]
                else:
                    self.scope[x] = old
        preds = bodies[:-1] if transform else bodies
        for b, bn in zip(preds, n.args[2:], strict=False):
            if b.t not in (BOOL, DYN):
                raise CelSyntaxError(bn.pos, f"{n.name}() needs a bool predicate, got {fmt(b.t)}")
        names = (first.name, second.name)
        tf = target.fn
        it = f"{self.k(rt.charge_pairs)}(A, {target.py})"
        loop = f"for v_{first.name}, v_{second.name} in {it}"
        pf = preds[0].fn if preds else None
        p = self._bool_py(preds[0]) if preds else ""
        if name == "exists":
            return _C(BOOL, rt.exists(tf, names, bodies[0].fn, rt.charge_pairs), f"any({p} {loop})")
        if name == "all":
            return _C(BOOL, rt.all_of(tf, names, bodies[0].fn, rt.charge_pairs), f"all({p} {loop})")
        if name == "exists_one":
            return _C(BOOL, rt.exists_one(tf, names, bodies[0].fn, rt.charge_pairs), f"(sum(1 {loop} if {p}) == 1)")
        t = bodies[-1]
        cond = f" if {p}" if preds else ""
        if name == "transformList":
            return _C(list_of(t.t), rt.map_filter(tf, names, pf, t.fn, rt.charge_pairs),
                      f"[{t.py} {loop}{cond}]")
        if kt in (STRING, INT, UINT):  # keys of one type: a plain dict is the CEL map
            py = f"{{v_{first.name}: {t.py} {loop}{cond}}}"
        else:  # bool or dyn keys (true and 1 are two keys): values.make_map
            py = f"{self.k(rt.build_map)}([(v_{first.name}, {t.py}) {loop}{cond}])"
        return _C(map_of(kt, t.t), rt.transform_map(tf, names, pf, t.fn), py)

    def source(self, root: _C) -> Fn | None:
        """The fast path: the whole expression as one Python function, or None if it won't build.

        It assumes no CEL error happens. When one does (any exception), the caller re-runs the
        exact closures, which apply CEL's error absorption. Without an error both evaluate the
        same sub-expressions to the same values, so their results agree.
        """
        # A lambda compiled in "eval" mode: Python's compile() is most of the cost of building
        # an expression, and this form is the cheapest to compile.
        try:
            code = compile(f"lambda A: {root.py}", "<cel>", "eval", dont_inherit=True)
            return eval(code, self.ns)  # type: ignore[no-any-return]  # noqa: S307 - our own generated source
        except (SyntaxError, RecursionError, MemoryError, ValueError):
            return None  # e.g. nesting beyond the Python parser's limit: closures only


# The parser reads the optional syntax (Select/Index.optional, List/MapLit.optional_indices);
# until optional values exist, the checker refuses it here.
_NO_OPTIONALS = "optional syntax (a.?b, a[?k], [?x], {?k: v}) is not supported"

def unify(a: Type, b: Type) -> Type:
    """``join`` of the types of list elements, map keys/values or ternary branches."""
    if type(a) is _Free:
        return b
    if type(b) is _Free:
        return a
    if NULL in (a, b) and (is_optional(a) or is_optional(b)):  # null is assignable to optional(T)
        return b if a == NULL else a
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0] and len(a) == len(b):
        return (a[0], *(unify(x, y) for x, y in zip(a[1:], b[1:], strict=True)))  # list, map, optional
    return join(a, b)


_CANDIDATES: dict[tuple[Any, ...], tuple[list[lib.Overload], list[lib.Overload]]] = {}


def _candidates(name: str, overloads: list[lib.Overload], recv_t: Type | None,
                arg_ts: tuple[Type, ...]) -> list[lib.Overload]:
    """The overloads that accept these static types; memoized, as the same few signatures
    recur in every rule and scanning the overload table was most of the checker's time."""
    key = (name, recv_t, arg_ts)
    hit = _CANDIDATES.get(key)
    if hit is not None and hit[0] is overloads:
        return hit[1]
    cands = [
        o for o in overloads
        if (o.receiver is None) == (recv_t is None)
        and len(o.params) == len(arg_ts)
        and (recv_t is None or assignable(o.receiver, recv_t))
        and all(assignable(p, t) for p, t in zip(o.params, arg_ts, strict=True))
    ]
    if len(_CANDIDATES) >= 4096:  # signatures are few; nested user types could make more
        _CANDIDATES.clear()
    _CANDIDATES[key] = (overloads, cands)
    return cands


_KEY_TYPES = (int, UInt, str, bool)  # unchecked mode: other constant keys fail when evaluated

_OP_NAMES = {"_+_": "+", "_-_": "-", "_*_": "*", "_/_": "/", "_%_": "%", "-_": "-", "!_": "!",
             "_<_": "<", "_<=_": "<=", "_>_": ">", "_>=_": ">="}


def _map_fails(pairs: list[tuple[Any, Any]]) -> bool:
    try:
        rt.build_map(pairs)
    except CelError:
        return True
    return False


def _lit_type(v: Any) -> Type:
    t = type(v)
    if t is bool:
        return BOOL
    if t is int:
        return INT
    if t is UInt:
        return UINT
    if t is float:
        return DOUBLE
    if t is str:
        return STRING
    if t is bytes:
        return BYTES
    return NULL


def _dispatcher(name: str, cands: list[lib.Overload], method: bool, costed: bool) -> Callable[..., Any]:
    """Pick the overload by the runtime types of the arguments (some were ``dyn`` statically).

    ``costed``: the first argument is the activation, charged the overload's cost first.
    """

    def pick(vals: tuple[Any, ...]) -> lib.Overload:
        for o in cands:
            types = ((o.receiver,) if method else ()) + o.params
            if all(runtime_is(v, t) for v, t in zip(vals, types, strict=True)):
                return o
        shown = ", ".join(type_name(v) for v in vals)
        raise CelError(f"no matching overload for '{name}' applied to ({shown})")

    if len(cands) == 1 and costed:
        only = cands[0]
        impl, cost = only.impl, only.cost
        assert cost is not None

        def call_costed(a: Act, *vals: Any) -> Any:
            if len(vals) != len(only.params) + method or not all(
                runtime_is(v, t) for v, t in zip(vals, ((only.receiver,) if method else ()) + only.params, strict=True)
            ):
                pick(vals)
            rt.spend(a, cost(*vals))
            return impl(*vals)

        return call_costed
    if costed:

        def call_any_costed(a: Act, *vals: Any) -> Any:
            o = pick(vals)
            if o.cost is not None:
                rt.spend(a, o.cost(*vals))
            return o.impl(*vals)

        return call_any_costed

    def call(*vals: Any) -> Any:
        return pick(vals).impl(*vals)

    return call


def _apply(impl: Callable[..., Any], args: list[_C]) -> Fn:
    """A closure calling ``impl`` with constants inlined; arities 0-3 avoid ``*args``."""
    fns = [a.fn for a in args]
    cs = [a.const for a in args]
    if len(args) == 0:
        return lambda a: impl()
    if len(args) == 1:
        f0 = fns[0]
        return lambda a: impl(f0(a))
    if len(args) == 2:
        f0, f1 = fns
        if cs[1] is not _NC:
            c1 = cs[1]
            return lambda a: impl(f0(a), c1)
        if cs[0] is not _NC:
            c0 = cs[0]
            return lambda a: impl(c0, f1(a))
        return lambda a: impl(f0(a), f1(a))
    if len(args) == 3:
        f0, f1, f2 = fns
        return lambda a: impl(f0(a), f1(a), f2(a))
    return lambda a: impl(*(f(a) for f in fns))


_INF = float("inf")
_TOP_PY = {"flags": "A.f.flags", "attributes": "A.f.attributes", "instances": "A.f.instances", "node": "A.node",
           "devices": "A.devices"}
