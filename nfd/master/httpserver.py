"""``/metrics`` and ``/healthz`` on one port, as upstream (default 8080)."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest


async def start_http(
    *, port: int, registry: CollectorRegistry, healthy: Callable[[], bool] = lambda: True, host: str = "0.0.0.0"
) -> tuple[web.AppRunner, int]:
    """Start serving; returns the runner (cleanup on exit) and the bound port (port 0 = any)."""

    async def metrics(_: web.Request) -> web.Response:
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_: web.Request) -> web.Response:
        if healthy():
            return web.Response(text="ok")
        return web.Response(status=503, text="not ready")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = port
    server = getattr(site, "_server", None)
    if server is not None and server.sockets:
        bound = server.sockets[0].getsockname()[1]
    return runner, bound
