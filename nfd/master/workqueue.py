"""An asyncio work queue with client-go workqueue semantics.

An item is queued at most once; an item added while being processed is queued again when it is
done (never processed twice at the same time). Failed items come back after a per-item
exponential backoff (upstream: 50 ms doubling to 100 s); ``add_after`` delays an item (used to
give a deleted NodeFeature time to be re-created before acting on its absence).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


class RetryLater(Exception):
    """Raised by a work function that made progress but must look at the item again: the
    worker backs the item off as for a failure and logs the message on one line."""


class ShutDown(Exception):
    pass


class WorkQueue(Generic[T]):
    def __init__(self, *, base_delay: float = 0.05, max_delay: float = 100.0) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._queue: deque[T] = deque()
        self._queued: set[T] = set()
        self._processing: set[T] = set()
        self._dirty: set[T] = set()
        self._failures: dict[T, int] = {}
        self._delayed: list[tuple[float, int, T]] = []
        self._delayed_at: dict[T, float] = {}
        self._seq = itertools.count()
        self._wakeup = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._shutdown = False

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def processing(self) -> int:
        return len(self._processing)

    def idle(self) -> bool:
        return not self._queue and not self._processing and not self._delayed_at

    def add(self, item: T) -> None:
        if self._shutdown:
            return
        if item in self._processing:
            self._dirty.add(item)
            return
        if item in self._queued:
            return
        self._queued.add(item)
        self._queue.append(item)
        self._wakeup.set()

    def add_after(self, item: T, delay: float) -> None:
        if delay <= 0:
            self.add(item)
            return
        loop = asyncio.get_running_loop()
        at = loop.time() + delay
        if self._delayed_at.get(item, float("inf")) <= at:
            return  # already due no later than that
        self._delayed_at[item] = at
        heapq.heappush(self._delayed, (at, next(self._seq), item))
        self._arm(loop)

    def add_rate_limited(self, item: T) -> float:
        n = self._failures.get(item, 0)
        self._failures[item] = n + 1
        delay = min(self.max_delay, self.base_delay * (2**n))
        self.add_after(item, delay)
        return delay

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._delayed:
            self._timer = loop.call_at(self._delayed[0][0], self._fire)

    def _fire(self) -> None:
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        while self._delayed and self._delayed[0][0] <= now:
            at, _, item = heapq.heappop(self._delayed)
            if self._delayed_at.get(item) != at:
                continue  # superseded by an earlier due time
            del self._delayed_at[item]
            self.add(item)
        self._arm(loop)

    async def get(self) -> T:
        while not self._queue:
            if self._shutdown:
                raise ShutDown
            self._wakeup.clear()
            await self._wakeup.wait()
        item = self._queue.popleft()
        self._queued.discard(item)
        self._processing.add(item)
        return item

    def done(self, item: T) -> None:
        self._processing.discard(item)
        if item in self._dirty:
            self._dirty.discard(item)
            self.add(item)

    def clear(self) -> None:
        """Drop everything queued or delayed (stepping down as leader)."""
        self._queue.clear()
        self._queued.clear()
        self._dirty.clear()
        self._delayed.clear()
        self._delayed_at.clear()
        self._failures.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def shutdown(self) -> None:
        self._shutdown = True
        self.clear()
        self._wakeup.set()
