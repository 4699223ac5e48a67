"""Recursive-descent parser for Go text/template, producing nodes.py trees.

Follows text/template/parse: the same grammar, `else if`/`else with` desugaring,
variable scoping checked at parse time, and Go's error wording
(`template: NAME:LINE: message`).
"""

from __future__ import annotations

from collections.abc import Container

from nfd.lang.gostd.strconv import quote as go_quote

from . import lexer as L
from .errors import TemplateError
from .literals import LiteralError, parse_float, parse_int, parse_uint, unquote, unquote_char
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
    is_empty_tree,
)


class _End(Node):
    def __init__(self, pos: int) -> None:
        self.pos = pos

    def __str__(self) -> str:
        return "{{end}}"


class _Else(Node):
    def __init__(self, pos: int) -> None:
        self.pos = pos

    def __str__(self) -> str:
        return "{{else}}"


_OPERAND_START = frozenset(
    {L.BOOL, L.CHARCONST, L.COMPLEX, L.DOT, L.FIELD, L.IDENT, L.NUMBER, L.NIL, L.RAWSTRING, L.STRING, L.VARIABLE, L.LPAREN}
)


class Parser:
    def __init__(self, src: str, name: str, funcs: Container[str]) -> None:
        self.src = src
        self.name = name
        self.funcs = funcs
        self.toks = L.lex(src)
        self.i = 0
        self.far = 0  # one past the furthest token read
        self.vars: list[str] = ["$"]
        self.range_depth = 0
        self.action_pos = -1  # where the {{ being parsed starts, for multi-line lexer errors
        self.trees: dict[str, ListNode] = {}

    # --- errors -------------------------------------------------------
    def line_of(self, pos: int) -> int:
        return self.src.count("\n", 0, pos) + 1

    def errorf(self, msg: str) -> TemplateError:
        # Go reports the line of the furthest token read so far (look-ahead included).
        far = self.toks[min(self.far, len(self.toks)) - 1] if self.far else None
        pos = far.pos if far is not None else 0
        return TemplateError(f"template: {self.name}:{self.line_of(pos)}: {msg}")

    def unexpected(self, tok: L.Token, context: str) -> TemplateError:
        if tok.kind == L.ERROR:
            extra = ""
            action_line = self.line_of(self.action_pos) if self.action_pos >= 0 else 0
            if action_line and self.line_of(tok.pos) != action_line:
                extra = f" in action started at {self.name}:{action_line}"
                if tok.val.endswith(" action"):
                    extra = extra[len(" in action") :]
            return self.errorf(tok.val + extra)
        return self.errorf(f"unexpected {tok.describe()} in {context}")

    # --- token stream -------------------------------------------------
    def next(self) -> L.Token:
        toks = self.toks
        t = toks[self.i] if self.i < len(toks) else toks[-1]
        self.i += 1
        if self.i > self.far:
            self.far = self.i
        return t

    def backup(self, n: int = 1) -> None:
        self.i -= n

    def peek(self) -> L.Token:
        toks = self.toks
        return toks[self.i] if self.i < len(toks) else toks[-1]

    def next_non_space(self) -> L.Token:
        t = self.next()
        while t.kind == L.SPACE:
            t = self.next()
        return t

    def peek_non_space(self) -> L.Token:
        t = self.next_non_space()
        self.backup()
        return t

    def expect(self, kind: str, context: str) -> L.Token:
        t = self.next_non_space()
        if t.kind != kind:
            raise self.unexpected(t, context)
        return t

    # --- top level ----------------------------------------------------
    def parse(self) -> dict[str, ListNode]:
        root = ListNode(0)
        while self.peek().kind != L.EOF:
            if self.peek().kind == L.LDELIM:
                save = self.i
                self.next()
                if self.next_non_space().kind == L.DEFINE:
                    self.parse_definition()
                    continue
                self.i = save
            n = self.text_or_action()
            if isinstance(n, (_End, _Else)):
                raise self.errorf(f"unexpected {n}")
            root.nodes.append(n)
        self.add(self.name, root)
        return self.trees

    def add(self, name: str, tree: ListNode) -> None:
        old = self.trees.get(name)
        if old is None or is_empty_tree(old):
            self.trees[name] = tree
            return
        if not is_empty_tree(tree):
            raise self.errorf(f"template: multiple definition of template {go_quote(name)}")

    def parse_definition(self) -> None:
        ctx = "define clause"
        name = self.parse_template_name(self.next_non_space(), ctx)
        self.expect(L.RDELIM, ctx)
        self.template_body(name, ctx)

    def template_body(self, name: str, ctx: str) -> None:
        """The body of {{define}}/{{block}}, up to {{end}}: its own variables, outside any range."""
        saved_vars, saved_depth = self.vars, self.range_depth
        self.vars, self.range_depth = ["$"], 0
        body, end = self.item_list()
        if not isinstance(end, _End):
            raise self.errorf(f"unexpected {end} in {ctx}")
        self.vars, self.range_depth = saved_vars, saved_depth
        self.add(name, body)

    def parse_template_name(self, tok: L.Token, context: str) -> str:
        if tok.kind in (L.STRING, L.RAWSTRING):
            try:
                return unquote(tok.val)
            except LiteralError as e:
                raise self.errorf(str(e)) from None
        raise self.unexpected(tok, context)

    def item_list(self) -> tuple[ListNode, Node]:
        lst = ListNode(self.peek_non_space().pos)
        while self.peek_non_space().kind != L.EOF:
            n = self.text_or_action()
            if isinstance(n, (_End, _Else)):
                return lst, n
            lst.nodes.append(n)
        raise self.errorf("unexpected EOF")

    def text_or_action(self) -> Node:
        t = self.next_non_space()
        if t.kind == L.TEXT:
            return TextNode(t.pos, t.val)
        if t.kind == L.LDELIM:
            saved = self.action_pos
            self.action_pos = t.pos
            try:
                return self.action()
            finally:
                self.action_pos = saved
        raise self.unexpected(t, "input")

    # --- actions ------------------------------------------------------
    def action(self) -> Node:
        t = self.next_non_space()
        k = t.kind
        if k == L.BLOCK:
            return self.block_control()
        if k == L.BREAK or k == L.CONTINUE:
            word = "{{" + k + "}}"
            self.expect(L.RDELIM, word)
            if self.range_depth == 0:
                raise self.errorf(f"{word} outside {{{{range}}}}")
            return BreakNode(t.pos) if k == L.BREAK else ContinueNode(t.pos)
        if k == L.ELSE:
            p = self.peek_non_space()
            if p.kind in (L.IF, L.WITH):
                return _Else(p.pos)
            return _Else(self.expect(L.RDELIM, "else").pos)
        if k == L.END:
            return _End(self.expect(L.RDELIM, "end").pos)
        if k in (L.IF, L.RANGE, L.WITH):
            return self.parse_control(k)
        if k == L.TEMPLATE:
            return self.template_control()
        self.backup()
        tok = self.peek()
        return ActionNode(tok.pos, self.pipeline("command", L.RDELIM))

    def parse_control(self, context: str) -> BranchNode:
        nvars = len(self.vars)
        try:
            pipe = self.pipeline(context, L.RDELIM)
            if context == L.RANGE:
                self.range_depth += 1
            body, nxt = self.item_list()
            if context == L.RANGE:
                self.range_depth -= 1
            else_body: ListNode | None = None
            if isinstance(nxt, _Else):
                if context == L.IF and self.peek().kind == L.IF:
                    self.next()
                    else_body = ListNode(nxt.pos, [self.parse_control(L.IF)])
                elif context == L.WITH and self.peek().kind == L.WITH:
                    self.next()
                    else_body = ListNode(nxt.pos, [self.parse_control(L.WITH)])
                else:
                    else_body, nxt = self.item_list()
                    if not isinstance(nxt, _End):
                        raise self.errorf(f"expected end; found {nxt}")
            return BranchNode(pipe.pos, context, pipe, body, else_body)
        finally:
            del self.vars[nvars:]

    def template_control(self) -> TemplateNode:
        ctx = "template clause"
        tok = self.next_non_space()
        name = self.parse_template_name(tok, ctx)
        pipe: PipeNode | None = None
        if self.next_non_space().kind != L.RDELIM:
            self.backup()
            pipe = self.pipeline(ctx, L.RDELIM)
        return TemplateNode(tok.pos, name, pipe)

    def block_control(self) -> TemplateNode:
        ctx = "block clause"
        tok = self.next_non_space()
        name = self.parse_template_name(tok, ctx)
        pipe = self.pipeline(ctx, L.RDELIM)
        self.template_body(name, ctx)
        return TemplateNode(tok.pos, name, pipe)

    # --- pipelines ----------------------------------------------------
    def pipeline(self, context: str, end: str) -> PipeNode:
        pipe = PipeNode(self.peek_non_space().pos)
        while True:
            v = self.peek_non_space()
            if v.kind != L.VARIABLE:
                break
            save = self.i
            self.next_non_space()
            nxt = self.peek_non_space()
            if nxt.kind in (L.ASSIGN, L.DECLARE):
                pipe.is_assign = nxt.kind == L.ASSIGN
                self.next_non_space()
                pipe.decl.append(VariableNode(v.pos, v.val.split(".")))
                self.vars.append(v.val)
                break
            if nxt.kind == L.CHAR and nxt.val == ",":
                self.next_non_space()
                pipe.decl.append(VariableNode(v.pos, v.val.split(".")))
                self.vars.append(v.val)
                if context == L.RANGE and len(pipe.decl) < 2:
                    if self.peek_non_space().kind in (L.VARIABLE, L.RDELIM, L.RPAREN):
                        continue
                    raise self.errorf("range can only initialize variables")
                raise self.errorf(f"too many declarations in {context}")
            # "$x foo": $x is an operand, not a declaration; rewind to it.
            self.i = save
            break
        while True:
            t = self.next_non_space()
            if t.kind == end:
                self.check_pipeline(pipe, context)
                return pipe
            if t.kind in _OPERAND_START:
                self.backup()
                pipe.cmds.append(self.command())
                continue
            raise self.unexpected(t, context)

    def check_pipeline(self, pipe: PipeNode, context: str) -> None:
        if not pipe.cmds:
            raise self.errorf(f"missing value for {context}")
        for i, c in enumerate(pipe.cmds[1:]):
            if isinstance(c.args[0], (BoolNode, DotNode, NilNode, NumberNode, StringNode)):
                raise self.errorf(f"non executable command in pipeline stage {i + 2}")

    def command(self) -> CommandNode:
        cmd = CommandNode(self.peek_non_space().pos)
        while True:
            self.peek_non_space()
            op = self.operand()
            if op is not None:
                cmd.args.append(op)
            t = self.next()
            if t.kind == L.SPACE:
                continue
            if t.kind in (L.RDELIM, L.RPAREN):
                self.backup()
            elif t.kind != L.PIPE:
                raise self.unexpected(t, "operand")
            break
        if not cmd.args:
            raise self.errorf("empty command")
        return cmd

    def operand(self) -> Node | None:
        node = self.term()
        if node is None:
            return None
        if self.peek().kind == L.FIELD:
            chain = ChainNode(self.peek().pos, node)
            while self.peek().kind == L.FIELD:
                chain.fields.append(self.next().val[1:])
            if isinstance(node, FieldNode):
                return FieldNode(chain.pos, node.ident + chain.fields)
            if isinstance(node, VariableNode):
                return VariableNode(chain.pos, node.ident + chain.fields)
            if isinstance(node, (BoolNode, StringNode, NumberNode, NilNode, DotNode)):
                raise self.errorf(f"unexpected . after term {go_quote(str(node))}")
            return chain
        return node

    def term(self) -> Node | None:
        t = self.next_non_space()
        k = t.kind
        if k == L.IDENT:
            if t.val not in self.funcs:
                raise self.errorf(f"function {go_quote(t.val)} not defined")
            return IdentifierNode(t.pos, t.val)
        if k == L.DOT:
            return DotNode(t.pos)
        if k == L.NIL:
            return NilNode(t.pos)
        if k == L.VARIABLE:
            ident = t.val.split(".")
            if ident[0] not in self.vars:
                raise self.errorf(f"undefined variable {go_quote(ident[0])}")
            return VariableNode(t.pos, ident)
        if k == L.FIELD:
            return FieldNode(t.pos, [t.val[1:]])
        if k == L.BOOL:
            return BoolNode(t.pos, t.val == "true")
        if k in (L.NUMBER, L.CHARCONST, L.COMPLEX):
            return self.number(t)
        if k == L.LPAREN:
            return self.pipeline("parenthesized pipeline", L.RPAREN)
        if k in (L.STRING, L.RAWSTRING):
            try:
                return StringNode(t.pos, t.val, unquote(t.val))
            except LiteralError as e:
                raise self.errorf(str(e)) from None
        self.backup()
        return None

    def number(self, t: L.Token) -> NumberNode:
        n = NumberNode(t.pos, t.val)
        if t.kind == L.CHARCONST:
            try:
                r = unquote_char(t.val)
            except LiteralError as e:
                if str(e) == "invalid syntax":
                    raise self.errorf("invalid syntax") from None
                raise self.errorf(f"malformed character constant: {t.val}") from None
            n.is_char = n.is_int = n.is_float = True
            n.int_val, n.float_val = r, float(r)
            return n
        if t.kind == L.COMPLEX:
            try:
                c = complex(t.val.replace("_", "")[:-1] + "j")
            except ValueError:
                raise self.errorf(f"illegal number syntax: {go_quote(t.val)}") from None
            n.is_complex, n.complex_val = True, c
            if c.imag == 0:
                n.is_float, n.float_val = True, c.real
                if c.real == int(c.real):
                    n.is_int, n.int_val = True, int(c.real)
            return n
        if t.val.endswith("i"):
            f = parse_float(t.val[:-1])
            if f is not None:
                n.is_complex, n.complex_val = True, complex(0, f)
                if f == 0:  # Go's simplifyComplex: also usable as int/float 0
                    n.is_int = n.is_float = True
                return n
        i = parse_int(t.val)
        if i is not None:
            n.is_int = n.is_float = True
            n.int_val, n.float_val = i, float(i)
            return n
        u = parse_uint(t.val)
        if u is not None:
            n.is_uint = n.is_float = True
            n.float_val = float(u)
            return n
        f = parse_float(t.val)
        if f is not None:
            if not any(c in t.val for c in ".eEpP"):
                raise self.errorf(f"integer overflow: {go_quote(t.val)}")
            n.is_float, n.float_val = True, f
            if f == f and abs(f) != float("inf") and f == int(f) and -(1 << 63) <= int(f) < (1 << 63):
                n.is_int, n.int_val = True, int(f)
            return n
        raise self.errorf(f"illegal number syntax: {go_quote(t.val)}")


def parse_trees(src: str, name: str, funcs: Container[str]) -> dict[str, ListNode]:
    """Parse source into its named trees (the main one under `name`)."""
    return Parser(src, name, funcs).parse()
