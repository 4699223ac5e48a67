"""text/template's predefined functions (and, or, not, len, index, print*, eq..., html, js, urlquery)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote_plus

from nfd.lang.gostd import go_bytes

from . import funcs as K
from .budget import _printed_size
from .errors import FuncError
from .fmt import sprint, sprintf, sprintln
from .funcs import Func
from .values import GoObject, TypedMap, Uint8, format_value, go_len, is_true, type_name


def _not(v: Any) -> bool:
    return not is_true(v)


def _len(v: Any) -> int:
    if v is None:
        raise FuncError("len of nil pointer")
    if isinstance(v, (str, list, tuple, dict)):
        return go_len(v)
    raise FuncError(f"len of type {type_name(v)}")


def _index(item: Any, *indexes: Any) -> Any:
    if item is None:
        raise FuncError("index of untyped nil")
    for ix in indexes:
        if item is None:
            raise FuncError("index of nil pointer")
        if isinstance(item, (list, tuple, str)):
            if ix is None:
                raise FuncError("cannot index slice/array with nil")
            if not isinstance(ix, int) or isinstance(ix, bool):
                raise FuncError(f"cannot index slice/array with type {type_name(ix)}")
            n = go_len(item)
            if ix < 0 or ix > n:
                raise FuncError(f"index out of range: {ix}")
            if ix == n:
                raise FuncError("reflect: slice index out of range")
            if isinstance(item, str):
                item = Uint8(go_bytes(item)[ix])  # Go indexes bytes
            else:
                item = item[ix]
        elif isinstance(item, dict):
            if ix is None:
                raise FuncError("value is nil; should be of type string")
            if not isinstance(ix, str):
                raise FuncError(f"value has type {type_name(ix)}; should be string")
            if ix in item:
                item = item[ix]
            else:
                item = _zero_elem(item)
        else:
            raise FuncError(f"can't index item of type {type_name(item)}")
    return item


def _zero_elem(m: dict[str, Any]) -> Any:
    """Zero value of a map's element type: the typed map's (NFD's MatchedElement: ""), else nil."""
    if isinstance(m, TypedMap):
        return m.zero
    return None


def _basic_kind(v: Any) -> str:
    if v is None:
        return "invalid"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, complex):
        return "complex"
    if isinstance(v, str):
        return "string"
    return "other"


_ERR_BAD_COMPARISON_TYPE = "invalid type for comparison"
_ERR_BAD_COMPARISON = "incompatible types for comparison"


_SHOWN_LIMIT = 4096


def _shown(v: Any, fmt: Any) -> str:
    """An operand as Go prints it in an error, unless that is long (a value can be megabytes of
    node data, or a list sharing sub-lists that prints exponentially long): then its type and size."""
    size, _ = _printed_size(v, _SHOWN_LIMIT)
    if size > _SHOWN_LIMIT:
        return f"<{type_name(v)} printing to more than {_SHOWN_LIMIT} characters>"
    return str(fmt("%s", v) if fmt is sprintf else fmt(v))


def _eq(a: Any, *bs: Any) -> bool:
    if not bs:
        raise FuncError("missing argument for comparison")
    ka = _basic_kind(a)
    for b in bs:
        kb = _basic_kind(b)
        if ka != kb:
            if a is not None and b is not None:
                raise FuncError(f"{_ERR_BAD_COMPARISON}: {type_name(a)} and {type_name(b)}")
            truth = False
        elif ka == "other" and isinstance(a, GoObject) and type_name(a) == type_name(b):
            # Comparable Go values: pointers (*semver.Version, *time.Location) by identity.
            truth = a is b if type_name(a).startswith("*") else a.go_syntax() == b.go_syntax()
        elif ka == "other":
            if not isinstance(a, type(b)) and not isinstance(b, type(a)):
                raise FuncError(
                    f"non-comparable types {_shown(a, sprintf)}: {type_name(a)}, {type_name(b)}: {_shown(b, format_value)}"
                )
            raise FuncError(f"non-comparable type {_shown(b, sprintf)}: {type_name(b)}")
        else:
            truth = a == b
        if truth:
            return True
    return False


def _ne(a: Any, b: Any) -> bool:
    return not _eq(a, b)


def _lt(a: Any, b: Any) -> bool:
    ka, kb = _basic_kind(a), _basic_kind(b)
    if ka in ("invalid", "other") or kb in ("invalid", "other"):
        raise FuncError(_ERR_BAD_COMPARISON_TYPE)
    if ka != kb:
        raise FuncError(f"{_ERR_BAD_COMPARISON}: {type_name(a)} and {type_name(b)}")
    if ka in ("bool", "complex"):
        raise FuncError(_ERR_BAD_COMPARISON_TYPE)
    return bool(a < b)


def _le(a: Any, b: Any) -> bool:
    return _lt(a, b) or _eq(a, b)


def _gt(a: Any, b: Any) -> bool:
    return not _le(a, b)


def _ge(a: Any, b: Any) -> bool:
    return not _lt(a, b)


def _eval_args(args: tuple[Any, ...]) -> str:
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    # Go's evalArgs: a nil argument is "printable" as <no value> (a string, so no spaces added).
    return sprint(*("<no value>" if a is None else a for a in args))


def html_escape(s: str) -> str:
    out = []
    for ch in s:
        if ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch == '"':
            out.append("&#34;")
        elif ch == "'":
            out.append("&#39;")
        elif ch == "\x00":
            out.append("\ufffd")
        else:
            out.append(ch)
    return "".join(out)


def _html(*args: Any) -> str:
    return html_escape(_eval_args(args))


def js_escape(s: str) -> str:
    out = []
    for ch in s:
        c = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == "'":
            out.append("\\'")
        elif ch == '"':
            out.append('\\"')
        elif ch == "<":
            out.append("\\u003C")
        elif ch == ">":
            out.append("\\u003E")
        elif ch == "&":
            out.append("\\u0026")
        elif ch == "=":
            out.append("\\u003D")
        elif c < 0x20 or c >= 0x80 and not ch.isprintable():
            out.append(f"\\u{c:04X}")
        else:
            out.append(ch)
    return "".join(out)


def _js(*args: Any) -> str:
    return js_escape(_eval_args(args))


def _urlquery(*args: Any) -> str:
    return quote_plus(_eval_args(args), safe="-_.~")


def call_named(name: str, fn: Any, *args: Any) -> Any:
    """`call`: template data never holds functions, so this always fails the way Go does."""
    if fn is None:
        raise FuncError("call of nil")
    raise FuncError(f"non-function {name} of type {type_name(fn)}")


def _call(fn: Any, *args: Any) -> Any:
    return call_named("", fn, *args)


def _b(fn: Any, params: tuple[str, ...], variadic: str | None = None) -> Func:
    return Func(fn, params, variadic, builtin=True)


BUILTINS: dict[str, Func] = {
    "and": _b(None, (K.ANY,), K.ANY),
    "or": _b(None, (K.ANY,), K.ANY),
    "not": _b(_not, (K.ANY,)),
    "len": _b(_len, (K.ANY,)),
    "index": _b(_index, (K.ANY,), K.ANY),
    "print": _b(sprint, (), K.ANY),
    "printf": _b(sprintf, (K.STR,), K.ANY),
    "println": _b(sprintln, (), K.ANY),
    "html": _b(_html, (), K.ANY),
    "js": _b(_js, (), K.ANY),
    "urlquery": _b(_urlquery, (), K.ANY),
    "eq": _b(_eq, (K.ANY,), K.ANY),
    "ne": _b(_ne, (K.ANY, K.ANY)),
    "lt": _b(_lt, (K.ANY, K.ANY)),
    "le": _b(_le, (K.ANY, K.ANY)),
    "gt": _b(_gt, (K.ANY, K.ANY)),
    "ge": _b(_ge, (K.ANY, K.ANY)),
    "call": _b(_call, (K.ANY,), K.ANY),
}
