from __future__ import annotations

import asyncio

from nfd.common import httpserver


async def _ask(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(request)
    data = await r.read()
    w.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def test_routes_methods_and_bad_requests() -> None:
    renders: list[int] = []

    def render() -> str:
        renders.append(1)
        return f"x {len(renders)}\n"

    async def go() -> list[tuple[int, dict[str, str], bytes]]:
        routes = {"/metrics": httpserver.text_route(render, "text/plain; version=0.0.4"), "/healthz": httpserver.healthz}
        server = await httpserver.serve(0, routes, host="127.0.0.1")
        port = server.sockets[0].getsockname()[1]
        try:
            return [
                await _ask(port, b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"),
                await _ask(port, b"HEAD /metrics HTTP/1.1\r\n\r\n"),
                await _ask(port, b"GET /healthz HTTP/1.0\r\n\r\n"),
                await _ask(port, b"DELETE /healthz HTTP/1.1\r\n\r\n"),
                await _ask(port, b"garbage\r\n\r\n"),
            ]
        finally:
            server.close()

    got = asyncio.run(go())
    (s1, h1, b1), (s2, h2, b2), (s3, _, b3), (s4, _, _), (s5, _, _) = got
    assert (s1, h1["Content-Type"], b1) == (200, "text/plain; version=0.0.4", b"x 1\n")
    assert h1["Content-Length"] == "4" and h1["Connection"] == "close"
    # HEAD renders (so Content-Length is right) but sends no body
    assert (s2, h2["Content-Length"], b2) == (200, "4", b"")
    assert (s3, b3) == (200, b"ok")
    assert s4 == 405 and s5 == 400
