"""The HTTP/1.1 fallback (nfd/k8s/http1.py) behind the API client, against aiohttp's server:
chunked watch streams split into events, kept-alive connections reused, a kept connection the
server closed while idle replaced without failing the request, and bodies by Content-Length."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web

from nfd.k8s.client import ApiClient
from nfd.k8s.config import ConnectionConfig
from nfd.k8s.errors import NotFound


async def _serve(routes: list[web.RouteDef], *, keepalive_s: float = 60) -> tuple[web.AppRunner, int, dict[str, Any]]:
    seen: dict[str, Any] = {"peers": set()}

    @web.middleware
    async def track(request: web.Request, handler: Any) -> web.StreamResponse:
        seen["peers"].add(request.transport.get_extra_info("peername") if request.transport else None)
        return await handler(request)

    app = web.Application(middlewares=[track])
    app.add_routes(routes)
    runner = web.AppRunner(app, keepalive_timeout=keepalive_s)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1], seen  # type: ignore[union-attr]


def test_watch_stream_requests_and_connection_reuse() -> None:
    async def watch(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        # events split across chunks at odd places, blank lines between them
        await resp.write(b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{"type":"MOD')
        await asyncio.sleep(0.01)
        await resp.write(b'IFIED","object":{"metadata":{"name":"a"}}}\n\n')
        await resp.write(b'{"type":"DELETED","object":{"metadata":{"name":"a"}}}')  # no final newline
        await resp.write_eof()
        return resp

    async def get(request: web.Request) -> web.Response:
        if request.match_info["name"] == "missing":
            return web.json_response({"kind": "Status", "reason": "NotFound", "message": "gone"}, status=404)
        return web.json_response({"name": request.match_info["name"], "q": request.query.get("x")})

    async def patch(request: web.Request) -> web.Response:
        return web.json_response({"got": await request.json(), "type": request.content_type})

    async def main() -> None:
        runner, port, seen = await _serve([web.get("/w", watch), web.get("/o/{name}", get),
                                           web.patch("/o/{name}", patch)])
        api = ApiClient(ConnectionConfig(server=f"http://127.0.0.1:{port}"), qps=0, burst=1)
        try:
            events = [(e["type"], e["object"]["metadata"]["name"]) async for e in api.stream_lines("/w")]
            assert events == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
            for i in range(5):
                assert await api.request("GET", f"/o/n{i}", params={"x": True}) == {"name": f"n{i}", "q": "true"}
            assert await api.request("PATCH", "/o/p", body={"a": 1}, content_type="application/merge-patch+json") == {
                "got": {"a": 1}, "type": "application/merge-patch+json"}
            with pytest.raises(NotFound):
                await api.request("GET", "/o/missing")
            assert len(seen["peers"]) == 1  # the watch's connection, kept and reused by every request
        finally:
            await api.close()
            await runner.cleanup()

    asyncio.run(main())


def test_a_kept_connection_the_server_closed_is_replaced() -> None:
    async def get(request: web.Request) -> web.Response:
        return web.json_response({"name": request.match_info["name"]})

    async def main() -> None:
        runner, port, seen = await _serve([web.get("/o/{name}", get)], keepalive_s=0.05)
        api = ApiClient(ConnectionConfig(server=f"http://127.0.0.1:{port}"), qps=0, burst=1)
        try:
            assert (await api.request("GET", "/o/a"))["name"] == "a"
            assert api._h1 is not None and len(api._h1._idle) == 1
            await asyncio.sleep(0.3)  # past the server's keep-alive timeout: it closed the connection
            assert (await api.request("GET", "/o/b"))["name"] == "b"
            assert len(seen["peers"]) == 2
        finally:
            await api.close()
            await runner.cleanup()

    asyncio.run(main())
