"""Go's regexp calls over the shared Go regexp on RE2: Find, FindAll, ReplaceAll, Split.

FindAll, ReplaceAllString (``$1``/``${name}`` expansion) and Split follow Go's loops, on the
UTF-8 bytes as Go runs them: an empty match right after a previous match is dropped, and the
search moves on by one character after an empty match.
"""

from __future__ import annotations

from collections.abc import Callable

from .regexp import GoRegexp, rune_width, utf8


def all_matches(rx: GoRegexp, b: bytes, n: int) -> list[list[int]]:
    """Go's allMatches: submatch index lists of up to n (all when n < 0) successive matches."""
    out: list[list[int]] = []
    if n == 0:
        return out
    pos, end, prev_end = 0, len(b), -1
    while (n < 0 or len(out) < n) and pos <= end:
        m = rx.find_submatch_index(b, pos)
        if m is None:
            break
        accept = True
        if m[1] == pos:  # an empty match
            if m[0] == prev_end:
                accept = False  # not right after the previous match
            pos += rune_width(b, pos) or 1
        else:
            pos = m[1]
        prev_end = m[1]
        if accept:
            out.append(m)
    return out


def find(rx: GoRegexp, s: str) -> str:
    b = utf8(s)
    m = rx.find_submatch_index(b)
    return b[m[0] : m[1]].decode() if m else ""


def find_all(rx: GoRegexp, s: str, n: int) -> list[str]:
    b = utf8(s)
    return [b[m[0] : m[1]].decode() for m in all_matches(rx, b, n)]


def _expand_parts(rx: GoRegexp, template: str) -> list[bytes | int | str | None]:
    """Parse a Go Expand template ($1, ${1}, $name, ${name}, $$): literal bytes, a group number,
    a group name, or None for a group that does not exist."""
    parts: list[bytes | int | str | None] = []
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
            parts.append("".join(lit).encode())
            lit = []
        if name.isdigit():
            idx = int(name)
            parts.append(idx if idx <= rx.num_subexp else None)
        else:
            parts.append(name)
    if lit:
        parts.append("".join(lit).encode())
    return parts


def _group(rx: GoRegexp, b: bytes, m: list[int], ref: int | str) -> bytes:
    """Group ref's text in match m; for a name, the first group of it that took part (as Go)."""
    if isinstance(ref, int):
        a, z = m[2 * ref], m[2 * ref + 1]
        return b[a:z] if a >= 0 else b""
    for i, name in enumerate(rx.subexp_names):
        if name == ref and m[2 * i] >= 0:
            return b[m[2 * i] : m[2 * i + 1]]
    return b""


def replace_all(
    rx: GoRegexp,
    s: str,
    repl: str,
    *,
    literal: bool,
    limit: int | None = None,
    too_long: Callable[[int, int], Exception] | None = None,
) -> str:
    """Go's ReplaceAllString / ReplaceAllLiteralString.

    Expansions can multiply the text (``$0$0$0...``): past ``limit`` bytes the exception made
    by ``too_long(size, limit)`` is raised (a ValueError when none is given)."""
    b = utf8(s)
    parts = [repl.encode()] if literal else _expand_parts(rx, repl)
    out: list[bytes] = []
    size = 0
    last_end, search = 0, 0
    while search <= len(b):
        m = rx.find_submatch_index(b, search)
        if m is None:
            break
        out.append(b[last_end : m[0]])
        size += m[0] - last_end
        if m[1] > last_end or m[0] == 0:
            for p in parts:
                if p is None:
                    continue
                piece = p if isinstance(p, bytes) else _group(rx, b, m, p)
                out.append(piece)
                size += len(piece)
            if limit is not None and size > limit:
                if too_long is not None:
                    raise too_long(size, limit)
                raise ValueError(f"replacement is {size} bytes, over the limit of {limit}")
        last_end = m[1]
        width = rune_width(b, search)
        if search + width > m[1]:
            search += width
        elif search + 1 > m[1]:
            search += 1  # only at the end of the input
        else:
            search = m[1]
    out.append(b[last_end:])
    return b"".join(out).decode()


def split(rx: GoRegexp, s: str, n: int) -> list[str]:
    """Go's (*Regexp).Split."""
    if n == 0:
        return []
    if rx.pattern and s == "":
        return [""]
    b = utf8(s)
    matches = all_matches(rx, b, n)
    out: list[str] = []
    beg = end = 0
    for m in matches:
        if n > 0 and len(out) == n - 1:
            break
        end = m[0]
        if m[1] != 0:
            out.append(b[beg:end].decode())
        beg = m[1]
    if end != len(b):
        out.append(b[beg:].decode())
    return out
