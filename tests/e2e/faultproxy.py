"""A plain-HTTP proxy in front of the test kube-apiserver that injects faults into chosen requests.

The process under test gets a kubeconfig pointing at the proxy (http://127.0.0.1:<port>, the
same bearer token); every request is forwarded to the real apiserver over TLS and its answer
streamed back (watches included), except those a fault rule answers instead. Requests are
counted per rule, so a test can assert how often a client retried.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# (method, path, query) -> None to forward, or (status, body lines) to answer instead
FaultRule = Callable[[str, str, dict[str, list[str]]], "tuple[int, list[dict[str, Any]]] | None"]


class FaultProxy:
    def __init__(self, upstream: str, ca_file: str, rule: FaultRule, *,
                 cut_after_initial_events: Callable[[str], bool] | None = None) -> None:
        """``cut_after_initial_events(path)``: end a streaming list (sendInitialEvents) of that
        path right after its initial-events-end bookmark, so the client must watch again."""
        u = urllib.parse.urlsplit(upstream)
        self.host, self.port_up = u.hostname or "127.0.0.1", u.port or 443
        self.ctx = ssl.create_default_context(cafile=ca_file)
        self.rule = rule
        self.cut = cut_after_initial_events or (lambda _p: False)
        self.cuts = 0
        self.injected = 0
        self.forwarded = 0
        self.log: list[tuple[str, str]] = []
        self._open: dict[int, tuple[str, http.client.HTTPSConnection]] = {}  # forwards in flight
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                u = urllib.parse.urlsplit(self.path)
                query = urllib.parse.parse_qs(u.query)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                fault = proxy.rule(self.command, u.path, query)
                proxy.log.append((self.command, self.path))
                if fault is not None:
                    proxy.injected += 1
                    status, lines = fault
                    data = b"".join(json.dumps(x).encode() + b"\n" for x in lines)
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(data)
                    self.close_connection = True
                    return
                proxy.forwarded += 1
                conn = http.client.HTTPSConnection(proxy.host, proxy.port_up, context=proxy.ctx, timeout=600)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                with proxy._lock:
                    proxy._open[id(conn)] = (u.path, conn)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    self.send_response(resp.status)
                    for k, v in resp.getheaders():
                        if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                            self.send_header(k, v)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    cut = bool(query.get("sendInitialEvents")) and proxy.cut(u.path)
                    while True:
                        chunk = resp.read1(65536)
                        if not chunk:
                            break
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                        self.wfile.flush()
                        if cut and b"initial-events-end" in chunk:
                            proxy.cuts += 1
                            self.close_connection = True
                            break
                    self.wfile.write(b"0\r\n\r\n")
                except (OSError, http.client.HTTPException):
                    self.close_connection = True
                finally:
                    with proxy._lock:
                        proxy._open.pop(id(conn), None)
                    conn.close()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle  # noqa: N815

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kubeconfig(self, source: str, dest: Path) -> str:
        """A copy of kubeconfig ``source`` whose server is this proxy."""
        import yaml

        doc = yaml.safe_load(Path(source).read_text())
        for c in doc.get("clusters") or []:
            c["cluster"] = {"server": self.url}
        dest.write_text(yaml.safe_dump(doc))
        return str(dest)

    def cut_streams(self, pred: Callable[[str], bool]) -> int:
        """End the forwarded requests in flight (watches) whose path matches: the client sees
        its stream end and must watch again. Returns how many were cut."""
        import socket

        with self._lock:
            conns = [c for p, c in self._open.values() if pred(p)]
        for c in conns:
            try:
                if c.sock is not None:
                    c.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return len(conns)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
