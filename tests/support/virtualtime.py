"""An asyncio event loop on a virtual clock, for tests of timers (keepalives, timeouts, backoff).

Time moves only when every ready callback has run, and then straight to the next timer, so what
a test asserts about time holds on a loaded machine exactly as on an idle one, and a test of a
30 s keepalive takes milliseconds. There is no real waiting: protocols talk through ``pipe``
(in-memory transports whose writes arrive on the next loop iteration); real file descriptors
are only polled, never waited on. A loop with nothing to run and no timer raises instead of
hanging.

    loop = VirtualTimeLoop()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
"""

from __future__ import annotations

import asyncio
import selectors
from typing import Any


class _Selector(selectors.SelectSelector):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            raise RuntimeError("virtual time: nothing to run and no timer (the test waits for nothing)")
        self.now += timeout
        return ready


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """``time()`` is virtual; it starts at 0 and jumps to the next timer when the loop is idle."""

    def __init__(self) -> None:
        self._vselector = _Selector()
        super().__init__(self._vselector)

    def time(self) -> float:
        return self._vselector.now


class _PipeEnd(asyncio.Transport):
    def __init__(self, loop: asyncio.AbstractEventLoop, protocol: asyncio.Protocol) -> None:
        super().__init__()
        self._loop = loop
        self._protocol = protocol
        self.peer: _PipeEnd | None = None
        self._closing = False

    def write(self, data: Any) -> None:
        if self._closing or self.peer is None or self.peer._closing:
            return
        self._loop.call_soon(self.peer._protocol.data_received, bytes(data))

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._loop.call_soon(self._protocol.connection_lost, None)
        if self.peer is not None:
            self.peer.close()

    def abort(self) -> None:
        self.close()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


def pipe(loop: asyncio.AbstractEventLoop, a: asyncio.Protocol, b: asyncio.Protocol) -> tuple[_PipeEnd, _PipeEnd]:
    """Connect two protocols in memory: ``a``'s writes arrive at ``b`` and back."""
    ta, tb = _PipeEnd(loop, a), _PipeEnd(loop, b)
    ta.peer, tb.peer = tb, ta
    a.connection_made(ta)
    b.connection_made(tb)
    return ta, tb
