"""A thin async Kubernetes API client: raw JSON in, raw JSON out, over one HTTP/2 connection.

Generated models are deliberately avoided on hot paths: the master handles thousands of
NodeFeatures of tens of kB each, and dicts are what we patch and compare anyway.

Every process (worker, master, gc, topology-updater, the CLI) talks HTTP/2 (nfd/k8s/http2.py)
as client-go does: all requests and watches of a process share one TLS connection. HTTP/1.1
(nfd/k8s/http1.py, standard library) serves ``http://`` servers, servers that do not offer h2,
and ``DISABLE_HTTP2``. ``benchmarks/bench_transport.py`` compares the candidates.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import ssl
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from nfd.common import jsoncodec
from nfd.k8s.config import ConnectionConfig, load_kubeconfig
from nfd.k8s.errors import ApiError, ApiUnavailable, error_for
from nfd.k8s.execauth import ExecError
from nfd.k8s.http1 import H1Error, H1Pool
from nfd.k8s.http2 import H2Connection, H2NotNegotiated, H2StreamError
from nfd.k8s.ratelimit import TokenBucket

if TYPE_CHECKING:
    from nfd.k8s.http1 import H1Pool
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
        http2: bool = True,
    ) -> None:
        """``http2``: every request and watch over one HTTP/2 connection (nfd.k8s.http2), as
        client-go does; HTTP/1.1 (nfd.k8s.http1) when the server does not offer h2, when it is
        ``http://``, or when the environment sets ``DISABLE_HTTP2`` (as client-go honours it)."""
        self.config = config
        self.http2 = http2 and config.server.startswith("https") and not os.environ.get("DISABLE_HTTP2")
        self._h2: H2Connection | None = None
        self._h2_lock = asyncio.Lock()
        self._h2_off = not self.http2
        self._h2_generation = 0  # the exec plugin's certificate generation the connection was opened with
        self._h2_closing: set[asyncio.Task[None]] = set()
        self._h1: H1Pool | None = None
        self._ctx: tuple[int, ssl.SSLContext | None] | None = None
        u = urlsplit(config.server)
        self._base = u.path.rstrip("/")  # a server URL may carry a path prefix
        self._host = u.hostname or "localhost"
        self._port = u.port or (443 if u.scheme == "https" else 80)
        # Uncompressed by default: gzip of a large list costs the API server more CPU than the
        # bytes cost inside a cluster (a 5,000-NodeFeature list: ~20% more apiserver CPU).
        self.compression = compression
        self.limiter = TokenBucket(qps=qps, burst=burst)
        self.user_agent = user_agent
        self.timeout_s = timeout_s
        self.metrics: Counter[str] = Counter()
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
        http2: bool = True,
    ) -> ApiClient:
        return cls(load_kubeconfig(path, context=context), qps=qps, burst=burst, user_agent=user_agent,
                   http2=http2)

    @property
    def namespace(self) -> str | None:
        return self.config.namespace

    async def _connection(self) -> H2Connection | H1Pool:
        """The connection for the next request: HTTP/2 (opened on first use and after it closed)
        or the HTTP/1.1 pool. Raises ApiUnavailable when the server cannot be reached."""
        plugin = self.config.exec_plugin
        if plugin is not None:
            await self._credential()  # a client certificate from the plugin goes into the TLS context
        if not self._h2_off:
            conn = self._h2
            if conn is not None and not conn.closed and (plugin is None or plugin.generation == self._h2_generation):
                return conn
            h2conn = await self._h2_connection()
            if h2conn is not None:
                return h2conn
        pool = self._h1
        if pool is None or (plugin is not None and plugin.generation != self._h2_generation):
            if pool is not None:
                self._retire(pool.close())
            pool = self._h1 = H1Pool(self._host, self._port, ssl_context=self._tls(), timeout_s=self.timeout_s)
            self._h2_generation = plugin.generation if plugin is not None else 0
        return pool

    def _tls(self) -> ssl.SSLContext | None:
        """The TLS context (None for http://), built once per client certificate: loading a CA
        store costs milliseconds and the HTTP/1.1 fallback after a failed h2 offer reuses it."""
        plugin = self.config.exec_plugin
        generation = plugin.generation if plugin is not None else 0
        if self._ctx is None or self._ctx[0] != generation:
            ctx = self.config.ssl_context()
            self._ctx = (generation, ctx if isinstance(ctx, ssl.SSLContext) else None)
        return self._ctx[1]

    def _retire(self, closing: Any) -> None:
        task = asyncio.get_running_loop().create_task(closing)
        self._h2_closing.add(task)
        task.add_done_callback(self._h2_closing.discard)

    async def _h2_connection(self) -> H2Connection | None:
        """A new HTTP/2 connection, or None (and HTTP/1.1 from now on) when the server does not
        negotiate h2."""
        plugin = self.config.exec_plugin
        async with self._h2_lock:
            conn = self._h2
            if conn is not None and not conn.closed and (plugin is None or plugin.generation == self._h2_generation):
                return conn
            if conn is not None:
                if conn.closed or not conn._streams:
                    self._retire(conn.close())  # its streams already failed
                else:
                    conn.closed = True  # retired (a new client certificate): closes when its last stream ends
                self._h2 = None
            ctx = self._tls()
            if ctx is None:
                self._h2_off = True
                return None
            ctx.set_alpn_protocols(["h2", "http/1.1"])
            generation = plugin.generation if plugin is not None else 0
            try:
                self._h2 = await H2Connection.open(self._host, self._port, ssl_context=ctx, timeout_s=self.timeout_s)
            except H2NotNegotiated:
                log.info("%s does not offer HTTP/2: using HTTP/1.1", self.config.server)
                self._h2_off = True
                return None
            except (OSError, TimeoutError) as e:  # ssl.SSLError is an OSError
                raise ApiUnavailable(f"connect {self.config.server}: {e.__class__.__name__}: {e}") from e
            self._h2_generation = generation
            return self._h2

    def _target(self, path: str, params: dict[str, Any] | None) -> str:
        q = _params(params)
        return self._base + path + ("?" + urlencode(q) if q else "")

    async def _credential(self) -> str | None:
        """The bearer token for the next request (an exec plugin runs when its credential
        expired). Raises ApiUnavailable when the plugin fails: daemons retry with backoff."""
        plugin = self.config.exec_plugin
        if plugin is None:
            return self.config.bearer_token()

        try:
            cred = await plugin.get()
        except ExecError as e:
            raise ApiUnavailable(f"exec credential plugin: {e}") from e
        return cred.token or self.config.bearer_token()

    def _refused(self, token: str | None) -> bool:
        """A 401 to ``token``: True when a retry may carry a different credential (the exec
        plugin runs again; a token file may have been rotated)."""
        plugin = self.config.exec_plugin
        if plugin is not None:
            plugin.refused(token)
            return True
        return bool(self.config.token_file) and self.config.bearer_token() != token

    def _headers(self, content_type: str | None, accept: str, token: str | None) -> list[tuple[str, str]]:
        h = [("accept", accept), ("user-agent", self.user_agent)]
        if not self.compression:
            h.append(("accept-encoding", "identity"))
        if content_type:
            h.append(("content-type", content_type))
        if token:
            h.append(("authorization", f"Bearer {token}"))
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
        after a CRD is registered or the server restarts) is retried here, as client-go does. A
        401 is retried once with a fresh credential where one can be had (exec plugin, token file).
        """
        data: bytes | None = None
        if body is not None:
            data = body if isinstance(body, bytes) else jsoncodec.dumps(body)
        refreshed = False
        attempt = 0
        while True:
            await self.limiter.acquire()
            self.metrics[verb or method.upper()] += 1
            token = await self._credential()
            status, raw, retry_after = await self._once(
                method, path, params=params, data=data, content_type=content_type, accept=accept,
                timeout_s=timeout_s, started=started, token=token,
            )
            if status < 400 and not decode:
                return raw
            payload = _decode(raw)
            if status < 400:
                return payload
            if status == 429 and retry_after is not None and attempt < MAX_RETRY_AFTER_ATTEMPTS:
                attempt += 1
                await asyncio.sleep(retry_delay(retry_after))
                continue
            if status == 401 and not refreshed and self._refused(token):
                refreshed = True
                continue
            raise error_for(status, payload)

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
        token: str | None,
        started: asyncio.Event | None = None,
    ) -> tuple[int, bytes, float | None]:
        conn = await self._connection()
        stream = None
        try:
            async with asyncio.timeout(timeout_s or self.timeout_s):
                stream = await conn.request(
                    method.upper(), self._target(path, params),
                    self._headers(content_type if data is not None else None, accept, token), data,
                )
                status, headers = await stream.response()
                if started is not None:
                    started.set()
                raw = _decoded_body(await stream.read_all(), headers.get("content-encoding"))
                return status, raw, _retry_after(headers.get("retry-after"))
        except (TimeoutError, H2StreamError, H1Error, zlib.error) as e:
            raise ApiUnavailable(f"{method} {path}: {e.__class__.__name__}: {e}") from e
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
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        stream = None
        refreshed = False
        try:
            while True:
                token = await self._credential()
                conn = await self._connection()
                async with asyncio.timeout(timeout_s):
                    stream = await conn.request("GET", self._target(path, params), self._headers(None, accept, token),
                                                None)
                    status, headers = await stream.response()
                    if status < 400:
                        break
                    payload = _decode(_decoded_body(await stream.read_all(), headers.get("content-encoding")))
                stream.cancel()
                stream = None
                if status == 401 and not refreshed and self._refused(token):
                    refreshed = True
                    continue
                raise error_for(status, payload)
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if headers.get("content-encoding") == "gzip" else None
            buf = b""
            while True:
                if deadline - loop.time() <= 0:
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
        except (TimeoutError, H2StreamError, H1Error, zlib.error) as e:
            raise ApiUnavailable(f"WATCH {path}: {e.__class__.__name__}: {e}") from e
        finally:
            if stream is not None:
                stream.cancel()  # now, not when collected: its stream is reset here

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
        if self._h1 is not None:
            await self._h1.close()
            self._h1 = None
        for task in list(self._h2_closing):
            task.cancel()

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
    """A body with gzip undone (the API server sends no other encoding)."""
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
