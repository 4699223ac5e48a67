"""Sprig string functions, with Go's byte-oriented string semantics."""

from __future__ import annotations

import base64
import binascii
import hashlib
import random
import secrets
import string
import unicodedata
import zlib
from typing import Any

from nfd.lang.gostd import from_go_bytes, go_bytes, strconv
from nfd.lang.gostd.strconv import quote as go_quote

from . import funcs as K
from .budget import charge_string
from .conv import byte_slice, strval
from .errors import FuncError
from .funcs import Func
from .gocase import is_lower, is_title, is_upper, to_lower, to_title, to_upper
from .values import StringList, TypedMap, go_len

# unicode.IsSpace (Python's isspace() also counts \x1c-\x1f, Go does not).
GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_GO_SPACE_SET = frozenset(GO_SPACE)


def is_space(c: str) -> bool:
    return c in _GO_SPACE_SET


def _map_case(s: str, upper: bool) -> str:
    """strings.ToUpper/ToLower: rune-by-rune, never changing the rune count (unlike 'ß'.upper())."""
    if s.isascii():
        return s.upper() if upper else s.lower()
    out = []
    for c in s:
        if 0xD800 <= ord(c) <= 0xDFFF:
            out.append("\ufffd")  # strings.Map turns invalid UTF-8 into U+FFFD
        else:
            out.append(to_upper(c) if upper else to_lower(c))
    return "".join(out)


def upper(s: str) -> str:
    return _map_case(s, True)


def lower(s: str) -> str:
    return _map_case(s, False)


def _to_title(c: str) -> str:
    return to_title(c)


def _title_separator(c: str) -> bool:
    if c.isascii():
        return not (c.isalnum() or c == "_")
    if c.isalpha() or unicodedata.category(c) == "Nd":
        return False
    return is_space(c)


def title(s: str) -> str:
    """strings.Title: upper-case the first letter of each word."""
    out = []
    prev = " "
    for c in s:
        out.append(_to_title(c) if _title_separator(prev) else c)
        prev = c
    return "".join(out)


def untitle(s: str) -> str:
    """goutils.Uncapitalize: lower-case the first letter of each whitespace-separated word."""
    out = []
    nxt = True
    for c in s:
        if is_space(c):
            nxt = True
            out.append(c)
        elif nxt:
            out.append(to_lower(c))
            nxt = False
        else:
            out.append(c)
    return "".join(out)


def swapcase(s: str) -> str:
    """goutils.SwapCase: upper→lower; lower→title at word start, else upper."""
    out = []
    ws = True
    for c in s:
        if is_upper(c) or is_title(c):
            out.append(to_lower(c))
            ws = False
        elif is_lower(c):
            out.append(to_title(c) if ws else to_upper(c))
            ws = False
        else:
            out.append(c)
            ws = is_space(c)
    return "".join(out)


def abbreviate_full(s: str, offset: int, width: int) -> str:
    """goutils.AbbreviateFull (byte offsets, as the Go code uses)."""
    if s == "":
        return ""
    if width < 4:
        return ""
    n = go_len(s)
    if n <= width:
        return s
    if offset > n:
        offset = n
    if n - offset < width - 3:
        offset = n - (width - 3)
    if offset <= 4:
        return byte_slice(s, 0, width - 3) + "..."
    if width < 7:
        return ""
    if offset + width - 3 < n:
        return "..." + abbreviate_full(byte_slice(s, offset), 0, width - 3)
    return "..." + byte_slice(s, n - (width - 3))


def abbrev(width: int, s: str) -> str:
    if width < 4:
        return s
    return abbreviate_full(s, 0, width)


def abbrevboth(left: int, right: int, s: str) -> str:
    if right < 4 or (left > 0 and right < 7):
        return s
    return abbreviate_full(s, left, right)


def trunc(c: int, s: str) -> str:
    n = go_len(s)
    if c < 0 and n + c > 0:
        return byte_slice(s, n + c)
    if c >= 0 and n > c:
        return byte_slice(s, 0, c)
    return s


def substr(start: int, end: int, s: str) -> str:
    if start < 0:
        return byte_slice(s, 0, end)
    if end < 0 or end > go_len(s):
        return byte_slice(s, start)
    return byte_slice(s, start, end)


def repeat(count: int, s: str) -> str:
    if count < 0:
        raise FuncError("strings: negative Repeat count")
    charge_string(count * len(s))
    return s * count


def trim_all(cutset: str, s: str) -> str:
    return s.strip(cutset) if cutset else s


def trim_suffix(suffix: str, s: str) -> str:
    return s[: -len(suffix)] if suffix and s.endswith(suffix) else s


def trim_prefix(prefix: str, s: str) -> str:
    return s[len(prefix) :] if prefix and s.startswith(prefix) else s


# goutils' nospace/initials walk the UTF-8 bytes and treat each byte as a rune (so bytes 0x85
# and 0xA0 count as spaces, and kept non-ASCII bytes come out Latin-1 re-encoded); reproduced.
_BYTE_SPACES = frozenset(ord(c) for c in GO_SPACE if ord(c) < 256)


def nospace(s: str) -> str:
    b = go_bytes(s)
    kept = [c for c in b if c not in _BYTE_SPACES]
    if len(kept) == len(b):
        return s
    return "".join(map(chr, kept))


def initials(s: str) -> str:
    out = []
    gap = True
    for c in go_bytes(s):
        if c in _BYTE_SPACES:
            gap = True
        elif gap:
            out.append(chr(c))
            gap = False
    return "".join(out)


def wrap_custom(s: str, width: int, newline: str, wrap_long: bool) -> str:
    """goutils.WrapCustom: wrap at spaces; leading spaces of new lines dropped."""
    if s == "":
        return ""
    if newline == "":
        newline = "\n"
    if width < 1:
        width = 1
    charge_string(len(s) + len(s) // width * len(newline))  # a newline per `width` bytes at most
    src = go_bytes(s)  # Go measures and cuts in bytes
    nl = newline.encode("utf-8")
    n = len(src)
    off = 0
    out: list[bytes] = []
    while n - off > width:
        if src[off] == 0x20:
            off += 1
            continue
        end = width + off + 1
        sp = src.rfind(b" ", off, end)
        if sp >= off:
            out.append(src[off:sp] + nl)
            off = sp + 1
        elif wrap_long:
            out.append(src[off : width + off] + nl)
            off += width
        else:
            end = width + off
            idx = src.find(b" ", end)
            if idx == -1:
                out.append(src[off:])
                off = n
            else:
                out.append(src[off:idx] + nl)
                off = idx + 1
    out.append(src[off:])
    return b"".join(out).decode("utf-8", "replace")


def wrap(width: int, s: str) -> str:
    return wrap_custom(s, width, "", False)


def wrap_with(width: int, sep: str, s: str) -> str:
    return wrap_custom(s, width, sep, True)


def quote(*args: Any) -> str:
    return " ".join(go_quote(strval(a)) for a in args if a is not None)


def squote(*args: Any) -> str:
    return " ".join("'" + strval(a) + "'" for a in args if a is not None)


def cat(*args: Any) -> str:
    return " ".join(strval(a) for a in args if a is not None)


def indent(spaces: int, s: str) -> str:
    if spaces < 0:
        raise FuncError("strings: negative Repeat count")
    charge_string(len(s) + (s.count("\n") + 1) * spaces)
    pad = " " * spaces
    return pad + s.replace("\n", "\n" + pad)


def nindent(spaces: int, s: str) -> str:
    return "\n" + indent(spaces, s)


def replace(old: str, new: str, src: str) -> str:
    if old == "":
        # strings.Replace with an empty old inserts `new` around every rune.
        charge_string(len(src) + (len(src) + 1) * len(new))
        return new + new.join(src) + new if src else new
    if len(new) > len(old):
        charge_string(len(src) + src.count(old) * (len(new) - len(old)))
    return src.replace(old, new)


def plural(one: str, many: str, count: int) -> str:
    return one if count == 1 else many


def to_strings(v: Any) -> list[str]:
    """Sprig's strslice."""
    if isinstance(v, (list, tuple)):
        return StringList(strval(x) for x in v if x is not None)
    if v is None:
        return StringList()
    return StringList([strval(v)])


def join(sep: str, v: Any) -> str:
    parts = to_strings(v)
    if sep and len(parts) > 1:
        charge_string(len(sep) * (len(parts) - 1))
    return sep.join(parts)


def sort_alpha(v: Any) -> list[str]:
    if isinstance(v, (list, tuple)):
        return StringList(sorted(to_strings(v)))
    return StringList([strval(v)])


def split(sep: str, s: str) -> dict[str, str]:
    parts = {f"_{i}": p for i, p in enumerate(go_split(s, sep, -1))}
    return TypedMap(parts, go_type="map[string]string", zero="")


def splitn(sep: str, n: int, s: str) -> dict[str, str]:
    parts = {f"_{i}": p for i, p in enumerate(go_split(s, sep, n))}
    return TypedMap(parts, go_type="map[string]string", zero="")


def split_list(sep: str, s: str) -> list[str]:
    return StringList(go_split(s, sep, -1))


def go_split(s: str, sep: str, n: int) -> list[str]:
    """strings.SplitN: n == 0 → none, n < 0 → all, empty sep splits into runes."""
    if n == 0:
        return []
    if sep == "":
        chars = list(s)
        if n > 0 and len(chars) > n:
            return chars[: n - 1] + ["".join(chars[n - 1 :])]
        return chars
    if n < 0:
        return s.split(sep)
    return s.split(sep, n - 1)


def atoi(s: str) -> int:
    """strconv.Atoi, 0 on error."""
    v = strconv.int64_or_none(s)
    return 0 if v is None else v


def b64enc(s: str) -> str:
    return base64.b64encode(go_bytes(s)).decode("ascii")


def _first_bad(data: str, alphabet: str) -> int:
    for i, c in enumerate(data):
        if c not in alphabet and c not in "\r\n":
            return i
    return len(data)


def b64dec(s: str) -> str:
    try:
        if any(c not in string.ascii_letters + string.digits + "+/=\r\n" for c in s):
            raise ValueError
        raw = base64.b64decode(s.replace("\r", "").replace("\n", ""), validate=True)
    except (ValueError, binascii.Error):
        return f"illegal base64 data at input byte {_b64_bad_offset(s)}"
    return from_go_bytes(raw)


def _b64_bad_offset(s: str) -> int:
    """Where Go's decoder reports a corrupt input: a bad byte, or the start of a short final quantum."""
    alphabet = string.ascii_letters + string.digits + "+/"
    data = s.replace("\r", "").replace("\n", "")
    for i, c in enumerate(data):
        if c == "=":
            return i if i % 4 < 2 else (i if len(data) < (i // 4 + 1) * 4 else len(data) - 1)
        if c not in alphabet:
            return i
    return len(data) - len(data) % 4


def b32enc(s: str) -> str:
    return base64.b32encode(go_bytes(s)).decode("ascii")


def b32dec(s: str) -> str:
    try:
        raw = base64.b32decode(s.replace("\r", "").replace("\n", ""))
    except (ValueError, binascii.Error):
        return f"illegal base32 data at input byte {_first_bad(s, string.ascii_uppercase + '234567')}"
    return from_go_bytes(raw)


def _hash(algo: str) -> Func:
    def h(s: str) -> str:
        return hashlib.new(algo, go_bytes(s)).hexdigest()

    return Func(h, (K.STR,))


def adler32sum(s: str) -> str:
    return str(zlib.adler32(go_bytes(s)))


_ALNUM = string.ascii_letters + string.digits
_ASCII_PRINT = "".join(chr(c) for c in range(32, 127))


def _rand(alphabet: str) -> Func:
    def r(count: int) -> str:
        if count < 0:
            raise FuncError(f"Requested random string length {count} is less than 0.")
        charge_string(count)
        return "".join(secrets.choice(alphabet) for _ in range(count))

    return Func(r, (K.INT,))


def shuffle(s: str) -> str:
    chars = list(s)
    random.shuffle(chars)
    return "".join(chars)


def regex_quote_meta(s: str) -> str:
    return "".join("\\" + c if c in "\\.+*?()|[]{}^$" else c for c in s)


# --- xstrings case conversion -------------------------------------------

_NUMBER, _UPPER, _ALPHA, _CONNECTOR, _PUNCT, _OTHER = range(1, 7)


def _is_connector(c: str) -> bool:
    return c == "-" or c == "_" or is_space(c)


def _is_number(c: str) -> bool:
    return unicodedata.category(c)[0] == "N"


def _is_punct(c: str) -> bool:
    return unicodedata.category(c)[0] == "P"


def _is_alpha(c: str) -> bool:
    return c.isalpha()


def _next_word(s: str, i: int) -> tuple[int, int]:
    """Classify the word starting at s[i]; returns (type, end)."""
    n = len(s)
    c = s[i]
    j = i + 1
    if _is_connector(c):
        while j < n and _is_connector(s[j]):
            j += 1
        return _CONNECTOR, j
    if _is_punct(c):
        while j < n and _is_punct(s[j]):
            j += 1
        return _PUNCT, j
    if is_upper(c):
        if j >= n:
            return _UPPER, j
        d = s[j]
        if is_upper(d):
            k = j
            while k < n and is_upper(s[k]):
                k += 1
            # "HTTPServer": the last capital starts the next word.
            if k < n and _is_alpha(s[k]):
                k -= 1
            return _UPPER, k
        if _is_alpha(d):
            while j < n and _is_alpha(s[j]) and not is_upper(s[j]):
                j += 1
            return _UPPER, j
        return _UPPER, j
    if _is_alpha(c):
        while j < n and _is_alpha(s[j]) and not is_upper(s[j]):
            j += 1
        return _ALPHA, j
    if _is_number(c):
        while j < n and _is_number(s[j]):
            j += 1
        return _NUMBER, j
    while j < n and not (_is_connector(s[j]) or _is_alpha(s[j]) or _is_number(s[j]) or _is_punct(s[j])):
        j += 1
    return _OTHER, j


def _words(s: str) -> list[tuple[int, str]]:
    out = []
    i = 0
    while i < len(s):
        t, j = _next_word(s, i)
        out.append((t, s[i:j]))
        i = j
    return out


def _lower_word(t: int, w: str, conn: str) -> str:
    if t != _UPPER and t != _CONNECTOR:
        return w
    return "".join(conn if _is_connector(c) else (to_lower(c) if is_upper(c) else c) for c in w)


def _case_join(s: str, conn: str) -> str:
    """xstrings camelCaseToLowerCase: snake/kebab case."""
    if not s:
        return ""
    words = _words(s)
    out: list[str] = []
    t, w = words[0]
    k = 1

    def nxt() -> tuple[int, str]:
        nonlocal k
        if k < len(words):
            r = words[k]
            k += 1
            return r
        return 0, ""

    while k < len(words):
        if t != _CONNECTOR:
            out.append(_lower_word(t, w, conn))
        prev, last = t, w
        t, w = nxt()
        if prev == _NUMBER:
            while t in (_ALPHA, _NUMBER):
                out.append(_lower_word(t, w, conn))
                t, w = nxt()
            if t not in (0, _PUNCT, _CONNECTOR):
                out.append(conn)
        elif prev == _CONNECTOR:
            out.append(_lower_word(prev, last, conn))
        elif prev == _PUNCT:
            pass
        else:
            if t != _NUMBER:
                if t not in (_CONNECTOR, _PUNCT):
                    out.append(conn)
                continue
            if k >= len(words):
                continue
            last = w
            t, w = nxt()
            if t != _ALPHA:
                out.append(_lower_word(_NUMBER, last, conn))
                if t not in (_CONNECTOR, _PUNCT):
                    out.append(conn)
                continue
            out.append(conn)
            out.append(_lower_word(_NUMBER, last, conn))
            while t in (_ALPHA, _NUMBER):
                out.append(_lower_word(t, w, conn))
                t, w = nxt()
            if t not in (0, _CONNECTOR, _PUNCT):
                out.append(conn)
    out.append(_lower_word(t, w, conn))
    return "".join(out)


def snakecase(s: str) -> str:
    return _case_join(s, "_")


def kebabcase(s: str) -> str:
    return _case_join(s, "-")


def camelcase(s: str) -> str:
    """xstrings.ToPascalCase: drop connectors, capitalise the rune after each."""
    if not s:
        return ""
    out: list[str] = []
    chars = list(s)
    i = 0
    n = len(chars)
    first_upper = False
    r0 = ""
    while i < n:
        r0 = chars[i]
        i += 1
        if not _is_connector(r0):
            first_upper = is_upper(r0)
            r0 = to_upper(r0)
            break
        out.append(r0)
    else:
        # All connectors: xstrings writes the last one a second time.
        return "".join(out) + r0
    while i < n:
        r1 = r0
        r0 = chars[i]
        i += 1
        if _is_connector(r0) and _is_connector(r1):
            out.append(r1)
            continue
        if _is_connector(r1):
            first_upper = is_upper(r0)
            r0 = to_upper(r0)
        else:
            if first_upper:
                if is_upper(r0):
                    r0 = to_lower(r0)
                else:
                    first_upper = False
            out.append(r1)
    out.append(r0)
    return "".join(out)


def _s(fn: Any, *params: str, variadic: str | None = None) -> Func:
    return Func(fn, tuple(params), variadic)


S, N, A = K.STR, K.INT, K.ANY

STRING_FUNCS: dict[str, Func] = {
    "hello": _s(lambda: "Hello!"),
    "abbrev": _s(abbrev, N, S),
    "abbrevboth": _s(abbrevboth, N, N, S),
    "trunc": _s(trunc, N, S),
    "trim": _s(lambda s: s.strip(GO_SPACE), S),
    "upper": _s(upper, S),
    "lower": _s(lower, S),
    "title": _s(title, S),
    "untitle": _s(untitle, S),
    "substr": _s(substr, N, N, S),
    "repeat": _s(repeat, N, S),
    "trimall": _s(trim_all, S, S),
    "trimAll": _s(trim_all, S, S),
    "trimSuffix": _s(trim_suffix, S, S),
    "trimPrefix": _s(trim_prefix, S, S),
    "nospace": _s(nospace, S),
    "initials": _s(initials, S),
    "randAlphaNum": _rand(_ALNUM),
    "randAlpha": _rand(string.ascii_letters),
    "randAscii": _rand(_ASCII_PRINT),
    "randNumeric": _rand(string.digits),
    "swapcase": _s(swapcase, S),
    "shuffle": _s(shuffle, S),
    "snakecase": _s(snakecase, S),
    "camelcase": _s(camelcase, S),
    "kebabcase": _s(kebabcase, S),
    "wrap": _s(wrap, N, S),
    "wrapWith": _s(wrap_with, N, S, S),
    "contains": _s(lambda sub, s: sub in s, S, S),
    "hasPrefix": _s(lambda p, s: s.startswith(p), S, S),
    "hasSuffix": _s(lambda p, s: s.endswith(p), S, S),
    "quote": _s(quote, variadic=A),
    "squote": _s(squote, variadic=A),
    "cat": _s(cat, variadic=A),
    "indent": _s(indent, N, S),
    "nindent": _s(nindent, N, S),
    "replace": _s(replace, S, S, S),
    "plural": _s(plural, S, S, N),
    "sha1sum": _hash("sha1"),
    "sha256sum": _hash("sha256"),
    "sha512sum": _hash("sha512"),
    "adler32sum": _s(adler32sum, S),
    "toString": _s(strval, A),
    "atoi": _s(atoi, S),
    "split": _s(split, S, S),
    "splitList": _s(split_list, S, S),
    "splitn": _s(splitn, S, N, S),
    "toStrings": _s(to_strings, A),
    "join": _s(join, S, A),
    "sortAlpha": _s(sort_alpha, A),
    "b64enc": _s(b64enc, S),
    "b64dec": _s(b64dec, S),
    "b32enc": _s(b32enc, S),
    "b32dec": _s(b32dec, S),
    "regexQuoteMeta": _s(regex_quote_meta, S),
}
