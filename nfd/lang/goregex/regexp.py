"""Go regexps (``regexp.Compile`` + ``MatchString``) on RE2, Go's own engine design: linear time.

Every Go regexp nfd evaluates (``InRegexp`` and ``matchName``, ``labelWhiteList``, CEL
``matches()``, the Sprig ``regex*`` functions) is compiled here. google-re2's C++ RE2 speaks
nearly Go's dialect; a pattern is parsed once in Go's syntax (validation, errors worded as Go
words them) and re-emitted in C++ RE2 syntax where the two differ:

- Go refuses what C++ RE2 takes: ``\\C``; group names outside ``[A-Za-z0-9_]``; nesting past
  1,000 levels; nested repeat counts whose product passes 1,000 (``(a{100}){11}``); programs
  past Go's size limit ("expression too large"). Checked here, on Go's parse-tree shape.
- Go takes what C++ RE2 refuses: Unicode class names looked up as Go 1.25+ does (case,
  spaces, ``_`` and ``-`` ignored, long category names such as ``Uppercase_Letter``, ``Cn``,
  ``Assigned``, ``LC``, ``ASCII``); Go's ``\\p{C}`` includes unassigned code points.
- Go matches rune by rune, C++ RE2 byte by byte: ``\\B`` could hold inside a multi-byte UTF-8
  character. Patterns with ``\\B`` are searched anchored behind a lazy any-character prefix, so
  every position tried is a character boundary.

The Unicode tables are C++ RE2's (close to Go 1.26's Unicode 15.0); docs/compatibility.md says
where they can differ. Text is matched as UTF-8; a lone surrogate (which Go's JSON decoding
turns into U+FFFD) is matched as U+FFFD.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_right
from functools import lru_cache
from typing import Any

import re2
from re2 import _re2


class GoRegexError(ValueError):
    """The pattern is not a valid Go regexp; the message is Go's ``regexp.Compile`` error."""


_MAX_REPEAT = 1000
_MAX_HEIGHT = 1000
_MAX_SIZE = (128 << 20) // 40  # Go's maxSize, in program instructions
_MAX_MEM = 64 << 20  # C++ RE2's memory budget per compiled pattern

_UNANCHORED = _re2.RE2.Anchor.UNANCHORED
_ANCHOR_START = _re2.RE2.Anchor.ANCHOR_START

# Go's unicode.CategoryAliases, keyed by canonical name (see _canonical).
_CATEGORY_ALIASES = {
    "Casedletter": "LC", "Closepunctuation": "Pe", "Combiningmark": "M",
    "Connectorpunctuation": "Pc", "Control": "Cc", "Currencysymbol": "Sc",
    "Dashpunctuation": "Pd", "Decimalnumber": "Nd", "Enclosingmark": "Me",
    "Finalpunctuation": "Pf", "Format": "Cf", "Initialpunctuation": "Pi", "Letter": "L",
    "Letternumber": "Nl", "Lineseparator": "Zl", "Lowercaseletter": "Ll", "Mark": "M",
    "Mathsymbol": "Sm", "Modifierletter": "Lm", "Modifiersymbol": "Sk", "Nonspacingmark": "Mn",
    "Number": "N", "Openpunctuation": "Ps", "Other": "C", "Otherletter": "Lo",
    "Othernumber": "No", "Otherpunctuation": "Po", "Othersymbol": "So",
    "Paragraphseparator": "Zp", "Privateuse": "Co", "Punctuation": "P", "Separator": "Z",
    "Spaceseparator": "Zs", "Spacingmark": "Mc", "Surrogate": "Cs", "Symbol": "S",
    "Titlecaseletter": "Lt", "Unassigned": "Cn", "Uppercaseletter": "Lu", "Cntrl": "Cc",
    "Digit": "Nd", "Punct": "P",
}
# Go's unicode.Categories keys that C++ RE2 spells the same way and means the same set.
_CATEGORIES = frozenset(
    ["L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn", "N", "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm", "So", "Z", "Zl", "Zp", "Zs", "Cc", "Cf", "Co", "Cs"]
)
# C++ RE2's categories that together cover every assigned code point (its C has no Cn).
_ASSIGNED = r"\p{L}\p{M}\p{N}\p{P}\p{S}\p{Z}"
_POSIX_NAMES = frozenset(
    ["alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space", "upper", "word", "xdigit"]
)
_HEX = "0123456789abcdefABCDEF"


def _canonical(name: str) -> str:
    """Go's canonicalName: first letter upper, the rest lower; ``_``, ``-`` and spaces dropped."""
    out = []
    first = True
    for c in name:
        if c in "_- ":
            continue
        if first:
            out.append(c.upper() if "a" <= c <= "z" else c)
            first = False
        else:
            out.append(c.lower() if "A" <= c <= "Z" else c)
    return "".join(out)


def _err(code: str, expr: str) -> GoRegexError:
    return GoRegexError(f"error parsing regexp: {code}: `{expr}`")


def _options(*, capture: bool = True) -> Any:
    o = re2.Options()
    o.log_errors = False
    o.max_mem = _MAX_MEM
    o.never_capture = not capture
    return o


_OPTS_CAPTURE = _options()
_OPTS_BOOL = _options(capture=False)


@lru_cache(maxsize=16)
def _materialized(name: str) -> tuple[tuple[int, int], ...]:
    """Code point ranges of a Go class C++ RE2 has no name for, read off C++ RE2's own tables.

    One pass of RE2 over a string holding every code point (a few hundred ms, once per
    process and name); surrogates, which UTF-8 text cannot hold, are added to the sets Go puts
    them in.
    """
    if name == "Lc":
        cls, surrogates = r"[\p{Lu}\p{Ll}\p{Lt}]", False
    elif name == "C":  # Go: Cc Cf Co Cs and unassigned
        cls, surrogates = f"[^{_ASSIGNED}]", True
    elif name == "Cn":
        cls, surrogates = f"[^{_ASSIGNED}\\p{{C}}]", False
    else:
        raise KeyError(name)
    out = list(_scan(cls))
    if surrogates:
        out.append((0xD800, 0xDFFF))
        out.sort()
    return tuple(out)


@lru_cache(maxsize=1)
def _every_code_point() -> bytes:
    """UTF-8 of every code point but the surrogates, in order (4.4 MB, built once when needed)."""
    def utf32(lo: int, hi: int) -> str:  # ten times faster than joining chr()s
        return array("I", range(lo, hi)).tobytes().decode(f"utf-32-{sys.byteorder[0]}e")

    return (utf32(0, 0xD800) + utf32(0xE000, 0x110000)).encode()


@lru_cache(maxsize=64)
def _class_set(item: str) -> tuple[tuple[int, int], ...]:
    """The code point ranges of one bracket item in C++ RE2 syntax (``\\p{L}``, ``\\P{Greek}``,
    explicit ranges), read off C++ RE2 itself: the same tables as the pattern would use."""
    return tuple(_scan(f"[{item}]"))


def _scan(cls: str) -> list[tuple[int, int]]:
    data = _every_code_point()
    rx = _re2.RE2(f"{cls}+".encode(), _OPTS_CAPTURE)
    out: list[tuple[int, int]] = []
    pos = 0
    while True:
        (a, b), = rx.Match(_UNANCHORED, data, pos, len(data))
        if a < 0:
            break
        lo = _cp_at(data, a)
        hi = _cp_at(data, b - 1 - _continuation_back(data, b - 1))
        out.append((lo, hi))
        pos = b
    return out


def _continuation_back(data: bytes, i: int) -> int:
    k = 0
    while data[i - k] & 0xC0 == 0x80:
        k += 1
    return k


def _cp_at(data: bytes, i: int) -> int:
    n = 1 if data[i] < 0x80 else 2 if data[i] < 0xE0 else 3 if data[i] < 0xF0 else 4
    return ord(data[i : i + n].decode())


def _ranges_text(ranges: tuple[tuple[int, int], ...], negate: bool) -> str:
    if negate:
        comp = []
        nxt = 0
        for lo, hi in ranges:
            if lo > nxt:
                comp.append((nxt, lo - 1))
            nxt = hi + 1
        if nxt <= 0x10FFFF:
            comp.append((nxt, 0x10FFFF))
        ranges = tuple(comp)
    return "".join(f"\\x{{{lo:x}}}" if lo == hi else f"\\x{{{lo:x}}}-\\x{{{hi:x}}}" for lo, hi in ranges)


@lru_cache(maxsize=512)
def _re2_knows(name: str) -> bool:
    return bool(_re2.RE2(f"\\p{{{name}}}".encode(), _OPTS_BOOL).ok())


def _unicode_class(name: str, negate: bool, in_class: bool) -> str | None:
    """C++ RE2 text for Go's ``\\p{name}`` (``\\P`` when negate); None if Go knows no such name.

    Inside a bracket expression the text is class items; outside, a whole atom.
    """
    canon = _canonical(name)
    if canon == "Assigned":
        canon, negate = "Cn", not negate
    if canon == "Any":
        items = "" if negate else "\\x{0}-\\x{10ffff}"
        if not in_class:
            return f"[{items}]" if items else "[^\\x{0}-\\x{10ffff}]"
        return items
    if canon == "Ascii":
        items = "\\x{0}-\\x{7f}"
        if negate:
            items = "\\x{80}-\\x{10ffff}"
        return items if in_class else f"[{items}]"
    canon = _CATEGORY_ALIASES.get(canon, canon) if canon not in _CATEGORIES else canon
    if canon == "LC":
        canon = "Lc"
    if canon in ("Lc", "C", "Cn"):
        items = _ranges_text(_materialized(canon), negate)
        if not items:
            return None if in_class else "[^\\x{0}-\\x{10ffff}]"
        return items if in_class else f"[{items}]"
    known = canon in _CATEGORIES or (
        canon[:1].isupper() and canon[1:].islower() and canon.isascii() and canon.isalpha() and _re2_knows(canon)
    )
    if not known:
        return None
    return f"\\{'P' if negate else 'p'}{{{canon}}}"


def _lit(c: str) -> str:
    """C++ RE2 text for one literal character."""
    if c.isascii() and c.isalnum():
        return c
    return f"\\x{{{ord(c):x}}}"


class _Node:
    """What Go's parser would build for one item: enough for its height, size and repeat checks."""

    __slots__ = ("cls", "height", "lit", "prod", "size", "tail")

    def __init__(self, height: int, size: int, prod: int, lit: int = 0, cls: bool = False) -> None:
        self.height = height
        self.size = size
        self.prod = prod  # largest product of nested repeat counts (Go's repeatIsValid)
        self.lit = lit  # > 0: a literal string of this many runes (Go merges adjacent literals)
        self.tail = lit  # runes of its last piece: what a repeat after it takes
        self.cls = cls  # one character or class: an alternation of such is one class in Go


class _Concat:
    """One alternative being parsed: the finished items folded, the last one kept apart."""

    __slots__ = ("count", "height", "last", "last_fold", "prod", "size")

    def __init__(self) -> None:
        self.count = 0  # nodes folded so far
        self.height = 0
        self.size = 0
        self.prod = 0
        self.last: _Node | None = None
        self.last_fold = False

    def fold_last(self) -> None:
        if self.last is not None:
            n = self.last
            self.count += 1
            self.height = max(self.height, n.height)
            self.size += n.size
            self.prod = max(self.prod, n.prod)
            self.last = None

    def push(self, node: _Node, fold: bool = False) -> None:
        last = self.last
        if node.lit and last is not None and last.lit and self.last_fold == fold:
            last.lit += node.lit  # Go merges adjacent literals into one string
            last.size += node.size
            last.tail = node.lit
            last.cls = False
            return
        self.fold_last()
        self.last = node
        self.last_fold = fold

    def node(self) -> _Node:
        if self.count == 0:
            return self.last if self.last is not None else _Node(1, 1, 0)  # empty match
        self.fold_last()
        return _Node(self.height + 1, self.size, self.prod)


class _Group:
    __slots__ = ("alts", "capture", "cur", "flags", "saved", "start")

    def __init__(self, flags: frozenset[str], saved: frozenset[str], capture: bool, start: int) -> None:
        self.flags = flags
        self.saved = saved
        self.capture = capture
        self.start = start  # index in the output of the group's opener
        self.cur = _Concat()
        self.alts: list[_Node] = []


def _flags_text(flags: frozenset[str]) -> str:
    on = "".join(f for f in "imsU" if f in flags)
    off = "".join(f for f in "imsU" if f not in flags)
    return on + ("-" + off if off else "")


class _Parsed:
    __slots__ = ("has_not_boundary", "literal", "names", "prefix", "reduced", "text")

    def __init__(self, text: str, names: list[str], has_not_boundary: bool) -> None:
        self.text = text
        self.names = names
        self.has_not_boundary = has_not_boundary
        # ("^"/"", text, "$"/""): the whole pattern is this literal, optionally anchored
        self.literal: tuple[str, str, str] | None = None
        self.prefix = ""  # every match starts the text with this
        # (C++ RE2 text over the reduced alphabet, the text's translation) or None: see _reduced
        self.reduced: tuple[str, _Reduction] | None = None


def parse(pattern: str) -> _Parsed:
    """Validate ``pattern`` as Go's regexp.Compile does and return its C++ RE2 spelling."""
    if any("\ud800" <= c <= "\udfff" for c in pattern):
        bad = next(i for i, c in enumerate(pattern) if "\ud800" <= c <= "\udfff")
        raise _err("invalid UTF-8", pattern[bad:])
    p = _Parser(pattern)
    p.run()
    parsed = _Parsed("".join(p.out), p.names, p.has_not_boundary)
    p.shape(parsed)
    if p.classes and p.plain_alphabet and p.repeats * len(p.classes) >= REDUCE_AT:
        parsed.reduced = _reduced(pattern, p.classes)
    return parsed


# Reduce the alphabet once a pattern's Unicode classes would be compiled this many times over
# (class occurrences x repeat counts): below it C++ RE2's own program is cheaper to build.
REDUCE_AT = 16
_MAX_ATOMS = 1000


class _Reduction(dict[int, int]):
    """``str.translate`` table onto the reduced alphabet: ASCII is kept, every other character
    becomes the representative of its atom (U+0080 + the atom's number); lone surrogates are
    U+FFFD first, as ``utf8`` makes them. Entries are computed on first use (at most 4,096 kept)."""

    __slots__ = ("_atoms", "_starts")

    def __init__(self, starts: list[int], atoms: list[int]) -> None:
        super().__init__()
        self._starts = starts
        self._atoms = atoms

    def __missing__(self, cp: int) -> int:
        key = cp
        if cp < 0x80:
            rep = cp
        else:
            if 0xD800 <= cp <= 0xDFFF:
                cp = 0xFFFD
            rep = 0x80 + self._atoms[bisect_right(self._starts, cp) - 1]
        if len(self) < 4096:
            self[key] = rep
        return rep


def _reduced(pattern: str, classes: list[str]) -> tuple[str, _Reduction] | None:
    """The pattern over a reduced alphabet, when nothing but its Unicode classes tells non-ASCII
    characters apart: each class becomes its ASCII part plus the representatives of the atoms
    (the non-ASCII code points no class tells apart) it holds, and the text is translated onto
    the same alphabet before matching. Go keeps a class as one instruction; C++ RE2 compiles it
    into a UTF-8 automaton (about 1,200 instructions for ``\\pL``), once per repetition: this
    makes ``^\\pL{1000}$`` compile in milliseconds instead of half a second. Match results are
    the same (the class tables are C++ RE2's own, read off RE2); match offsets are not, so only
    ``match_string`` uses it.
    """
    alphabet = _alphabet(tuple(dict.fromkeys(classes)))
    if alphabet is None:
        return None
    starts, atoms, spelled = alphabet

    def class_text(item: str, in_class: bool) -> str:
        items = spelled[item]
        if in_class:
            return items
        return f"[{items}]" if items else "[^\\x{0}-\\x{10ffff}]"

    p = _Parser(pattern)
    p.class_text = class_text
    p.run()
    return "".join(p.out), _Reduction(starts, atoms)


@lru_cache(maxsize=64)
def _alphabet(distinct: tuple[str, ...]) -> tuple[list[int], list[int], dict[str, str]] | None:
    """The atoms of these classes: (interval starts from U+0080, each interval's atom, each
    class spelled over the reduced alphabet); None past _MAX_ATOMS. Cached: rules reuse classes."""
    sets = [_class_set(item) if item else () for item in distinct]
    bounds = {0x80}
    for rs in sets:
        for lo, hi in rs:
            if hi >= 0x80:
                bounds.add(max(lo, 0x80))
                if hi < 0x10FFFF:
                    bounds.add(hi + 1)
    starts = sorted(bounds)
    # each interval's membership, one set at a time (the intervals split every set's ranges)
    member = [[False] * len(starts) for _ in sets]
    for j, rs in enumerate(sets):
        row = member[j]
        for lo, hi in rs:
            if hi < 0x80:
                continue
            k = bisect_right(starts, max(lo, 0x80)) - 1
            while k < len(starts) and starts[k] <= hi:
                row[k] = True
                k += 1
    ids: dict[tuple[bool, ...], int] = {}
    atoms = [ids.setdefault(vec, len(ids)) for vec in zip(*member, strict=True)] if sets else [0] * len(starts)
    if len(ids) > _MAX_ATOMS:
        return None
    spelled: dict[str, str] = {}
    for j, (item, rs) in enumerate(zip(distinct, sets, strict=True)):
        cps = [(lo, min(hi, 0x7F)) for lo, hi in rs if lo < 0x80]
        for c in sorted({0x80 + a for vec, a in ids.items() if vec[j]}):
            if cps and cps[-1][1] == c - 1:
                cps[-1] = (cps[-1][0], c)
            else:
                cps.append((c, c))
        spelled[item] = _ranges_text(tuple(cps), False)
    return starts, atoms, spelled


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.s = pattern
        self.out: list[str] = []
        self.names: list[str] = []
        self.has_not_boundary = False
        self.stack = [_Group(frozenset(), frozenset(), False, 0)]
        self.atom_start = self.atom_end = 0
        self.atom_flags: frozenset[str] = frozenset()
        self.atom_repeated = False  # the atom's text already ends in a repeat (Go: a*(?i)+)
        self.nodes = 0  # Go's numRegexp, roughly
        self.repeats = 1  # product of all repeat counts seen (Go starts size checks from it)
        self.last_repeat = -1  # start index of the repeat operator just parsed, or -1
        # The top level's leading items while they are "^", literal characters and "$"
        # (case-sensitive): the fast paths of GoRegexp.match_string.
        self.lead: list[str] = []
        self.lead_last = False  # the atom just parsed is lead[-1]
        self.lead_open = True  # lead is still the whole top level so far
        self.top_alt = False
        # Unicode classes (as C++ RE2 bracket items) and whether nothing else in the pattern
        # tells non-ASCII characters apart (no non-ASCII literal or range, no (?i)): then the
        # alphabet can be reduced (_reduced). class_text, on the second pass, spells a class.
        self.classes: list[str] = []
        self.plain_alphabet = True
        self.class_text: Any = None

    def lead_item(self, item: str | None) -> None:
        """Record a top-level atom: "^", "$", a character, or None for anything else."""
        top = self.stack[-1]
        if item is None or len(self.stack) > 1 or (item not in ("^", "$") and "i" in top.flags):
            self.lead_open = self.lead_last = False
            return
        if self.lead_open:
            self.lead.append(item)
            self.lead_last = True

    def shape(self, parsed: _Parsed) -> None:
        lead = self.lead
        if self.top_alt or "\ufffd" in "".join(lead):
            return
        start = 1 if lead[:1] == ["^"] else 0
        chars = []
        for item in lead[start:]:
            if item in ("^", "$"):
                break
            chars.append(item[0])
        if start:
            parsed.prefix = "".join(chars)
        if not self.lead_open:
            return
        body = lead[start:]
        end = 1 if body[-1:] == ["$"] else 0
        middle = body[: len(body) - end]
        if any(x in ("^", "$") for x in middle):
            return
        parsed.literal = ("^" if start else "", "".join(x[0] for x in middle), "$" if end else "")

    # -- items -------------------------------------------------------------------------------

    def atom(self, text: str, node: _Node, lead: str | None = None) -> None:
        top = self.stack[-1]
        self.atom_start = len(self.out)
        self.out.append(text)
        self.atom_end = len(self.out)
        self.atom_flags = top.flags
        self.atom_repeated = False
        top.cur.push(node, "i" in top.flags)
        self.check_size(node)
        self.lead_item(lead)

    def check_size(self, node: _Node) -> None:
        """Go's checkSize: sizes are checked once nodes x repeat product could pass the limit."""
        self.nodes += 1
        if self.nodes * self.repeats >= _MAX_SIZE and node.size > _MAX_SIZE:
            raise _err("expression too large", self.s)

    def literal(self, c: str) -> None:
        if c >= "\x80":
            self.plain_alphabet = False
        self.atom(_lit(c), _Node(1, 1, 1, lit=1, cls=True), c + "\0")  # not mistaken for ^ or $

    def simple(self, text: str, *, cls: bool = False) -> None:
        flags = self.stack[-1].flags
        lead = None
        if text == "^" and "m" not in flags or text == "\\A":
            lead = "^"
        elif text == "$" and "m" not in flags or text == "\\z":
            lead = "$"
        self.atom(text, _Node(1, 1, 1, cls=cls), lead)

    # -- the main loop -----------------------------------------------------------------------

    def run(self) -> None:
        s, n = self.s, len(self.s)
        i = 0
        while i < n:
            c = s[i]
            repeat_at = -1
            if c == "(":
                if s.startswith("(?", i):
                    i = self.perl_flags(i)
                else:
                    self.open_group(capture=True, name="", text="(")
                    i += 1
            elif c == "|":
                top = self.stack[-1]
                if len(self.stack) == 1:
                    self.top_alt = True
                top.alts.append(top.cur.node())
                top.cur = _Concat()
                self.out.append("|")
                i += 1
            elif c == ")":
                self.close_group()
                i += 1
            elif c == "^" or c == "$" or c == ".":
                self.simple(c, cls=c == ".")
                i += 1
            elif c == "[":
                i = self.parse_class(i)
            elif c in "*+?":
                repeat_at = i
                i = self.repeat(i, i + 1, -2, -2)
            elif c == "{":
                rep = _parse_repeat(s, i)
                if rep is None:
                    self.literal("{")
                    i += 1
                else:
                    lo, hi, end = rep
                    if lo < 0 or lo > _MAX_REPEAT or hi > _MAX_REPEAT or (hi >= 0 and lo > hi):
                        raise _err("invalid repeat count", s[i:end])
                    repeat_at = i
                    i = self.repeat(i, end, lo, hi)
            elif c == "\\":
                i = self.escape(i)
            else:
                self.literal(c)
                i += 1
            self.last_repeat = repeat_at
        top = self.stack[-1]
        if len(self.stack) != 1:
            raise _err("missing closing )", s)
        root = self.finish(top)
        self.check_size(root)
        if root.height > _MAX_HEIGHT:
            raise _err("expression nests too deeply", s)

    def finish(self, g: _Group) -> _Node:
        nodes = [*g.alts, g.cur.node()]
        if len(nodes) == 1:
            return nodes[0]
        if all(x.cls for x in nodes):
            return _Node(1, 1, 1, cls=True)  # Go merges single characters and classes into one class
        return _Node(
            max(x.height for x in nodes) + 1,
            sum(x.size for x in nodes) + len(nodes) - 1,
            max(x.prod for x in nodes),
        )

    # -- groups ------------------------------------------------------------------------------

    def open_group(self, *, capture: bool, name: str, text: str, flags: frozenset[str] | None = None) -> None:
        top = self.stack[-1]
        if capture:
            self.names.append(name)
        g = _Group(top.flags if flags is None else flags, top.flags, capture, len(self.out))
        self.stack.append(g)
        self.out.append(text)

    def close_group(self) -> None:
        if len(self.stack) == 1:
            raise _err("unexpected )", self.s)
        g = self.stack.pop()
        node = self.finish(g)
        self.out.append(")")
        top = self.stack[-1]
        top.flags = g.saved
        if g.capture:
            node = _Node(node.height + 1, node.size + 2, node.prod)
        elif node.lit:
            node = _Node(node.height, node.size, node.prod, node.lit, cls=node.cls)
            node.tail = node.lit  # a repeat after the group takes all of it
        if node.height > _MAX_HEIGHT:
            raise _err("expression nests too deeply", self.s)
        self.atom_start, self.atom_end, self.atom_flags = g.start, len(self.out), g.saved
        self.atom_repeated = False
        self.lead_item(None)
        top.cur.push(node, "i" in g.flags)
        self.check_size(node)

    def perl_flags(self, i: int) -> int:
        s, n = self.s, len(self.s)
        starts_p = n - i > 4 and s[i + 2] == "P" and s[i + 3] == "<"
        starts_name = n - i > 3 and s[i + 2] == "<"
        if starts_p or starts_name:
            body = i + (4 if starts_p else 3)
            end = s.find(">", i)
            if end < 0:
                raise _err("invalid named capture", s[i:])
            name = s[body:end]
            if not name or not all(ch == "_" or (ch.isascii() and ch.isalnum()) for ch in name):
                raise _err("invalid named capture", s[i : end + 1])
            self.open_group(capture=True, name=name, text="(")
            return end + 1
        top = self.stack[-1]
        flags = set(top.flags)
        sign = 1
        saw = False
        j = i + 2
        while j < n:
            c = s[j]
            j += 1
            if c in "imsU":
                if sign > 0:
                    flags.add(c)
                else:
                    flags.discard(c)
                saw = True
            elif c == "-":
                if sign < 0:
                    break
                sign, saw = -1, False
            elif c in ":)":
                if sign < 0 and not saw:
                    break
                new = frozenset(flags)
                if "i" in new:
                    self.plain_alphabet = False
                if c == ":":
                    self.open_group(capture=False, name="", text=f"(?{_flags_text(new)}:", flags=new)
                else:
                    if new != top.flags:
                        self.out.append(f"(?{_flags_text(new)})")
                    top.flags = new
                return j
            else:
                break
        raise _err("invalid or unsupported Perl syntax", s[i:j])

    # -- repeats -----------------------------------------------------------------------------

    def repeat(self, i: int, end: int, lo: int, hi: int) -> int:
        """The repeat operator s[i:end] ({lo,hi}; -2 for * + ?); returns the index after it."""
        s = self.s
        top = self.stack[-1]
        lazy = end < len(s) and s[end] == "?"
        after = end + 1 if lazy else end
        if self.last_repeat >= 0:
            raise _err("invalid nested repetition operator", s[self.last_repeat : after])
        cur = top.cur
        if cur.last is None:
            raise _err("missing argument to repetition operator", s[i:after])
        sub = cur.last
        if sub.lit > sub.tail:  # the repeat takes the last piece of a literal string
            tail = sub.tail
            sub.lit -= tail
            sub.size -= tail
            sub.tail = 1
            cur.fold_last()
            sub = _Node(1, tail, 1, lit=tail)
        if lo == -2:
            op = s[i]
            size = sub.size + (2 if op == "*" else 1)
            factor = 1
        else:
            if hi == -1:
                size = 2 + sub.size if lo == 0 else 1 + lo * sub.size
            else:
                size = hi * sub.size + (hi - lo)
            factor = hi if hi >= 0 else (lo if lo > 0 else 1)
            self.repeats = min(self.repeats * max(factor, 1), _MAX_SIZE)
        if hi == 0:
            prod = 0
        else:
            prod = max(sub.prod, 1) * factor
            if lo != -2 and (lo >= 2 or hi >= 2) and prod > _MAX_REPEAT:
                raise _err("invalid repeat count", s[i:after])
        node = _Node(sub.height + 1, max(size, 1), min(prod, _MAX_REPEAT + 1))
        cur.last = node
        cur.last_fold = False
        self.check_size(node)
        if node.height > _MAX_HEIGHT:
            raise _err("expression nests too deeply", self.s)
        # Go's greediness is the flags' at the operator; the text goes right after the atom
        # (before any flag group emitted since), where C++ RE2 reads the atom's flags.
        ungreedy_now = "U" in top.flags
        ungreedy_there = "U" in self.atom_flags
        if ungreedy_now != ungreedy_there:
            lazy = not lazy
        op_text = s[i:end] + ("?" if lazy else "")
        atom = self.out[self.atom_start : self.atom_end]
        if self.atom_repeated:
            atom = ["(?:", *atom, ")"]
        self.out[self.atom_start : self.atom_end] = [*atom, op_text]
        self.atom_end = self.atom_start + len(atom) + 1
        self.atom_repeated = True
        if self.lead_last:  # the repeated character is not a fixed part of the text
            self.lead.pop()
        self.lead_open = self.lead_last = False
        return after

    # -- escapes -----------------------------------------------------------------------------

    def escape(self, i: int) -> int:
        s, n = self.s, len(self.s)
        if i + 1 < n:
            c = s[i + 1]
            if c == "A":
                self.simple("\\A")
                return i + 2
            if c == "b":
                self.simple("\\b")
                return i + 2
            if c == "B":
                self.has_not_boundary = True
                self.simple("\\B")
                return i + 2
            if c == "C":
                raise _err("invalid escape sequence", "\\C")
            if c == "Q":
                end = s.find("\\E", i + 2)
                lit = s[i + 2 : end if end >= 0 else n]
                for ch in lit:
                    self.literal(ch)
                return end + 2 if end >= 0 else n
            if c == "z":
                self.simple("\\z")
                return i + 2
            if c in "pP":
                text, j = self.unicode_class(i, in_class=False)
                self.simple(text, cls=True)
                return j
            if c in "dDwWsS":
                self.simple(s[i : i + 2], cls=True)
                return i + 2
        ch, j = self.parse_escape(i)
        self.literal(ch)
        return j

    def parse_escape(self, i: int) -> tuple[str, int]:
        """Go's parseEscape for s[i] == '\\': the character and the index after it."""
        s, n = self.s, len(self.s)
        if i + 1 >= n:
            raise _err("trailing backslash at end of expression", "")
        c = s[i + 1]
        j = i + 2
        if c in "1234567" and not (j < n and "0" <= s[j] <= "7"):
            raise _err("invalid escape sequence", s[i:j])
        if c in "01234567":
            v = int(c)
            for _ in range(2):
                if j < n and "0" <= s[j] <= "7":
                    v = v * 8 + int(s[j])
                    j += 1
            return chr(v), j
        if c == "x":
            if j >= n:
                raise _err("invalid escape sequence", s[i:j])
            if s[j] == "{":
                k = j + 1
                v = 0
                nhex = 0
                while True:
                    if k >= n:
                        raise _err("invalid escape sequence", s[i:k])
                    d = s[k]
                    k += 1
                    if d == "}":
                        break
                    if d not in _HEX:
                        raise _err("invalid escape sequence", s[i:k])
                    v = v * 16 + int(d, 16)
                    if v > 0x10FFFF:
                        raise _err("invalid escape sequence", s[i:k])
                    nhex += 1
                if nhex == 0:
                    raise _err("invalid escape sequence", s[i:k])
                return chr(v), k
            x = s[j]
            y = s[j + 1] if j + 1 < n else ""
            k = min(j + 2, n)
            if x not in _HEX or not y or y not in _HEX:
                raise _err("invalid escape sequence", s[i:k])
            return chr(int(x + y, 16)), k
        simple = {"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
        if c in simple:
            return simple[c], j
        if c.isascii() and not c.isalnum():
            return c, j
        raise _err("invalid escape sequence", s[i:j])

    def unicode_class(self, i: int, *, in_class: bool) -> tuple[str, int]:
        """Go's parseUnicodeClass at s[i:] == '\\p...' or '\\P...'."""
        s, n = self.s, len(self.s)
        negate = s[i + 1] == "P"
        j = i + 2
        if j < n and s[j] == "{":
            end = s.find("}", i)
            if end < 0:
                raise _err("invalid character class range", s[i:])
            seq, name, j = s[i : end + 1], s[j + 1 : end], end + 1
        else:
            seq = s[i : j + 1]
            name = s[j : j + 1]
            j = min(j + 1, n)
        if name.startswith("^"):
            negate, name = not negate, name[1:]
        text = _unicode_class(name, negate, in_class)
        if text is None:
            raise _err("invalid character class range", seq)
        items = text if in_class else _unicode_class(name, negate, True)
        self.classes.append(items or "")
        if self.class_text is not None:
            text = self.class_text(items or "", in_class)
        return text, j

    # -- bracket expressions -----------------------------------------------------------------

    def parse_class(self, i: int) -> int:
        s, n = self.s, len(self.s)
        start = i
        j = i + 1
        items: list[str] = []
        negated = j < n and s[j] == "^"
        if negated:
            j += 1
        single: str | None = None  # the class is this one character
        count = 0
        first = True
        while j >= n or s[j] != "]" or first:
            first = False
            if j >= n:
                raise _err("missing closing ]", s[start:])
            if s.startswith("[:", j):
                end = s.find(":]", j + 2)
                if end >= 0:
                    name = s[j : end + 2]
                    bare = name[2:-2]
                    if bare.startswith("^"):
                        bare = bare[1:]
                    if bare not in _POSIX_NAMES:
                        raise _err("invalid character class range", name)
                    items.append(name)
                    count += 2
                    j = end + 2
                    continue
            if s[j] == "\\" and j + 1 < n and s[j + 1] in "pP":
                text, j = self.unicode_class(j, in_class=True)
                if text:
                    items.append(text)
                count += 2
                continue
            if s[j] == "\\" and j + 1 < n and s[j + 1] in "dDwWsS":
                items.append(s[j : j + 2])
                count += 2
                j += 2
                continue
            rng = j
            lo, j = self.class_char(j, start)
            hi = lo
            if j + 1 < n and s[j] == "-" and s[j + 1] != "]":
                hi, j = self.class_char(j + 1, start)
                if hi < lo:
                    raise _err("invalid character class range", s[rng:j])
            if hi >= "\x80":
                self.plain_alphabet = False
            items.append(_lit(lo) if lo == hi else f"{_lit(lo)}-{_lit(hi)}")
            count += 1
            single = lo if lo == hi and count == 1 else None
        j += 1
        if not items:
            text = "[^\\x{0}-\\x{10ffff}]" if not negated else "[\\x{0}-\\x{10ffff}]"
        else:
            text = "[" + ("^" if negated else "") + "".join(items) + "]"
        if single is not None and count == 1 and not negated and "i" not in self.stack[-1].flags:
            self.atom(text, _Node(1, 1, 1, lit=1, cls=True))  # Go turns [a] into the literal a
        else:
            self.simple(text, cls=True)
        return j

    def class_char(self, j: int, start: int) -> tuple[str, int]:
        s = self.s
        if j >= len(s):
            raise _err("missing closing ]", s[start:])
        if s[j] == "\\":
            return self.parse_escape(j)
        return s[j], j + 1


def _parse_repeat(s: str, i: int) -> tuple[int, int, int] | None:
    """Go's parseRepeat at s[i] == '{': (min, max, end) or None when ``{`` is a literal.

    max is -1 for ``{n,}``; min is -1 when a number is too big (an error for the caller).
    """
    n = len(s)
    j = i + 1
    lo, j = _parse_int(s, j)
    if lo is None or j >= n:
        return None
    if s[j] != ",":
        hi = lo
    else:
        j += 1
        if j >= n:
            return None
        if s[j] == "}":
            hi = -1
        else:
            got, j = _parse_int(s, j)
            if got is None:
                return None
            hi = got
            if hi < 0:
                lo = -1
    if j >= n or s[j] != "}":
        return None
    return lo, hi, j + 1


def _parse_int(s: str, j: int) -> tuple[int | None, int]:
    n = len(s)
    if j >= n or not ("0" <= s[j] <= "9"):
        return None, j
    if j + 1 < n and s[j] == "0" and "0" <= s[j + 1] <= "9":
        return None, j  # Go refuses leading zeros: the { is a literal
    k = j
    while k < n and "0" <= s[k] <= "9":
        k += 1
    digits = s[j:k]
    v = -1 if len(digits) > 9 else int(digits)  # Go gives up past 1e8: an invalid count
    return v, k


def utf8(s: str) -> bytes:
    """The UTF-8 text Go would hold for s."""
    try:
        return s.encode()
    except UnicodeEncodeError:  # lone surrogates: one U+FFFD each, as Go's JSON decoding gives
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in s).encode()


class GoRegexp:
    """A compiled Go regexp. ``match_string`` is Go's MatchString; the ``*_index`` methods work
    on UTF-8 bytes, as Go's do, and return byte offsets.

    C++ RE2 compiles a big Unicode class (``\\pL``: some 1,200 instructions) to UTF-8 byte
    automata, at about 0.4 µs an instruction, where Go's program holds one instruction. So one
    RE2 program is built at compile time, the one ``match_string`` needs (no captures), and the
    capturing one only when a ``*_index`` method first asks (CEL and template functions); a
    pattern without groups uses the same program for both.
    """

    __slots__ = (
        "_fast", "_full", "_match", "_prefix", "_shift", "_text", "_tr", "num_subexp", "pattern", "subexp_names",
    )

    def __init__(self, pattern: str) -> None:
        parsed = parse(pattern)
        text = parsed.text
        shift = 0
        if parsed.has_not_boundary:
            text = f"(?s:.)*?({text})"
            shift = 1
        bool_text, self._tr = text, None
        if parsed.reduced is not None:
            bool_text, self._tr = parsed.reduced
            if shift:
                bool_text = f"(?s:.)*?({bool_text})"
        booler = _re2.RE2(bool_text.encode(), _OPTS_BOOL)
        if not booler.ok():
            raise _re2_error(pattern, booler.error().decode(errors="replace"))
        self.pattern = pattern
        self.subexp_names = ["", *parsed.names]
        self.num_subexp = len(parsed.names)
        self._match = booler.Match
        # Without groups (and without the \B wrapper's group) both programs are the same.
        same = not parsed.names and not shift and self._tr is None
        self._full: Any = booler.Match if same else None
        self._text = text
        self._shift = shift
        self._prefix = parsed.prefix
        self._fast = _literal_test(parsed.literal) if parsed.literal else None

    def match_string(self, s: str) -> bool:
        # A literal pattern (^abc$, ^AVX512, -generic$) is a string comparison: as linear and
        # as exact as RE2, without the call; an anchored literal prefix rules out the rest.
        if self._fast is not None:
            return self._fast(s)
        if self._prefix and not s.startswith(self._prefix):
            return False
        if self._tr is not None and not s.isascii():
            s = s.translate(self._tr)
        b = utf8(s)
        anchor = _ANCHOR_START if self._shift else _UNANCHORED
        return bool(self._match(anchor, b, 0, len(b))[0][0] >= 0)

    def _capturing(self) -> Any:
        if self._full is None:
            full = _re2.RE2(self._text.encode(), _OPTS_CAPTURE)
            if not full.ok():  # the same program with captures: not expected to fail
                raise _re2_error(self.pattern, full.error().decode(errors="replace"))
            self._full = full.Match
        return self._full

    def find_submatch_index(self, b: bytes, pos: int = 0) -> list[int] | None:
        """Go's FindSubmatchIndex on b from byte pos (the text before pos is context)."""
        full = self._capturing()
        if self._shift:
            spans = full(_ANCHOR_START, b, pos, len(b))[1:]
        else:
            spans = full(_UNANCHORED, b, pos, len(b))
        if spans[0][0] < 0:
            return None
        return [x for span in spans for x in span]

    def subexp_index(self, name: str) -> int:
        for i, n in enumerate(self.subexp_names):
            if n and n == name:
                return i
        return -1

    def __repr__(self) -> str:
        return f"GoRegexp({self.pattern!r})"


def _literal_test(lit: tuple[str, str, str]) -> Any:
    start, text, end = lit
    if start and end:
        return text.__eq__
    if start:
        return lambda s: s.startswith(text)
    if end:
        return lambda s: s.endswith(text)
    return lambda s: text in s


def _re2_error(pattern: str, message: str) -> GoRegexError:
    if "too large" in message or "pattern too large" in message:
        return _err("expression too large", pattern)
    return GoRegexError(f"error parsing regexp: {message}: `{pattern}`")


@lru_cache(maxsize=4096)
def compile_go(pattern: str) -> GoRegexp:
    """Compile a Go regexp (cached by pattern, like upstream's per-rule cache). Raises GoRegexError."""
    try:
        return GoRegexp(pattern)
    except RecursionError:  # not expected (the parser is iterative); never a traceback
        raise _err("expression nests too deeply", pattern) from None


def rune_width(b: bytes, pos: int) -> int:
    """Width in bytes of the UTF-8 character at b[pos] (0 at the end)."""
    if pos >= len(b):
        return 0
    c = b[pos]
    return 1 if c < 0x80 else 2 if c < 0xE0 else 3 if c < 0xF0 else 4
