"""Per-execution limits, so one NodeFeatureRule template cannot tie up nfd-master.

Upstream has none; Go is fast enough that `{{ range until 100000000 }}` "only" takes seconds
there. Here an execution may take MAX_STEPS steps and write MAX_OUTPUT characters:

- steps: each range iteration costs 1 plus the actions in its body (both branches of an
  if/else count; nested ranges charge their own iterations), each {{template}} call 1, and
  functions that build values pay for their size: one step per ITEMS_PER_STEP list or map
  elements, one per CHARS_PER_STEP string characters.
- output: the characters written (MAX_OUTPUT), and any one string or list a function builds:
  VALUE_FACTOR times MAX_OUTPUT characters (Go's printf alone can build 2 MB from a width),
  MAX_STEPS elements; big ones are refused before they are allocated.

Exceeding either fails the execution with `template execution budget exceeded (...)`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from .errors import FuncError

MAX_STEPS = 1_000_000
MAX_OUTPUT = 1 << 20  # characters (Go counts bytes; ASCII label text is the same)
VALUE_FACTOR = 4
ITEMS_PER_STEP = 16
CHARS_PER_STEP = 1024

EXCEEDED = "template execution budget exceeded"


class Budget:
    """What is left of one execution's allowance (the executor's State extends it)."""

    __slots__ = ("steps", "room", "limits")

    def __init__(self, max_steps: int, max_output: int) -> None:
        self.steps = max_steps  # steps left
        self.room = max_output  # output characters left
        self.limits = (max_steps, max_output)

    @property
    def max_steps(self) -> int:
        return self.limits[0]

    @property
    def max_output(self) -> int:
        return self.limits[1]

    @property
    def max_string(self) -> int:
        return self.limits[1] * VALUE_FACTOR

    def steps_message(self) -> str:
        return f"{EXCEEDED} (more than {self.max_steps} steps)"

    def output_message(self) -> str:
        return f"{EXCEEDED} (output over {self.max_output} characters)"


# The running execution's budget, for template functions (they see only their arguments). Set
# only for templates that call a function in BUDGETED: a ContextVar costs ~0.1 µs an execution.
current: ContextVar[Budget | None] = ContextVar("gotemplate_budget", default=None)
_OUTSIDE = Budget(MAX_STEPS, MAX_OUTPUT)  # functions called outside an execution: size checks only


def _budget() -> Budget:
    return current.get() or _OUTSIDE


def string_limit() -> int:
    """The longest string a function may build in the running execution."""
    return _budget().max_string


def string_too_long(n: int, limit: int) -> FuncError:
    return FuncError(f"{EXCEEDED} (string of {n} characters, limit {limit})")


def charge_string(n: int) -> None:
    """Before building a string of n characters: refuse it if too long, else pay for it."""
    b = _budget()
    if n > b.max_string:
        raise string_too_long(n, b.max_string)
    if n >= CHARS_PER_STEP and b is not _OUTSIDE:
        b.steps -= n // CHARS_PER_STEP
        if b.steps < 0:
            raise FuncError(b.steps_message())


def charge_items(n: int) -> None:
    """Before building a list or map of n elements: refuse it if too long, else pay for it."""
    b = _budget()
    if n > b.max_steps:
        raise FuncError(f"{EXCEEDED} (list of {n} elements, limit {b.max_steps})")
    if n >= ITEMS_PER_STEP and b is not _OUTSIDE:
        b.steps -= n // ITEMS_PER_STEP
        if b.steps < 0:
            raise FuncError(b.steps_message())


def charge_work(n: int) -> None:
    """Before n elementary operations on elements (comparisons...): pay for them."""
    b = _budget()
    if n >= ITEMS_PER_STEP and b is not _OUTSIDE:
        b.steps -= n // ITEMS_PER_STEP
        if b.steps < 0:
            raise FuncError(b.steps_message())


def sized(fn: Callable[..., Any], *, printer: bool = False) -> Callable[..., Any]:
    """Wrap a function whose result may be big: check and pay for the value it returned.

    For functions whose result is at most a few times their arguments' size; those that
    multiply (repeat, replace, until...) check before building instead. A `printer` formats
    its arguments, which may be lists holding the same long string many times: the printed
    size of any non-string argument is estimated first.
    """

    def checked(*args: Any) -> Any:
        r = fn(*args)
        if type(r) is str:
            if len(r) >= CHARS_PER_STEP:
                charge_string(len(r))
        elif isinstance(r, (list, tuple, dict)) and len(r) >= ITEMS_PER_STEP:
            charge_items(len(r))
        return r

    def checked_printer(*args: Any) -> Any:
        for a in args:
            if type(a) is not str:
                _check_printed(args)
                break
        r = fn(*args)
        if type(r) is str and len(r) >= CHARS_PER_STEP:
            charge_string(len(r))
        return r

    return checked_printer if printer else checked


def _check_printed(args: tuple[Any, ...]) -> None:
    limit = _budget().max_string
    size = 0
    for a in args:
        size += _printed_size(a, limit)
        if size > limit:
            raise string_too_long(size, limit)


def _printed_size(v: Any, limit: int) -> int:
    """About how long `v` prints (at least that long); stops counting past `limit`."""
    if isinstance(v, str):
        return len(v)
    if isinstance(v, (list, tuple, dict)):
        size = 2
        for x in v.items() if isinstance(v, dict) else v:
            size += 1 + _printed_size(x, limit)
            if size > limit:
                break
        return size
    return 1  # numbers, booleans, nil


# Functions that print their arguments (see `sized`).
PRINTERS = frozenset(
    {"print", "printf", "println", "html", "js", "urlquery", "cat", "quote", "squote", "toString",
     "join", "toJson", "mustToJson", "toPrettyJson", "mustToPrettyJson", "toRawJson", "mustToRawJson"}
)

# Functions the executor wraps with `sized` (their results grow with their arguments).
# (Those that multiply their arguments, in BUDGETED too, check before building.)
SIZED = frozenset(
    {
        # builtins
        "print", "printf", "println", "html", "js", "urlquery",
        # strings
        "cat", "quote", "squote", "join", "wrap", "wrapWith", "b64enc", "b32enc", "toString",
        "nospace", "snakecase", "camelcase", "kebabcase", "swapcase", "title", "untitle",
        "upper", "lower", "regexReplaceAll", "mustRegexReplaceAll", "regexReplaceAllLiteral",
        "mustRegexReplaceAllLiteral", "toJson", "mustToJson", "toPrettyJson", "mustToPrettyJson",
        "toRawJson", "mustToRawJson",
        # collections
        "tuple", "list", "append", "push", "mustAppend", "mustPush", "prepend", "mustPrepend",
        "concat", "chunk", "mustChunk", "dict", "merge", "mustMerge", "mergeOverwrite",
        "mustMergeOverwrite", "deepCopy", "mustDeepCopy", "splitList", "split", "splitn",
        "toStrings", "sortAlpha", "keys", "values", "uniq", "mustUniq", "regexFindAll",
        "mustRegexFindAll", "regexSplit", "mustRegexSplit", "pluck", "pick", "omit", "without",
        "mustWithout", "reverse", "mustReverse", "compact", "mustCompact",
    }
)

# Functions that read the running execution's budget (`current`).
BUDGETED = SIZED | {
    "repeat", "uniq", "mustUniq", "replace", "indent", "nindent", "until", "untilStep", "seq", "randAlphaNum",
    "randAlpha", "randAscii", "randNumeric", "randBytes",
}
