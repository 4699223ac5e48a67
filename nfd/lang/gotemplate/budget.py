"""Per-execution limits, so one NodeFeatureRule template cannot tie up nfd-master.

Upstream has none; Go is fast enough that `{{ range until 100000000 }}` "only" takes seconds
there. Here an execution may take MAX_STEPS steps and write MAX_OUTPUT characters:

- steps: each range iteration costs 1 plus the actions in its body (both branches of an
  if/else count; nested ranges charge their own iterations), each {{template}} call 1 plus its
  actions, and functions pay for the size of what they read (SCANS, weighted by their work per
  element) and of the string or list they return (one step per CHARS_PER_STEP characters or
  ITEMS_PER_STEP elements).
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
    if n >= CHARS_PER_STEP:
        _charge_steps(n // CHARS_PER_STEP)


def charge_items(n: int) -> None:
    """Before building a list or map of n elements: refuse it if too long, else pay for it."""
    b = _budget()
    if n > b.max_steps:
        raise FuncError(f"{EXCEEDED} (list of {n} elements, limit {b.max_steps})")
    charge_work(n)


def charge_work(n: int) -> None:
    """Before n elementary operations on elements (copies, comparisons): pay for them."""
    if n >= ITEMS_PER_STEP:
        _charge_steps(n // ITEMS_PER_STEP)


def _charge_steps(n: int) -> None:
    b = _budget()
    if b is not _OUTSIDE:
        b.steps -= n
        if b.steps < 0:
            raise FuncError(b.steps_message())


def guarded(name: str, fn: Callable[..., Any], nargs: int) -> Callable[..., Any]:
    """`fn` (called with `nargs` arguments) wrapped to pay for its work.

    By the size of its arguments (SCANS: a function that walks a list or scans a string, run
    10,000 times on a big one, must not cost 10,000 steps), and of its result: a string or
    list it returns is checked and paid for (functions that multiply their arguments, like
    repeat, check inside before building). A PRINTER's non-string arguments may be lists
    holding one long string many times: their printed size is estimated (and paid for, element
    by element) first. One- and two-argument calls get their own closures: this wraps hot
    functions (upper, regexMatch...), and a loop over *args would double their overhead.
    """
    per_item, per_char = SCANS.get(name, (_NEVER, _NEVER))
    if name in DEEP:
        return _deep_guarded(fn)

    if name in PRINTERS or nargs not in (1, 2):
        printer = name in PRINTERS

        def checked(*args: Any) -> Any:
            others = False  # an argument that is not a string
            for a in args:
                if type(a) is str:
                    if len(a) >= per_char:
                        _pay_arg(a, per_item, per_char)
                else:
                    others = True
                    _pay_arg(a, per_item, per_char)
            if others and printer:
                _check_printed(args)
            return _paid(fn(*args))

        return checked

    if nargs == 1:

        def checked1(a: Any) -> Any:
            if not (type(a) is str and len(a) < per_char):  # the common case, inline
                _pay_arg(a, per_item, per_char)
            return _paid(fn(a))

        return checked1

    def checked2(a: Any, b: Any) -> Any:
        if not (type(a) is str and len(a) < per_char):
            _pay_arg(a, per_item, per_char)
        if not (type(b) is str and len(b) < per_char):
            _pay_arg(b, per_item, per_char)
        return _paid(fn(a, b))

    return checked2


# Functions that walk their arguments all the way down (compare, copy, stringify each element):
# they pay for every element a walk visits, a shared sub-list once per time it is reached
# (`{{$l = list $l $l}}` twenty times is a million elements in 21 lists).
DEEP = frozenset({"has", "mustHas", "without", "mustWithout", "deepEqual", "sortAlpha", "toStrings",
                  "uniq", "mustUniq", "deepCopy", "mustDeepCopy", "compact", "mustCompact"})


def deep_count(v: Any, cap: int) -> int:
    """The elements a full walk of v visits, counted up to cap + 1 (a cycle counts as cap + 1).

    Shared sub-lists are counted each time they are reached but walked once here (memoized by
    identity), so this costs the number of distinct lists, not the size it reports."""
    if not isinstance(v, _SIZED_TYPES):
        return 1
    memo: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Any, bool]] = [(v, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = node.values() if isinstance(node, dict) else node
        if done:
            active.discard(key)
            n = 1
            for c in children:
                n += memo[id(c)] if isinstance(c, _SIZED_TYPES) else 1
                if n > cap:
                    n = cap + 1
                    break
            memo[key] = n
            continue
        if key in memo:
            continue
        if key in active:
            return cap + 1
        active.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if isinstance(c, _SIZED_TYPES) and id(c) not in memo)
    return memo[id(v)]


def _deep_guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    def checked(*args: Any) -> Any:
        for a in args:
            if type(a) is str:
                if len(a) >= CHARS_PER_STEP:
                    _charge_steps(len(a) // CHARS_PER_STEP)
            elif isinstance(a, _SIZED_TYPES):
                b = _budget()
                _charge_steps(deep_count(a, max(b.steps, 0) + 1))
        return _paid(fn(*args))

    return checked


def _pay_arg(a: Any, per_item: int, per_char: int) -> None:
    if type(a) is str:
        _charge_steps(len(a) // per_char)
    elif isinstance(a, _SIZED_TYPES) and len(a) >= per_item:
        _charge_steps(len(a) // per_item)


def _paid(r: Any) -> Any:
    """A function's result, paid for if it is a big string or list."""
    if type(r) is str:
        if len(r) >= CHARS_PER_STEP:
            charge_string(len(r))
    elif isinstance(r, _SIZED_TYPES) and len(r) >= ITEMS_PER_STEP:
        charge_items(len(r))
    return r


_NEVER = 1 << 62
_SIZED_TYPES = (list, tuple, dict)


def _check_printed(args: tuple[Any, ...]) -> None:
    limit = _budget().max_string
    size = items = 0
    for a in args:
        n, k = _printed_size(a, limit)
        size += n
        items += k
        if size > limit:
            raise string_too_long(size, limit)
    if items >= ITEMS_PER_STEP:
        _charge_steps(items // 4)  # formatting is Python work per element


def _printed_size(v: Any, limit: int) -> tuple[int, int]:
    """About how long `v` prints (at least that long), and its elements; stops past `limit`."""
    if isinstance(v, str):
        return len(v), 1
    if isinstance(v, (list, tuple, dict)):
        size = 2
        items = 1
        for x in v.items() if isinstance(v, dict) else v:
            n, k = _printed_size(x, limit)
            size += 1 + n
            items += k
            if size > limit:
                break
        return size, items
    return 1, 1  # numbers, booleans, nil


# Functions that print their arguments (see `guarded`).
PRINTERS = frozenset(
    {"print", "printf", "println", "html", "js", "urlquery", "cat", "quote", "squote", "toString",
     "join", "toJson", "mustToJson", "toPrettyJson", "mustToPrettyJson", "toRawJson", "mustToRawJson"}
)

# Functions whose result may be big (all guarded functions' results are checked and paid for).
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

# Functions that pay for their arguments' size: (list/map elements per step, string
# characters per step). C-level copies and scans are cheap per element; Python loops are not.
# String functions are often Python loops per character (non-ASCII case mapping, word splits).
_COPY, _LOOP, _SCAN, _REGEX, _MATCHES = (16, _NEVER), (1, _NEVER), (_NEVER, 16), (_NEVER, 256), (_NEVER, 2)
SCANS: dict[str, tuple[int, int]] = {
    **dict.fromkeys(
        ["first", "mustFirst", "rest", "mustRest", "last", "mustLast", "initial", "mustInitial",
         "reverse", "mustReverse", "slice", "mustSlice", "chunk", "mustChunk", "concat", "append",
         "push", "mustAppend", "mustPush", "prepend", "mustPrepend"],
        _COPY,
    ),
    **dict.fromkeys(
        ["has", "mustHas", "without", "mustWithout", "deepEqual", "sortAlpha", "toStrings",
         "compact", "mustCompact", "join", "pluck", "keys", "values", "pick", "omit", "merge",
         "mustMerge", "mergeOverwrite", "mustMergeOverwrite", "deepCopy", "mustDeepCopy", "dig",
         "typeIsLike"],
        _LOOP,
    ),
    **dict.fromkeys(
        ["contains", "upper", "lower", "title", "untitle", "swapcase", "trim", "trimAll",
         "trimall", "trimPrefix", "trimSuffix", "replace", "split", "splitn", "splitList",
         "nospace", "initials", "wrap", "wrapWith", "abbrev", "abbrevboth", "b64enc", "b64dec",
         "b32enc", "b32dec", "sha1sum", "sha256sum", "sha512sum", "adler32sum", "snakecase",
         "camelcase", "kebabcase", "shuffle", "indent", "nindent", "quote", "squote", "cat",
         "fromJson", "mustFromJson", "regexQuoteMeta", "substr", "trunc"],
        _SCAN,
    ),
    **dict.fromkeys(["regexMatch", "mustRegexMatch", "regexFind", "mustRegexFind"], _REGEX),
    # a Python step per match, and there can be one per character
    **dict.fromkeys(
        ["regexFindAll", "mustRegexFindAll", "regexReplaceAll", "mustRegexReplaceAll",
         "regexReplaceAllLiteral", "mustRegexReplaceAllLiteral", "regexSplit", "mustRegexSplit"],
        _MATCHES,
    ),
}

# Functions that read the running execution's budget (`current`).
BUDGETED = SIZED | SCANS.keys() | DEEP | {
    "repeat", "uniq", "mustUniq", "replace", "indent", "nindent", "until", "untilStep", "seq",
    "randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes",
}

# Functions the executor wraps with `guarded`.
GUARDED = SIZED | SCANS.keys() | DEEP
