"""Compile parse trees into nested Python closures that execute with Go text/template semantics.

Every node becomes a closure taking (state, dot); nothing is re-parsed or re-inspected per
execution. Errors carry the node so the message can name `NAME:LINE:COL` and the failing
action like Go's `executing "NAME" at <...>`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import pairwise
from typing import Any

from . import funcs as K
from .budget import BUDGETED, GUARDED, Budget, guarded
from .builtins import call_named
from .errors import BreakLoop, ContinueLoop, ExecError, FuncError, TemplateError
from .funcs import GO_TYPE, Func, Method
from .gotime import Duration
from .nodes import (
    ActionNode,
    BoolNode,
    BranchNode,
    BreakNode,
    ChainNode,
    CommandNode,
    ContinueNode,
    DotNode,
    FieldNode,
    IdentifierNode,
    ListNode,
    NilNode,
    Node,
    NumberNode,
    PipeNode,
    StringNode,
    TemplateNode,
    TextNode,
    VariableNode,
)
from .values import GoObject, TypedMap, is_true, print_value, sorted_keys, type_name

# Output is measured at least every OUTPUT_CHECK_CHUNKS pieces written (see check_output).
OUTPUT_CHECK_CHUNKS = 256
MAX_EXEC_DEPTH = 100  # Go allows 100000 nested {{template}} calls; Python's stack does not.

Value = Any
Eval = Callable[["State", Value], Value]
Walk = Callable[["State", Value], None]
Cmd = Callable[["State", Value, Value], Value]


class _Missing:
    """No piped value (Go's missingVal)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


class State(Budget):
    __slots__ = ("out", "vars", "name", "depth", "templates", "at", "recount_at")

    def __init__(self, name: str, templates: Mapping[str, Walk], root: Value, limits: tuple[int, int]) -> None:
        self.steps, self.room = self.limits = limits  # Budget's fields, set here (no super() call)
        # len(out) at which to measure the output; the pieces before recount_at -
        # OUTPUT_CHECK_CHUNKS are already charged to `room`
        self.recount_at = OUTPUT_CHECK_CHUNKS
        self.out: list[str] = []
        self.vars: list[list[Any]] = [["$", root]]
        self.name = name
        self.depth = 0
        self.templates = templates
        self.at: Node | None = None  # last argument an and/or evaluated (Go's s.at), for errors


def _var_value(st: State, name: str, node: Node) -> Value:
    for entry in reversed(st.vars):
        if entry[0] == name:
            return entry[1]
    raise ExecError(node, f"undefined variable: {name}")


def _set_var(st: State, name: str, value: Value, node: Node) -> None:
    for entry in reversed(st.vars):
        if entry[0] == name:
            entry[1] = value
            return
    raise ExecError(node, f"undefined variable: {name}")


def _field(recv: Value, name: str, node: Node, has_args: bool, recv_type: str) -> Value:
    """One step of a field chain: a map key lookup (missingkey=error).

    `recv_type` is the Go static type for messages: "interface {}" for values read out of a
    map or list, "" to use the value's own type (pipeline results).
    """
    if isinstance(recv, dict):
        if has_args:
            raise ExecError(node, f"{name} is not a method but has arguments")
        try:
            return recv[name]
        except KeyError:
            raise ExecError(node, f'map has no entry for key "{name}"') from None
    if isinstance(recv, GoObject):
        m = recv.method(name)
        if m is None:
            raise ExecError(node, f"can't evaluate field {name} in type {recv.type_name}")
        return _invoke(recv, name, m, [], node, node)
    if recv is None and not recv_type:
        raise ExecError(node, f'nil data; no entry for key "{name}"')  # dot itself is nil
    rt = recv_type or type_name(recv)
    if recv is None:
        raise ExecError(node, f"nil pointer evaluating {rt}.{name}")
    raise ExecError(node, f"can't evaluate field {name} in type {rt}")


def _invoke(recv: GoObject, name: str, m: Method, argv: list[Value], node: Node, call_node: Node) -> Value:
    """Call a Go method: the argument count and signature are checked first (errors at the
    receiver), a failing call is reported at the field or chain node, as Go's evalCall does."""
    if len(argv) != len(m.params):
        raise ExecError(node, f"wrong number of args for {name}: want {len(m.params)} got {len(argv)}")
    if m.bad is not None:
        raise ExecError(node, m.bad)
    try:
        return m.fn(recv, *argv)
    except FuncError as e:
        raise ExecError(call_node, f"error calling {name}: {e}") from None


class _MethodArgs:
    """Arguments of a field call (`.Compare (semver "1.0")`): the parameter types are known
    only once the receiver is, so each argument is compiled for every method parameter kind."""

    __slots__ = ("evals", "n")

    def __init__(self, compiler: Compiler, nodes: list[Node]) -> None:
        self.n = len(nodes)
        self.evals = [{k: compiler.arg(a, k) for k in K.METHOD_KINDS} for a in nodes]

    def call(self, st: State, dot: Value, recv: Value, names: list[str], node: Node, recv_type: str,
             final: Value, call_node: Node) -> Value:
        if len(names) > 1:
            recv = _field_chain(recv, names[:-1], node, False, recv_type)
            recv_type = "interface {}"
        name = names[-1]
        m = recv.method(name) if isinstance(recv, GoObject) else None
        if m is None:
            return _field(recv, name, node, True, recv_type)
        nin = self.n + (final is not MISSING)
        if nin != len(m.params):
            raise ExecError(node, f"wrong number of args for {name}: want {len(m.params)} got {nin}")
        if m.bad is not None:
            raise ExecError(node, m.bad)
        argv = [ev[k](st, dot) for ev, k in zip(self.evals, m.params, strict=False)]
        if final is not MISSING:
            argv.append(_validate(final, m.params[-1], node))
        return _invoke(recv, name, m, argv, node, call_node)


def _field_chain(recv: Value, names: list[str], node: Node, has_args: bool, recv_type: str) -> Value:
    last = len(names) - 1
    for i, name in enumerate(names):
        if isinstance(recv, dict) and not (has_args and i == last):
            try:
                recv = recv[name]
                recv_type = "interface {}"
                continue
            except KeyError:
                pass
        recv = _field(recv, name, node, has_args and i == last, recv_type)
        recv_type = "interface {}"
    return recv


def _validate(value: Value, kind: str, node: Node, *, from_data: bool = False) -> Value:
    """Go's validateType for a computed value passed to a parameter of the given kind.

    `from_data`: the value was read from a map/variable, so a nil is a typed interface{}
    (Go says "got interface {}") rather than a missing value.
    """
    if kind == K.ANY:
        return value
    if value is None:
        if from_data:
            raise ExecError(node, f"wrong type for value; expected {GO_TYPE[kind]}; got interface {{}}")
        if kind in (K.LIST, K.MAP, K.STRS, K.VERSION, K.LOCATION):
            return value
        raise ExecError(node, f"invalid value; expected {GO_TYPE[kind]}")
    ok: bool
    if kind == K.STR:
        ok = isinstance(value, str)
    elif kind == K.INT:
        ok = isinstance(value, int) and not isinstance(value, bool) and not hasattr(value, "go_type")
    elif kind == K.FLOAT:
        ok = isinstance(value, float)
    elif kind == K.BOOL:
        ok = isinstance(value, bool)
    elif kind == K.LIST:
        ok = isinstance(value, (list, tuple))
    elif kind == K.MAP:  # a typed map (NFD's MatchedElement...) is not map[string]interface{}
        ok = isinstance(value, dict) and not isinstance(value, TypedMap)
    elif kind == K.STRS:
        ok = isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value)
    else:  # Go types of Sprig results (*semver.Version, time.Time, time.Duration...)
        ok = type_name(value) == kind
    if not ok:
        raise ExecError(node, f"wrong type for value; expected {GO_TYPE[kind]}; got {type_name(value)}")
    return value


def ideal_constant(n: NumberNode) -> Value:
    """An untyped number constant as interface{}: float only when written like one.

    Raises ExecError for constants that fit no Go int (callers defer it to execution)."""
    if n.is_complex:
        return n.complex_val
    text = n.text.lower()
    is_hex_int = text.lstrip("+-").startswith("0x") and "p" not in text
    if n.is_float and not is_hex_int and not n.is_char and any(c in n.text for c in ".eEpP"):
        return n.float_val
    if n.is_int:
        return n.int_val
    if n.is_uint:
        raise ExecError(n, f"{n.text} overflows int")
    return n.float_val


def _constant(n: NumberNode) -> Eval:
    """A closure yielding the constant, or raising its overflow error when executed."""
    try:
        c = ideal_constant(n)
    except ExecError as e:
        return _raiser2(n, e.message)
    return lambda st, dot: c


class Compiler:
    """Turns the parse trees of one template source into closures, once."""

    def __init__(self, funcs: Mapping[str, Func], trees: Mapping[str, ListNode]) -> None:
        self.funcs = funcs
        self.trees = trees
        self.compiled: dict[str, Walk] = {}
        # Static Go types for error messages: is dot a range element (interface {})? Which
        # variables hold range elements?
        self.dot_elem = False
        self.elem_vars: frozenset[str] = frozenset()
        # Steps a {{template}} call costs: the call plus the actions outside ranges.
        self.template_cost = {name: 1 + _static_cost(tree) for name, tree in trees.items()}
        self.uses_budget = False  # calls a function that reads budget.current
        # Compiling a block whose owner (a range loop, a {{template}} call, execute) measures
        # the output it writes: at most OUTPUT_CHECK_CHUNKS pieces, so actions need not.
        self.unchecked = False

    def compile_all(self) -> dict[str, Walk]:
        for name, tree in self.trees.items():
            self.unchecked = _static_cost(tree, text=True) <= OUTPUT_CHECK_CHUNKS
            self.compiled[name] = self.block(tree)
        return self.compiled

    # --- statements ---------------------------------------------------
    def block(self, lst: ListNode) -> Walk:
        # Text is kept as plain strings in the list: appending is cheaper than a call. Output
        # is not counted here: see check_output.
        parts: list[Any] = []
        for n in lst.nodes:
            if isinstance(n, TextNode):
                if parts and type(parts[-1]) is str:
                    parts[-1] += n.text
                else:
                    parts.append(n.text)
            else:
                parts.append(self.node(n))
        if not parts:
            return lambda st, dot: None
        if len(parts) == 1:
            only = parts[0]
            if type(only) is not str:
                return only  # type: ignore[no-any-return]

            def walk_text(st: State, dot: Value) -> None:
                st.out.append(only)

            return walk_text

        def walk_list(st: State, dot: Value) -> None:
            out = st.out
            for p in parts:
                if type(p) is str:
                    out.append(p)
                else:
                    p(st, dot)

        return walk_list

    def node(self, n: Node) -> Walk:
        if isinstance(n, TextNode):  # pragma: no cover - block() keeps text inline
            return self.block(ListNode(n.pos, [n]))
        if isinstance(n, ActionNode):
            return self.action(n)
        if isinstance(n, BranchNode):
            if n.kind == "range":
                return self.range(n)
            return self.if_or_with(n)
        if isinstance(n, TemplateNode):
            return self.template(n)
        if isinstance(n, BreakNode):

            def walk_break(st: State, dot: Value) -> None:
                raise BreakLoop

            return walk_break
        if isinstance(n, ContinueNode):

            def walk_continue(st: State, dot: Value) -> None:
                raise ContinueLoop

            return walk_continue
        raise TemplateError(f"template: unknown node {n!r}")  # pragma: no cover

    def action(self, n: ActionNode) -> Walk:
        pipe = self.pipeline(n.pipe)
        if n.pipe.decl:

            def walk_decl(st: State, dot: Value) -> None:
                pipe(st, dot)

            return walk_decl

        cmds = n.pipe.cmds
        at = n.pipe
        if self.unchecked:
            # The block's owner measures the output; a value larger than the room left fails
            # at once (function results can be MiBs).
            if len(cmds) == 1 and len(cmds[0].args) == 1:
                field = cmds[0].args[0]
                if isinstance(field, FieldNode) and len(field.ident) == 1:
                    # The most common action, {{ .Name }}: look up and print in one call.
                    key = field.ident[0]

                    def walk_field(st: State, dot: Value) -> None:
                        if isinstance(dot, dict) and key in dot:
                            v = dot[key]
                        else:
                            v = pipe(st, dot)  # the general path raises the right error
                        st.out.append(v if type(v) is str else print_value(v))

                    return walk_field

            def walk_action(st: State, dot: Value) -> None:
                v = pipe(st, dot)
                s = v if type(v) is str else print_value(v)
                st.out.append(s)
                if len(s) > st.room:
                    check_output(st, at)

            return walk_action

        # Outside small blocks (top level, big bodies): the action measures the output too.
        def walk_action_checked(st: State, dot: Value) -> None:
            v = pipe(st, dot)
            s = v if type(v) is str else print_value(v)
            out = st.out
            out.append(s)
            if len(out) > st.recount_at or len(s) > st.room:
                check_output(st, at)

        return walk_action_checked

    def if_or_with(self, n: BranchNode) -> Walk:
        pipe = self.pipeline(n.pipe)
        saved = self.dot_elem
        if n.kind == "with":
            self.dot_elem = False
        body = self.block(n.body)
        self.dot_elem = saved
        else_body = self.block(n.else_body) if n.else_body is not None else None
        is_with = n.kind == "with"

        if not n.pipe.decl:

            def walk_if_simple(st: State, dot: Value) -> None:
                mark = len(st.vars)
                val = pipe(st, dot)
                if val is True or (val is not False and is_true(val)):
                    body(st, val if is_with else dot)
                elif else_body is not None:
                    else_body(st, dot)
                if len(st.vars) != mark:
                    del st.vars[mark:]

            return walk_if_simple

        def walk_if(st: State, dot: Value) -> None:
            mark = len(st.vars)
            val = pipe(st, dot)
            if is_true(val):
                body(st, val if is_with else dot)
            elif else_body is not None:
                else_body(st, dot)
            del st.vars[mark:]

        return walk_if

    def range(self, n: BranchNode) -> Walk:
        pipe = self.pipeline(n.pipe)
        saved = self.dot_elem, self.elem_vars, self.unchecked
        chunks = max(1, _static_cost(n.body, text=True))  # pieces an iteration writes, at most
        self.dot_elem = True
        self.unchecked = chunks <= OUTPUT_CHECK_CHUNKS
        # Iterations between output checks (a loop not prepaid checks every iteration).
        per_batch = max(1, OUTPUT_CHECK_CHUNKS // chunks)
        if n.pipe.decl:
            self.elem_vars = self.elem_vars | {n.pipe.decl[-1].ident[0]}
        body = self.block(n.body)
        self.dot_elem, self.elem_vars, self.unchecked = saved
        else_body = self.block(n.else_body) if n.else_body is not None else None
        decl = [d.ident[0] for d in n.pipe.decl]
        is_assign = n.pipe.is_assign
        ndecl = len(decl)
        at_node = _last_node(n.pipe)
        cost = 1 + _static_cost(n.body)  # steps per iteration

        def walk_range(st: State, dot: Value) -> None:
            mark = len(st.vars)
            val = pipe(st, dot)
            inner = len(st.vars)
            keys: Any = None
            count = 0
            if isinstance(val, (list, tuple)):
                count = len(val)
            elif isinstance(val, dict):
                keys = sorted_keys(val)
                count = len(keys)
            elif isinstance(val, int) and not isinstance(val, bool):
                if ndecl > 1:
                    raise ExecError(_at(st, at_node), f"can't use {val} to iterate over more than one variable")
                count = max(val, 0)
            elif val is not None:
                raise ExecError(_at(st, at_node), f"range can't iterate over {print_value(val)}")
            if count:
                # Pay for the iterations up front (refunded on break); run only those the budget
                # affords, so a loop that breaks early can still finish.
                runs = count if count * cost <= st.steps else max(st.steps, 0) // cost
                st.steps -= runs * cost
                vars_ = st.vars
                index: Any = None
                # Output is measured between batches of iterations: a per-iteration test (even
                # a local countdown) would cost 20% of a small loop.
                batches: Any
                if keys is not None:
                    pairs = [(k, val[k]) for k in keys[:runs]]  # read before the body can `set`
                    batches = (pairs[i : i + per_batch] for i in range(0, runs, per_batch))
                elif isinstance(val, int):
                    batches = (zip(r, r, strict=True) for i in range(0, runs, per_batch) for r in [range(i, min(i + per_batch, runs))])
                elif runs <= per_batch and runs == count:
                    batches = (enumerate(val),)  # the common case
                else:
                    batches = (enumerate(val[i : min(i + per_batch, runs)], i) for i in range(0, runs, per_batch))
                try:
                    for batch in batches:
                        for index, elem in batch:
                            if ndecl:
                                if is_assign:
                                    if ndecl > 1:
                                        _set_var(st, decl[0], index, n)
                                        _set_var(st, decl[1], elem, n)
                                    else:
                                        _set_var(st, decl[0], elem, n)
                                else:
                                    vars_[inner - 1][1] = elem
                                    if ndecl > 1:
                                        vars_[inner - 2][1] = index
                            try:
                                body(st, elem)
                            except ContinueLoop:
                                pass
                            del vars_[inner:]
                        if len(st.out) > st.recount_at:
                            check_output(st, n.pipe)
                    if runs < count:
                        raise ExecError(n.pipe, st.steps_message())
                except BreakLoop:
                    done = 1 + (index if keys is None else keys.index(index))
                    st.steps += (runs - done) * cost
                    if len(st.out) > st.recount_at:
                        check_output(st, n.pipe)
            elif else_body is not None:
                else_body(st, dot)
            del st.vars[mark:]

        return walk_range

    def template(self, n: TemplateNode) -> Walk:
        name = n.name
        pipe = self.pipeline(n.pipe) if n.pipe is not None else None
        call_cost = self.template_cost.get(name, 1)

        def walk_template(st: State, dot: Value) -> None:
            tmpl = st.templates.get(name)
            if tmpl is None:
                raise ExecError(n, f'template "{name}" not defined')
            if st.depth >= MAX_EXEC_DEPTH:
                raise ExecError(n, f"exceeded maximum template depth ({MAX_EXEC_DEPTH})")
            st.steps -= call_cost
            if st.steps < 0:
                raise ExecError(n, st.steps_message())
            new_dot = pipe(st, dot) if pipe is not None else None
            saved = (st.vars, st.name)
            st.vars = [["$", new_dot]]
            st.name = name
            st.depth += 1
            try:
                tmpl(st, new_dot)
                if len(st.out) > st.recount_at:
                    check_output(st, n)
            except ExecError as e:
                if e.tmpl_name is None:
                    e.tmpl_name = name
                raise
            finally:
                st.vars, st.name = saved
                st.depth -= 1

        return walk_template

    # --- expressions --------------------------------------------------
    def pipeline(self, pipe: PipeNode) -> Eval:
        # Go positions on the pipeline before its first command and on the last node a command
        # visited before the next one: a parenthesized first word with arguments fails there.
        first = self.first_command(pipe.cmds[0], at=pipe)
        cmds = [self.command(c, has_final=True, at=_last_visited(prev)) for prev, c in pairwise(pipe.cmds)]
        decl = [d.ident[0] for d in pipe.decl]
        is_assign = pipe.is_assign
        at_node = _last_node(pipe)
        if not cmds and not decl:
            return first

        def eval_pipe(st: State, dot: Value) -> Value:
            value = first(st, dot)
            for c in cmds:
                value = c(st, dot, value)
            for name in decl:
                if is_assign:
                    _set_var(st, name, value, _at(st, at_node))
                else:
                    st.vars.append([name, value])
            return value

        return eval_pipe

    def first_command(self, cmd: CommandNode, *, at: Node | None = None) -> Eval:
        """A command with no piped-in value, as a (state, dot) closure (the hot path)."""
        first = cmd.args[0]
        dot_type = "interface {}" if self.dot_elem else ""
        if len(cmd.args) == 1 and isinstance(first, FieldNode):
            names = first.ident
            if len(names) == 1:
                key = names[0]

                def eval_field1(st: State, dot: Value) -> Value:
                    if isinstance(dot, dict):
                        try:
                            return dot[key]
                        except KeyError:
                            pass
                    return _field(dot, key, first, False, dot_type)

                return eval_field1

            def eval_field(st: State, dot: Value) -> Value:
                return _field_chain(dot, names, first, False, dot_type)

            return eval_field
        if len(cmd.args) == 1 and isinstance(first, VariableNode) and len(first.ident) == 1:
            name = first.ident[0]

            def eval_var(st: State, dot: Value) -> Value:
                for entry in reversed(st.vars):
                    if entry[0] == name:
                        return entry[1]
                return _var_value(st, name, first)

            return eval_var
        if isinstance(first, IdentifierNode):
            return self.call(first, cmd, cmd.args[1:], False)  # type: ignore[no-any-return]
        c = self.command(cmd, has_final=False, at=at)
        return lambda st, dot: c(st, dot, MISSING)

    def command(self, cmd: CommandNode, *, has_final: bool, at: Node | None = None) -> Cmd:
        """`at`: the node Go's executor is positioned on when the command starts."""
        first = cmd.args[0]
        has_args = len(cmd.args) > 1 or has_final
        dot_type = "interface {}" if self.dot_elem else ""
        if isinstance(first, FieldNode):
            # With arguments or a piped value (first_command compiles a field without either).
            names = first.ident
            margs = _MethodArgs(self, cmd.args[1:])

            def eval_field_args(st: State, dot: Value, final: Value) -> Value:
                return margs.call(st, dot, dot, names, first, dot_type, final, first)

            return eval_field_args
        if isinstance(first, ChainNode):
            base = self.arg(first.node, K.ANY)
            fields = first.fields
            base_is_call = isinstance(first.node, (IdentifierNode, PipeNode))
            # A parenthesized pipeline hands on its value untyped: a nil result is Go's invalid
            # value ("nil data; no entry for key"), whatever produced it.
            untyped = isinstance(first.node, PipeNode)
            at = _last_visited(first.node)

            if has_args:
                cargs = _MethodArgs(self, cmd.args[1:])

                def eval_chain_args(st: State, dot: Value, final: Value) -> Value:
                    recv = base(st, dot)
                    rtype = "" if untyped else type_name(recv) if base_is_call else "interface {}"
                    return cargs.call(st, dot, recv, fields, _at(st, at), rtype, final, first)

                return eval_chain_args

            def eval_chain(st: State, dot: Value, final: Value) -> Value:
                recv = base(st, dot)
                rtype = "" if untyped else type_name(recv) if base_is_call else "interface {}"
                return _field_chain(recv, fields, _at(st, at), False, rtype)

            return eval_chain
        if isinstance(first, IdentifierNode):
            if has_final:
                return self.call(first, cmd, cmd.args[1:], True)  # type: ignore[no-any-return]
            ev = self.call(first, cmd, cmd.args[1:], False)
            return lambda st, dot, final: ev(st, dot)
        if isinstance(first, VariableNode):
            name = first.ident[0]
            rest = first.ident[1:]
            if not rest:
                self_err = self._not_a_function(cmd, has_args)
                if self_err is not None:
                    return self_err

                def eval_var(st: State, dot: Value, final: Value) -> Value:
                    return _var_value(st, name, first)

                return eval_var

            var_type = "interface {}" if name in self.elem_vars else ""
            if has_args:
                vargs = _MethodArgs(self, cmd.args[1:])

                def eval_var_args(st: State, dot: Value, final: Value) -> Value:
                    return vargs.call(st, dot, _var_value(st, name, first), rest, first, var_type, final, first)

                return eval_var_args

            def eval_var_chain(st: State, dot: Value, final: Value) -> Value:
                return _field_chain(_var_value(st, name, first), rest, first, False, var_type)

            return eval_var_chain
        if isinstance(first, PipeNode) and has_args:
            # Go checks before positioning on the word: the error is where it stands.
            return _raiser_at(at if at is not None else first, f"can't give argument to non-function {first}")
        err = self._not_a_function(cmd, has_args)
        if err is not None:
            return err
        if isinstance(first, PipeNode):
            inner = self.pipeline(first)
            return lambda st, dot, final: inner(st, dot)
        if isinstance(first, BoolNode):
            b = first.value
            return lambda st, dot, final: b
        if isinstance(first, DotNode):
            return lambda st, dot, final: dot
        if isinstance(first, NumberNode):
            const = _constant(first)
            return lambda st, dot, final: const(st, dot)
        if isinstance(first, StringNode):
            s = first.text
            return lambda st, dot, final: s
        if isinstance(first, NilNode):
            return _raiser(first, "nil is not a command")
        raise TemplateError(f"template: can't evaluate command {first}")  # pragma: no cover

    def _not_a_function(self, cmd: CommandNode, has_args: bool) -> Cmd | None:
        if has_args:
            return _raiser(cmd.args[0], f"can't give argument to non-function {cmd.args[0]}")
        return None

    def arg(self, n: Node, kind: str) -> Eval:
        """Go's evalArg: compute an argument and check it against the parameter kind."""
        if isinstance(n, DotNode):
            if kind == K.ANY:
                return lambda st, dot: dot
            return lambda st, dot: _validate(dot, kind, n)
        if isinstance(n, NilNode):
            if kind in (K.ANY, K.LIST, K.MAP, K.STRS, K.VERSION, K.LOCATION):
                return lambda st, dot: None
            return _raiser2(n, f"cannot assign nil to {GO_TYPE[kind]}")
        if isinstance(n, (FieldNode, VariableNode, PipeNode, IdentifierNode, ChainNode)):
            ev = self.first_command(CommandNode(n.pos, [n]))
            if kind == K.ANY:
                return ev
            from_data = isinstance(n, (FieldNode, VariableNode, ChainNode))
            at = _last_visited(n)
            if isinstance(at, _DynamicAt):
                return lambda st, dot: _validate(ev(st, dot), kind, _at(st, at), from_data=from_data)
            return lambda st, dot: _validate(ev(st, dot), kind, at, from_data=from_data)
        # Literal constants.
        if kind == K.ANY:
            if isinstance(n, BoolNode):
                b = n.value
                return lambda st, dot: b
            if isinstance(n, NumberNode):
                return _constant(n)
            if isinstance(n, StringNode):
                s = n.text
                return lambda st, dot: s
        elif kind == K.STR:
            if isinstance(n, StringNode):
                s = n.text
                return lambda st, dot: s
            return _raiser2(n, f"expected string; found {n}")
        elif kind == K.INT:
            if isinstance(n, NumberNode) and n.is_int:
                i = n.int_val
                return lambda st, dot: i
            return _raiser2(n, f"expected integer; found {n}")
        elif kind == K.DURATION:
            if isinstance(n, NumberNode) and n.is_int:
                d = Duration(n.int_val)
                return lambda st, dot: d
            return _raiser2(n, f"expected integer; found {n}")
        elif kind == K.FLOAT:
            if isinstance(n, NumberNode) and n.is_float:
                f = n.float_val
                return lambda st, dot: f
            return _raiser2(n, f"expected float; found {n}")
        elif kind == K.BOOL:
            if isinstance(n, BoolNode):
                b = n.value
                return lambda st, dot: b
            return _raiser2(n, f"expected bool; found {n}")
        return _raiser2(n, f"can't handle {n} for arg of type {GO_TYPE[kind]}")

    def call(self, ident: IdentifierNode, cmd: Node, args: list[Node], has_final: bool) -> Any:
        """A function call: an Eval (state, dot) without a piped value, else a Cmd (state, dot, final)."""
        name = ident.name
        f = self.funcs.get(name)
        err: str | None = None
        nin = len(args) + (1 if has_final else 0)
        nparams = len(f.params) if f is not None else 0
        if f is None:
            err = f'"{name}" is not a defined function'
        elif f.variadic is not None:
            if nin < nparams:
                err = f"wrong number of args for {name}: want at least {nparams} got {len(args)}"
        elif nin != nparams:
            err = f"wrong number of args for {name}: want {nparams} got {nin}"
        if err is not None or f is None:
            msg = err or ""
            return _raiser(ident, msg) if has_final else _raiser2(ident, msg)

        def kind_at(i: int) -> str:
            if i < nparams:
                return f.params[i]
            assert f.variadic is not None
            return f.variadic

        if name in BUDGETED:
            self.uses_budget = True
        if f.builtin and name in ("and", "or"):
            return self._and_or(ident, args, want=name == "or")
        fn = _call_target(f, name, args, nin)
        evals = [self.arg(a, kind_at(i)) for i, a in enumerate(args)]
        fail = _call_failure(cmd, name)
        if has_final:
            return _eval_call_final(fn, evals, fail, kind_at(nin - 1), _last_visited(cmd))
        return _eval_call(fn, evals, fail, eq=f.builtin and name == "eq")

    def _and_or(self, ident: IdentifierNode, args: list[Node], *, want: bool) -> Any:
        """``and``/``or``: the arguments evaluated in order until one is ``want`` (true for or)."""
        evals = [self.arg(a, K.ANY) for a in args]
        # Where Go's executor stands after evaluating each argument (for later errors).
        arg_at = [_last_visited(a) for a in args]

        def eval_andor(st: State, dot: Value, final: Value = MISSING) -> Value:
            v: Value = None
            if not evals:
                st.at = ident
            for e, at in zip(evals, arg_at, strict=True):
                v = e(st, dot)
                if not isinstance(at, _DynamicAt):
                    st.at = at
                if is_true(v) == want:
                    return v
            if final is not MISSING:
                v = final
            return v

        return eval_andor


def _call_target(f: Any, name: str, args: list[Node], nin: int) -> Callable[..., Any]:
    """The function a call runs: paying for its work when GUARDED, and the builtins ``call``
    (the callee named as Go names it) and ``len`` (Go's panic on a missing value) adapted."""
    fn = f.fn
    if name in GUARDED:
        fn = guarded(name, fn, nin)
    if f.builtin and name == "call" and args:
        callee = str(args[0])

        def fn(*a: Any) -> Any:
            return call_named(callee, *a)

    elif f.builtin and name == "call":  # {{ x | call }}: Go names the callee by reflect.Value.String

        def fn(*a: Any) -> Any:
            v = a[0] if a else None
            return call_named(v if isinstance(v, str) else f"<{type_name(v)} Value>", *a)

    if f.builtin and name == "len":
        # A missing value (a nil pipeline result) makes Go's len panic inside reflect;
        # a nil read from the data is reported as a nil pointer.
        data_arg = bool(args) and isinstance(args[0], (FieldNode, VariableNode, ChainNode))
        base_len = fn

        def fn(*a: Any) -> Any:
            if a and a[0] is None and not data_arg:
                raise FuncError("reflect: call of reflect.Value.Type on zero Value")
            return base_len(*a)

    return fn


def _call_failure(cmd: Node, name: str) -> Callable[[Exception], ExecError]:
    """How an exception raised by a called function reads as Go's exec error."""

    def fail(e: Exception) -> ExecError:
        if isinstance(e, ExecError):
            return e
        if isinstance(e, RecursionError):
            return ExecError(cmd, f"error calling {name}: value too deeply nested")
        # FuncError or any other exception: a Go function "panicked" or returned an error.
        return ExecError(cmd, f"error calling {name}: {e}")

    return fail


def _eval_call(fn: Callable[..., Any], evals: list[Any], fail: Callable[[Exception], ExecError], *,
               eq: bool) -> Any:
    """The Eval of a call without a piped value; zero to two arguments get closures of their
    own (``eq`` on two basic values compares without a call)."""
    if not evals:

        def eval_call0(st: State, dot: Value) -> Value:
            try:
                return fn()
            except Exception as e:
                raise fail(e) from None

        return eval_call0
    if len(evals) == 1:
        e0 = evals[0]

        def eval_call1(st: State, dot: Value) -> Value:
            a = e0(st, dot)
            try:
                return fn(a)
            except Exception as e:
                raise fail(e) from None

        return eval_call1
    if len(evals) == 2:
        e0, e1 = evals
        if eq:

            def eval_eq2(st: State, dot: Value) -> Value:
                a = e0(st, dot)
                b = e1(st, dot)
                if type(a) is type(b) and type(a) in _BASIC_TYPES:
                    return a == b
                try:
                    return fn(a, b)
                except Exception as e:
                    raise fail(e) from None

            return eval_eq2

        def eval_call2(st: State, dot: Value) -> Value:
            a = e0(st, dot)
            b = e1(st, dot)
            try:
                return fn(a, b)
            except Exception as e:
                raise fail(e) from None

        return eval_call2

    def eval_call(st: State, dot: Value) -> Value:
        argv = [e(st, dot) for e in evals]
        try:
            return fn(*argv)
        except Exception as e:
            raise fail(e) from None

    return eval_call


def _eval_call_final(fn: Callable[..., Any], evals: list[Any], fail: Callable[[Exception], ExecError],
                     final_kind: str, final_at: Node) -> Any:
    """The Cmd of a call with a piped (final) value, checked against the parameter's kind."""

    def eval_call_final(st: State, dot: Value, final: Value) -> Value:
        argv = [e(st, dot) for e in evals]
        argv.append(final if final_kind == K.ANY else _validate(final, final_kind, _at(st, final_at)))
        try:
            return fn(*argv)
        except Exception as e:
            raise fail(e) from None

    return eval_call_final


_BASIC_TYPES = (str, int, float, bool)


class _DynamicAt(Node):
    """Stands for "whichever argument an and/or evaluated last" (known only at run time)."""

    def __init__(self, fallback: Node) -> None:
        self.pos = fallback.pos
        self.fallback = fallback

    def __str__(self) -> str:
        return str(self.fallback)


def _last_visited(n: Node) -> Node:
    """The last node Go's executor positions on while evaluating `n` (the last argument)."""
    while True:
        if isinstance(n, PipeNode) and n.cmds:
            n = n.cmds[-1]
        elif isinstance(n, ChainNode):
            n = n.node  # a chain's fields are evaluated without moving the position
        elif isinstance(n, CommandNode) and n.args:
            first = n.args[0]
            if isinstance(first, IdentifierNode) and first.name in ("and", "or"):
                return _DynamicAt(_last_visited(n.args[-1]) if len(n.args) > 1 else first)
            n = n.args[-1]
        else:
            return n


def check_output(st: State, node: Node | None) -> None:
    """Charge the output written since the last check to the budget; fail if it is spent.

    Counting every piece as it is written would cost more than writing it, so the pieces
    written since the last check are joined into one (work the final join then skips) and
    measured once OUTPUT_CHECK_CHUNKS are pending, tested after each batch of range iterations
    that writes up to that many, after a {{template}} call and after an action in a bigger
    block; a printed value larger than the room left is measured at once (functions can build
    MiB strings). So the output may overshoot by at most twice that many pieces of node data
    (feature values are short; an object is at most ~1.5 MB in etcd) before execution fails.
    """
    out = st.out
    counted = st.recount_at - OUTPUT_CHECK_CHUNKS
    if len(out) > counted + 1:
        piece = "".join(out[counted:])
        del out[counted:]
        out.append(piece)
    if len(out) > counted:
        st.room -= len(out[counted])
        counted += 1
    st.recount_at = counted + OUTPUT_CHECK_CHUNKS
    if st.room < 0:
        raise ExecError(node, st.output_message())


def _static_cost(lst: ListNode, *, text: bool = False) -> int:
    """Actions in a block (and texts, with `text`: the pieces it writes), counting both
    branches of if/with and not inside nested ranges."""
    cost = 0
    for n in lst.nodes:
        if isinstance(n, ActionNode) or (text and isinstance(n, (TextNode, TemplateNode))):
            cost += 1
        elif isinstance(n, BranchNode):
            cost += 1
            if n.kind != "range":
                cost += _static_cost(n.body, text=text)
            if n.else_body is not None:
                cost += _static_cost(n.else_body, text=text)
    return cost


def _at(st: State, node: Node) -> Node:
    if isinstance(node, _DynamicAt):
        return st.at if st.at is not None else node.fallback
    return node


def _last_node(pipe: PipeNode) -> Node:
    """The node Go's executor last visited in a pipeline (its error position)."""
    return _last_visited(pipe)


def _raiser(node: Node, msg: str) -> Cmd:
    def fail(st: State, dot: Value, final: Value) -> Value:
        raise ExecError(node, msg)

    return fail


def _raiser_at(node: Node, msg: str) -> Cmd:
    """_raiser for a position known only at run time (an and/or's last argument)."""
    def fail(st: State, dot: Value, final: Value) -> Value:
        raise ExecError(_at(st, node), msg)

    return fail


def _raiser2(node: Node, msg: str) -> Eval:
    def fail(st: State, dot: Value) -> Value:
        raise ExecError(node, msg)

    return fail
