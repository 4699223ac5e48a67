"""Parse-tree nodes, mirroring text/template/parse. `str(node)` is Go's Node.String()."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nfd.lang.gostd.strconv import quote as go_quote


class Node:
    pos: int

    def __str__(self) -> str:  # pragma: no cover - overridden
        return ""


@dataclass(eq=False)
class TextNode(Node):
    pos: int
    text: str

    def __str__(self) -> str:
        return go_quote(self.text)


@dataclass(eq=False)
class DotNode(Node):
    pos: int

    def __str__(self) -> str:
        return "."


@dataclass(eq=False)
class NilNode(Node):
    pos: int

    def __str__(self) -> str:
        return "nil"


@dataclass(eq=False)
class BoolNode(Node):
    pos: int
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(eq=False)
class NumberNode(Node):
    """A numeric constant; like Go it records every interpretation that fits."""

    pos: int
    text: str
    is_int: bool = False
    is_float: bool = False
    int_val: int = 0
    float_val: float = 0.0
    is_char: bool = False
    is_uint: bool = False  # fits uint64 but not int64: an error when used as a value
    is_complex: bool = False
    complex_val: complex = 0j

    def __str__(self) -> str:
        return self.text


@dataclass(eq=False)
class StringNode(Node):
    pos: int
    quoted: str
    text: str

    def __str__(self) -> str:
        return self.quoted


@dataclass(eq=False)
class FieldNode(Node):
    pos: int
    ident: list[str]

    def __str__(self) -> str:
        return "".join("." + i for i in self.ident)


@dataclass(eq=False)
class VariableNode(Node):
    pos: int
    ident: list[str]

    def __str__(self) -> str:
        return ".".join(self.ident)


@dataclass(eq=False)
class IdentifierNode(Node):
    pos: int
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class ChainNode(Node):
    pos: int
    node: Node
    fields: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        s = str(self.node)
        if isinstance(self.node, PipeNode):
            s = "(" + s + ")"
        return s + "".join("." + f for f in self.fields)


@dataclass(eq=False)
class CommandNode(Node):
    pos: int
    args: list[Node] = field(default_factory=list)

    def __str__(self) -> str:
        parts = []
        for a in self.args:
            parts.append("(" + str(a) + ")" if isinstance(a, PipeNode) else str(a))
        return " ".join(parts)


@dataclass(eq=False)
class PipeNode(Node):
    pos: int
    is_assign: bool = False
    decl: list[VariableNode] = field(default_factory=list)
    cmds: list[CommandNode] = field(default_factory=list)

    def __str__(self) -> str:
        s = ""
        if self.decl:
            s = ", ".join(str(d) for d in self.decl) + (" = " if self.is_assign else " := ")
        return s + " | ".join(str(c) for c in self.cmds)


@dataclass(eq=False)
class ListNode(Node):
    pos: int
    nodes: list[Node] = field(default_factory=list)

    def __str__(self) -> str:
        return "".join(str(n) for n in self.nodes)


@dataclass(eq=False)
class ActionNode(Node):
    pos: int
    pipe: PipeNode

    def __str__(self) -> str:
        return "{{" + str(self.pipe) + "}}"


@dataclass(eq=False)
class BranchNode(Node):
    """if / range / with."""

    pos: int
    kind: str
    pipe: PipeNode
    body: ListNode
    else_body: ListNode | None = None

    def __str__(self) -> str:
        s = "{{" + self.kind + " " + str(self.pipe) + "}}" + str(self.body)
        if self.else_body is not None:
            s += "{{else}}" + str(self.else_body)
        return s + "{{end}}"


@dataclass(eq=False)
class BreakNode(Node):
    pos: int

    def __str__(self) -> str:
        return "{{break}}"


@dataclass(eq=False)
class ContinueNode(Node):
    pos: int

    def __str__(self) -> str:
        return "{{continue}}"


@dataclass(eq=False)
class TemplateNode(Node):
    pos: int
    name: str
    pipe: PipeNode | None

    def __str__(self) -> str:
        if self.pipe is None:
            return "{{template " + go_quote(self.name) + "}}"
        return "{{template " + go_quote(self.name) + " " + str(self.pipe) + "}}"


def is_empty_tree(n: Any) -> bool:
    """Go's IsEmptyTree: only whitespace text (a redefinable placeholder)."""
    if n is None:
        return True
    if isinstance(n, ListNode):
        return all(is_empty_tree(x) for x in n.nodes)
    if isinstance(n, TextNode):
        return n.text.strip() == ""
    return False
