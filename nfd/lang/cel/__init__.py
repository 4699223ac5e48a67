"""A CEL compiler for rule expressions: our parser and checker, Python closures at run time.

``compile_program(source)`` parses, checks limits and types, and returns a ``Program`` whose
``fn(act)`` evaluates the expression for one node. See docs/cel.md for the language.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from nfd.lang.cel.compiler import VARIABLES, Compiler
from nfd.lang.cel.library import FUNCTIONS
from nfd.lang.cel.runtime import Act, Fn
from nfd.lang.cel.syntax import Call, CelSyntaxError, Index, ListLit, MapLit, Node, Select, parse
from nfd.lang.cel.types import BOOL, DYN, STRING, Type, fmt
from nfd.lang.cel.values import CelError, CostLimitExceeded, type_name

# Limits, in the spirit of Kubernetes' CEL cost limits: a rule cannot stall the master.
MAX_SOURCE_CHARS = 10_000
MAX_AST_NODES = 1_000
MAX_DEPTH = 100
# Elements iterated by macros (all/exists/exists_one/map/filter) per expression and node; a
# macro charges the size of its collection when it starts.
DEFAULT_STEP_LIMIT = 100_000

__all__ = [
    "Act",
    "CelError",
    "CelSyntaxError",
    "Compiler",
    "CostLimitExceeded",
    "DEFAULT_STEP_LIMIT",
    "Fn",
    "Program",
    "VARIABLES",
    "compile_program",
    "construct",
    "parse",
    "type_name",
]


def construct(function: str, text: str) -> object:
    """The value ``function(text)`` gives in an expression (``quantity``, ``version``, ``semver``):
    for hosts that type their own inputs as the language does. KeyError when the library has
    no such function; CelError when ``text`` is not valid for it."""
    for o in FUNCTIONS[function]:
        if o.receiver is None and o.params == (STRING,):
            return o.impl(text)
    raise KeyError(function)


@dataclass(frozen=True, slots=True)
class Program:
    """``fast`` (generated Python, no error absorption; None if it did not build) answers when
    it raises nothing; otherwise ``fn`` (closures with exact CEL semantics) decides."""

    source: str
    fn: Fn
    fast: Fn | None
    result_type: Type


@lru_cache(maxsize=2048)
def compile_program(source: str) -> Program:
    """Compile one boolean expression; raise CelSyntaxError (with line:col where known).

    Cached by source: programs are immutable (per-node state lives in ``Act``), and the master
    recompiles every rule of a NodeFeatureRule whenever the object changes.
    """
    if len(source) > MAX_SOURCE_CHARS:
        raise CelSyntaxError(None, f"expression is longer than {MAX_SOURCE_CHARS} characters")
    tree = parse(source)
    nodes, depth = _measure(tree)
    if nodes > MAX_AST_NODES:
        raise CelSyntaxError(None, f"expression has {nodes} nodes, more than the limit of {MAX_AST_NODES}")
    if depth > MAX_DEPTH:
        raise CelSyntaxError(None, f"expression is nested {depth} deep, more than the limit of {MAX_DEPTH}")
    compiler = Compiler()
    c = compiler.compile(tree)
    if c.t not in (BOOL, DYN):
        raise CelSyntaxError(tree.pos, f"expression must evaluate to bool, not {fmt(c.t)}")
    return Program(source, c.fn, compiler.source(c), c.t)


def _measure(root: Node) -> tuple[int, int]:
    """(node count, depth) level by level, without recursion, so a pathological tree cannot
    blow the stack."""
    count = depth = 0
    level = [root]
    while level:
        depth += 1
        count += len(level)
        below: list[Node] = []
        for n in level:
            if isinstance(n, Call):
                if n.target is not None:
                    below.append(n.target)
                below += n.args
            elif isinstance(n, Select):
                below.append(n.operand)
            elif isinstance(n, Index):
                below.append(n.operand)
                below.append(n.index)
            elif isinstance(n, ListLit):
                below += n.items
            elif isinstance(n, MapLit):
                for k, v in n.entries:
                    below.append(k)
                    below.append(v)
        level = below
    return count, depth
