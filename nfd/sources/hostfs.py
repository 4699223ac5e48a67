"""Defensive reads of sysfs/procfs/etc files: bad input becomes a warning, never an exception.

Missing files are normal (``None``, no warning). Unreadable, binary or oversized files are
reported through ``ctx.warn`` naming the file, then skipped or truncated.
"""

from __future__ import annotations

import errno
import os
import re
from typing import Any

from nfd.sources.base import DiscoveryContext

#: sysfs attributes are at most a page; procfs/etc files we parse are small too
DEFAULT_LIMIT = 1 << 20

_QUIET = {errno.ENOENT, errno.ENOTDIR, errno.EINVAL, errno.ENODEV, errno.ENXIO, errno.EISDIR}


def read_bytes(ctx: DiscoveryContext, path: str, *, limit: int = DEFAULT_LIMIT) -> bytes | None:
    try:
        # unbuffered: a pass reads a few hundred small files, and a buffered reader's set-up is
        # a third of each read; reads go on until EOF or past the limit, as a buffered read does
        with open(path, "rb", buffering=0) as f:
            data = f.read(limit + 1)
            if data and len(data) <= limit:
                data = _read_rest(f, data, limit + 1)
    except OSError as e:
        if e.errno not in _QUIET:
            ctx.warn(f"{path}: cannot read: {e.strerror or e}")
        return None
    if len(data) > limit:
        ctx.warn(f"{path}: larger than {limit} bytes, only the first {limit} are used")
        data = data[:limit]
    return data


def _read_rest(f: Any, data: bytes, want: int) -> bytes:
    """``data`` and what follows it in ``f`` up to ``want`` bytes in all (a procfs file may come
    in more than one read; a sysfs attribute answers the next read with EOF)."""
    parts = [data]
    got = len(data)
    while got < want:
        more = f.read(want - got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_text(ctx: DiscoveryContext, path: str, *, limit: int = DEFAULT_LIMIT) -> str | None:
    """The file as text, or None if missing/unreadable/binary."""
    data = read_bytes(ctx, path, limit=limit)
    if data is None:
        return None
    return decode_text(ctx, path, data, binary="binary content, ignored")


def decode_text(ctx: DiscoveryContext, path: str, data: bytes, *, binary: str) -> str | None:
    """A file's bytes as text: None (warning ``binary``) when it holds a NUL byte; bytes that
    are not UTF-8 replaced, with a warning, rather than the whole file lost."""
    if b"\x00" in data:
        ctx.warn(f"{path}: {binary}")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        ctx.warn(f"{path}: not valid UTF-8, undecodable bytes replaced")
        return data.decode("utf-8", errors="replace")


#: what Go's unicode.IsSpace accepts (strings.TrimSpace/Fields); unlike str.strip() it leaves
#: the ASCII separators \x1c-\x1f alone
GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


_GO_SPACE_RUN = re.compile(f"[{re.escape(GO_SPACE)}]+")


def go_trim_space(s: str) -> str:
    """Go's strings.TrimSpace."""
    return s.strip(GO_SPACE)


def go_fields(s: str) -> list[str]:
    """Go's strings.Fields."""
    return [f for f in _GO_SPACE_RUN.split(s) if f]


def read_value(ctx: DiscoveryContext, path: str) -> str | None:
    """A one-value sysfs attribute, whitespace-stripped (sysfs values end in a newline)."""
    text = read_text(ctx, path, limit=65536)
    return None if text is None else go_trim_space(text)


def read_int(ctx: DiscoveryContext, path: str) -> int | None:
    v = read_value(ctx, path)
    if v is None or v == "":
        return None
    try:
        return int(v, 0) if v.startswith(("0x", "0X")) else int(v)
    except ValueError:
        ctx.warn(f"{path}: expected an integer, got {v[:40]!r}")
        return None


def list_dir(ctx: DiscoveryContext, path: str) -> list[str] | None:
    """Sorted entry names, or None if the directory is missing/unreadable."""
    try:
        return sorted(os.listdir(path))
    except OSError as e:
        if e.errno not in _QUIET:
            ctx.warn(f"{path}: cannot list: {e.strerror or e}")
        return None


def exists(path: str) -> bool:
    return os.path.lexists(path)
