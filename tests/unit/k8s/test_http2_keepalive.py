"""HTTP/2 keepalive: a PING only after PING_IDLE_S without a frame from the server, and a
connection whose server stops answering is closed within PING_TIMEOUT_S of the ping.

The server here is the h2 library's server side; the client is nfd.k8s.http2.H2Connection with
its keepalive task started as H2Connection.open starts it. They talk in memory on a virtual
clock (tests/support/virtualtime.py) with the real intervals (30 s, 15 s): what is asserted
about time holds however loaded the machine is (the chatter test failed at load average 4 when
it ran on the wall clock with 0.1 s between frames and 0.3 s of idleness)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any, TypeVar

import h2.config
import h2.connection
import h2.events
import pytest

from nfd.k8s import http2
from tests.support.virtualtime import VirtualTimeLoop, pipe

T = TypeVar("T")
IDLE, TIMEOUT = http2.PING_IDLE_S, http2.PING_TIMEOUT_S


class _Server(asyncio.Protocol):
    """An HTTP/2 server that acknowledges PINGs (``answer``) or, once the preface is done,
    reads and says nothing (a dead peer behind a live TCP connection); counts the pings.
    ``chatter_s``: it sends a PING of its own that often (frames the client hears)."""

    def __init__(self, *, answer: bool, chatter_s: float = 0.0) -> None:
        self.answer = answer
        self.chatter_s = chatter_s
        self.pings = 0
        self.ping_times: list[float] = []
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        self.transport: Any = None
        self._chatter: asyncio.Task[None] | None = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.h2.initiate_connection()
        transport.write(self.h2.data_to_send())
        if self.chatter_s:
            self._chatter = asyncio.get_running_loop().create_task(self._chat())

    async def _chat(self) -> None:
        while True:
            await asyncio.sleep(self.chatter_s)
            self.h2.ping(b"srv-ping")
            self.transport.write(self.h2.data_to_send())

    def data_received(self, data: bytes) -> None:
        events = self.h2.receive_data(data)
        for e in events:
            if isinstance(e, h2.events.PingReceived):
                self.pings += 1
                self.ping_times.append(asyncio.get_running_loop().time())
        out = self.h2.data_to_send()  # the SETTINGS ack, and the PING ack h2 queues by itself
        if self.answer or not self.pings:
            self.transport.write(out)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._chatter is not None:
            self._chatter.cancel()


async def _connect(server: _Server) -> http2.H2Connection:
    loop = asyncio.get_running_loop()
    conn = http2.H2Connection(loop, "apiserver.test:443")
    pipe(loop, conn, server)
    conn._keepalive = loop.create_task(conn._keep_alive())
    return conn


def _run(main: Callable[[], Awaitable[T]], monkeypatch: pytest.MonkeyPatch) -> T:
    """main() on a virtual clock, which the connection's own idle accounting reads too."""
    loop = VirtualTimeLoop()
    monkeypatch.setattr(http2, "time", SimpleNamespace(monotonic=loop.time))
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def test_an_idle_live_connection_pings_once_per_idle_period_and_stays_open(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> tuple[list[float], bool]:
        server = _Server(answer=True)
        conn = await _connect(server)
        await asyncio.sleep(10 * IDLE)
        out = server.ping_times, conn.closed
        await conn.close()
        return out

    times, closed = _run(main, monkeypatch)
    assert not closed
    # the first after IDLE of silence; then one per idle period (the ack is a frame: the next
    # period starts from it), checked every IDLE/3
    assert IDLE <= times[0] <= IDLE * 4 / 3, times
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert len(times) >= 7 and all(IDLE <= g <= IDLE * 4 / 3 for g in gaps), times


def test_a_connection_that_hears_frames_sends_no_ping(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> tuple[int, bool]:
        server = _Server(answer=True, chatter_s=IDLE * 0.9)  # a frame just inside every idle period
        conn = await _connect(server)
        await asyncio.sleep(10 * IDLE)
        out = server.pings, conn.closed
        await conn.close()
        return out

    assert _run(main, monkeypatch) == (0, False)


def test_a_silent_peer_is_declared_dead_after_the_ping_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> tuple[float, int]:
        server = _Server(answer=False)
        conn = await _connect(server)
        t0 = asyncio.get_running_loop().time()
        await asyncio.wait_for(conn._lost, timeout=10 * IDLE)
        return asyncio.get_running_loop().time() - t0, server.pings

    took, pings = _run(main, monkeypatch)
    # idle IDLE (noticed within IDLE/3), then the unanswered ping times out TIMEOUT later
    assert IDLE + TIMEOUT <= took <= IDLE * 4 / 3 + TIMEOUT, took
    assert pings == 1
