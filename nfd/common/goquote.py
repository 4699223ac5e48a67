"""Go's ``strconv.Quote``, for text that Go programs print quoted: template output, flag
defaults in ``-h``, klog's structured values."""

from __future__ import annotations


def go_quote(s: str, *, ascii_only: bool = False) -> str:
    """strconv.Quote: a double-quoted Go string literal."""
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\a":
            out.append("\\a")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\v":
            out.append("\\v")
        elif c < 0x20 or c == 0x7F or 0xDC80 <= c <= 0xDCFF:
            out.append(f"\\x{c & 0xFF:02x}")  # a raw byte (see go_bytes)
        elif ascii_only and c >= 0x80 or not ch.isprintable() and c >= 0x80:
            if 0xD800 <= c <= 0xDFFF:
                out.append("\\ufffd")
            elif c > 0xFFFF:
                out.append(f"\\U{c:08x}")
            else:
                out.append(f"\\u{c:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)
