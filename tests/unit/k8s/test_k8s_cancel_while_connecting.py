"""A stop that arrives as a connection attempt fails must stop the caller. Python 3.11's
``asyncio.wait_for`` answers such a cancel with the connection's error instead, and the informers
turn that error into one more retry: the masterless worker of the dependency-environment CI run
logged "shutting down nfd-worker" and then retried its Node watch until it was killed (one run in
five with SIGTERM about a second after start). ruff's banned-api (TID251) keeps wait_for out of
nfd/; these tests fail on the wait_for code."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import pytest

from nfd.k8s.errors import ApiUnavailable
from nfd.k8s.http1 import H1Pool
from nfd.k8s.http2 import H2Connection
from nfd.k8s.resources import NODES
from nfd.k8s.watching import Informer


async def _cancel_as_the_connect_fails(opener: Any) -> BaseException | None:
    """Runs ``opener()`` until it waits for the connection, then fails the connection and
    cancels the task in the same turn of the loop; returns what the task ended with."""
    loop = asyncio.get_running_loop()
    connecting: asyncio.Future[Any] = loop.create_future()

    async def create_connection(*args: Any, **kwargs: Any) -> Any:
        return await connecting

    loop.create_connection = create_connection  # type: ignore[method-assign]
    task = asyncio.create_task(opener())
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done()
    connecting.set_exception(ConnectionRefusedError(111, "Connect call failed"))
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return asyncio.CancelledError()
    except BaseException as e:  # what wait_for turned the cancel into
        return e
    return None


def test_http2_connect_keeps_a_cancel_that_meets_a_failure() -> None:
    ctx = ssl.create_default_context()
    out = asyncio.run(_cancel_as_the_connect_fails(
        lambda: H2Connection.open("127.0.0.1", 9, ssl_context=ctx, timeout_s=30)))
    assert isinstance(out, asyncio.CancelledError), out


def test_http1_connect_keeps_a_cancel_that_meets_a_failure() -> None:
    pool = H1Pool("127.0.0.1", 9, ssl_context=None, timeout_s=30)
    out = asyncio.run(_cancel_as_the_connect_fails(pool._connect))
    assert isinstance(out, asyncio.CancelledError), out


class CancelToError:
    """An API whose first request turns its cancel into ApiUnavailable (a cancel that met a
    failed connect); later ones keep theirs."""

    def __init__(self) -> None:
        self.calls = 0

    async def server_minor(self) -> int | None:
        return 35

    async def stream_lines(self, path: str, **kw: Any) -> Any:
        self.calls += 1
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            if self.calls == 1:
                raise ApiUnavailable("connect: ConnectionRefusedError") from None
            raise
        yield b""  # pragma: no cover

    async def request(self, *args: Any, **kw: Any) -> Any:
        return await self.stream_lines("")


@pytest.mark.timeout(30)
def test_informer_stop_ends_a_watch_that_turned_the_cancel_into_an_error() -> None:
    api = CancelToError()
    inf = Informer(api, NODES, max_backoff_s=0.01)  # type: ignore[arg-type]

    async def run() -> None:
        await inf.start()
        while api.calls == 0:
            await asyncio.sleep(0.01)
        task = inf._task
        assert task is not None
        stopping = asyncio.create_task(inf.stop())
        await asyncio.wait({stopping}, timeout=10)
        assert stopping.done() and task.done(), "the informer retried on after its stop"
        task.cancel()  # the old stop's leftover, so that the loop can close
        await asyncio.wait({stopping, task}, timeout=5)

    asyncio.run(run())
