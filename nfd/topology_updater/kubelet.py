"""Client for the kubelet PodResources v1 API over its unix socket.

gRPC is HTTP/2 with length-prefixed protobuf messages and the status in trailers; the two
unary calls the updater makes go over one cleartext HTTP/2 connection (nfd/k8s/http2.py, the
API client's transport) and are decoded by the generated protobuf messages. grpcio is not
used: its core keeps threads polling (0.8-0.9 ms of CPU per second on an idle process, and a
call after a 2 s pause cost ~3 ms where our framing costs a fraction of one) and adds 16 MiB
of RSS, where each node's updater makes two calls per cycle.

As upstream: 10 s per call, 16 MiB max message. The connection is opened on first use and
again after it broke (a kubelet restart recreates the socket); a call made while the kubelet
is down fails with a clear ``KubeletUnavailable`` naming the socket and the gRPC status.
"""

from __future__ import annotations

import asyncio
import re
import struct
from typing import Any
from urllib.parse import unquote, urlsplit

from google.protobuf.message import DecodeError

from nfd.k8s.http2 import H2Connection, H2StreamError
from nfd.topology_updater.podresources import api_pb2

CALL_TIMEOUT_S = 10.0
MAX_MESSAGE = 16 * 1024 * 1024
SERVICE = "/v1.PodResourcesLister/"

#: gRPC status codes by number (google.rpc.Code), for messages
CODES = ("OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
         "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
         "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED")


class EndpointError(ValueError):
    """``-podresources-socket`` names no unix socket (message names the flag and the value)."""


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def socket_path(endpoint: str, *, flag: str = "-podresources-socket") -> str:
    """The unix socket path of a PodResources endpoint, read as the kubelet's own podresources
    client reads it (k8s.io/cri-client's GetAddressAndDialer, which upstream calls): a
    ``unix://`` URL, or a bare path taken as ``unix://<path>``; the path is percent-decoded like
    a URL's. Any other scheme (``tcp://`` included: the kubelet serves the API on a unix socket
    only) is refused, as upstream refuses it at start.

    Two forms upstream takes and then cannot dial are refused here too, out loud: a ``unix://``
    URL with a host part (``unix://run/x.sock`` means the socket ``/x.sock`` to Go's URL parser)
    and an empty path. A bare relative path is a path relative to the working directory.
    """
    m = _SCHEME.match(endpoint)
    scheme = m.group(0)[:-1].lower() if m else ""
    if scheme and scheme != "unix":
        what = "tcp endpoints are not supported" if scheme == "tcp" else f"protocol {scheme!r} not supported"
        raise EndpointError(f"{flag}={endpoint!r}: {what} (a socket path or a unix:// URL)")
    if re.search(r"%(?![0-9A-Fa-f]{2})", endpoint):
        raise EndpointError(f"{flag}={endpoint!r}: invalid URL escape (write a literal % as %25)")
    if not scheme:
        path = endpoint
    else:
        u = urlsplit(endpoint)
        if u.netloc or not u.path.startswith("/"):
            raise EndpointError(
                f"{flag}={endpoint!r}: a unix:// URL needs an absolute path (unix:///path/to/kubelet.sock)"
            )
        path = u.path
    path = unquote(path)
    if not path:
        raise EndpointError(f"{flag}={endpoint!r}: no socket path")
    return path


class KubeletUnavailable(Exception):
    """A PodResources call failed (socket missing, kubelet restarting, API disabled)."""


class _CallError(Exception):
    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


class PodResourcesClient:
    def __init__(self, socket_path: str, *, timeout_s: float = CALL_TIMEOUT_S) -> None:
        self.socket_path = socket_path
        self.timeout_s = timeout_s
        self._conn: Any = None  # nfd.k8s.http2.H2Connection
        self._lock = asyncio.Lock()

    async def _connection(self) -> Any:
        conn = self._conn
        if conn is not None and not conn.closed:
            return conn
        async with self._lock:
            if self._conn is not None and not self._conn.closed:
                return self._conn
            if self._conn is not None:
                await self._conn.close()
                self._conn = None
            try:
                self._conn = await H2Connection.open_unix(self.socket_path, timeout_s=self.timeout_s)
            except (OSError, TimeoutError) as e:
                raise _CallError("UNAVAILABLE", f"connect: {e.__class__.__name__}: {e}") from e
            return self._conn

    async def _unary(self, method: str, request: Any) -> bytes:
        msg = request.SerializeToString()
        body = struct.pack(">BI", 0, len(msg)) + msg
        headers = [("content-type", "application/grpc"), ("te", "trailers"),
                   ("grpc-timeout", f"{max(1, int(self.timeout_s * 1000))}m"), ("user-agent", "nfd-topology-updater")]
        stream = None
        try:
            async with asyncio.timeout(self.timeout_s):
                conn = await self._connection()
                stream = await conn.request("POST", SERVICE + method, headers, body)
                status, head = await stream.response()
                data = bytearray()
                while chunk := await stream.read():
                    data += chunk
                    if len(data) > MAX_MESSAGE + 5:
                        raise _CallError("RESOURCE_EXHAUSTED", f"answer larger than {MAX_MESSAGE} bytes")
        except TimeoutError:
            raise _CallError("DEADLINE_EXCEEDED", f"no answer in {self.timeout_s:g}s") from None
        except H2StreamError as e:
            raise _CallError("UNAVAILABLE", str(e)) from e
        finally:
            if stream is not None:
                stream.cancel()
        trailers = {**head, **stream.trailers}
        code = trailers.get("grpc-status")
        if status != 200:
            raise _CallError("UNKNOWN" if code is None else _code(code), f"HTTP status {status}")
        if code is None:
            raise _CallError("INTERNAL", "the answer has no grpc-status")
        if code != "0":
            raise _CallError(_code(code), unquote(trailers.get("grpc-message", "")))
        if len(data) < 5:
            raise _CallError("INTERNAL", f"answer of {len(data)} bytes is not a gRPC message")
        flag, size = struct.unpack_from(">BI", data)
        if flag != 0:
            raise _CallError("INTERNAL", "compressed answer (no compression was offered)")
        if size != len(data) - 5:
            raise _CallError("INTERNAL", f"message length {size}, {len(data) - 5} bytes received")
        return bytes(data[5:])

    async def _call(self, method: str, request: Any, answer: Any) -> Any:
        try:
            raw = await self._unary(method, request)
        except _CallError as e:
            hint = ""
            if method == "GetAllocatableResources" and "disabled" in e.detail:
                hint = " (enable the kubelet feature gate KubeletPodResourcesGetAllocatable)"
            raise KubeletUnavailable(f"podresources {method} on {self.socket_path}: {e.code}: {e.detail}{hint}") from e
        try:
            return answer.FromString(raw)
        except DecodeError as e:
            raise KubeletUnavailable(f"podresources {method} on {self.socket_path}: INTERNAL: {e}") from e

    async def list(self) -> Any:
        """``ListPodResourcesResponse``."""
        return await self._call("List", api_pb2.ListPodResourcesRequest(), api_pb2.ListPodResourcesResponse)

    async def allocatable(self) -> Any:
        """``AllocatableResourcesResponse``."""
        return await self._call("GetAllocatableResources", api_pb2.AllocatableResourcesRequest(),
                                api_pb2.AllocatableResourcesResponse)

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
        self._conn = None


def _code(value: str) -> str:
    try:
        n = int(value)
    except ValueError:
        return value
    return CODES[n] if 0 <= n < len(CODES) else str(n)
