"""A thin async Kubernetes API client over aiohttp: raw JSON in, raw JSON out.

Generated models are deliberately avoided on hot paths: the master handles thousands of
NodeFeatures of tens of kB each, and dicts are what we patch and compare anyway.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import ssl
import zlib
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from nfd.common import jsoncodec
from nfd.k8s.config import ConnectionConfig, load_kubeconfig
from nfd.k8s.errors import ApiError, ApiUnavailable, error_for
from nfd.k8s.ratelimit import TokenBucket

if TYPE_CHECKING:
    import aiohttp

    from nfd.k8s.http2 import H2Connection

log = logging.getLogger("nfd.k8s")

JSON = "application/json"
#: A watch line's raw bytes -> an event to yield instead of decoding it, or None (decode).
Peek = Callable[[bytes], "dict[str, Any] | None"]
MAX_RETRY_AFTER_ATTEMPTS = 5
MAX_RETRY_AFTER_S = 5.0
PATCH_TYPES = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}


# asyncio's TLS transport zero-fills a 256 KiB read buffer for every connection (CPython 3.11+,
# SSLProtocol.max_size). A masterless worker holds four (three watches and its writes): 1 MiB
# of RSS, and 0.1-0.2 ms of CPU per new connection, for reads that a 64 KiB buffer serves as well
# (TLS records are at most 16 KiB; a large list takes more reads of the same total cost).
SSL_READ_BUFFER = 64 * 1024


def _trim_ssl_read_buffer() -> None:
    from asyncio import sslproto

    proto = getattr(sslproto, "SSLProtocol", None)
    if proto is not None and isinstance(getattr(proto, "max_size", None), int) and proto.max_size > SSL_READ_BUFFER:
        proto.max_size = SSL_READ_BUFFER


_trim_ssl_read_buffer()


class ApiClient:
    def __init__(
        self,
        config: ConnectionConfig,
        *,
        qps: float = 50.0,
        burst: int = 100,
        user_agent: str = "nfd",
        timeout_s: float = 30.0,
        compression: bool = False,
        http2: bool = False,
    ) -> None:
        """``http2``: every request and watch over one HTTP/2 connection (nfd.k8s.http2), as
        client-go does; HTTP/1.1 (aiohttp) when the server does not offer h2, or when the
        environment sets ``DISABLE_HTTP2`` (as client-go honours it)."""
        self.config = config
        self.http2 = http2 and config.server.startswith("https") and not os.environ.get("DISABLE_HTTP2")
        self._h2: H2Connection | None = None
        self._h2_lock = asyncio.Lock()
        self._h2_off = False
        self._h2_closing: set[asyncio.Task[None]] = set()
        self._h2_base = urlsplit(config.server).path.rstrip("/")  # a server URL may carry a path prefix
        # Uncompressed by default: gzip of a large list costs the API server more CPU than the
        # bytes cost inside a cluster (a 5,000-NodeFeature list: ~20% more apiserver CPU).
        self.compression = compression
        self.limiter = TokenBucket(qps=qps, burst=burst)
        self.user_agent = user_agent
        self.timeout_s = timeout_s
        self.metrics: Counter[str] = Counter()
        self._session: aiohttp.ClientSession | None = None
        self._server_minor: int | None = None
        self._server_minor_known = False
        self._server_minor_lock = asyncio.Lock()  # the informers of one client ask at once

    @classmethod
    async def from_kubeconfig(
        cls,
        path: str | None = None,
        *,
        qps: float = 50.0,
        burst: int = 100,
        user_agent: str = "nfd",
        context: str | None = None,
        http2: bool = False,
    ) -> ApiClient:
        return cls(load_kubeconfig(path, context=context), qps=qps, burst=burst, user_agent=user_agent,
                   http2=http2)

    @property
    def namespace(self) -> str | None:
        return self.config.namespace

    def _get_session(self) -> aiohttp.ClientSession:
        import aiohttp  # HTTP/1.1 only: an HTTP/2 client (the worker's) never loads it

        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(ssl=self.config.ssl_context(), limit=100)
            self._session = aiohttp.ClientSession(
                base_url=None, connector=connector, json_serialize=lambda o: jsoncodec.dumps(o).decode()
            )
        return self._session

    async def _h2_connection(self) -> H2Connection | None:
        """The client's HTTP/2 connection (opened on first use and after it closed), or None
        for HTTP/1.1. Raises ApiUnavailable when the server cannot be reached."""
        if not self.http2 or self._h2_off:
            return None
        conn = self._h2
        if conn is not None and not conn.closed:
            return conn
        from nfd.k8s.http2 import H2Connection, H2NotNegotiated

        async with self._h2_lock:
            conn = self._h2
            if conn is not None and not conn.closed:
                return conn
            if conn is not None:
                closing = asyncio.get_running_loop().create_task(conn.close())  # its streams already failed
                self._h2_closing.add(closing)
                closing.add_done_callback(self._h2_closing.discard)
                self._h2 = None
            u = urlsplit(self.config.server)
            ctx = self.config.ssl_context()
            if not isinstance(ctx, ssl.SSLContext):
                self._h2_off = True
                return None
            ctx.set_alpn_protocols(["h2", "http/1.1"])
            host = u.hostname or "localhost"
            try:
                self._h2 = await H2Connection.open(host, u.port or 443, ssl_context=ctx, timeout_s=self.timeout_s)
            except H2NotNegotiated:
                log.info("%s does not offer HTTP/2: using HTTP/1.1", self.config.server)
                self._h2_off = True
                return None
            except (OSError, TimeoutError) as e:  # ssl.SSLError is an OSError
                raise ApiUnavailable(f"connect {self.config.server}: {e.__class__.__name__}: {e}") from e
            return self._h2

    def _h2_target(self, path: str, params: dict[str, Any] | None) -> str:
        q = _params(params)
        return self._h2_base + path + ("?" + urlencode(q) if q else "")

    def _h2_headers(self, content_type: str | None, accept: str) -> list[tuple[str, str]]:
        return [(k.lower(), v) for k, v in self._headers(content_type, accept).items()]

    def _headers(self, content_type: str | None, accept: str) -> dict[str, str]:
        h = {"Accept": accept, "User-Agent": self.user_agent}
        if not self.compression:
            h["Accept-Encoding"] = "identity"
        if content_type:
            h["Content-Type"] = content_type
        token = self.config.bearer_token()
        if token:
            h["Authorization"] = f"Bearer {token}"
        return h

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        accept: str = JSON,
        verb: str | None = None,
        timeout_s: float | None = None,
        decode: bool = True,
        started: asyncio.Event | None = None,
    ) -> Any:
        """One request. Returns the parsed JSON body (the raw bytes with ``decode=False``); raises
        ApiError subclasses or ApiUnavailable. ``started`` is set once the answer's headers are in
        (the request has reached the server), for callers that overlap their work with its body.

        A 429 with Retry-After (API priority and fairness, or "storage is (re)initializing" right
        after a CRD is registered or the server restarts) is retried here, as client-go does.
        """
        data: bytes | None = None
        if body is not None:
            data = body if isinstance(body, bytes) else jsoncodec.dumps(body)
        for attempt in range(MAX_RETRY_AFTER_ATTEMPTS + 1):
            await self.limiter.acquire()
            self.metrics[verb or method.upper()] += 1
            status, raw, retry_after = await self._once(
                method, path, params=params, data=data, content_type=content_type, accept=accept,
                timeout_s=timeout_s, started=started,
            )
            if status < 400 and not decode:
                return raw
            payload = _decode(raw)
            if status < 400:
                return payload
            if status == 429 and retry_after is not None and attempt < MAX_RETRY_AFTER_ATTEMPTS:
                await asyncio.sleep(retry_delay(retry_after))
                continue
            raise error_for(status, payload)
        raise AssertionError("unreachable")

    async def _once(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None,
        data: bytes | None,
        content_type: str,
        accept: str,
        timeout_s: float | None,
        started: asyncio.Event | None = None,
    ) -> tuple[int, bytes, float | None]:
        conn = await self._h2_connection()
        if conn is not None:
            return await self._once_h2(conn, method, path, params=params, data=data, content_type=content_type,
                                       accept=accept, timeout_s=timeout_s, started=started)
        session = self._get_session()
        import aiohttp  # loaded by _get_session: the HTTP/1.1 path only

        try:
            async with session.request(
                method,
                self.config.server + path,
                params=_params(params),
                data=data,
                headers=self._headers(content_type if data is not None else None, accept),
                timeout=aiohttp.ClientTimeout(total=timeout_s or self.timeout_s),
            ) as resp:
                if started is not None:
                    started.set()
                raw = await resp.read()
                return resp.status, raw, _retry_after(resp.headers.get("Retry-After"))
        except (TimeoutError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as e:
            raise ApiUnavailable(f"{method} {path}: {e.__class__.__name__}: {e}") from e

    async def _once_h2(
        self,
        conn: H2Connection,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None,
        data: bytes | None,
        content_type: str,
        accept: str,
        timeout_s: float | None,
        started: asyncio.Event | None,
    ) -> tuple[int, bytes, float | None]:
        from nfd.k8s.http2 import H2StreamError

        stream = None
        try:
            async with asyncio.timeout(timeout_s or self.timeout_s):
                stream = await conn.request(
                    method.upper(), self._h2_target(path, params),
                    self._h2_headers(content_type if data is not None else None, accept), data,
                )
                status, headers = await stream.response()
                if started is not None:
                    started.set()
                raw = _decoded_body(await stream.read_all(), headers.get("content-encoding"))
                return status, raw, _retry_after(headers.get("retry-after"))
        except (TimeoutError, H2StreamError, zlib.error) as e:
            raise ApiUnavailable(f"{method} {path}: {e.__class__.__name__}: {e}") from e
        finally:
            if stream is not None:
                stream.cancel()

    async def _stream_lines_h2(
        self, conn: H2Connection, path: str, *, params: dict[str, Any] | None, accept: str, timeout_s: float,
        peek: Peek | None,
    ) -> AsyncGenerator[dict[str, Any], None]:
        from nfd.k8s.http2 import H2StreamError

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        stream = None
        try:
            async with asyncio.timeout(timeout_s):
                stream = await conn.request("GET", self._h2_target(path, params), self._h2_headers(None, accept), None)
                status, headers = await stream.response()
                if status >= 400:
                    raise error_for(status, _decode(_decoded_body(await stream.read_all(), headers.get("content-encoding"))))
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if headers.get("content-encoding") == "gzip" else None
            buf = b""
            while True:
                left = deadline - loop.time()
                if left <= 0:
                    raise TimeoutError
                async with asyncio.timeout_at(deadline):  # no task per chunk, as wait_for makes
                    chunk = await stream.read()
                if not chunk:
                    break
                if inflate is not None:
                    chunk = inflate.decompress(chunk)
                lines, buf = _split_lines(buf + chunk)
                for line in lines:
                    yield _event(line, peek)
            if buf.strip():
                yield _event(buf, peek)
        except (TimeoutError, H2StreamError, zlib.error) as e:
            raise ApiUnavailable(f"WATCH {path}: {e.__class__.__name__}: {e}") from e
        finally:
            if stream is not None:
                stream.cancel()

    async def stream_lines(
        self,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        accept: str = JSON,
        timeout_s: float = 600.0,
        peek: Peek | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """A watch stream: yields each JSON event line. Raises like `request` on failure to open.

        ``peek`` sees each raw line first; what it returns stands in for the line, which is then
        not decoded (None: decode it). It lets a caller skip events it can tell from their first
        bytes, such as the echo of its own write.
        """
        await self.limiter.acquire()
        self.metrics["WATCH"] += 1
        conn = await self._h2_connection()
        if conn is not None:
            gen = self._stream_lines_h2(conn, path, params=params, accept=accept, timeout_s=timeout_s, peek=peek)
            try:
                async for ev in gen:
                    yield ev
            finally:
                await gen.aclose()  # now, not when collected: its stream is reset here
            return
        session = self._get_session()
        import aiohttp  # loaded by _get_session: the HTTP/1.1 path only

        try:
            async with session.get(
                self.config.server + path,
                params=_params(params),
                headers=self._headers(None, accept),
                timeout=aiohttp.ClientTimeout(total=timeout_s, sock_read=timeout_s),
            ) as resp:
                if resp.status >= 400:
                    raise error_for(resp.status, _decode(await resp.read()))
                buf = b""
                async for chunk in resp.content.iter_any():
                    lines, buf = _split_lines(buf + chunk)
                    for line in lines:
                        yield _event(line, peek)
                if buf.strip():
                    yield _event(buf, peek)
        except (TimeoutError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as e:
            raise ApiUnavailable(f"WATCH {path}: {e.__class__.__name__}: {e}") from e

    async def server_minor(self) -> int | None:
        """The API server's minor version (``/version``), asked once; None when unknown.
        Callers that ask while the question is out wait for its answer (one GET, not one each)."""
        if self._server_minor_known:
            return self._server_minor
        async with self._server_minor_lock:
            if not self._server_minor_known:
                try:
                    info = await self.request("GET", "/version", verb="GET")
                except (ApiError, ApiUnavailable):
                    return None  # asked again next time
                digits = "".join(ch for ch in str((info or {}).get("minor", "")) if ch.isdigit())
                self._server_minor = int(digits) if digits else None
                self._server_minor_known = True
        return self._server_minor

    async def close(self) -> None:
        if self._h2 is not None:
            await self._h2.close()
            self._h2 = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> ApiClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _decode(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return jsoncodec.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


def _event(line: bytes, peek: Peek | None) -> Any:
    if peek is not None:
        stand_in = peek(line)
        if stand_in is not None:
            return stand_in
    return jsoncodec.loads(line)


def _split_lines(buf: bytes) -> tuple[list[bytes], bytes]:
    """The complete non-blank lines of a watch stream's buffer, and the partial rest."""
    start = 0
    lines = []
    while (end := buf.find(b"\n", start)) >= 0:
        line = buf[start:end]
        start = end + 1
        if line.strip():
            lines.append(line)
    return lines, buf[start:] if start else buf


def _decoded_body(raw: bytes, encoding: str | None) -> bytes:
    """An HTTP/2 body as aiohttp would give it (gzip undone; the API server sends no other)."""
    if encoding == "gzip" and raw:
        return zlib.decompress(raw, 16 + zlib.MAX_WBITS)
    return raw


def retry_delay(retry_after: float) -> float:
    """How long to wait before retrying a 429: Retry-After, plus up to as much again at random.
    Thousands of clients refused together (API Priority and Fairness puts all of a DaemonSet's
    workers in one flow) would otherwise all come back in the same instant and be refused again:
    5,000 masterless workers after a rule change sent 14 PATCHes each, 70,000 refused."""
    base = min(retry_after, MAX_RETRY_AFTER_S)
    return base + random.uniform(0.0, max(base, 0.1))


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _params(params: dict[str, Any] | None) -> dict[str, str] | None:
    if not params:
        return None
    out: dict[str, str] = {}
    for k, v in params.items():
        if v is None:
            continue
        out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out
