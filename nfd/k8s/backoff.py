"""Exponential backoff with jitter, logged once per episode of failures.

A watch or list that fails, including a watch that keeps answering 410 Gone, waits 0.5 s
doubling to a cap, each wait randomized by +-20% so that many clients that failed together
(an API server restart) do not come back together. The first failure of an episode is logged
at warning; the rest at debug, and the recovery once with how long it took and how many tries.
"""

from __future__ import annotations

import logging
import random
import time


class Backoff:
    __slots__ = ("base", "cap", "delay", "failures", "log", "started", "what")

    def __init__(self, what: str, *, log: logging.Logger, base: float = 0.5, cap: float = 30.0) -> None:
        self.what = what
        self.log = log
        self.base = base
        self.cap = cap
        self.delay = base
        self.failures = 0
        self.started = 0.0

    def failed(self, reason: object, *, detail: str = "") -> float:
        """Record a failure; returns how long to wait before the next try."""
        if self.failures == 0:
            self.started = time.monotonic()
            self.log.warning("%s failed: %s%s; retrying with backoff (%.1fs, doubling to %.0fs)",
                             self.what, reason, detail, self.delay, self.cap)
        else:
            self.log.debug("%s failed again (%d): %s; retrying in %.1fs", self.what, self.failures + 1, reason,
                           self.delay)
        self.failures += 1
        wait = self.delay * (0.8 + 0.4 * random.random())
        self.delay = min(self.cap, self.delay * 2)
        return wait

    def ok(self) -> None:
        """The operation worked: end the episode."""
        if self.failures:
            self.log.info("%s recovered after %d failed tries in %.1fs", self.what, self.failures,
                          time.monotonic() - self.started)
        self.failures = 0
        self.delay = self.base
