"""Giving memory back to the system after a burst of big objects.

glibc serves allocations above a threshold (128 KiB) with mmap, returned to the system on free,
but raises that threshold each time such a block is freed, up to 32 MiB. After nfd-master has
held hostile NodeFeatures with 600 kB values, later big values then come from the heap, which
is not shrunk: 50 such NodeFeatures left 29 MiB resident after they were deleted
(benchmarks/bench_hostile.py). Pinning the threshold keeps big blocks on mmap (resident memory
returned to within 2 MiB of its baseline there). Not glibc (musl, macOS): nothing to do.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number
MMAP_THRESHOLD = 128 * 1024


def pin_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """mallopt(M_MMAP_THRESHOLD, threshold) on glibc; True if it took effect."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    ok = bool(mallopt(M_MMAP_THRESHOLD, threshold))
    log.debug("malloc mmap threshold pinned at %d bytes: %s", threshold, ok)
    return ok
