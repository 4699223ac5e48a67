"""HTTP/2 to the API server: one TLS connection carries all of a client's requests and watches.

client-go speaks HTTP/2 by default; over HTTP/1.1 (aiohttp) every open watch holds a connection
of its own and a write after an idle spell opens a new one (TLS handshake included). A masterless
worker holds three watches and writes its Node after each rule change: four connections per node
on the API server (20,000 at 5,000 nodes) and a handshake per worker per rule change. Over one
HTTP/2 connection that is one connection per node, kept open by the watches, so a write after a
rule change goes out at once.

The framing, HPACK and flow-control state machine is the ``h2`` library (sans-IO); this module
is the asyncio transport around it. A server that does not offer ``h2`` by ALPN gets
``H2NotNegotiated`` and the caller uses HTTP/1.1. Any connection failure, GOAWAY for a stream,
or reset stream raises ``H2StreamError`` (the request may not have been processed; the API
client reports it as ``ApiUnavailable``, as for a broken HTTP/1.1 connection).

Received data is acknowledged (the flow-control window reopened) only as the reader consumes
it, so a slow reader holds at most a window's worth per stream (STREAM_WINDOW).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from typing import Any

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import hpack

STREAM_WINDOW = 1 << 20  # bytes a stream may have in flight to us
CONNECTION_WINDOW = 16 << 20
PING_IDLE_S = 30.0  # as client-go's ReadIdleTimeout: a ping after this long without a frame
PING_TIMEOUT_S = 15.0  # no answer in this long: the connection is dead


class H2Error(Exception):
    pass


class H2NotNegotiated(H2Error):
    """The server did not select h2 by ALPN: use HTTP/1.1."""


class H2StreamError(H2Error):
    """The stream ended abnormally (reset, GOAWAY, connection lost)."""


_EOF = object()


class _PlainEncoder(hpack.Encoder):
    """HPACK without Huffman coding: the bearer token (never indexed, so sent whole with every
    request) cost ~0.5 ms of pure-Python Huffman coding per request; raw it is a copy, ~25% more
    header bytes."""

    def encode(self, headers: Any, huffman: bool = True) -> bytes:
        return super().encode(headers, huffman=False)


class _Framing(h2.connection.H2Connection):
    """h2's connection state machine, except that a GOAWAY does not end it at once.

    RFC 9113 6.8 lets the streams up to a GOAWAY's last stream id finish, and the API server
    sends one just before the answer it closes a connection with (a 401 to a bad token over
    HTTP/2: the client is to reconnect with fresh credentials). h2 4.x refuses every frame after
    a GOAWAY, so that answer was lost as a protocol error and the 401 never seen. New streams
    are refused by ``H2Connection.closed`` instead."""

    def _receive_goaway_frame(self, frame: Any) -> tuple[list[Any], list[Any]]:
        ev = h2.events.ConnectionTerminated()
        try:
            ev.error_code = h2.errors.ErrorCodes(frame.error_code)
        except ValueError:
            ev.error_code = frame.error_code
        ev.last_stream_id = frame.last_stream_id
        ev.additional_data = frame.additional_data or None
        return [], [ev]


class H2Stream:
    """One request's answer: ``await response()`` for the status and headers, then ``read()``."""

    __slots__ = ("id", "_conn", "_headers", "_chunks", "_wake", "_error", "_ended", "trailers")

    def __init__(self, conn: H2Connection, stream_id: int) -> None:
        self.id = stream_id
        self._conn = conn
        self._headers: asyncio.Future[list[tuple[str, str]]] = conn.loop.create_future()
        self._chunks: deque[Any] = deque()  # (bytes, flow-controlled length) or _EOF
        self._wake = asyncio.Event()
        self._error: BaseException | None = None
        self._ended = False  # the server's side is done (end of stream or reset)
        self.trailers: dict[str, str] = {}  # trailing headers (gRPC's status), once the body ended

    async def response(self) -> tuple[int, dict[str, str]]:
        headers = await self._headers
        out: dict[str, str] = {}
        status = 0
        for k, v in headers:
            if k == ":status":
                try:
                    status = int(v)
                except ValueError:
                    raise H2StreamError(f"invalid :status {v[:20]!r}") from None
            elif not k.startswith(":"):
                out[k] = f"{out[k]}, {v}" if k in out else v
        return status, out

    async def read(self) -> bytes:
        """The next chunk of the body; b"" at its end. Raises H2StreamError when it broke."""
        while not self._chunks:
            if self._error is not None:
                raise self._error
            self._wake.clear()
            await self._wake.wait()
        item = self._chunks.popleft()
        if item is _EOF:
            self._chunks.appendleft(item)
            return b""
        data, flow = item
        self._conn._consumed(self.id, flow)
        return bytes(data)

    async def read_all(self) -> bytes:
        parts = []
        while chunk := await self.read():
            parts.append(chunk)
        return b"".join(parts)

    def cancel(self) -> None:
        """Stop the stream (RST_STREAM CANCEL) unless it ended; safe to call more than once."""
        self._conn._cancel(self)

    # -- fed by the connection --
    def _on_headers(self, headers: list[tuple[str, str]]) -> None:
        if not self._headers.done():
            self._headers.set_result(headers)

    def _on_data(self, data: bytes, flow: int) -> None:
        self._chunks.append((data, flow))
        self._wake.set()

    def _on_end(self) -> None:
        self._ended = True
        self._chunks.append(_EOF)
        self._wake.set()

    def _on_error(self, err: BaseException) -> None:
        self._ended = True
        self._error = err
        if not self._headers.done():
            self._headers.set_exception(err)
            self._headers.exception()  # retrieved: no "never retrieved" warning when unread
        self._wake.set()


class H2Connection(asyncio.Protocol):
    """One client HTTP/2 connection (``await H2Connection.open(...)``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, authority: str, *, scheme: str = "https") -> None:
        self.loop = loop
        self.authority = authority
        self.scheme = scheme
        # Our request headers are built lowercase and valid, and the API server's are Go's: the
        # library's per-header validation and normalisation (pure Python) are skipped.
        config = h2.config.H2Configuration(
            client_side=True, header_encoding="utf-8", validate_outbound_headers=False,
            normalize_outbound_headers=False, validate_inbound_headers=False, normalize_inbound_headers=False,
        )
        self._h2 = _Framing(config=config)
        self._h2.encoder = _PlainEncoder()
        self._transport: asyncio.Transport | None = None
        self._streams: dict[int, H2Stream] = {}
        self._window_open = asyncio.Event()
        self._slots = asyncio.Event()
        self._slots.set()
        self.closed = False  # no new streams (GOAWAY received, lost, or closed)
        self._lost: asyncio.Future[None] = loop.create_future()
        self._last_frame = time.monotonic()
        self._ping: asyncio.Future[None] | None = None
        self._keepalive: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, host: str, port: int, *, ssl_context: ssl.SSLContext, timeout_s: float = 30.0) -> H2Connection:
        loop = asyncio.get_running_loop()
        authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        conn = cls(loop, authority)
        async with asyncio.timeout(timeout_s):
            await loop.create_connection(lambda: conn, host, port, ssl=ssl_context, server_hostname=host)
        assert conn._transport is not None
        sslobj = conn._transport.get_extra_info("ssl_object")
        if sslobj is None or sslobj.selected_alpn_protocol() != "h2":
            conn._transport.close()
            raise H2NotNegotiated(f"{authority}: the server did not negotiate h2")
        conn._keepalive = loop.create_task(conn._keep_alive())
        return conn

    @classmethod
    async def open_unix(cls, path: str, *, authority: str = "localhost", timeout_s: float = 30.0) -> H2Connection:
        """Cleartext HTTP/2 with prior knowledge on a unix socket (gRPC to the kubelet). No
        keepalive pings: a gRPC server counts idle pings as abuse and ends the connection, and a
        local socket that dies is noticed on the next call."""
        loop = asyncio.get_running_loop()
        conn = cls(loop, authority, scheme="http")
        async with asyncio.timeout(timeout_s):
            await loop.create_unix_connection(lambda: conn, path)
        return conn

    # -- asyncio.Protocol --
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._h2.local_settings = h2.settings.Settings(client=True, initial_values={
            h2.settings.SettingCodes.ENABLE_PUSH: 0,
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: STREAM_WINDOW,
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 100,
        })
        self._h2.initiate_connection()
        self._h2.increment_flow_control_window(CONNECTION_WINDOW - 65535)
        self._flush()

    def data_received(self, data: bytes) -> None:
        self._last_frame = time.monotonic()
        try:
            events = self._h2.receive_data(data)
        except h2.exceptions.ProtocolError as e:
            self._fail(H2StreamError(f"HTTP/2 protocol error from {self.authority}: {e}"))
            self._flush()
            if self._transport is not None:
                self._transport.close()
            return
        for ev in events:
            self._on_event(ev)
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(H2StreamError(f"connection to {self.authority} lost" + (f": {exc}" if exc else "")))
        if not self._lost.done():
            self._lost.set_result(None)
        if self._keepalive is not None:
            self._keepalive.cancel()

    def _fail(self, err: H2StreamError) -> None:
        self.closed = True
        for s in list(self._streams.values()):
            s._on_error(err)
        self._streams.clear()
        self._window_open.set()
        self._slots.set()
        if self._ping is not None and not self._ping.done():
            self._ping.set_exception(err)
            self._ping.exception()

    def _on_event(self, ev: Any) -> None:
        E = h2.events
        sid = getattr(ev, "stream_id", None)
        s = self._streams.get(sid) if sid is not None else None
        if isinstance(ev, E.ResponseReceived):
            if s is not None:
                s._on_headers([(str(k), str(v)) for k, v in ev.headers])
        elif isinstance(ev, E.DataReceived):
            if s is not None:
                s._on_data(ev.data, ev.flow_controlled_length)
            else:  # a stream we cancelled: give the window back
                self._h2.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        elif isinstance(ev, E.TrailersReceived):
            if s is not None:
                s.trailers.update((str(k), str(v)) for k, v in ev.headers)
        elif isinstance(ev, E.StreamEnded):
            if s is not None:
                s._on_end()
                self._forget(s)
        elif isinstance(ev, E.StreamReset):
            if s is not None:
                s._on_error(H2StreamError(f"stream reset by {self.authority} (error code {ev.error_code})"))
                self._forget(s)
        elif isinstance(ev, E.WindowUpdated | E.RemoteSettingsChanged):
            self._window_open.set()
            self._slots.set()
        elif isinstance(ev, E.ConnectionTerminated):
            self.closed = True
            last = ev.last_stream_id if ev.last_stream_id is not None else 0
            for other in list(self._streams.values()):
                if other.id > last:  # not processed: safe to send again elsewhere
                    other._on_error(H2StreamError(f"GOAWAY from {self.authority} before stream {other.id}"))
                    self._forget(other)
            if not self._streams and self._transport is not None:
                self._transport.close()
        elif isinstance(ev, E.PingAckReceived) and self._ping is not None and not self._ping.done():
            self._ping.set_result(None)

    def _forget(self, s: H2Stream) -> None:
        self._streams.pop(s.id, None)
        self._slots.set()
        if self.closed and not self._streams and self._transport is not None:
            self._transport.close()

    def _flush(self) -> None:
        data = self._h2.data_to_send()
        if data and self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    def _consumed(self, stream_id: int, flow: int) -> None:
        if flow and not self.closed:
            try:
                self._h2.acknowledge_received_data(flow, stream_id)
            except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
                return
            self._flush()

    def _cancel(self, s: H2Stream) -> None:
        if s.id in self._streams:
            self._streams.pop(s.id, None)
            self._slots.set()
            if self._transport is not None and not self._transport.is_closing():
                try:
                    self._h2.reset_stream(s.id, h2.errors.ErrorCodes.CANCEL)
                except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
                    pass
                self._flush()
                if self.closed and not self._streams:  # after GOAWAY, or retired: its last stream
                    self._transport.close()
        if not s._ended:
            s._on_error(H2StreamError("stream cancelled"))

    # -- requests --
    async def request(self, method: str, path: str, headers: list[tuple[str, str]], body: bytes | None) -> H2Stream:
        """Send a request; returns its stream (read the answer from it)."""
        while True:
            if self.closed:
                raise H2StreamError(f"connection to {self.authority} is closed")
            if self._h2.open_outbound_streams < self._h2.remote_settings.max_concurrent_streams:
                break
            self._slots.clear()
            await self._slots.wait()
        sid = self._h2.get_next_available_stream_id()
        stream = H2Stream(self, sid)
        self._streams[sid] = stream
        hdrs = [(":method", method), (":scheme", self.scheme), (":authority", self.authority), (":path", path)]
        hdrs += headers
        if body is not None:
            hdrs.append(("content-length", str(len(body))))
        self._h2.send_headers(sid, hdrs, end_stream=not body)
        self._flush()
        if body:
            try:
                await self._send_body(stream, body)
            except BaseException:  # cancelled or failed half-way: the stream must not linger
                self._cancel(stream)
                raise
        return stream

    async def _send_body(self, stream: H2Stream, body: bytes) -> None:
        view = memoryview(body)
        pos = 0
        while pos < len(view):
            if stream._ended or self.closed:
                raise stream._error or H2StreamError("stream closed while sending the body")
            try:
                window = min(self._h2.local_flow_control_window(stream.id), self._h2.max_outbound_frame_size)
            except h2.exceptions.StreamClosedError:
                raise stream._error or H2StreamError("stream closed while sending the body") from None
            if window <= 0:
                self._window_open.clear()
                await self._window_open.wait()
                continue
            chunk = view[pos:pos + window]
            self._h2.send_data(stream.id, bytes(chunk), end_stream=pos + len(chunk) >= len(view))
            pos += len(chunk)
            self._flush()

    async def _keep_alive(self) -> None:
        """A PING after PING_IDLE_S without a frame; no answer within PING_TIMEOUT_S: close."""
        while not self.closed:
            await asyncio.sleep(PING_IDLE_S / 3)
            if self.closed or time.monotonic() - self._last_frame < PING_IDLE_S:
                continue
            self._ping = self.loop.create_future()
            try:
                self._h2.ping(b"nfd-ping")
                self._flush()
                async with asyncio.timeout(PING_TIMEOUT_S):
                    await asyncio.shield(self._ping)
            except (TimeoutError, H2StreamError, h2.exceptions.ProtocolError):
                self._fail(H2StreamError(f"no answer to a ping from {self.authority} in {PING_TIMEOUT_S:g}s"))
                if self._transport is not None:
                    self._transport.abort()
                return

    async def close(self) -> None:
        if self._keepalive is not None:
            self._keepalive.cancel()
        if self._transport is None:
            return
        if not self._transport.is_closing():
            if not self.closed:
                self.closed = True
                try:
                    self._h2.close_connection()
                    self._flush()
                except h2.exceptions.ProtocolError:
                    pass
            self._transport.close()
        self._fail(H2StreamError("connection closed"))
        try:
            async with asyncio.timeout(5):
                await asyncio.shield(self._lost)
        except TimeoutError:
            self._transport.abort()
