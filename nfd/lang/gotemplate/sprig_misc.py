"""Sprig defaults, JSON, reflection, paths, URLs, flow control and the randomness helpers."""

from __future__ import annotations

import base64
import secrets
import uuid
from typing import Any

from nfd.lang.gostd import from_go_bytes, go_bytes
from nfd.lang.gostd import url as gourl

from . import funcs as K
from .budget import charge_string
from .conv import deep_equal
from .errors import FuncError
from .funcs import Func
from .gojson import UnmarshalError, marshal, unmarshal
from .values import is_true, kind_name, type_name


def empty(v: Any) -> bool:
    return not is_true(v)


def default(d: Any, *given: Any) -> Any:
    if not given or empty(given[0]):
        return d
    return given[0]


def coalesce(*vs: Any) -> Any:
    for v in vs:
        if not empty(v):
            return v
    return None


def ternary(vt: Any, vf: Any, cond: bool) -> Any:
    return vt if cond else vf


def from_json(s: str) -> Any:
    try:
        return unmarshal(s)
    except UnmarshalError as e:
        return e.partial
    except FuncError:
        return None


def _quiet(fn: Any) -> Any:
    def q(v: Any) -> str:
        try:
            return str(fn(v))
        except FuncError:
            return ""

    return q


def to_json(v: Any) -> str:
    return marshal(v)


def to_pretty_json(v: Any) -> str:
    return marshal(v, indent="  ")


def to_raw_json(v: Any) -> str:
    return marshal(v, escape_html=False)


def type_of(v: Any) -> str:
    return type_name(v)


def type_is_like(target: str, v: Any) -> bool:
    t = type_name(v)
    return target == t or "*" + target == t


# --- paths (Go's path package, lexical) ---------------------------------


def go_clean(p: str) -> str:
    if p == "":
        return "."
    rooted = p.startswith("/")
    parts: list[str] = []
    for seg in p.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            elif not rooted:
                parts.append("..")
            continue
        parts.append(seg)
    out = "/".join(parts)
    if rooted:
        return "/" + out
    return out or "."


def go_base(p: str) -> str:
    if p == "":
        return "."
    p = p.rstrip("/")
    if p == "":
        return "/"
    return p[p.rfind("/") + 1 :]


def go_dir(p: str) -> str:
    return go_clean(p[: p.rfind("/") + 1])


def go_ext(p: str) -> str:
    for i in range(len(p) - 1, -1, -1):
        if p[i] == "/":
            break
        if p[i] == ".":
            return p[i:]
    return ""


# --- URLs ---------------------------------------------------------------


def url_parse(v: str) -> dict[str, Any]:
    """Sprig's urlParse: url.Parse's fields (Path and Fragment decoded, RawQuery as written)."""
    try:
        u = gourl.parse(v)
    except gourl.URLError as e:
        raise FuncError(f"unable to parse url: {e}") from None
    return {
        "scheme": from_go_bytes(u.scheme),
        "host": from_go_bytes(u.host),
        "hostname": from_go_bytes(u.hostname()),
        "path": from_go_bytes(u.path),
        "query": from_go_bytes(u.raw_query),
        "opaque": from_go_bytes(u.opaque),
        "fragment": from_go_bytes(u.fragment),
        "userinfo": from_go_bytes(u.user.string()) if u.user is not None else "",
    }


def _url_key(d: dict[str, Any], key: str) -> bytes:
    """Sprig's dictGetOrEmpty: a present key must hold a string (its reflect.Kind otherwise)."""
    if key not in d:
        return b""
    v = d[key]
    if isinstance(v, str):
        return go_bytes(v)
    if v is None:  # reflect.TypeOf(nil).Kind() dereferences a nil Type
        raise FuncError("runtime error: invalid memory address or nil pointer dereference")
    raise FuncError(f"unable to parse {key} key, must be of type string, but {kind_name(v)} found")


def url_join(d: dict[str, Any] | None) -> str:
    """Sprig's urlJoin: a url.URL from the dict's fields, written by URL.String; userinfo is
    read back through url.Parse("proto://<userinfo>@host"), as Sprig does."""
    d = d or {}  # a nil map reads as empty
    u = gourl.URL(
        scheme=_url_key(d, "scheme"),
        host=_url_key(d, "host"),
        path=_url_key(d, "path"),
        raw_query=_url_key(d, "query"),
        opaque=_url_key(d, "opaque"),
        fragment=_url_key(d, "fragment"),
    )
    userinfo = _url_key(d, "userinfo")
    if userinfo:
        try:
            u.user = gourl.parse(from_go_bytes(b"proto://" + userinfo + b"@host")).user
        except gourl.URLError as e:
            raise FuncError(f"unable to parse userinfo in dict: {e}") from None
    return from_go_bytes(u.string())


# --- flow / randomness ----------------------------------------------------


def fail(msg: str) -> str:
    raise FuncError(msg)


def rand_int(lo: int, hi: int) -> int:
    if hi - lo <= 0:
        raise FuncError("invalid argument to Intn")
    return lo + secrets.randbelow(hi - lo)


def rand_bytes(count: int) -> str:
    if count < 0:
        raise FuncError("runtime error: makeslice: len out of range")
    charge_string(count * 4 // 3)
    return base64.b64encode(secrets.token_bytes(count)).decode("ascii")


def _unsupported(name: str) -> Func:
    def f(*args: Any) -> Any:
        raise FuncError(f"{name} is not supported by this implementation")

    return Func(f, (), K.ANY)


def _f(fn: Any, *params: str, variadic: str | None = None) -> Func:
    return Func(fn, tuple(params), variadic)


A, S, N, B = K.ANY, K.STR, K.INT, K.BOOL

MISC_FUNCS: dict[str, Func] = {
    "default": _f(default, A, variadic=A),
    "empty": _f(empty, A),
    "coalesce": _f(coalesce, variadic=A),
    "all": _f(lambda *vs: all(is_true(v) for v in vs), variadic=A),
    "any": _f(lambda *vs: any(is_true(v) for v in vs), variadic=A),
    "ternary": _f(ternary, A, A, B),
    "fromJson": _f(from_json, S),
    "mustFromJson": _f(unmarshal, S),
    "toJson": _f(_quiet(to_json), A),
    "mustToJson": _f(to_json, A),
    "toPrettyJson": _f(_quiet(to_pretty_json), A),
    "mustToPrettyJson": _f(to_pretty_json, A),
    "toRawJson": _f(to_raw_json, A),
    "mustToRawJson": _f(to_raw_json, A),
    "typeOf": _f(type_of, A),
    "typeIs": _f(lambda t, v: t == type_name(v), S, A),
    "typeIsLike": _f(type_is_like, S, A),
    "kindOf": _f(kind_name, A),
    "kindIs": _f(lambda t, v: t == kind_name(v), S, A),
    "deepEqual": _f(deep_equal, A, A),
    "base": _f(go_base, S),
    "dir": _f(go_dir, S),
    "clean": _f(go_clean, S),
    "ext": _f(go_ext, S),
    "isAbs": _f(lambda p: p.startswith("/"), S),
    "osBase": _f(go_base, S),
    "osClean": _f(go_clean, S),
    "osDir": _f(go_dir, S),
    "osExt": _f(go_ext, S),
    "osIsAbs": _f(lambda p: p.startswith("/"), S),
    "urlParse": _f(url_parse, S),
    "urlJoin": _f(url_join, K.MAP),
    "fail": _f(fail, S),
    "randInt": _f(rand_int, N, N),
    "randBytes": _f(rand_bytes, N),
    "uuidv4": _f(lambda: str(uuid.uuid4())),
}

# Sprig's crypto/certificate helpers exist upstream but make no sense in node labels;
# they parse (so rules validate as upstream) and fail if executed.
for _name in (
    "bcrypt",
    "htpasswd",
    "genPrivateKey",
    "derivePassword",
    "buildCustomCert",
    "genCA",
    "genCAWithKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    "encryptAES",
    "decryptAES",
):
    MISC_FUNCS[_name] = _unsupported(_name)
