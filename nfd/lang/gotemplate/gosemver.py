"""Masterminds/semver v3 (as Sprig's semver/semverCompare use it): lenient versions, constraint checks."""

from __future__ import annotations

import re
from typing import Any

from nfd.lang import semver
from nfd.lang.gostd.strconv import quote as go_quote

from . import funcs as K
from .errors import FuncError
from .funcs import Method
from .values import GoObject, Uint64

_CV = r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
_OPS = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^"
_CONSTRAINT_RE = re.compile(rf"^\s*({_OPS})\s*({_CV})\s*\Z", re.ASCII)
_RANGE_RE = re.compile(rf"\s*({_CV})\s+-\s+({_CV})\s*", re.ASCII)
_FIND_RE = re.compile(rf"({_OPS})\s*({_CV})", re.ASCII)
_VALID_RE = re.compile(rf"^(\s*({_OPS})\s*({_CV})\s*)((?:\s+|,\s*)({_OPS})\s*({_CV})\s*)*\Z", re.ASCII)
_ALLOWED = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")


class Version(GoObject):
    """A *semver.Version; `Version.value` (IncMajor... results) is the semver.Version struct,
    which offers only the value-receiver methods (no Original, Compare, LessThan...)."""

    type_name = "*semver.Version"
    is_value = False

    def __init__(self, major: int, minor: int, patch: int, pre: str, meta: str, original: str) -> None:
        self.major, self.minor, self.patch = major, minor, patch
        self.pre, self.meta, self.original = pre, meta, original

    def go_string(self) -> str:
        s = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            s += "-" + self.pre
        if self.meta:
            s += "+" + self.meta
        return s

    def go_syntax(self) -> str:
        """%#v: the struct's fields, uint64s in hex."""
        body = (f"semver.Version{{major:{self.major:#x}, minor:{self.minor:#x}, patch:{self.patch:#x}, "
                f"pre:{go_quote(self.pre)}, metadata:{go_quote(self.meta)}, original:{go_quote(self.original)}}}")
        return body if self.is_value else "&" + body

    def _next(self, major: int, minor: int, patch: int, pre: str, meta: str) -> Version:
        v = VersionValue(major, minor, patch, pre, meta, "")
        prefix = "v" if self.original[:1] == "v" else ""
        v.original = prefix + v.go_string()
        return v

    def method(self, name: str) -> Method | None:
        m = _VALUE_METHODS.get(name)
        if m is None and not self.is_value:
            m = _PTR_METHODS.get(name)
        return m

    def field(self, name: str) -> Any:
        m = self.method(name)
        if m is None or m.params:
            raise KeyError(name)
        return m.fn(self)

    def compare(self, o: Version) -> int:
        for a, b in ((self.major, o.major), (self.minor, o.minor), (self.patch, o.patch)):
            if a != b:
                return -1 if a < b else 1
        if not self.pre and not o.pre:
            return 0
        if not self.pre:
            return 1
        if not o.pre:
            return -1
        return _compare_pre(self.pre, o.pre)


class VersionValue(Version):
    type_name = "semver.Version"
    is_value = True


def _set_pre(v: Version, pre: str) -> Version:
    if pre:
        _validate_pre(pre)
    return v._next(v.major, v.minor, v.patch, pre, v.meta)


def _set_meta(v: Version, meta: str) -> Version:
    if meta and any(not p or not set(p) <= _ALLOWED for p in meta.split(".")):
        raise FuncError("invalid metadata string")
    return v._next(v.major, v.minor, v.patch, v.pre, meta)


def _inc_patch(v: Version) -> Version:
    return v._next(v.major, v.minor, v.patch if v.pre else v.patch + 1, "", "")


def _validate_pre(pre: str) -> None:
    for p in pre.split("."):
        if not p:
            raise FuncError("invalid prerelease string")
        if p.isdigit() and p.isascii():
            if len(p) > 1 and p[0] == "0":
                raise FuncError("version segment starts with 0")
        elif not set(p) <= _ALLOWED:
            raise FuncError("invalid prerelease string")


def _other(o: Any) -> Version:
    if o is None:  # a nil *Version argument: Go dereferences it
        raise FuncError("runtime error: invalid memory address or nil pointer dereference")
    return o  # type: ignore[no-any-return]


_V = K.VERSION
# Methods a template can call (time/semver methods with Go's parameter types and results).
_VALUE_METHODS: dict[str, Method] = {
    "String": Method(lambda v: v.go_string()),
    "Major": Method(lambda v: Uint64(v.major)),
    "Minor": Method(lambda v: Uint64(v.minor)),
    "Patch": Method(lambda v: Uint64(v.patch)),
    "Prerelease": Method(lambda v: v.pre),
    "Metadata": Method(lambda v: v.meta),
    "IncPatch": Method(_inc_patch),
    "IncMinor": Method(lambda v: v._next(v.major, v.minor + 1, 0, "", "")),
    "IncMajor": Method(lambda v: v._next(v.major + 1, 0, 0, "", "")),
    "SetPrerelease": Method(_set_pre, (K.STR,)),
    "SetMetadata": Method(_set_meta, (K.STR,)),
}
_PTR_METHODS: dict[str, Method] = {
    "Original": Method(lambda v: v.original),
    "Compare": Method(lambda v, o: v.compare(_other(o)), (_V,)),
    "LessThan": Method(lambda v, o: v.compare(_other(o)) < 0, (_V,)),
    "LessThanEqual": Method(lambda v, o: v.compare(_other(o)) <= 0, (_V,)),
    "GreaterThan": Method(lambda v, o: v.compare(_other(o)) > 0, (_V,)),
    "GreaterThanEqual": Method(lambda v, o: v.compare(_other(o)) >= 0, (_V,)),
    "Equal": Method(lambda v, o: v is o or (o is not None and v.compare(o) == 0), (_V,)),
}


def _compare_pre(a: str, b: str) -> int:
    sp, op = a.split("."), b.split(".")
    for i in range(max(len(sp), len(op))):
        s = sp[i] if i < len(sp) else ""
        o = op[i] if i < len(op) else ""
        d = _compare_part(s, o)
        if d:
            return d
    return 0


def _compare_part(s: str, o: str) -> int:
    if s == o:
        return 0
    if s == "":
        return -1
    if o == "":
        return 1
    sn, on = s.isdigit() and s.isascii(), o.isdigit() and o.isascii()
    if not sn and not on:
        return 1 if s > o else -1
    if not on:
        return -1
    if not sn:
        return 1
    return 1 if int(s) > int(o) else -1


def new_version(v: str) -> Version:
    try:
        p = semver.new_version(v)
    except semver.SemverError as e:
        raise FuncError(str(e)) from None
    return Version(p.major, p.minor, p.patch, p.pre, p.meta, v)


def _is_x(s: str) -> bool:
    return s in ("x", "*", "X")


class _Constraint:
    def __init__(self, op: str, orig: str, con: Version, dirty: bool, minor_dirty: bool, patch_dirty: bool) -> None:
        self.op, self.orig, self.con = op, orig, con
        self.dirty, self.minor_dirty, self.patch_dirty = dirty, minor_dirty, patch_dirty


def _parse_constraint(c: str) -> _Constraint:
    if not c:
        return _Constraint("", c, Version(0, 0, 0, "", "", "0.0.0"), True, False, False)
    m = _CONSTRAINT_RE.match(c)
    if m is None:
        raise FuncError(f"improper constraint: {c}")
    op, orig = m.group(1), m.group(2)
    g3, g4, g5, g6 = m.group(3) or "", m.group(4) or "", m.group(5) or "", m.group(6) or ""
    ver, dirty, minor_dirty, patch_dirty = orig, False, False, False
    if _is_x(g3) or g3 == "":
        ver, dirty = f"0.0.0{g6}", True
    elif _is_x(g4.lstrip(".")) or g4 == "":
        ver, dirty, minor_dirty = f"{g3}.0.0{g6}", True, True
    elif _is_x(g5.lstrip(".")) or g5 == "":
        ver, dirty, patch_dirty = f"{g3}{g4}.0{g6}", True, True
    try:
        con = new_version(ver)
    except FuncError:
        raise FuncError("constraint parser error") from None
    return _Constraint(op, orig, con, dirty, minor_dirty, patch_dirty)


def _check(v: Version, c: _Constraint) -> bool:
    op, k = c.op, c.con
    # A prerelease version only satisfies constraints that name a prerelease (semver v3.4).
    if v.pre and not k.pre:
        return False
    if op in ("", "="):
        return _tilde(v, c) if c.dirty else v.compare(k) == 0
    if op == "!=":
        if c.dirty:
            if k.major != v.major:
                return True
            if k.minor != v.minor and not c.minor_dirty:
                return True
            if c.minor_dirty:
                return False
            if k.patch != v.patch and not c.patch_dirty:
                return True
            if c.patch_dirty:
                if v.pre or k.pre:
                    return _compare_pre(v.pre, k.pre) != 0
                return False
        return v.compare(k) != 0
    if op == ">":
        if not c.dirty:
            return v.compare(k) == 1
        if v.major != k.major:
            return v.major > k.major
        if c.minor_dirty:
            return False
        if c.patch_dirty:
            return v.minor > k.minor
        return v.compare(k) == 1
    if op == "<":
        return v.compare(k) < 0
    if op in (">=", "=>"):
        return v.compare(k) >= 0
    if op in ("<=", "=<"):
        if not c.dirty:
            return v.compare(k) <= 0
        if v.major > k.major:
            return False
        return not (v.major == k.major and v.minor > k.minor and not c.minor_dirty)
    if op in ("~", "~>"):
        return _tilde(v, c)
    if op == "^":
        if v.compare(k) < 0:
            return False
        if k.major > 0 or c.minor_dirty:
            return v.major == k.major
        if v.major > 0:
            return False
        if k.minor > 0 or c.patch_dirty:
            return v.minor == k.minor
        if v.minor > 0:
            return False
        return k.patch == v.patch
    return False


def _tilde(v: Version, c: _Constraint) -> bool:
    k = c.con
    if v.compare(k) < 0:
        return False
    if k.major == 0 and k.minor == 0 and k.patch == 0 and not c.minor_dirty and not c.patch_dirty:
        return True
    if v.major != k.major:
        return False
    return not (v.minor != k.minor and not c.minor_dirty)


def _rewrite_range(s: str) -> str:
    out = s
    for m in _RANGE_RE.finditer(s):
        out = out.replace(m.group(0), f">= {m.group(1)}, <= {m.group(11)} ", 1)
    return out


def new_constraint(c: str) -> list[list[_Constraint]]:
    c = _rewrite_range(c)
    groups = []
    for part in c.split("||"):
        if not _VALID_RE.match(part):
            raise FuncError(f"improper constraint: {part}")
        cs = [m.group(0) for m in _FIND_RE.finditer(part)] or [part]
        groups.append([_parse_constraint(x) for x in cs])
    return groups


def semver_compare(constraint: str, version: str) -> bool:
    groups = new_constraint(constraint)
    v = new_version(version)
    return any(all(_check(v, c) for c in g) for g in groups)
