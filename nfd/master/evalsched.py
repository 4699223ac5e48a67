"""Rule evaluation on the event loop, shared fairly between nfd-master's updaters.

A node's evaluation is a generator that pauses after each rule
(nfd.master.pipeline.compute_desired_steps). Each updater drove its own in slices of 20 ms, so
with ``nfdApiParallelism`` updaters busy one loop iteration cost that many slices; and a slice
is at least one rule, up to a quarter second for a rule that spends a template's whole step
budget: ten updaters on such nodes held the loop 2.3 s per iteration, and an HTTP exchange,
needing several iterations, went unanswered for tens of seconds.

Here all updaters share one slice: whoever finds it spent pauses, so the loop runs its other
callbacks (watches, lease renewal, HTTP) at least every ``slice_s`` plus one rule. A
*background* evaluation (a deferred rule object, nfd.master.fairness) runs only while no
foreground one is in progress, and pauses three times as long as it ran (a quarter of one core
at most), so a costly rule object cannot crowd out the others' results.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator
from typing import TypeVar

T = TypeVar("T")

# Evaluation slices of about this long (one rule at least) between pauses. The pause is a short
# sleep, not a bare yield: an HTTP exchange needs several loop iterations, and with sleep(0)
# each of them would wait for another slice.
EVAL_SLICE_S = 0.02
EVAL_PAUSE_S = 0.002
#: A background evaluation runs at most this share of the time.
BACKGROUND_SHARE = 0.25
#: How often a background evaluation looks whether the foreground is done.
BACKGROUND_POLL_S = 0.05


class EvalSlicer:
    """Drives evaluations (pausing generators) in one shared slice at a time."""

    def __init__(self, *, slice_s: float = EVAL_SLICE_S, pause_s: float = EVAL_PAUSE_S,
                 background_share: float = BACKGROUND_SHARE) -> None:
        self.slice_s = slice_s
        self.pause_s = pause_s
        self.background_share = background_share
        self._slice_end = 0.0
        self.foreground = 0  # evaluations in progress in the foreground
        self.background_busy_s = 0.0  # time spent in background evaluations (for figures)

    async def drive(self, steps: Generator[None, None, T], *, background: bool = False) -> T:
        """Run ``steps`` to its result, pausing whenever the shared slice is spent."""
        if not background:
            self.foreground += 1
        try:
            while True:
                if background and self.foreground:
                    await asyncio.sleep(BACKGROUND_POLL_S)
                    continue
                now = time.perf_counter()
                if now > self._slice_end:
                    await asyncio.sleep(self.pause_s)
                    now = time.perf_counter()
                    if now > self._slice_end:
                        self._slice_end = now + self.slice_s
                    continue
                try:
                    next(steps)
                except StopIteration as stop:
                    result: T = stop.value
                    return result
                if background:
                    took = time.perf_counter() - now
                    self.background_busy_s += took
                    if self.background_share < 1.0:
                        await asyncio.sleep(took * (1.0 / self.background_share - 1.0))
        finally:
            if not background:
                self.foreground -= 1
