"""Informer retries: a watch that keeps answering 410 Gone backs off with jitter, one log line
per episode (the apiserver saw 5,523 WATCH requests in 29 s before)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from nfd.k8s.backoff import Backoff
from nfd.k8s.resources import NODES
from nfd.k8s.watching import Informer
from tests.support.fakeapi import RequestOptions


class GoneForever(RequestOptions):
    """LISTs answer one Node; every WATCH answers an ERROR 410 at once."""

    def __init__(self) -> None:
        self.lists = 0
        self.watches = 0

    async def _request(self, method: str, path: str, **kw: Any) -> Any:
        self.lists += 1
        return {"kind": "NodeList", "metadata": {"resourceVersion": str(self.lists)},
                "items": [{"metadata": {"name": "n1", "resourceVersion": "1"}}]}

    async def stream_lines(self, path: str, **kw: Any) -> Any:
        self.watches += 1
        yield {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}}


def test_repeated_410_backs_off_and_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    api = GoneForever()
    inf = Informer(api, NODES, watch_list=False)  # type: ignore[arg-type]

    async def run() -> None:
        await inf.start()
        assert await inf.wait_synced(timeout=5)
        await asyncio.sleep(3.0)
        await inf.stop()

    with caplog.at_level(logging.INFO, logger="nfd.k8s.watching"):
        asyncio.run(run())
    # 0.5 + 1 + 2 s of backoff fit in 3 s: a handful of tries, not thousands
    assert 2 <= api.watches <= 5, api.watches
    assert api.lists <= api.watches + 1
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "410 Gone again" in warnings[0].getMessage()
    assert inf.get("n1") is not None  # the cache is kept meanwhile


def test_backoff_doubles_with_jitter_and_resets() -> None:
    log = logging.getLogger("test.backoff")
    b = Backoff("x", log=log, base=0.5, cap=4.0)
    waits = [b.failed("e") for _ in range(6)]
    for w, nominal in zip(waits, [0.5, 1, 2, 4, 4, 4], strict=True):
        assert 0.8 * nominal <= w <= 1.2 * nominal
    b.ok()
    assert 0.4 <= b.failed("e") <= 0.6
