"""Go RE2 regular expressions run on Python's ``re``.

Rules (``InRegexp``) and the master's ``labelWhiteList`` are Go regexps. The two dialects agree
on most syntax but not all of it, so a pattern is translated once, at compile time:

- ``$`` without ``(?m)`` is end of text in Go (``\\z``); Python's ``$`` also matches before a
  final newline, so it becomes ``\\Z``. Go's ``\\z`` becomes ``\\Z``.
- ``\\d \\w \\s \\b`` are ASCII-only in Go (patterns are compiled with ``re.ASCII``; ``\\s`` is
  spelled out because Go's excludes ``\\v``).
- ``(?flags)`` in mid-pattern (Python 3.11 rejects it) becomes a scoped ``(?flags:...)`` that runs
  to the end of the enclosing group, reopened after each ``|``. ``(?U)`` swaps greediness.
- ``(?<name>...)``, ``\\Q...\\E``, ``\\x{10FFFF}``, octal escapes, ``[[:alpha:]]`` classes, and a
  ``{`` that is not a repeat (``a{,3}`` is literal in Go) are rewritten.
- Syntax Go rejects is rejected even where Python would accept it: lookarounds, backreferences,
  ``(?#...)``, stacked repeats (``a**``, possessive ``a*+``), repeat counts over 1000, ``\\Z``.

Unicode classes (``\\pL``, ``\\p{Greek}``, ``\\PN``) have no ``re`` spelling, and nested
repetitions (``(a+)+$``) backtrack exponentially on ``re``: such patterns run on RE2 itself
(google-re2, installed with cel-python), Go's dialect and linear time. Case folding under ``(?i)``
is ASCII-only on the ``re`` path. Negated classes inside brackets (``[[:^alpha:]]``, ``[\\S]``)
are spelled out as explicit complement ranges.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any


class GoRegexError(ValueError):
    """The pattern is not a valid Go regexp (or uses the few features we do not translate)."""


_POSIX = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_PERL_CLASS = {"d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\f\\r "}
_W = "[0-9A-Za-z_]"
_NOT_BOUNDARY = f"(?:(?<={_W})(?={_W})|(?<!{_W})(?!{_W}))"
_SIMPLE_ESC = {"a": "\\a", "f": "\\f", "t": "\\t", "n": "\\n", "r": "\\r", "v": "\\v"}
_REPEAT = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")
_NAME = re.compile(r"[A-Za-z0-9_]+")
_FLAGS = re.compile(r"\(\?(-?[imsU]*|[imsU]+-[imsU]*)(\)|:)")
_MAX_REPEAT = 1000


_POSIX_RANGES = {
    "alnum": [(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)],
    "alpha": [(0x41, 0x5A), (0x61, 0x7A)],
    "ascii": [(0x00, 0x7F)],
    "blank": [(0x09, 0x09), (0x20, 0x20)],
    "cntrl": [(0x00, 0x1F), (0x7F, 0x7F)],
    "digit": [(0x30, 0x39)],
    "graph": [(0x21, 0x7E)],
    "lower": [(0x61, 0x7A)],
    "print": [(0x20, 0x7E)],
    "punct": [(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)],
    "space": [(0x09, 0x0D), (0x20, 0x20)],
    "upper": [(0x41, 0x5A)],
    "word": [(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A), (0x5F, 0x5F)],
    "xdigit": [(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)],
}
_PERL_RANGES = {
    "d": [(0x30, 0x39)],
    "w": _POSIX_RANGES["word"],
    "s": [(0x09, 0x0A), (0x0C, 0x0D), (0x20, 0x20)],
}


def _negated(ranges: list[tuple[int, int]]) -> str:
    """Class items for every code point outside ``ranges`` (Python cannot nest a negation)."""
    out = []
    nxt = 0
    for lo, hi in sorted(ranges):
        if lo > nxt:
            out.append(f"{_class_char(chr(nxt))}-{_class_char(chr(lo - 1))}")
        nxt = max(nxt, hi + 1)
    if nxt <= 0x10FFFF:
        out.append(f"{_class_char(chr(nxt))}-{_class_char(chr(0x10FFFF))}")
    return "".join(out)


def _class_char(c: str) -> str:
    if c in "\\]^-[&~|":
        return "\\" + c
    if c == "\n":
        return "\\n"
    return c


def _lit(c: str) -> str:
    return re.escape(c)


class _Group:
    __slots__ = ("flags", "opened", "saved", "start")

    def __init__(self, flags: set[str], saved: set[str], start: int = 0) -> None:
        self.flags = flags  # flags in effect right now inside this group
        self.opened: list[str] = []  # scoped flag groups opened by mid-group (?flags)
        self.saved = saved  # flags to restore when this group closes
        self.start = start  # index in the output where the group's opener is


def translate(pattern: str) -> str:
    """Python ``re`` source equivalent to the Go regexp ``pattern`` (compile with re.ASCII)."""
    out: list[str] = []
    stack: list[_Group] = [_Group(set(), set())]
    i, n = 0, len(pattern)
    can_repeat = False  # an atom precedes (a repeat is allowed)
    last_repeat = False  # the previous item was a repeat (another one is an error)

    def err(msg: str, frag: str) -> GoRegexError:
        return GoRegexError(f"error parsing regexp: {msg}: `{frag}`")

    def escape_at(j: int, in_class: bool) -> tuple[str, int, bool]:
        """Translate the escape at pattern[j] == '\\'; returns (text, next index, is_class)."""
        if j + 1 >= n:
            raise err("trailing backslash at end of expression", "")
        c = pattern[j + 1]
        if c in _SIMPLE_ESC:
            return _SIMPLE_ESC[c], j + 2, False
        if c in "dws":
            body = _PERL_CLASS[c]
            return (body if in_class else f"[{body}]"), j + 2, True
        if c in "DWS":
            if in_class:
                return _negated(_PERL_RANGES[c.lower()]), j + 2, True
            return f"[^{_PERL_CLASS[c.lower()]}]", j + 2, True
        if c in "pP":
            raise err("Unicode character classes are not supported", pattern[j : j + 3])
        if c == "x":
            if j + 2 < n and pattern[j + 2] == "{":
                end = pattern.find("}", j + 3)
                hexs = pattern[j + 3 : end] if end > 0 else ""
                if end < 0 or not hexs or any(h not in "0123456789abcdefABCDEF" for h in hexs):
                    raise err("invalid escape sequence", pattern[j : (end + 1 if end > 0 else n)])
                cp = int(hexs, 16)
                if cp > 0x10FFFF:
                    raise err("invalid escape sequence", pattern[j : end + 1])
                ch = chr(cp)
                return (_class_char(ch) if in_class else _lit(ch)), end + 1, False
            hexs = pattern[j + 2 : j + 4]
            if len(hexs) != 2 or any(h not in "0123456789abcdefABCDEF" for h in hexs):
                raise err("invalid escape sequence", pattern[j : j + 4])
            ch = chr(int(hexs, 16))
            return (_class_char(ch) if in_class else _lit(ch)), j + 4, False
        if c in "01234567":
            k = j + 2
            if c != "0" and (k >= n or pattern[k] not in "01234567"):
                raise err("invalid escape sequence", pattern[j : j + 2])
            digits = c
            while k < n and len(digits) < 3 and pattern[k] in "01234567":
                digits += pattern[k]
                k += 1
            ch = chr(int(digits, 8))
            return (_class_char(ch) if in_class else _lit(ch)), k, False
        if not in_class:
            if c == "A":
                return "(?:\\A)", j + 2, False
            if c == "z":
                return "(?:\\Z)", j + 2, False
            if c == "b":
                return "(?a:\\b)", j + 2, False
            if c == "B":  # Python's \B never matches an empty string; Go's does
                return _NOT_BOUNDARY, j + 2, False
        if ord(c) < 0x80 and not c.isalnum() and c != "_":
            return (_class_char(c) if in_class else _lit(c)), j + 2, False
        raise err("invalid escape sequence", pattern[j : j + 2])

    def parse_class(j: int) -> int:
        """Translate the bracket expression starting at pattern[j] == '['."""
        start = j
        j += 1
        parts = ["["]
        if j < n and pattern[j] == "^":
            parts.append("^")
            j += 1
        first = True
        while True:
            if j >= n:
                raise err("missing closing ]", pattern[start:])
            c = pattern[j]
            if c == "]" and not first:
                j += 1
                break
            first = False
            if c == "[" and pattern.startswith("[:", j):
                end = pattern.find(":]", j + 2)
                if end > 0:
                    name = pattern[j + 2 : end]
                    neg = name.startswith("^")
                    if neg:
                        name = name[1:]
                    if name not in _POSIX:
                        raise err("invalid character class range", pattern[j : end + 2])
                    parts.append(_negated(_POSIX_RANGES[name]) if neg else _POSIX[name])
                    j = end + 2
                    continue
            # one element, possibly the start of a range
            if c == "\\":
                lo_txt, j2, is_cls = escape_at(j, True)
                lo = None if is_cls else _unescape_class(lo_txt)
            else:
                lo_txt, j2, is_cls, lo = _class_char(c), j + 1, False, c
            if lo is not None and j2 + 1 < n and pattern[j2] == "-" and pattern[j2 + 1] != "]":
                k = j2 + 1
                if pattern[k] == "\\":
                    hi_txt, k2, hi_cls = escape_at(k, True)
                    if hi_cls:
                        raise err("invalid character class range", pattern[j:k2])
                    hi = _unescape_class(hi_txt)
                else:
                    hi_txt, k2, hi = _class_char(pattern[k]), k + 1, pattern[k]
                if hi < lo:
                    raise err("invalid character class range", pattern[j:k2])
                parts.append(f"{lo_txt}-{hi_txt}")
                j = k2
                continue
            parts.append(lo_txt)
            j = j2
        parts.append("]")
        out.append("".join(parts))
        return j

    # The last atom is out[atom_start:atom_end]; a repeat is placed right after it, before any
    # mid-group flag openers emitted since (Go applies "a(?i)*" to the "a").
    atom_start = atom_end = 0
    atom_quantified = False

    def emit_atom(tokens: list[str]) -> None:
        nonlocal atom_start, atom_end, atom_quantified, can_repeat, last_repeat
        atom_start = len(out)
        out.extend(tokens)
        atom_end = len(out)
        atom_quantified = False
        can_repeat, last_repeat = True, False

    while i < n:
        c = pattern[i]
        top = stack[-1]
        if c == "\\":
            if pattern.startswith("\\Q", i):
                end = pattern.find("\\E", i + 2)
                lit = pattern[i + 2 : end if end >= 0 else n]
                i = end + 2 if end >= 0 else n
                for ch in lit:  # one atom per character: a repeat applies to the last one
                    emit_atom([_lit(ch)])
                continue
            txt, i, _ = escape_at(i, False)
            emit_atom([txt])
            continue
        if c == "[":
            mark = len(out)
            i = parse_class(i)
            emit_atom([out.pop()] if len(out) > mark else [])
            continue
        if c == "(":
            if pattern.startswith("(?", i):
                fm = _FLAGS.match(pattern, i)
                if pattern.startswith("(?:", i):
                    stack.append(_Group(set(top.flags), set(top.flags), len(out)))
                    out.append("(?:")
                    i += 3
                elif pattern.startswith("(?P<", i) or pattern.startswith("(?<", i):
                    j = i + (4 if pattern[i + 2] == "P" else 3)
                    end = pattern.find(">", j)
                    name = pattern[j:end] if end > 0 else ""
                    if end < 0 or not _NAME.fullmatch(name):
                        raise err("invalid named capture", pattern[i : (end + 1 if end > 0 else n)])
                    stack.append(_Group(set(top.flags), set(top.flags), len(out)))
                    out.append(f"(?P<{name}>")
                    i = end + 1
                elif fm and fm.group(1) not in ("", "-") and not fm.group(1).endswith("-"):
                    spec, kind = fm.group(1), fm.group(2)
                    on, _, off = spec.partition("-")
                    flags = (set(top.flags) | set(on)) - set(off)
                    py = _py_flags(on, off)
                    i = fm.end()
                    if kind == ":":
                        stack.append(_Group(flags, set(top.flags), len(out)))
                        out.append(f"(?{py}:" if py else "(?:")
                    else:
                        # flags for the rest of the group; the previous atom stays repeatable
                        if py:
                            out.append(f"(?{py}:")
                            top.opened.append(py)
                        top.flags = flags
                        last_repeat = False
                        continue
                else:
                    raise err("invalid or unsupported Perl syntax", pattern[i : i + 3])
            else:
                stack.append(_Group(set(top.flags), set(top.flags), len(out)))
                out.append("(")
                i += 1
            can_repeat, last_repeat = False, False
            continue
        if c == ")":
            if len(stack) == 1:
                raise err("unexpected )", pattern)
            out.append(")" * len(top.opened))
            out.append(")")
            stack.pop()
            atom_start, atom_end, atom_quantified = top.start, len(out), False
            can_repeat, last_repeat = True, False
            i += 1
            continue
        if c == "|":
            out.append(")" * len(top.opened))
            out.append("|")
            out.append("".join(f"(?{f}:" for f in top.opened))
            i += 1
            can_repeat, last_repeat = False, False
            continue
        if c in "*+?" or (c == "{" and _REPEAT.match(pattern, i)):
            if c == "{":
                rm = _REPEAT.match(pattern, i)
                assert rm is not None
                lo_n = int(rm.group(1))
                hi_s = rm.group(3)
                if lo_n > _MAX_REPEAT or (hi_s and (int(hi_s) > _MAX_REPEAT or int(hi_s) < lo_n)):
                    raise err("invalid repeat count", rm.group(0))
                op, i = rm.group(0), rm.end()
            else:
                op, i = c, i + 1
            if last_repeat:
                raise err("invalid nested repetition operator", op)
            if not can_repeat:
                raise err("missing argument to repetition operator", op)
            lazy = i < n and pattern[i] == "?"
            if lazy:
                i += 1
            if "U" in top.flags:
                lazy = not lazy
            atom = out[atom_start:atom_end]
            if atom_quantified:  # "a*(?i)*": repeat the repeated atom
                atom = ["(?:", *atom, ")"]
            out[atom_start:] = [*atom, op + ("?" if lazy else ""), *out[atom_end:]]
            atom_end = atom_start + len(atom) + 1
            atom_quantified = True
            last_repeat = True
            continue
        if c == "{":
            emit_atom(["\\{"])
        elif c == "$":
            emit_atom(["(?:$)" if "m" in top.flags else "(?:\\Z)"])
        elif c == "^":
            emit_atom(["(?:^)"])
        elif c == ".":
            emit_atom(["."])
        else:
            emit_atom([_lit(c)])
        i += 1
    if len(stack) != 1:
        raise err("missing closing )", pattern)
    out.append(")" * len(stack[0].opened))
    return "".join(out)


def _unescape_class(txt: str) -> str:
    """The single character a translated class item stands for."""
    if txt.startswith("\\") and len(txt) == 2:
        return {"a": "\a", "f": "\f", "t": "\t", "n": "\n", "r": "\r", "v": "\v"}.get(txt[1], txt[1])
    return txt


def _py_flags(on: str, off: str) -> str:
    on_py = "".join(f for f in on if f in "ims")
    off_py = "".join(f for f in off if f in "ims")
    return on_py + ("-" + off_py if off_py else "")


@lru_cache(maxsize=4096)
def compile_go(pattern: str) -> re.Pattern[str]:
    """Compile a Go regexp; cached by pattern like upstream. Raises GoRegexError.

    Ordinary patterns run on the fast ``re`` translation. Two kinds run on RE2 itself (Go's
    engine, google-re2 from cel-python) when it is installed: Unicode classes, which ``re``
    cannot spell, and nested repetitions (see ``nested_repetition``), which would backtrack
    exponentially on ``re``. RE2 offers the ``re`` API the callers use.
    """
    try:
        src = translate(pattern)
    except GoRegexError as e:
        if "Unicode character classes" in str(e):
            rx = re2_compile(pattern)
            if rx is not None:
                return rx  # type: ignore[no-any-return]
        raise
    try:
        compiled = re.compile(src, re.ASCII)
    except re.error as e:
        raise GoRegexError(f"error parsing regexp: {e}: `{pattern}`") from None
    if nested_repetition(pattern):
        linear = re2_compile(pattern)
        if linear is not None:
            return linear  # type: ignore[no-any-return]
    return compiled


def nested_repetition(pattern: str) -> bool:
    """Is a repeat applied to a group holding a repeat or an alternation, or to a repeat?

    That shape (``(a+)+$``, ``(a|aa)*c``, Go's legal ``a*(?i)+``) is what makes a backtracking
    engine exponential. A flags-only group ``(?i)`` is transparent, as in Go's parser.
    """
    stack: list[bool] = []  # per open group: has it seen a repeat or '|'?
    risky = False  # the item just before is a risky group or a repeat
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        risky_before, risky = risky, False
        if c == "\\":
            i += 2
        elif c == "[":
            i = _skip_class(pattern, i)
        elif c == "(":
            fm = _FLAGS.match(pattern, i)
            if fm and fm.group(2) == ")":
                risky = risky_before
                i = fm.end()
                continue
            stack.append(False)
            i += 2 if pattern.startswith("(?", i) else 1  # "(?" opens a group, not a repeat
        elif c == ")":
            inner = stack.pop() if stack else False
            risky = inner
            if inner and stack:
                stack[-1] = True
            i += 1
        elif c in "*+?" or (c == "{" and _REPEAT.match(pattern, i)):
            if risky_before:
                return True
            if stack:
                stack[-1] = True
            rm = _REPEAT.match(pattern, i) if c == "{" else None
            i = rm.end() if rm else i + 1
            if pattern.startswith("?", i):  # lazy marker, not another repeat
                i += 1
            risky = True
        else:
            if c == "|" and stack:
                stack[-1] = True
            i += 1
    return False


def _skip_class(pattern: str, i: int) -> int:
    """The index just past the bracket expression starting at pattern[i] == '['."""
    j = i + 1
    if pattern.startswith("^", j):
        j += 1
    if pattern.startswith("]", j):
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def re2_compile(pattern: str) -> Any:
    """RE2 (Go's dialect) for what ``re`` cannot spell or run safely; None if unavailable or invalid."""
    try:
        import re2  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except Exception:
        return None
