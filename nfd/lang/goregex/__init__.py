"""Go regexps on RE2: Go's syntax, errors and match semantics, linear time.

    rx = compile_go(pattern)         # GoRegexError with Go's own error text; cached
    rx.match_string(s)               # regexp.MatchString
    rx.find_submatch_index(b, pos)   # FindSubmatchIndex on UTF-8 bytes from pos
    find(rx, s), find_all(rx, s, n), replace_all(rx, s, repl, literal=...), split(rx, s, n)
"""

from __future__ import annotations

from .calls import all_matches, find, find_all, replace_all, split
from .regexp import GoRegexError, GoRegexp, compile_go, parse, rune_width, utf8

__all__ = [
    "GoRegexError",
    "GoRegexp",
    "all_matches",
    "compile_go",
    "find",
    "find_all",
    "parse",
    "replace_all",
    "rune_width",
    "split",
    "utf8",
]
