"""Parse CEL source into a small AST with a hand-written lexer and recursive-descent parser.

The grammar is cel-spec's (langdef.md) as cel-go's CEL.g4 spells it, including the optional
syntax (``a.?b``, ``a[?k]``, ``[?x]``, ``{?k: v}``) and backtick-quoted field names
(``a.`foo.txt```). Precedence, lowest first: ``?:`` (right), ``||``, ``&&``, relations
(``< <= > >= == != in``), ``+ -``, ``* / %``, unary ``! -``, member access. As in cel-go, a
run of ``!`` or ``-`` of even length is dropped, a ``-`` directly before a number is that
literal's sign, ``&&``/``||`` chains become balanced trees, and reserved words are refused as
identifiers but allowed as field and method names. Each node keeps the 1-based ``line:col``
of its token (operators: the operator; selections and calls: the name) for error messages.

Written by hand rather than generated (lark) because compiling an expression is dominated by
parsing otherwise: this parser takes tens of µs where the LALR parse took 150-500 µs.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from nfd.lang.cel.values import INT64_MAX, INT64_MIN, UINT64_MAX, UInt

Pos = tuple[int, int]

# Nesting of parentheses, brackets, calls and ternaries the parser follows before refusing; the
# checker's own limit on AST depth (nfd.lang.cel.MAX_DEPTH) usually applies first.
MAX_NESTING = 150


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
    """``operand.field``; ``optional``: written ``operand.?field`` (an optional of the field)."""

    operand: Node
    field: str
    optional: bool = False


@dataclass(slots=True)
class Index(Node):
    """``operand[index]``; ``optional``: written ``operand[?index]`` (an optional of the element)."""

    operand: Node
    index: Node
    optional: bool = False


@dataclass(slots=True)
class Call(Node):
    """Function ``name(args)`` or method ``target.name(args)``; operators use names like ``_+_``."""

    name: str
    target: Node | None
    args: list[Node] = field(default_factory=list)


@dataclass(slots=True)
class ListLit(Node):
    """``[a, ?b]``: ``optional_indices`` lists the items written ``?x`` (optionals, kept when set)."""

    items: list[Node]
    optional_indices: tuple[int, ...] = ()


@dataclass(slots=True)
class MapLit(Node):
    """``{k: v, ?k2: v2}``: ``optional_indices`` lists the entries written ``?k: v`` (v an optional)."""

    entries: list[tuple[Node, Node]]
    optional_indices: tuple[int, ...] = ()


# -- lexer ----------------------------------------------------------------------------------------

_STRING = (
    r"""[bB]?[rR](?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"[^"\r\n]*"|'[^'\r\n]*')"""
    r"""|[bB]?(?:\"\"\"(?:\\[\s\S]|[^\\])*?\"\"\"|'''(?:\\[\s\S]|[^\\])*?'''"""
    r"""|"(?:\\[\s\S]|[^"\\\r\n])*"|'(?:\\[\s\S]|[^'\\\r\n])*')"""
)
_TOKEN = re.compile(
    r"(?:[ \t\n\r\f]+|//[^\r\n]*)*"  # whitespace and comments before each token
    r"(?:(?P<float>\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\.\d+(?:[eE][+-]?\d+)?)"
    r"|(?P<hex>0x[0-9a-fA-F]+[uU]?)"
    r"|(?P<int>\d+[uU]?)"
    rf"|(?P<str>{_STRING})"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<esc>`[A-Za-z0-9_.\-/ ]+`)"
    r"|(?P<op>==|!=|<=|>=|&&|\|\||[<>!+\-*/%?:.,\[\](){}])"
    r"|(?P<err>[\s\S])|(?P<end>\Z))"
)
_KEYWORD_LITERALS = {"true": True, "false": False, "null": None}
# cel-go's reservedIds: refused as identifiers and function names, allowed after a dot.
RESERVED = frozenset({
    "as", "break", "const", "continue", "else", "false", "for", "function", "if", "import", "in",
    "let", "loop", "package", "namespace", "null", "return", "true", "var", "void", "while",
})
_RELOPS = {"<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "==": "_==_", "!=": "_!=_", "in": "@in"}
_ADDOPS = {"+": "_+_", "-": "_-_"}
_MULOPS = {"*": "_*_", "/": "_/_", "%": "_%_"}
_EOF = "<eof>"


def _lex(src: str, at: Any) -> tuple[list[str], list[Any], list[int]]:
    """Token kinds, values and start offsets; kinds are an operator's text, ``in``, or one of
    int/uint/float/str/lit/ident/esc, and the lists end with an end-of-input token."""
    kinds: list[str] = []
    vals: list[Any] = []
    offs: list[int] = []
    for m in _TOKEN.finditer(src):
        kind = m.lastgroup
        if kind == "end":
            break
        text = m.group(kind)  # type: ignore[arg-type]
        start = m.start(kind)  # type: ignore[arg-type]
        if kind == "op":
            kinds.append(text)
            vals.append(text)
        elif kind == "ident":
            if text in _KEYWORD_LITERALS:
                kinds.append("lit")
                vals.append(_KEYWORD_LITERALS[text])
            else:
                kinds.append("in" if text == "in" else "ident")
                vals.append(text)
        elif kind == "int" or kind == "hex":
            unsigned = text[-1] in "uU"
            digits = text[:-1] if unsigned else text
            v = int(digits[2:], 16) if kind == "hex" else int(digits)
            if unsigned:
                if v > UINT64_MAX:
                    raise CelSyntaxError(at(start), "unsigned integer literal out of range")
                kinds.append("uint")
                vals.append(UInt(v))
            else:
                kinds.append("int")
                vals.append(v)
        elif kind == "float":
            f = float(text)
            if f == _INF:  # Go's ParseFloat: out of range, not +Inf
                raise CelSyntaxError(at(start), f"invalid double literal {text!r}")
            kinds.append("float")
            vals.append(f)
        elif kind == "str":
            try:
                vals.append(_string(text))
            except CelSyntaxError as e:
                raise CelSyntaxError(at(start), e.message) from None
            kinds.append("str")
        elif kind == "esc":
            kinds.append("esc")
            vals.append(text[1:-1])
        elif text in "\"'":
            raise CelSyntaxError(at(start), "syntax error: unterminated string literal")
        elif text == "`":
            raise CelSyntaxError(at(start), "syntax error: invalid quoted field name (letters, digits, "
                                            "'_', '.', '-', '/' and spaces between backticks)")
        else:
            raise CelSyntaxError(at(start), f"syntax error: unexpected character {text!r}")
        offs.append(start)
    kinds.append(_EOF)
    vals.append(None)
    offs.append(len(src))
    return kinds, vals, offs


_INF = float("inf")


# -- parser ---------------------------------------------------------------------------------------


def parse(src: str) -> Node:
    """Parse ``src``; raise CelSyntaxError with the position of the first problem."""
    p = _Parser(src)
    try:
        tree = p.expr()
    except RecursionError:
        raise CelSyntaxError(None, "expression is nested too deeply") from None
    if p.kinds[p.i] != _EOF:
        p.unexpected()
    return tree


class _Parser:
    __slots__ = ("kinds", "vals", "offs", "i", "depth", "lines")

    def __init__(self, src: str) -> None:
        # offsets of line starts, only when there is more than one line
        self.lines = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", src)] if "\n" in src or "\r" in src else None
        self.kinds, self.vals, self.offs = _lex(src, self.at)
        self.i = 0
        self.depth = 0

    def at(self, off: int) -> Pos:
        if self.lines is None:
            return (1, off + 1)
        line = bisect_right(self.lines, off)
        return (line, off - self.lines[line - 1] + 1)

    def pos(self, i: int) -> Pos:
        return self.at(self.offs[i])

    def unexpected(self) -> None:
        i = self.i
        if self.kinds[i] == _EOF:
            # pointing at the last token, after which something is missing
            raise CelSyntaxError(self.pos(max(0, i - 1)), "syntax error: unexpected end of expression")
        kind, val = self.kinds[i], self.vals[i]
        shown = val if kind in ("ident", "in") or kind == val else _shown(kind, val)
        raise CelSyntaxError(self.pos(i), f"syntax error: unexpected {shown!r}")

    def expect(self, kind: str) -> None:
        if self.kinds[self.i] != kind:
            self.unexpected()
        self.i += 1

    # Expr = ConditionalOr ["?" ConditionalOr ":" Expr]
    def expr(self) -> Node:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise CelSyntaxError(self.pos(self.i), f"expression is nested more than {MAX_NESTING} deep")
        e = self.logic("||", "_||_")
        if self.kinds[self.i] == "?":
            qpos = self.pos(self.i)
            self.i += 1
            then = self.logic("||", "_||_")
            self.expect(":")
            e = Call(qpos, "_?_:_", None, [e, then, self.expr()])
        self.depth -= 1
        return e

    def logic(self, op: str, name: str) -> Node:
        """A ``||`` (or, one level down, ``&&``) chain, as the balanced tree cel-go builds."""
        first = self.logic("&&", "_&&_") if op == "||" else self.relation()
        kinds = self.kinds
        if kinds[self.i] != op:
            return first
        terms = [first]
        ops: list[Pos] = []
        while kinds[self.i] == op:
            ops.append(self.pos(self.i))
            self.i += 1
            terms.append(self.logic("&&", "_&&_") if op == "||" else self.relation())
        return _balanced(name, terms, ops, 0, len(ops) - 1)

    def relation(self) -> Node:
        left = self.addition()
        kinds = self.kinds
        while (name := _RELOPS.get(kinds[self.i])) is not None:
            p = self.pos(self.i)
            self.i += 1
            left = Call(p, name, None, [left, self.addition()])
        return left

    def addition(self) -> Node:
        left = self.multiplication()
        kinds = self.kinds
        while (name := _ADDOPS.get(kinds[self.i])) is not None:
            p = self.pos(self.i)
            self.i += 1
            left = Call(p, name, None, [left, self.multiplication()])
        return left

    def multiplication(self) -> Node:
        left = self.unary()
        kinds = self.kinds
        while (name := _MULOPS.get(kinds[self.i])) is not None:
            p = self.pos(self.i)
            self.i += 1
            left = Call(p, name, None, [left, self.unary()])
        return left

    # Unary = Member | "!" {"!"} Member | "-" {"-"} Member
    def unary(self) -> Node:
        kinds = self.kinds
        op = kinds[self.i]
        if op != "!" and op != "-":
            return self.member()
        start = self.i
        while kinds[self.i] == op:
            self.i += 1
        count = self.i - start
        if op == "-" and kinds[self.i] in ("int", "float"):
            self.i -= 1  # the last '-' is the literal's sign
            count -= 1
        operand = self.member()
        if count % 2 == 0:
            return operand
        return Call(self.pos(start), "!_" if op == "!" else "-_", None, [operand])

    # Member = Primary | Member "." ["?"] SELECTOR ["(" [ExprList] ")"] | Member "[" ["?"] Expr "]"
    def member(self) -> Node:
        n = self.primary()
        kinds = self.kinds
        while True:
            k = kinds[self.i]
            if k == ".":
                self.i += 1
                opt = kinds[self.i] == "?"
                if opt:
                    self.i += 1
                k = kinds[self.i]
                if k == "ident" or k == "esc":
                    name, npos = self.vals[self.i], self.pos(self.i)
                    self.i += 1
                    nk = kinds[self.i]
                    if nk == "(" and k == "ident" and not opt:
                        self.i += 1
                        n = Call(npos, name, n, self.exprs(")"))
                    elif nk == "{" and k == "ident" and _qualified(n):
                        raise CelSyntaxError(npos, "message construction (Type{field: ...}) is not supported")
                    else:
                        n = Select(npos, n, name, opt)
                else:
                    self.unexpected()
            elif k == "[":
                bpos = self.pos(self.i)
                self.i += 1
                opt = kinds[self.i] == "?"
                if opt:
                    self.i += 1
                index = self.expr()
                self.expect("]")
                n = Index(bpos, n, index, opt)
            else:
                return n

    def exprs(self, close: str) -> list[Node]:
        """``Expr {"," Expr}`` up to ``close`` (consumed); no trailing comma, as in call syntax."""
        out: list[Node] = []
        if self.kinds[self.i] == close:
            self.i += 1
            return out
        while True:
            out.append(self.expr())
            k = self.kinds[self.i]
            self.i += 1
            if k == close:
                return out
            if k != ",":
                self.i -= 1
                self.unexpected()

    def primary(self) -> Node:
        kinds, i = self.kinds, self.i
        k = kinds[i]
        if k == "ident" or (k == "." and kinds[i + 1] == "ident"):
            if k == ".":  # a leading dot names the root namespace: the same names here
                i += 1
            p, name = self.pos(i), self.vals[i]
            self.i = i + 1
            nk = kinds[self.i]
            if nk == "{":
                raise CelSyntaxError(p, "message construction (Type{field: ...}) is not supported")
            if name in RESERVED:
                raise CelSyntaxError(p, f"reserved identifier: {name}")
            if nk == "(":
                self.i += 1
                return Call(p, name, None, self.exprs(")"))
            return Ident(p, name)
        if k in ("int", "uint", "float", "str", "lit"):
            v = self.vals[i]
            if k == "int" and v > INT64_MAX:
                raise CelSyntaxError(self.pos(i), "integer literal out of range")
            self.i = i + 1
            return Lit(self.pos(i), v)
        if k == "-" and kinds[i + 1] in ("int", "float"):
            v = -self.vals[i + 1]
            if kinds[i + 1] == "int" and v < INT64_MIN:
                raise CelSyntaxError(self.pos(i), "integer literal out of range")
            self.i = i + 2
            return Lit(self.pos(i), v)
        if k == "(":
            self.i = i + 1
            e = self.expr()
            self.expect(")")
            return e
        if k == "[":
            return self.list_lit()
        if k == "{":
            return self.map_lit()
        self.unexpected()
        raise AssertionError("unreachable")

    def opt_marker(self) -> bool:
        if self.kinds[self.i] == "?":
            self.i += 1
            return True
        return False

    # "[" [["?"] Expr {"," ["?"] Expr}] [","] "]"
    def list_lit(self) -> Node:
        p = self.pos(self.i)
        self.i += 1
        self.depth += 1
        items: list[Node] = []
        optional: list[int] = []
        kinds = self.kinds
        while kinds[self.i] != "]":
            if items or (kinds[self.i] == "," and kinds[self.i + 1] == "]"):
                self.expect(",")
                if kinds[self.i] == "]":
                    break
            if self.opt_marker():
                optional.append(len(items))
            items.append(self.expr())
        self.i += 1
        self.depth -= 1
        return ListLit(p, items, tuple(optional))

    # "{" [["?"] Expr ":" Expr {"," ["?"] Expr ":" Expr}] [","] "}"
    def map_lit(self) -> Node:
        p = self.pos(self.i)
        self.i += 1
        self.depth += 1
        entries: list[tuple[Node, Node]] = []
        optional: list[int] = []
        kinds = self.kinds
        while kinds[self.i] != "}":
            if entries or (kinds[self.i] == "," and kinds[self.i + 1] == "}"):
                self.expect(",")
                if kinds[self.i] == "}":
                    break
            if self.opt_marker():
                optional.append(len(entries))
            key = self.expr()
            self.expect(":")
            entries.append((key, self.expr()))
        self.i += 1
        self.depth -= 1
        return MapLit(p, entries, tuple(optional))


def _balanced(name: str, terms: list[Node], ops: list[Pos], lo: int, hi: int) -> Node:
    """cel-go's balancer: operator ``mid`` splits terms ``lo..hi+1`` into two balanced halves."""
    mid = (lo + hi + 1) // 2
    left = terms[mid] if mid == lo else _balanced(name, terms, ops, lo, mid - 1)
    right = terms[mid + 1] if mid == hi else _balanced(name, terms, ops, mid + 1, hi)
    return Call(ops[mid], name, None, [left, right])


def _qualified(n: Node) -> bool:
    """Is ``n`` a dotted name (``a.b.c``), what a message type name would be?"""
    while isinstance(n, Select) and not n.optional:
        n = n.operand
    return isinstance(n, Ident)


def _shown(kind: str, val: Any) -> str:
    if kind == "lit":
        return "null" if val is None else ("true" if val else "false")
    if kind == "esc":
        return f"`{val}`"
    if kind == "str":
        return repr(val)
    return str(val)


# -- string and bytes literals ------------------------------------------------------------------------

_ESCAPE = re.compile(
    r"\\(?:([abfnrtv\\'\"`?])|[xX]([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([0-3][0-7]{2})|([\s\S]?))"
)
_SIMPLE_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?",
}


def _string(text: str) -> str | bytes:
    """The value of a string or bytes literal token (quotes, prefixes and escapes as cel-spec)."""
    as_bytes = text[0] in "bB"
    if as_bytes:
        text = text[1:]
    raw = text[0] in "rR"
    if raw:
        text = text[1:]
    q = 3 if text[:3] in ('"""', "'''") else 1
    body = text[q:-q]
    if raw or "\\" not in body:
        return body.encode() if as_bytes else body
    parts: list[str] = []
    out = bytearray()
    last = 0
    for m in _ESCAPE.finditer(body):
        chunk = body[last:m.start()]
        last = m.end()
        simple, hx, u4, u8, octal, bad = m.groups()
        if simple is not None:
            s: str | None = _SIMPLE_ESCAPES[simple]
            code = -1
        elif hx is not None or octal is not None:
            s, code = None, int(hx, 16) if hx is not None else int(octal, 8)
        elif u4 is not None or u8 is not None:
            if as_bytes:
                raise CelSyntaxError(None, "unicode escape (\\u, \\U) in a bytes literal")
            cp = int(u4 or u8, 16)
            if 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF:
                raise CelSyntaxError(None, f"invalid unicode escape \\{'u' if u4 else 'U'}{u4 or u8}")
            s, code = chr(cp), -1
        else:
            raise CelSyntaxError(None, f"invalid escape sequence \\{bad}" if bad else "invalid escape sequence")
        if as_bytes:
            out += chunk.encode()
            if s is not None:
                out += s.encode()
            else:
                out.append(code)
        else:
            parts.append(chunk)
            parts.append(s if s is not None else chr(code))
    if as_bytes:
        out += body[last:].encode()
        return bytes(out)
    parts.append(body[last:])
    return "".join(parts)
