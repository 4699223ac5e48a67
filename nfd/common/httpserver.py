"""A tiny asyncio HTTP server for ``/healthz`` and ``/metrics`` on one port, used by all four
processes (upstream serves both on one port, default 8080).

Node agents must stay small: this avoids aiohttp.web and http.server threads. It serves one
request per connection (probes and Prometheus scrapes do not need keep-alive).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

Route = Callable[[], tuple[int, str, bytes]]


def metrics_route(registry: object) -> Route:
    def handler() -> tuple[int, str, bytes]:
        # deferred: prometheus_client is 18 ms (56 modules) of the worker daemon's start-up; the
        # daemon serves its HTTP endpoints here but renders its own /metrics (nfd/worker/metrics.py)
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return 200, CONTENT_TYPE_LATEST, generate_latest(registry)  # type: ignore[arg-type]

    return handler


def text_route(render: Callable[[], str], content_type: str) -> Route:
    """A route serving text rendered on each request (the worker's hand-rolled exposition)."""

    def handler() -> tuple[int, str, bytes]:
        return 200, content_type, render().encode()

    return handler


def healthz() -> tuple[int, str, bytes]:
    return 200, "text/plain; charset=utf-8", b"ok"


_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 400: "Bad Request", 503: "Service Unavailable"}


def response(routes: dict[str, Route], request_line: str) -> bytes:
    """The whole HTTP response to one request line (shared with nfd.common.probes)."""
    parts = request_line.split()
    status, ctype, body = 400, "text/plain", b"bad request\n"
    if len(parts) >= 2:
        method, target = parts[0], parts[1].split("?", 1)[0]
        route = routes.get(target)
        if route is None:
            status, body = 404, b"not found\n"
        elif method not in ("GET", "HEAD"):
            status, body = 405, b"method not allowed\n"
        else:
            status, ctype, body = route()
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\nContent-Type: {ctype}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    # HEAD: the length GET would send, no body
    return head.encode("latin-1") + (b"" if parts[:1] == ["HEAD"] else body)


async def _handle(
    routes: dict[str, Route], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        async with asyncio.timeout(10):
            line = await reader.readline()
        while True:  # drain headers
            async with asyncio.timeout(10):
                h = await reader.readline()
            if h in (b"\r\n", b"\n", b""):
                break
        writer.write(response(routes, line.decode("latin-1")))
        await writer.drain()
    except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
        pass
    except Exception:
        log.exception("http handler failed")
    finally:
        writer.close()


class ListenError(OSError):
    """The port cannot be opened (in use, not allowed): the process says so in one line and exits
    1, as upstream's daemons do, instead of a traceback."""

    def __init__(self, host: str | None, port: int, err: OSError) -> None:
        super().__init__(f"cannot listen on {host or ''}:{port}: {err.strerror or err}")


async def serve(port: int, routes: dict[str, Route], *, host: str | None = None) -> asyncio.Server:
    """Start serving on ``port`` (0 picks a free port: see ``server.sockets``)."""
    try:
        server = await asyncio.start_server(lambda r, w: _handle(routes, r, w), host=host, port=port)
    except OSError as e:
        raise ListenError(host, port, e) from e
    log.info("http server listening on port %d", server.sockets[0].getsockname()[1])
    return server
