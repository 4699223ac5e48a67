"""Rule evaluation on the event loop, shared fairly between nfd-master's updaters.

A node's evaluation is a generator that pauses after each rule
(nfd.nodestate.desired.desired_state_steps). Each updater drove its own in slices of 20 ms, so
with ``nfdApiParallelism`` updaters busy one loop iteration cost that many slices; and a slice
is at least one rule, up to a quarter second for a rule that spends a template's whole step
budget: ten updaters on such nodes held the loop 2.3 s per iteration, and an HTTP exchange,
needing several iterations, went unanswered for tens of seconds.

Here all updaters share one slice per turn of the loop, so the loop runs its other callbacks
(watches, lease renewal, HTTP) at least every ``slice_s`` plus one rule. A
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

# Evaluation slices of about this long (one rule at least), one per turn of the loop.
EVAL_SLICE_S = 0.02
#: A background evaluation runs at most this share of the time.
BACKGROUND_SHARE = 0.25
#: How often a background evaluation looks whether the foreground is done.
BACKGROUND_POLL_S = 0.05


class EvalSlicer:
    """Drives evaluations (pausing generators), one slice per turn of the loop for all of them.

    A slice ends by scheduling (``call_soon``) the opening of the next one: the callbacks
    already queued, and the socket events and timers of the next turn, run before any
    updater's next slice, however many updaters wait.
    """

    def __init__(self, *, slice_s: float = EVAL_SLICE_S, background_share: float = BACKGROUND_SHARE) -> None:
        self.slice_s = slice_s
        self.background_share = background_share
        self._open = True  # a slice may start now
        self._opened = asyncio.Event()
        self.foreground = 0  # evaluations in progress in the foreground
        self.background_busy_s = 0.0  # time spent in background evaluations (for figures)

    async def _take(self) -> None:
        while not self._open:
            await self._opened.wait()
        self._open = False
        self._opened.clear()

    def _give_back(self) -> None:
        def reopen() -> None:
            self._open = True
            self._opened.set()

        asyncio.get_running_loop().call_soon(reopen)

    async def drive(self, steps: Generator[None, None, T], *, background: bool = False) -> T:
        """Run ``steps`` to its result, a slice at a time."""
        if not background:
            self.foreground += 1
        try:
            while True:
                if background and self.foreground:
                    await asyncio.sleep(BACKGROUND_POLL_S)
                    continue
                await self._take()
                t0 = time.perf_counter()
                end = t0 + self.slice_s
                try:
                    while not (background and self.foreground):
                        try:
                            next(steps)
                        except StopIteration as stop:
                            result: T = stop.value
                            return result
                        if time.perf_counter() > end:
                            break
                finally:
                    self._give_back()
                if background:
                    took = time.perf_counter() - t0
                    self.background_busy_s += took
                    await asyncio.sleep(took * (1.0 / self.background_share - 1.0))
        finally:
            if not background:
                self.foreground -= 1
