"""nfd-master's worker pool: ``nfdApiParallelism`` updaters on the node queue, up to two on the
group queue, and the node updater's background lane, all run by the leader only.

A failed item is retried with the queue's per-item backoff; an interrupted one (resize, step
down) goes back on its queue, so no work is lost.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from nfd.k8s import errors as kerr
from nfd.master.workqueue import RetryLater, ShutDown, WorkQueue

log = logging.getLogger("nfd.master")

MAX_REPORTED_RETRIES = 15


async def work(queue: WorkQueue[str], fn: Callable[[str], Any], *, kind: str,
               gave_up: Callable[[], None] | None = None) -> None:
    """Take items off ``queue`` and run ``fn`` on each until the queue shuts down;
    ``gave_up()`` runs once per item at its MAX_REPORTED_RETRIES-th failure in a row."""
    while True:
        try:
            item = await queue.get()
        except ShutDown:
            return
        try:
            await fn(item)
            queue.forget(item)
        except asyncio.CancelledError:
            # Interrupted (resize or step-down): the item is not lost; a step-down then
            # clears the queue.
            queue.done(item)
            queue.add(item)
            raise
        except Exception as e:
            n = queue.num_requeues(item)
            if n + 1 == MAX_REPORTED_RETRIES and gave_up is not None:
                gave_up()
            delay = queue.add_rate_limited(item)
            if isinstance(e, kerr.ApiError | kerr.ApiUnavailable | RetryLater):
                log.warning("%s %s: update failed (%s); retry %d in %.2fs", kind, item, e, n + 1, delay)
            else:
                log.exception("%s %s: update failed; retry %d in %.2fs", kind, item, n + 1, delay)
        finally:
            queue.done(item)


class WorkerPool:
    """The updaters of one leadership term (started by become_leader, stopped by step_down)."""

    def __init__(
        self,
        *,
        node_queue: WorkQueue[str],
        process_node: Callable[[str], Coroutine[Any, Any, None]],
        node_failed: Callable[[], None],
        background: Callable[[], Coroutine[Any, Any, None]],
        group_queue: WorkQueue[str],
        process_group: Callable[[str], Coroutine[Any, Any, None]] | None,
    ) -> None:
        self.node_queue = node_queue
        self.group_queue = group_queue
        self._process_node = process_node
        self._node_failed = node_failed
        self._background = background
        self._process_group = process_group  # None: no NodeFeatureGroups (gate off, masterless)
        self.tasks: list[asyncio.Task[None]] = []
        self._lane: asyncio.Task[None] | None = None

    def start(self, n: int) -> None:
        for _ in range(n):
            self.tasks.append(asyncio.create_task(
                work(self.node_queue, self._process_node, kind="node", gave_up=self._node_failed)))
        if self._lane is None:
            self._lane = asyncio.create_task(self._background())
        if self._process_group is not None:
            for _ in range(max(1, min(n, 2))):
                self.tasks.append(asyncio.create_task(work(self.group_queue, self._process_group, kind="group")))

    async def resize(self, size: Callable[[], int | None]) -> None:
        """New nfdApiParallelism: replace the updaters (queued work is kept). ``size()``, asked
        once the old ones have stopped: how many to start, None when no longer leading."""
        await _cancel_and_wait(self.tasks)
        self.tasks.clear()
        n = size()
        if n is not None:
            self.start(n)

    async def stop(self) -> None:
        """Stop every updater and the background lane; the queued work is dropped."""
        lane, self._lane = self._lane, None
        await _cancel_and_wait(([lane] if lane is not None else []) + self.tasks)
        self.tasks.clear()


class BackgroundTasks:
    """Coroutines started and not awaited (Events, a list-and-queue pass, an informer start):
    held until they end, so that ``cancel_all`` can stop the ones still running."""

    def __init__(self) -> None:
        self._tasks: list[asyncio.Task[Any]] = []

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.append(t)
        t.add_done_callback(lambda x: self._tasks.remove(x) if x in self._tasks else None)

    def cancel_all(self) -> None:
        for t in list(self._tasks):
            t.cancel()


async def _cancel_and_wait(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel every task, then wait for each in order to end (however it ends)."""
    for t in tasks:
        t.cancel()
    for t in tasks:
        try:
            await t
        except (asyncio.CancelledError, Exception):
            pass
