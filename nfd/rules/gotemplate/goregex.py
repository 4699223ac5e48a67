"""Go RE2 regular expressions on Python's `re`: a syntax translator plus Go's match/replace rules.

Handles the RE2 forms Python spells differently (`\\z`, `(?<name>`, POSIX classes, `\\Q..\\E`,
`$` = end of text unless (?m)), and rejects Perl-only syntax RE2 refuses (look-around,
backreferences), so a pattern errors here when it errors in Go.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from .errors import FuncError

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


class RegexError(FuncError):
    pass


def _err(code: str, arg: str) -> RegexError:
    return RegexError(f"error parsing regexp: {code}: `{arg}`")


def translate(pat: str) -> tuple[str, int]:
    """RE2 pattern → (Python pattern, flags)."""
    out: list[str] = []
    i = 0
    n = len(pat)
    multiline = False
    m = re.match(r"\(\?([imsU]+)\)", pat)
    if m and "m" in m.group(1):
        multiline = True
    depth = 0
    while i < n:
        c = pat[i]
        if c == "\\":
            if i + 1 >= n:
                raise _err("trailing backslash at end of expression", "")
            d = pat[i + 1]
            if d == "z":
                out.append("\\Z")
                i += 2
                continue
            if d == "Z":
                raise _err("invalid escape sequence", "\\Z")
            if d == "Q":
                end = pat.find("\\E", i + 2)
                lit = pat[i + 2 :] if end < 0 else pat[i + 2 : end]
                out.append(re.escape(lit))
                i = n if end < 0 else end + 2
                continue
            if d.isdigit() and d != "0":
                raise _err("invalid escape sequence", "\\" + d)
            if d in "pP":
                raise _err("invalid character class range", pat[i : i + 3])
            out.append(pat[i : i + 2])
            i += 2
            continue
        if c == "[":
            j, cls = _char_class(pat, i)
            out.append(cls)
            i = j
            continue
        if c == "(":
            depth += 1
            if pat.startswith("(?", i):
                rest = pat[i + 2 : i + 4]
                if rest[:1] in ("=", "!") or rest in ("<=", "<!"):
                    raise _err("invalid or unsupported Perl syntax", pat[i : i + 3 + (1 if rest[:1] == "<" else 0)])
                if rest[:1] == "<":
                    out.append("(?P<")
                    i += 3
                    continue
                if re.match(r"\(\?[imsU-]*U", pat[i:]):
                    raise _err("invalid or unsupported Perl syntax", "(?U")
            out.append("(")
            i += 1
            continue
        if c == ")":
            depth -= 1
        if c == "$" and not multiline:
            out.append("\\Z")
            i += 1
            continue
        out.append(c)
        i += 1
    # RE2's \d \w \s \b are ASCII-only.
    return "".join(out), re.ASCII


def _char_class(pat: str, i: int) -> tuple[int, str]:
    """Copy a [...] class starting at pat[i], expanding [:name:] POSIX classes."""
    n = len(pat)
    j = i + 1
    out = ["["]
    if j < n and pat[j] == "^":
        out.append("^")
        j += 1
    first = True
    while j < n:
        c = pat[j]
        if c == "]" and not first:
            out.append("]")
            return j + 1, "".join(out)
        first = False
        if c == "[" and pat.startswith("[:", j):
            end = pat.find(":]", j + 2)
            if end > 0:
                name = pat[j + 2 : end]
                neg = name.startswith("^")
                key = name[1:] if neg else name
                if key not in _POSIX:
                    raise _err("invalid character class range", pat[j : end + 2])
                if neg:
                    raise _err("invalid character class range", pat[j : end + 2])
                out.append(_POSIX[key])
                j = end + 2
                continue
        if c == "[":
            out.append("\\[")
            j += 1
            continue
        if c == "\\" and j + 1 < n:
            if pat[j + 1] in "pP":
                raise _err("invalid character class range", pat[j : j + 3])
            out.append(pat[j : j + 2])
            j += 2
            continue
        out.append(c)
        j += 1
    raise _err("missing closing ]", pat[i:])


@lru_cache(maxsize=512)
def compile_go(pat: str) -> re.Pattern[str]:
    py, flags = translate(pat)
    try:
        return re.compile(py, flags)
    except re.error as e:
        raise RegexError(f"error parsing regexp: {e.msg}: `{pat}`") from None
    except RecursionError:
        raise RegexError(f"error parsing regexp: expression nests too deeply: `{pat}`") from None


def find_all(rx: re.Pattern[str], s: str, n: int) -> list[re.Match[str]]:
    """Go's FindAll: non-overlapping; an empty match right after a previous match is dropped."""
    if n == 0:
        return []
    out: list[re.Match[str]] = []
    prev_end = -1
    for m in rx.finditer(s):
        if m.start() == m.end() and m.start() == prev_end:
            continue
        out.append(m)
        prev_end = m.end()
        if 0 < n <= len(out):
            break
    return out


def _expand_parts(rx: re.Pattern[str], template: str) -> list[Any]:
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


def replace_all(rx: re.Pattern[str], s: str, repl: str, *, literal: bool) -> str:
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


def split(rx: re.Pattern[str], s: str, n: int) -> list[str]:
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
