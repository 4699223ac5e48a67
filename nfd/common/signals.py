"""Run a process's main coroutine until it returns or SIGTERM/SIGINT arrives (Kubernetes stops
pods with SIGTERM); the coroutine's ``finally`` blocks do the cleanup."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Coroutine
from typing import Any

from nfd.common.httpserver import ListenError

log = logging.getLogger("nfd")


def run_until_signal(coro: Coroutine[Any, Any, int]) -> int:
    """The coroutine's exit code, 0 when a signal cancelled it, or 1 with one line when its port
    cannot be opened."""
    async def wrapper() -> int:
        task = asyncio.ensure_future(coro)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)
        try:
            rc: int = await task
            return rc
        except asyncio.CancelledError:
            log.info("shutting down")
            return 0

    try:
        return asyncio.run(wrapper())
    except ListenError as e:
        log.error("%s", e)
        return 1
