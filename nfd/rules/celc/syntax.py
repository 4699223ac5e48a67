"""Parse CEL source into a small AST, using celpy's lark grammar (the only part of celpy we use).

The AST is ours so the compiler does not depend on lark's tree shapes, and each node keeps the
1-based ``line:col`` of the source it came from for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nfd.rules.celc.values import INT64_MAX, INT64_MIN, UINT64_MAX, UInt

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


def parse(src: str) -> Node:
    """Parse ``src``; raise CelSyntaxError with the position of the first problem."""
    global _parser
    from lark.exceptions import LarkError, UnexpectedInput

    if _parser is None:
        from celpy.celparser import CELParser

        _parser = CELParser()
    try:
        tree = _parser.parse(src)
    except Exception as e:  # celpy wraps lark errors in CELParseError (line/column attributes)
        line, col = getattr(e, "line", None), getattr(e, "column", None)
        cause = e.__context__ if isinstance(e.__context__, UnexpectedInput | LarkError) else e
        what = _describe_parse_error(cause)
        raise CelSyntaxError((line, col) if line and col else None, what) from None
    try:
        return _Builder().expr(tree)
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


class _Builder:
    """Turn celpy's lark tree into our AST; one method per grammar rule that carries meaning."""

    def expr(self, t: Any) -> Node:
        ch = t.children
        if len(ch) == 1:
            return self.conditionalor(ch[0])
        return Call(_pos(t), "_?_:_", None, [self.conditionalor(ch[0]), self.conditionalor(ch[1]), self.expr(ch[2])])

    def conditionalor(self, t: Any) -> Node:
        ch = t.children
        if len(ch) == 1:
            return self.conditionaland(ch[0])
        return Call(_pos(ch[1]), "_||_", None, [self.conditionalor(ch[0]), self.conditionaland(ch[1])])

    def conditionaland(self, t: Any) -> Node:
        ch = t.children
        if len(ch) == 1:
            return self.relation(ch[0])
        return Call(_pos(ch[1]), "_&&_", None, [self.conditionaland(ch[0]), self.relation(ch[1])])

    def _binary(self, t: Any, left_fn: Any, right_fn: Any) -> Node:
        ch = t.children
        if len(ch) == 1:
            return right_fn(ch[0])  # type: ignore[no-any-return]
        op_tree, right = ch
        left = left_fn(op_tree.children[0])
        op = _BINOPS[op_tree.data]
        return Call(_op_pos(op_tree, op), op, None, [left, right_fn(right)])

    def relation(self, t: Any) -> Node:
        return self._binary(t, self.relation, self.addition)

    def addition(self, t: Any) -> Node:
        return self._binary(t, self.addition, self.multiplication)

    def multiplication(self, t: Any) -> Node:
        return self._binary(t, self.multiplication, self.unary)

    def unary(self, t: Any) -> Node:
        ch = t.children
        if len(ch) == 1:
            return self.member(ch[0])
        op = "!_" if ch[0].data == "unary_not" else "-_"
        operand = self.unary(ch[1])
        if op == "-_" and isinstance(operand, Lit) and type(operand.value) in (int, float) \
                and not isinstance(operand.value, bool):
            v = -operand.value
            if type(v) is int and not INT64_MIN <= v <= INT64_MAX:
                raise CelSyntaxError(_pos(t), "integer literal out of range")
            return Lit(_pos(t), v)
        return Call(_pos(t), op, None, [operand])

    def member(self, t: Any) -> Node:
        c = t.children[0]
        kind = c.data
        if kind == "primary":
            return self.primary(c)
        if kind == "member_dot":
            return Select(_pos(c.children[1]), self.member(c.children[0]), str(c.children[1]))
        if kind == "member_dot_arg":
            args = self.exprlist(c.children[2]) if len(c.children) > 2 else []
            return Call(_pos(c.children[1]), str(c.children[1]), self.member(c.children[0]), args)
        if kind == "member_index":
            return Index(_pos(c), self.member(c.children[0]), self.expr(c.children[1]))
        raise CelSyntaxError(_pos(c), "message construction (Type{field: ...}) is not supported")

    def exprlist(self, t: Any) -> list[Node]:
        return [self.expr(e) for e in t.children]

    def primary(self, t: Any) -> Node:
        c = t.children[0]
        kind = c.data
        if kind == "literal":
            return Lit(_pos(c), _literal(c.children[0]))
        if kind in ("ident", "dot_ident"):
            return Ident(_pos(c), str(c.children[0]))
        if kind in ("ident_arg", "dot_ident_arg"):
            args = self.exprlist(c.children[1]) if len(c.children) > 1 else []
            return Call(_pos(c), str(c.children[0]), None, args)
        if kind == "paren_expr":
            return self.expr(c.children[0])
        if kind == "list_lit":
            return ListLit(_pos(c), self.exprlist(c.children[0]) if c.children else [])
        if kind == "map_lit":
            entries: list[tuple[Node, Node]] = []
            if c.children:
                kids = c.children[0].children
                for i in range(0, len(kids), 2):
                    entries.append((self.expr(kids[i]), self.expr(kids[i + 1])))
            return MapLit(_pos(c), entries)
        raise CelSyntaxError(_pos(c), f"unsupported syntax {kind}")


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
