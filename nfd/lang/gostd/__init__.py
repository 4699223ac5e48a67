"""Go's standard library, the parts nfd's languages (CEL, templates) and its messages need.

One model of each Go package, shared by every caller, so that CEL, templates, rule errors and
config parsing agree with Go and with each other:

- ``strconv``: Quote/QuoteToASCII, FormatFloat 'g', ParseInt/ParseUint/Atoi/ParseFloat
- ``netip``: ParseAddr, ParsePrefix
- ``url``: net/url's Parse, ParseRequestURI, escaping and the URL accessors
- ``time``: ParseDuration, Duration.String and the time package's own quoting

Go strings are bytes; a Python ``str`` standing for one keeps bytes that are not UTF-8 as
surrogate escapes (U+DC80..U+DCFF, see ``go_bytes``), as the template engine does. Each
module is imported on its own (``from nfd.lang.gostd import strconv``); this package imports
none of them, and none imports anything outside the standard library and this package.
"""

from __future__ import annotations


def go_bytes(s: str) -> bytes:
    """A Go string's bytes: raw bytes held as surrogate escapes come back as themselves."""
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate outside U+DC80..U+DCFF: not a Go string
        return s.encode("utf-8", "replace")


def from_go_bytes(b: bytes) -> str:
    """A Go string from bytes: invalid UTF-8 is kept as surrogate escapes (see go_bytes)."""
    return b.decode("utf-8", "surrogateescape")
