"""Masterminds/semver v3's lenient version reading (``NewVersion``), which upstream NFD's
``type: version`` expressions, nfd's CEL ``version()`` and Sprig's ``semver`` all use.

``v?MAJOR[.MINOR[.PATCH]][-PRERELEASE][+BUILD]``: leading zeros tolerated in the numeric parts,
numbers beyond uint64 refused, numeric pre-release identifiers with a leading zero refused.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from nfd.lang.gostd.strconv import quote

_VERSION = re.compile(
    r"v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?"
    r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
    r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
)
_UINT64_MAX = (1 << 64) - 1


class SemverError(ValueError):
    """A version NewVersion refuses, with its error text."""


class Version(NamedTuple):
    major: int
    minor: int
    patch: int
    pre: str
    meta: str


def _bad_pre(pre: str) -> bool:
    return any(p.isdigit() and len(p) > 1 and p[0] == "0" for p in pre.split("."))


def new_version(s: str) -> Version:
    """semver.NewVersion: SemverError with Masterminds' texts."""
    m = _VERSION.fullmatch(s)
    if m is None:
        raise SemverError("invalid semantic version")
    nums = []
    for g in (m.group(1), m.group(2), m.group(3)):
        digits = (g or "0").lstrip(".")
        n = int(digits)
        if n > _UINT64_MAX:
            raise SemverError(f"error parsing version segment: strconv.ParseUint: parsing {quote(digits)}: "
                              "value out of range")
        nums.append(n)
    pre, meta = m.group(5) or "", m.group(8) or ""
    if pre and _bad_pre(pre):
        raise SemverError("version segment starts with 0")
    return Version(nums[0], nums[1], nums[2], pre, meta)


def parse_version(s: str) -> tuple[int, int, int] | None:
    """(major, minor, patch), the pre-release dropped as upstream compares versions, or None
    when NewVersion refuses ``s``. The rule engine's hot path: one regex match, no objects."""
    m = _VERSION.fullmatch(s)
    if m is None:
        return None
    nums = (int(m.group(1)), int((m.group(2) or ".0")[1:]), int((m.group(3) or ".0")[1:]))
    if nums[0] > _UINT64_MAX or nums[1] > _UINT64_MAX or nums[2] > _UINT64_MAX:
        return None
    pre = m.group(5)
    if pre and _bad_pre(pre):
        return None
    return nums
