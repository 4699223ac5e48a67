"""Sprig regex functions over Go RE2 semantics (see goregex)."""

from __future__ import annotations

from typing import Any

from nfd.lang.goregex import GoRegexError, GoRegexp, find, find_all, replace_all, split
from nfd.lang.goregex import compile_go as _shared_compile
from nfd.lang.gostd.strconv import quote as go_quote

from . import funcs as K
from .budget import string_limit, string_too_long
from .errors import FuncError
from .funcs import Func
from .values import StringList


class RegexError(FuncError):
    pass


def compile_go(pat: str) -> GoRegexp:
    """The shared (cached) Go regexp, its error as a template function error."""
    try:
        return _shared_compile(pat)
    except GoRegexError as e:
        raise RegexError(str(e)) from None


def _quiet_compile(pat: str) -> Any:
    try:
        return compile_go(pat)
    except FuncError:
        return None


def regex_match(pat: str, s: str) -> bool:
    rx = _quiet_compile(pat)
    return bool(rx and rx.match_string(s))


def must_regex_match(pat: str, s: str) -> bool:
    return compile_go(pat).match_string(s)


def regex_find_all(pat: str, s: str, n: int) -> list[str]:
    return StringList(find_all(compile_go(pat), s, n))


def regex_find(pat: str, s: str) -> str:
    return find(compile_go(pat), s)


def regex_replace_all(pat: str, s: str, repl: str) -> str:
    return replace_all(compile_go(pat), s, repl, literal=False, limit=string_limit(), too_long=string_too_long)


def regex_replace_all_literal(pat: str, s: str, repl: str) -> str:
    return replace_all(compile_go(pat), s, repl, literal=True, limit=string_limit(), too_long=string_too_long)


def regex_split(pat: str, s: str, n: int) -> list[str]:
    return StringList(split(compile_go(pat), s, n))


def _panicking(fn: Any) -> Any:
    """Non-must variants call regexp.MustCompile, whose panic text differs from Compile's error."""

    def wrapped(pat: str, *args: Any) -> Any:
        try:
            compile_go(pat)
        except FuncError as e:
            raise FuncError(f"regexp: Compile({_backquote(pat)}): {e}") from None
        return fn(pat, *args)

    return wrapped


def _backquote(s: str) -> str:
    """regexp's quote(): backquoted when strconv.CanBackquote, else a Go string literal."""
    if "`" not in s and all(c == "\t" or (c.isprintable() and c != "\ufeff") for c in s):
        return "`" + s + "`"
    return go_quote(s)


S, N = K.STR, K.INT

REGEX_FUNCS: dict[str, Func] = {
    "regexMatch": Func(regex_match, (S, S)),
    "mustRegexMatch": Func(must_regex_match, (S, S)),
    "regexFindAll": Func(_panicking(regex_find_all), (S, S, N)),
    "mustRegexFindAll": Func(regex_find_all, (S, S, N)),
    "regexFind": Func(_panicking(regex_find), (S, S)),
    "mustRegexFind": Func(regex_find, (S, S)),
    "regexReplaceAll": Func(_panicking(regex_replace_all), (S, S, S)),
    "mustRegexReplaceAll": Func(regex_replace_all, (S, S, S)),
    "regexReplaceAllLiteral": Func(_panicking(regex_replace_all_literal), (S, S, S)),
    "mustRegexReplaceAllLiteral": Func(regex_replace_all_literal, (S, S, S)),
    "regexSplit": Func(_panicking(regex_split), (S, S, N)),
    "mustRegexSplit": Func(regex_split, (S, S, N)),
}
