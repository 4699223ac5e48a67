"""Go literal syntax: string/char unquoting and integer/float constants (strconv semantics)."""

from __future__ import annotations

from nfd.lang.gostd import strconv

_SIMPLE_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92}
_HEX = "0123456789abcdefABCDEF"

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


class LiteralError(ValueError):
    pass


def _unescape(body: str, quote: str) -> list[int | str]:
    """Decode escapes; yields code points (str) and raw bytes (int) like Go does."""
    out: list[int | str] = []
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c == quote and quote != "`":
            raise LiteralError("invalid syntax")
        if c != "\\":
            out.append(c)
            i += 1
            continue
        i += 1
        if i >= n:
            raise LiteralError("invalid syntax")
        e = body[i]
        i += 1
        if e in _SIMPLE_ESCAPES:
            out.append(chr(_SIMPLE_ESCAPES[e]))
        elif e in "'\"":
            if e != quote:
                raise LiteralError("invalid syntax")
            out.append(e)
        elif e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            h = body[i : i + width]
            if len(h) != width or any(ch not in _HEX for ch in h):
                raise LiteralError("invalid syntax")
            i += width
            v = int(h, 16)
            if e == "x":
                out.append(v)
            else:
                if v > 0x10FFFF or 0xD800 <= v <= 0xDFFF:
                    raise LiteralError("invalid syntax")
                out.append(chr(v))
        elif e in "01234567":
            o = body[i - 1 : i + 2]
            if len(o) != 3 or any(ch not in "01234567" for ch in o):
                raise LiteralError("invalid syntax")
            v = int(o, 8)
            if v > 255:
                raise LiteralError("invalid syntax")
            i += 2
            out.append(v)
        else:
            raise LiteralError("invalid syntax")
    return out


def _join(parts: list[int | str]) -> str:
    if all(isinstance(p, str) for p in parts):
        return "".join(parts)  # type: ignore[arg-type]
    buf = bytearray()
    for p in parts:
        if isinstance(p, int):
            buf.append(p)
        else:
            buf += p.encode("utf-8")
    return buf.decode("utf-8", "replace")


def unquote(text: str) -> str:
    """strconv.Unquote for "..." and `...` literals."""
    if len(text) < 2 or text[0] != text[-1] or text[0] not in "\"`":
        raise LiteralError("invalid syntax")
    body = text[1:-1]
    if text[0] == "`":
        if "`" in body:
            raise LiteralError("invalid syntax")
        return body.replace("\r", "")
    if "\n" in body:
        raise LiteralError("invalid syntax")
    return _join(_unescape(body, '"'))


def unquote_char(text: str) -> int:
    """A Go rune literal 'x' to its code point."""
    if len(text) < 3 or text[0] != "'" or text[-1] != "'":
        raise LiteralError("invalid syntax")
    body = text[1:-1]
    # strconv.UnquoteChar: decode the first character; anything after it is "malformed".
    if body[0] == "\\" and len(body) > 1:
        width = {"x": 4, "u": 6, "U": 10}.get(body[1], 4 if body[1] in "01234567" else 2)
    else:
        width = 1
    parts = _unescape(body[:width], "'")
    if len(parts) != 1:
        raise LiteralError("invalid syntax")
    if body[width:]:
        raise LiteralError("malformed character constant")
    p = parts[0]
    return p if isinstance(p, int) else ord(p)


def parse_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64); None when it does not parse or overflows."""
    try:
        return strconv.parse_int(text, 0, 64)
    except strconv.NumError:
        return None


def parse_uint(text: str) -> int | None:
    """strconv.ParseUint(text, 0, 64): no sign allowed."""
    try:
        return strconv.parse_uint(text, 0, 64)
    except strconv.NumError:
        return None


def parse_float(text: str) -> float | None:
    """strconv.ParseFloat(text, 64); None on an error (out of range included: Go's parser
    then reports illegal number syntax)."""
    try:
        return strconv.parse_float(text)
    except strconv.NumError:
        return None
