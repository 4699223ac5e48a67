"""Version parsing for ``type: version`` comparisons, as upstream's lenient semver parser does it.

Upstream accepts ``v?MAJOR[.MINOR[.PATCH]][-PRERELEASE][+BUILD]`` (leading zeros tolerated in
the numeric parts), rejects numeric pre-release identifiers with leading zeros and numbers that
overflow uint64, and then drops the pre-release part, so ``6.0.0-beta`` equals ``6.0.0``. The
comparison therefore reduces to a tuple of three integers.
"""

from __future__ import annotations

import re

_LOOSE = re.compile(
    r"v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?"
    r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
    r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
)
_UINT64_MAX = (1 << 64) - 1


def parse_version(s: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) or None when upstream would fail to parse ``s``."""
    m = _LOOSE.fullmatch(s)
    if m is None:
        return None
    parts = (m.group(1), (m.group(2) or ".0")[1:], (m.group(3) or ".0")[1:])
    nums = tuple(int(p) for p in parts)
    if any(n > _UINT64_MAX for n in nums):
        return None
    pre = m.group(5)
    if pre:
        for ident in pre.split("."):
            if ident.isdigit() and len(ident) > 1 and ident[0] == "0":
                return None
    return nums  # type: ignore[return-value]
