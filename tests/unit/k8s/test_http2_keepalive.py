"""HTTP/2 keepalive: a PING only after PING_IDLE_S without a frame from the server, and a
connection whose server stops answering is closed within PING_TIMEOUT_S of the ping.

The server here is the h2 library's server side over plain TCP on localhost (no TLS: the
keepalive does not depend on it); the client is nfd.k8s.http2.H2Connection with its keepalive
task started as H2Connection.open starts it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import h2.config
import h2.connection
import h2.events
import pytest

from nfd.k8s import http2


class _Server(asyncio.Protocol):
    """An HTTP/2 server that acknowledges PINGs (``answer``) or, once the preface is done,
    reads and says nothing (a dead peer behind a live TCP connection); counts the pings.
    ``chatter_s``: it sends a PING of its own that often (frames the client hears)."""

    def __init__(self, *, answer: bool, chatter_s: float = 0.0) -> None:
        self.answer = answer
        self.chatter_s = chatter_s
        self.pings = 0
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
        self.pings += sum(isinstance(e, h2.events.PingReceived) for e in events)
        out = self.h2.data_to_send()  # the SETTINGS ack, and the PING ack h2 queues by itself
        if self.answer or not self.pings:
            self.transport.write(out)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._chatter is not None:
            self._chatter.cancel()


async def _connect(server: _Server) -> tuple[http2.H2Connection, asyncio.AbstractServer]:
    loop = asyncio.get_running_loop()
    srv = await loop.create_server(lambda: server, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    conn = http2.H2Connection(loop, f"127.0.0.1:{port}")
    await loop.create_connection(lambda: conn, "127.0.0.1", port)
    conn._keepalive = loop.create_task(conn._keep_alive())
    return conn, srv


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http2, "PING_IDLE_S", 0.3)
    monkeypatch.setattr(http2, "PING_TIMEOUT_S", 0.3)


def test_an_idle_live_connection_pings_once_per_idle_period_and_stays_open(fast: None) -> None:
    async def main() -> tuple[int, bool, float]:
        server = _Server(answer=True)
        conn, srv = await _connect(server)
        t0 = time.monotonic()
        await asyncio.sleep(1.6)
        out = server.pings, conn.closed, time.monotonic() - t0
        await conn.close()
        srv.close()
        return out

    pings, closed, elapsed = asyncio.run(main())
    assert not closed
    # one per 0.3 s of silence (the ack is a frame: the next idle period starts from it)
    assert 3 <= pings <= elapsed / 0.3 + 1, pings


def test_a_connection_that_hears_frames_sends_no_ping(fast: None) -> None:
    async def main() -> tuple[int, bool]:
        server = _Server(answer=True, chatter_s=0.1)
        conn, srv = await _connect(server)
        await asyncio.sleep(1.2)
        out = server.pings, conn.closed
        await conn.close()
        srv.close()
        return out

    pings, closed = asyncio.run(main())
    assert (pings, closed) == (0, False)


def test_a_silent_peer_is_declared_dead_after_the_ping_timeout(fast: None) -> None:
    async def main() -> tuple[float, int]:
        server = _Server(answer=False)
        conn, srv = await _connect(server)
        t0 = time.monotonic()
        await asyncio.wait_for(conn._lost, timeout=5.0)
        out = time.monotonic() - t0, server.pings
        srv.close()
        return out

    took, pings = asyncio.run(main())
    # idle 0.3 s, then the unanswered ping times out 0.3 s later
    assert 0.5 <= took <= 1.5, took
    assert pings == 1
