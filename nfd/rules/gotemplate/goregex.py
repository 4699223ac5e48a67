"""Go regexp matching rules on top of the shared RE2 translator (nfd.rules.goregex).

Translation lives in nfd.rules.goregex (also used by rule expressions); this module adds what
Sprig needs from Go's regexp API: FindAll's handling of empty matches, ReplaceAllString's `$1`/
`${name}` expansion and empty-match rule, and Split.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ..goregex import GoRegexError, re2_compile
from ..goregex import compile_go as _shared_compile
from .budget import string_limit, string_too_long
from .errors import FuncError


class RegexError(FuncError):
    pass


@lru_cache(maxsize=1024)
def compile_go(pat: str) -> Any:
    """Compile a Go regexp with the project's shared translator (nfd.rules.goregex).

    That already runs nested repetitions (exponential on a backtracking engine) on RE2; here
    case-insensitive non-ASCII patterns go there too, since the `re` path folds ASCII only.
    Either object offers the `re` API used here.
    """
    try:
        rx = _shared_compile(pat)
    except GoRegexError as e:
        raise RegexError(str(e)) from None
    except RecursionError:
        raise RegexError(f"error parsing regexp: expression nests too deeply: `{pat}`") from None
    if not pat.isascii() and re.search(r"\(\?[a-zA-Z]*i", pat):
        linear = re2_compile(pat)
        if linear is not None:
            return linear
    return rx


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
    # Expansions can multiply the text (`$0$0$0...`); the size is checked as it grows.
    size = len(s)
    limit = string_limit()
    for m in rx.finditer(s):
        a, b = m.span()
        out.append(s[last:a])
        if b > last or a == 0:
            for p in parts:
                if isinstance(p, str):
                    out.append(p)
                    size += len(p)
                elif isinstance(p, int):
                    g = m.group(p) or ""
                    out.append(g)
                    size += len(g)
            if size > limit:
                raise string_too_long(size, limit)
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
