"""``/healthz`` (and ``/metrics``) served from a thread of its own, with a liveness that means
something: the event loop's heartbeat.

On the event loop, a probe waits for whatever the loop is doing: rule evaluation, decoding a
burst of large objects, a full garbage collection. Its own thread gets the interpreter lock
within ``sys.getswitchinterval()`` (5 ms) of asking, each time it needs it (accept, read,
write), whatever pure-Python work the loop thread is doing; so the answer comes in
milliseconds. Answering from a thread alone would say "alive" for a loop that is stuck for
good, so the loop beats (``Heartbeat.start``) and ``/healthz`` fails (503) once the last beat is
older than ``stale_s``: the kubelet then restarts a master whose loop is truly stuck.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time

from nfd.common.httpserver import ListenError, Route, response

log = logging.getLogger(__name__)

#: /healthz fails once the event loop has not run for this long. Rule evaluation pauses at
#: least every 20 ms plus one rule (nfd.master.evalsched), so only a loop that is stuck gets
#: here; the kubelet's default liveness probe then restarts the process after 3 more periods.
LOOP_STALE_S = 15.0
BEAT_S = 0.5
# A client gets this long to send its request (probes send it at once); then the connection is
# dropped, so a slow or idle client cannot hold up the next probe for long.
REQUEST_TIMEOUT_S = 2.0
MAX_CONNECTIONS = 16  # handled at once; more are closed unanswered


class Heartbeat:
    """The event loop's last sign of life (time.monotonic()), read from the probe thread."""

    def __init__(self, *, period_s: float = BEAT_S) -> None:
        self.period_s = period_s
        self.last = time.monotonic()
        self._handle: asyncio.TimerHandle | None = None

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Beat every ``period_s`` on ``loop`` (the running loop by default) until stop()."""
        loop = loop or asyncio.get_running_loop()

        def beat() -> None:
            self.last = time.monotonic()
            self._handle = loop.call_later(self.period_s, beat)

        beat()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def age(self) -> float:
        return time.monotonic() - self.last


def liveness_route(heartbeat: Heartbeat, *, stale_s: float = LOOP_STALE_S) -> Route:
    """200 "ok" while the loop beats; 503 naming how long it has not once it is ``stale_s`` late."""

    def handler() -> tuple[int, str, bytes]:
        age = heartbeat.age()
        if age > stale_s:
            return 503, "text/plain; charset=utf-8", f"event loop stalled for {age:.1f}s\n".encode()
        return 200, "text/plain; charset=utf-8", b"ok"

    return handler


class ProbeServer:
    """The routes on ``port``, answered from a daemon thread (one short thread per connection).
    Routes run in those threads: they must only read what the loop writes."""

    def __init__(self, port: int, routes: dict[str, Route], *, host: str | None = None,
                 heartbeat: Heartbeat | None = None) -> None:
        self.routes = routes
        self.heartbeat = heartbeat  # stopped with the server
        try:
            self._sock = socket.create_server((host or "", port), reuse_port=False, backlog=64)
        except OSError as e:
            raise ListenError(host, port, e) from e
        self._sock.settimeout(0.5)  # to see close()
        self.port: int = self._sock.getsockname()[1]
        self._closed = threading.Event()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._thread = threading.Thread(target=self._accept_loop, name="probe-server", daemon=True)
        self._thread.start()
        log.info("http server listening on port %d", self.port)

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._closed.is_set():
                    return
                time.sleep(0.05)  # EMFILE and the like: try again shortly
                continue
            if not self._slots.acquire(blocking=False):
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(REQUEST_TIMEOUT_S)
            buf = b""
            while b"\r\n\r\n" not in buf and b"\n\n" not in buf and len(buf) < 16384:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                buf += chunk
            line = buf.split(b"\n", 1)[0].decode("latin-1")
            conn.sendall(response(self.routes, line))
        except OSError:
            pass
        except Exception:
            log.exception("http handler failed")
        finally:
            conn.close()
            self._slots.release()

    @property
    def sockets(self) -> list[socket.socket]:
        """As asyncio.Server's: ``sockets[0].getsockname()[1]`` is the port."""
        return [self._sock]

    def close(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.stop()
        self._closed.set()
        self._sock.close()
        self._thread.join(timeout=2)
