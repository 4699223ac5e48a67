"""Go regexp matching rules on top of the shared RE2 translator (nfd.rules.goregex).

Translation lives in nfd.rules.goregex (also used by rule expressions); this module adds what
Sprig needs from Go's regexp API: FindAll's handling of empty matches, ReplaceAllString's `$1`/
`${name}` expansion and empty-match rule, and Split.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ..goregex import GoRegexError
from ..goregex import compile_go as _shared_compile
from .errors import FuncError


class RegexError(FuncError):
    pass


@lru_cache(maxsize=1024)
def compile_go(pat: str) -> Any:
    """Compile a Go regexp with the project's shared RE2→`re` translator.

    Patterns that repeat a group containing a repetition or alternation (`(a+)+$`) can take
    exponential time on a backtracking engine; those run on RE2 itself (google-re2, installed
    with cel-python) when available, like Go. Either object offers the `re` API used here.
    """
    try:
        rx = _shared_compile(pat)
    except GoRegexError as e:
        raise RegexError(str(e)) from None
    except RecursionError:
        raise RegexError(f"error parsing regexp: expression nests too deeply: `{pat}`") from None
    # RE2 itself for patterns `re` would run differently: exponential backtracking shapes, and
    # case-insensitive matching of non-ASCII text (the `re` path folds ASCII only).
    if nested_repetition(pat) or (not pat.isascii() and re.search(r"\(\?[a-zA-Z]*i", pat)):
        linear = _re2_compile(pat)
        if linear is not None:
            return linear
    return rx


def nested_repetition(pat: str) -> bool:
    """Is a quantifier applied to a group that itself contains a quantifier or `|`?"""
    groups: list[bool] = []  # per open group: contains a quantifier or alternation
    last_group_risky = False
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        risky_before = last_group_risky
        last_group_risky = False
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _skip_class(pat, i)
            continue
        if c == "(":
            groups.append(False)
        elif c == ")":
            inner = groups.pop() if groups else False
            if inner and groups:
                groups[-1] = True
            last_group_risky = inner
        elif c in "*+?{":
            if risky_before:
                return True
            if groups:
                groups[-1] = True
        elif c == "|" and groups:
            groups[-1] = True
        i += 1
    return False


def _skip_class(pat: str, i: int) -> int:
    j = i + 1
    if pat[j : j + 1] == "^":
        j += 1
    if pat[j : j + 1] == "]":
        j += 1
    while j < len(pat) and pat[j] != "]":
        j += 2 if pat[j] == "\\" else 1
    return j + 1


def _re2_compile(pat: str) -> Any:
    try:
        import re2  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    opts = re2.Options()
    opts.log_errors = False
    try:
        return re2.compile(pat, opts)
    except Exception:
        return None


def find_all(rx: Any, s: str, n: int) -> list[Any]:
    """Go's FindAll: non-overlapping; an empty match right after a previous match is dropped."""
    if n == 0:
        return []
    out: list[Any] = []
    prev_end = -1
    for m in rx.finditer(s):
        if m.start() == m.end() and m.start() == prev_end:
            continue
        out.append(m)
        prev_end = m.end()
        if 0 < n <= len(out):
            break
    return out


def _expand_parts(rx: Any, template: str) -> list[Any]:
    """Parse a Go Expand template ($1, ${1}, $name, ${name}, $$) into literals and group refs."""
    parts: list[Any] = []
    i = 0
    n = len(template)
    lit: list[str] = []
    while i < n:
        c = template[i]
        if c != "$" or i + 1 >= n:
            lit.append(c)
            i += 1
            continue
        if template[i + 1] == "$":
            lit.append("$")
            i += 2
            continue
        brace = template[i + 1] == "{"
        j = i + 2 if brace else i + 1
        k = j
        while k < n and (template[k].isalnum() or template[k] == "_") and template[k].isascii():
            k += 1
        name = template[j:k]
        if not name or (brace and (k >= n or template[k] != "}")):
            lit.append(c)  # malformed: the $ is literal
            i += 1
            continue
        i = k + 1 if brace else k
        if lit:
            parts.append("".join(lit))
            lit = []
        if name.isdigit():
            idx = int(name)
            parts.append(idx if idx <= rx.groups else None)
        else:
            parts.append(rx.groupindex.get(name))
    if lit:
        parts.append("".join(lit))
    return parts


def replace_all(rx: Any, s: str, repl: str, *, literal: bool) -> str:
    parts = [repl] if literal else _expand_parts(rx, repl)
    out: list[str] = []
    last = 0
    for m in rx.finditer(s):
        a, b = m.span()
        out.append(s[last:a])
        if b > last or a == 0:
            for p in parts:
                if isinstance(p, str):
                    out.append(p)
                elif isinstance(p, int):
                    out.append(m.group(p) or "")
        elif a == b:
            pass
        last = b
    out.append(s[last:])
    return "".join(out)


def split(rx: Any, s: str, n: int) -> list[str]:
    if n == 0:
        return []
    if rx.pattern and s == "":
        return [""]
    matches = find_all(rx, s, n)
    out: list[str] = []
    beg = end = 0
    for m in matches:
        if n > 0 and len(out) == n - 1:
            break
        end = m.start()
        if m.end() != 0:
            out.append(s[beg:end])
        beg = m.end()
    if end != len(s):
        out.append(s[beg:])
    return out
