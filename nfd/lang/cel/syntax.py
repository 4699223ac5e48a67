"""Parse CEL source into a small AST, using celpy's lark grammar (the only part of celpy we use).

The AST is ours so the compiler does not depend on lark's tree shapes, and each node keeps the
1-based ``line:col`` of the source it came from for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nfd.lang.cel.values import INT64_MAX, INT64_MIN, UINT64_MAX, UInt

Pos = tuple[int, int]


class CelSyntaxError(Exception):
    """A compile-time problem at a source position (syntax, type, unknown name, limit)."""

    def __init__(self, pos: Pos | None, message: str) -> None:
        super().__init__(f"{pos[0]}:{pos[1]}: {message}" if pos else message)
        self.pos = pos
        self.message = message


@dataclass(slots=True)
class Node:
    pos: Pos


@dataclass(slots=True)
class Lit(Node):
    value: Any


@dataclass(slots=True)
class Ident(Node):
    name: str


@dataclass(slots=True)
class Select(Node):
    operand: Node
    field: str


@dataclass(slots=True)
class Index(Node):
    operand: Node
    index: Node


@dataclass(slots=True)
class Call(Node):
    """Function ``name(args)`` or method ``target.name(args)``; operators use names like ``_+_``."""

    name: str
    target: Node | None
    args: list[Node] = field(default_factory=list)


@dataclass(slots=True)
class ListLit(Node):
    items: list[Node]


@dataclass(slots=True)
class MapLit(Node):
    entries: list[tuple[Node, Node]]


_BINOPS = {
    "relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
    "relation_eq": "_==_", "relation_ne": "_!=_", "relation_in": "@in",
    "addition_add": "_+_", "addition_sub": "_-_",
    "multiplication_mul": "_*_", "multiplication_div": "_/_", "multiplication_mod": "_%_",
}

_parser: Any = None


def _lark() -> Any:
    """A LALR parser for celpy's CEL grammar (cel.lark), built once.

    Our own instance rather than celpy's shared singleton: celpy's lexer callback turns
    ``true``/``false`` identifiers into literals with no source position, and its runners want
    the singleton built with their own tree class.
    """
    global _parser
    if _parser is None:
        import importlib.resources
        import re

        from lark import Lark, Token

        def keyword_literals(t: Token) -> Token:
            if t.value in ("true", "false"):
                return Token.new_borrow_pos("BOOL_LIT", t.value, t)
            return t

        grammar = importlib.resources.files("celpy").joinpath("cel.lark").read_text()
        _parser = Lark(
            grammar, parser="lalr", start="expr", g_regex_flags=re.M, propagate_positions=True,
            maybe_placeholders=False, priority="invert", lexer_callbacks={"IDENT": keyword_literals},
        )
    return _parser


def parse(src: str) -> Node:
    """Parse ``src``; raise CelSyntaxError with the position of the first problem."""
    from lark.exceptions import LarkError, UnexpectedInput

    try:
        tree = _lark().parse(src)
    except UnexpectedInput as e:
        raise CelSyntaxError((e.line, e.column) if e.line and e.line > 0 else None,
                             _describe_parse_error(e)) from None
    except RecursionError:
        raise CelSyntaxError(None, "expression is nested too deeply") from None
    except LarkError as e:
        raise CelSyntaxError(None, f"syntax error: {(str(e).splitlines() or ['?'])[0]}") from None
    try:
        return _Builder().node(tree)
    except RecursionError:
        raise CelSyntaxError(None, "expression is nested too deeply") from None


def _describe_parse_error(e: Any) -> str:
    token = getattr(e, "token", None)
    if token is not None:
        if token.type == "$END":
            return "syntax error: unexpected end of expression"
        return f"syntax error: unexpected {str(token)!r}"
    char = getattr(e, "char", None)
    if char is not None:
        return f"syntax error: unexpected character {char!r}"
    return "syntax error"


def _op_pos(op_tree: Any, op: str) -> Pos:
    """Where the operator token is: the subtree ``left OP`` ends right after it."""
    meta = op_tree.meta
    width = 2 if op == "@in" else len(op) - 2
    if not meta.empty:
        return (meta.end_line, max(1, meta.end_column - width))
    return _pos(op_tree)


def _pos(t: Any) -> Pos:
    meta = getattr(t, "meta", None)
    if meta is not None and not meta.empty:
        return (meta.line, meta.column)
    line = getattr(t, "line", None)
    col = getattr(t, "column", None)
    return (line or 1, col or 1)


_PASSTHROUGH = {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication",
                "unary", "member", "primary"}


class _Builder:
    """Turn celpy's lark tree into our AST.

    Single-child grammar levels are skipped in a loop, so one level of nesting in the source
    costs a few Python frames, not one per precedence level.
    """

    def node(self, t: Any) -> Node:
        while t.data in _PASSTHROUGH and len(t.children) == 1:
            t = t.children[0]
        return getattr(self, "_" + t.data)(t)  # type: ignore[no-any-return]

    def _expr(self, t: Any) -> Node:
        c, a, b = t.children
        return Call(_pos(t), "_?_:_", None, [self.node(c), self.node(a), self.node(b)])

    def _conditionalor(self, t: Any) -> Node:
        left, right = t.children
        return Call(_pos(right), "_||_", None, [self.node(left), self.node(right)])

    def _conditionaland(self, t: Any) -> Node:
        left, right = t.children
        return Call(_pos(right), "_&&_", None, [self.node(left), self.node(right)])

    def _binary(self, t: Any) -> Node:
        op_tree, right = t.children
        op = _BINOPS[op_tree.data]
        return Call(_op_pos(op_tree, op), op, None, [self.node(op_tree.children[0]), self.node(right)])

    _relation = _addition = _multiplication = _binary

    def _unary(self, t: Any) -> Node:
        op_tree, operand_tree = t.children
        op = "!_" if op_tree.data == "unary_not" else "-_"
        operand = self.node(operand_tree)
        if op == "-_" and isinstance(operand, Lit) and type(operand.value) in (int, float):
            v = -operand.value
            if type(v) is int and not INT64_MIN <= v <= INT64_MAX:
                raise CelSyntaxError(_pos(t), "integer literal out of range")
            return Lit(_pos(t), v)
        return Call(_pos(t), op, None, [operand])

    def _member_dot(self, c: Any) -> Node:
        return Select(_pos(c.children[1]), self.node(c.children[0]), str(c.children[1]))

    def _member_dot_arg(self, c: Any) -> Node:
        args = self.exprlist(c.children[2]) if len(c.children) > 2 else []
        return Call(_pos(c.children[1]), str(c.children[1]), self.node(c.children[0]), args)

    def _member_index(self, c: Any) -> Node:
        return Index(_pos(c), self.node(c.children[0]), self.node(c.children[1]))

    def _member_object(self, c: Any) -> Node:
        raise CelSyntaxError(_pos(c), "message construction (Type{field: ...}) is not supported")

    def exprlist(self, t: Any) -> list[Node]:
        return [self.node(e) for e in t.children]

    def _literal(self, c: Any) -> Node:
        return Lit(_pos(c), _literal(c.children[0]))

    def _ident(self, c: Any) -> Node:
        return Ident(_pos(c), str(c.children[0]))

    _dot_ident = _ident

    def _ident_arg(self, c: Any) -> Node:
        args = self.exprlist(c.children[1]) if len(c.children) > 1 else []
        return Call(_pos(c), str(c.children[0]), None, args)

    _dot_ident_arg = _ident_arg

    def _paren_expr(self, c: Any) -> Node:
        return self.node(c.children[0])

    def _list_lit(self, c: Any) -> Node:
        return ListLit(_pos(c), self.exprlist(c.children[0]) if c.children else [])

    def _map_lit(self, c: Any) -> Node:
        entries: list[tuple[Node, Node]] = []
        if c.children:
            kids = c.children[0].children
            for i in range(0, len(kids), 2):
                entries.append((self.node(kids[i]), self.node(kids[i + 1])))
        return MapLit(_pos(c), entries)


# -- literals -----------------------------------------------------------------------------------


def _literal(tok: Any) -> Any:
    kind, text = tok.type, str(tok)
    pos = (tok.line or 1, tok.column or 1)
    if kind == "BOOL_LIT":
        return text == "true"
    if kind == "NULL_LIT":
        return None
    if kind == "INT_LIT":
        v = _int_text(text)
        if not INT64_MIN <= v <= INT64_MAX:
            raise CelSyntaxError(pos, "integer literal out of range")
        return v
    if kind == "UINT_LIT":
        v = _int_text(text[:-1])
        if not 0 <= v <= UINT64_MAX:
            raise CelSyntaxError(pos, "unsigned integer literal out of range")
        return UInt(v)
    if kind == "FLOAT_LIT":
        return float(text)
    if kind in ("STRING_LIT", "MLSTRING_LIT"):
        return _unquote(text, pos, as_bytes=False)
    if kind == "BYTES_LIT":
        return _unquote(text[1:], pos, as_bytes=True)
    raise CelSyntaxError(pos, f"unsupported literal {text!r}")


def _int_text(text: str) -> int:
    neg = text.startswith("-")
    body = text[1:] if neg else text
    v = int(body[2:], 16) if body[:2].lower() == "0x" else int(body, 10)
    return -v if neg else v


_SIMPLE_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?",
}


def _unquote(text: str, pos: Pos, *, as_bytes: bool) -> Any:
    raw = text[:1] in ("r", "R")
    if raw:
        text = text[1:]
    q = 3 if text[:3] in ('"""', "'''") else 1
    body = text[q:-q]
    if raw:
        return body.encode() if as_bytes else body
    out = bytearray()
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        e = body[i + 1] if i + 1 < n else ""
        if e in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[e].encode()
            i += 2
        elif e in "xX" and i + 4 <= n:
            b = int(body[i + 2:i + 4], 16)
            out += bytes([b]) if as_bytes else chr(b).encode()
            i += 4
        elif e in "01234567" and i + 4 <= n:
            b = int(body[i + 1:i + 4], 8)
            if b > 255:
                raise CelSyntaxError(pos, "octal escape out of range")
            out += bytes([b]) if as_bytes else chr(b).encode()
            i += 4
        elif e in "uU" and not as_bytes:
            width = 4 if e == "u" else 8
            cp = int(body[i + 2:i + 2 + width], 16)
            if 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF:
                raise CelSyntaxError(pos, "invalid unicode escape")
            out += chr(cp).encode()
            i += 2 + width
        else:
            raise CelSyntaxError(pos, f"invalid escape sequence \\{e}")
    if as_bytes:
        return bytes(out)
    try:
        return out.decode()
    except UnicodeDecodeError:
        raise CelSyntaxError(pos, "string literal is not valid UTF-8") from None
