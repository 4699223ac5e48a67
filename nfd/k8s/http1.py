"""HTTP/1.1 to the API server where HTTP/2 is not to be had: an ``http://`` server (``kubectl
proxy``), a server whose TLS does not offer ``h2``, or ``DISABLE_HTTP2`` set (as client-go
honours it).

Standard library only (asyncio streams), with the same stream interface as nfd/k8s/http2.py
(``request`` gives a stream; ``response()``, ``read()``, ``read_all()``, ``cancel()``), so the API
client has one code path for both. Idle connections are kept for the next request; a watch holds
its connection until it ends. A kept connection that the server closed meanwhile (Go's idle
timeout) is noticed on the next request, which is then sent once more on a new connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl

MAX_IDLE = 4  # kept-alive connections held for reuse
CHUNK = 64 * 1024


class H1Error(Exception):
    """The connection failed or the server's answer is not HTTP/1.1 we can read."""


class _Stale(H1Error):
    """A reused connection was closed by the server before it answered: safe to send again."""


class H1Stream:
    """One request's answer on one connection."""

    __slots__ = ("_pool", "_reader", "_writer", "status", "headers", "_left", "_chunked", "_done", "_reusable")

    def __init__(self, pool: H1Pool, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._pool = pool
        self._reader = reader
        self._writer = writer
        self.status = 0
        self.headers: dict[str, str] = {}
        self._left: int | None = None  # Content-Length still to read; None: chunked or until EOF
        self._chunked = False
        self._done = False
        self._reusable = False

    async def _read_head(self, *, reused: bool) -> None:
        try:
            line = await self._reader.readline()
        except (OSError, asyncio.IncompleteReadError) as e:
            raise (_Stale if reused else H1Error)(f"connection lost: {e}") from e
        if not line:
            raise (_Stale if reused else H1Error)("connection closed before the answer")
        parts = line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise H1Error(f"not an HTTP/1.1 status line: {line[:60]!r}")
        try:
            self.status = int(parts[1])
        except ValueError:
            raise H1Error(f"invalid status {parts[1][:20]!r}") from None
        while True:
            h = await self._reader.readline()
            if h in (b"\r\n", b"\n"):
                break
            if not h:
                raise H1Error("connection closed in the answer's headers")
            k, _, v = h.decode("latin-1").partition(":")
            k, v = k.strip().lower(), v.strip()
            self.headers[k] = f"{self.headers[k]}, {v}" if k in self.headers else v
        keep = self.headers.get("connection", "").lower() != "close" and parts[0] == b"HTTP/1.1"
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            self._chunked = True
            self._reusable = keep
        elif "content-length" in self.headers:
            try:
                self._left = int(self.headers["content-length"])
            except ValueError:
                raise H1Error(f"invalid Content-Length {self.headers['content-length'][:20]!r}") from None
            self._reusable = keep
        if self.status in (204, 304) or self._left == 0:
            self._left = 0
            self._finish()

    async def response(self) -> tuple[int, dict[str, str]]:
        return self.status, self.headers

    async def read(self) -> bytes:
        """The next chunk of the body; b"" at its end. Raises H1Error when it broke."""
        if self._done:
            return b""
        try:
            if self._chunked:
                size_line = await self._reader.readline()
                try:
                    size = int(size_line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise H1Error(f"invalid chunk size {size_line[:20]!r}") from None
                if size == 0:
                    while (await self._reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    self._finish()
                    return b""
                data = await self._reader.readexactly(size + 2)
                return data[:-2]
            if self._left is None:  # until the server closes
                data = await self._reader.read(CHUNK)
                if not data:
                    self._finish()
                return data
            data = await self._reader.read(min(self._left, CHUNK))
            if not data:
                raise H1Error(f"connection closed with {self._left} bytes of the body unread")
            self._left -= len(data)
            if self._left == 0:
                self._finish()
            return data
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as e:
            self._reusable = False
            self.cancel()
            raise H1Error(f"connection lost: {e}") from e

    async def read_all(self) -> bytes:
        parts = []
        while chunk := await self.read():
            parts.append(chunk)
        return b"".join(parts)

    def _finish(self) -> None:
        if not self._done:
            self._done = True
            self._pool._release(self._reader, self._writer, reusable=self._reusable)

    def cancel(self) -> None:
        """Stop reading; a connection with its answer unread is closed. Safe to call twice."""
        if not self._done:
            self._reusable = False
            self._finish()


class H1Pool:
    """Connections to one server, kept alive between requests."""

    def __init__(self, host: str, port: int, *, ssl_context: ssl.SSLContext | None, timeout_s: float = 30.0) -> None:
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.timeout_s = timeout_s
        self.authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._open: set[asyncio.StreamWriter] = set()
        self.closed = False

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            async with asyncio.timeout(self.timeout_s):
                reader, writer = await asyncio.open_connection(
                    self.host, self.port, ssl=self.ssl_context, limit=CHUNK * 4,
                    server_hostname=self.host if self.ssl_context else None)
        except (OSError, TimeoutError) as e:
            raise H1Error(f"connect {self.authority}: {e.__class__.__name__}: {e}") from e
        self._open.add(writer)
        return reader, writer

    async def request(self, method: str, path: str, headers: list[tuple[str, str]], body: bytes | None) -> H1Stream:
        """Send a request; returns its stream once the answer's headers are in."""
        head = [f"{method} {path} HTTP/1.1", f"host: {self.authority}"]
        head += [f"{k}: {v}" for k, v in headers]
        if body is not None or method in ("POST", "PUT", "PATCH"):
            head.append(f"content-length: {len(body or b'')}")
        msg = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b"")
        while True:
            reused = bool(self._idle)
            reader, writer = self._idle.pop() if reused else await self._connect()
            stream = H1Stream(self, reader, writer)
            try:
                writer.write(msg)
                await writer.drain()
                await stream._read_head(reused=reused)
                return stream
            except _Stale:
                self._drop(writer)
                continue  # the server closed it while idle: once more on a new connection
            except OSError as e:
                self._drop(writer)
                if reused:
                    continue
                raise H1Error(f"{method} {path}: {e.__class__.__name__}: {e}") from e
            except BaseException:
                self._drop(writer)
                raise

    def _release(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, reusable: bool) -> None:
        if reusable and not self.closed and not writer.is_closing() and len(self._idle) < MAX_IDLE:
            self._idle.append((reader, writer))
        else:
            self._drop(writer)

    def _drop(self, writer: asyncio.StreamWriter) -> None:
        self._open.discard(writer)
        writer.close()

    async def close(self) -> None:
        self.closed = True
        self._idle.clear()
        writers, self._open = self._open, set()
        for w in writers:
            w.close()
        for w in writers:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await w.wait_closed()
