"""Scan triggers: the interval ticker and changes to kubelet state files.

Upstream watches ``<kubelet-state-dir>`` and its ``device-plugins/`` sub-directory with
fsnotify and scans when ``cpu_manager_state``, ``memory_manager_state`` or
``kubelet_internal_checkpoint`` change. We use inotify directly through ctypes (no extra
dependency, no thread); where inotify is unavailable the interval ticker still runs.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import os
import struct
from collections.abc import Callable, Iterable

log = logging.getLogger(__name__)

STATE_FILES = frozenset({"cpu_manager_state", "memory_manager_state", "kubelet_internal_checkpoint"})

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
_MASK = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
_EVENT = struct.Struct("iIII")


def watch_dirs(state_dir: str) -> list[str]:
    return [state_dir, os.path.join(state_dir, "device-plugins")]


def parse_events(buf: bytes) -> list[str]:
    """File names in a buffer of ``struct inotify_event`` records."""
    names = []
    off = 0
    while off + _EVENT.size <= len(buf):
        _wd, _mask, _cookie, length = _EVENT.unpack_from(buf, off)
        off += _EVENT.size
        raw = buf[off : off + length]
        off += length
        names.append(raw.split(b"\0", 1)[0].decode(errors="replace"))
    return names


class StateDirWatcher:
    """Calls ``on_change(name)`` when a kubelet state file in the watched dirs changes."""

    def __init__(self, dirs: Iterable[str], on_change: Callable[[str], None]) -> None:
        self.dirs = list(dirs)
        self.on_change = on_change
        self.fd = -1
        self.watched: set[str] = set()
        self._libc: ctypes.CDLL | None = None

    def start(self) -> bool:
        """Begin watching; False if inotify is unavailable. Missing dirs are retried by
        :meth:`retry_missing` (the kubelet may create them after we start)."""
        name = ctypes.util.find_library("c")
        try:
            libc = ctypes.CDLL(name or "libc.so.6", use_errno=True)
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        except (OSError, AttributeError) as e:
            log.warning("inotify unavailable (%s); kubelet state changes are seen on the interval only", e)
            return False
        if fd < 0:
            log.warning("inotify_init1 failed: %s", os.strerror(ctypes.get_errno()))
            return False
        self._libc, self.fd = libc, fd
        asyncio.get_running_loop().add_reader(fd, self._readable)
        self.retry_missing()
        return True

    def retry_missing(self) -> None:
        if self._libc is None:
            return
        for d in self.dirs:
            if d in self.watched:
                continue
            wd = self._libc.inotify_add_watch(self.fd, os.fsencode(d), _MASK)
            if wd < 0:
                log.warning(
                    "cannot watch kubelet state dir %s: %s; will retry", d, os.strerror(ctypes.get_errno())
                )
            else:
                self.watched.add(d)
                log.info("watching %s for kubelet state changes", d)

    def _readable(self) -> None:
        try:
            buf = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        except OSError as e:
            log.warning("inotify read failed: %s", e)
            return
        for name in parse_events(buf):
            if name in STATE_FILES:
                self.on_change(name)

    def close(self) -> None:
        if self.fd >= 0:
            try:
                asyncio.get_running_loop().remove_reader(self.fd)
            except RuntimeError:
                pass
            os.close(self.fd)
            self.fd = -1
            self._libc = None
            self.watched.clear()
