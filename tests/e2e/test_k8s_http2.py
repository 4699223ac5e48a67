"""The API client over HTTP/2 (nfd.k8s.http2) against the real kube-apiserver: requests and
watches on one connection, flow control both ways, concurrency past the server's stream limit,
a restarted server, and the fall back to HTTP/1.1 where h2 is not offered."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import pytest

from nfd.k8s.client import ApiClient
from nfd.k8s.config import ConnectionConfig
from nfd.k8s.errors import ApiUnavailable, NotFound
from tests.e2e.harness import KubeCluster, free_port, tcp_connections


def client(kube: KubeCluster, *, http2: bool = True) -> ApiClient:
    cfg = ConnectionConfig(server=kube.server, ca_file=kube.ca_file, token=kube.admin_token)
    return ApiClient(cfg, qps=0, burst=1, http2=http2)


def cm(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_requests_and_watches_share_one_connection(kube: KubeCluster, namespace: str) -> None:
    async def go() -> None:
        api = client(kube)
        base = f"/api/v1/namespaces/{namespace}/configmaps"
        seen: list[list[str]] = [[], [], []]

        async def watch(i: int) -> None:
            async for ev in api.stream_lines(base, params={"watch": "true", "timeoutSeconds": 30}):
                seen[i].append(ev["object"]["metadata"]["name"])
                if len(seen[i]) == 3:
                    return

        try:
            tasks = [asyncio.create_task(watch(i)) for i in range(3)]
            await asyncio.sleep(0.5)
            for k in range(3):
                await api.request("POST", base, body=cm(f"c{k}", {"k": str(k)}), verb="CREATE")
            got = await api.request("GET", f"{base}/c1")
            assert got["data"] == {"k": "1"}
            patched = await api.request("PATCH", f"{base}/c1", body={"data": {"k": "x"}},
                                        content_type="application/merge-patch+json")
            assert patched["data"] == {"k": "x"}
            with pytest.raises(NotFound):
                await api.request("GET", f"{base}/missing")
            listed = await api.request("GET", base, params={"labelSelector": "", "limit": 2})
            assert len(listed["items"]) == 2 and listed["metadata"].get("continue")
            await asyncio.wait_for(asyncio.gather(*tasks), 20)
            assert seen == [["c0", "c1", "c2"]] * 3
            assert api._h2 is not None and not api._h2_off
            assert tcp_connections(kube.port) == 1
        finally:
            await api.close()

    asyncio.run(go())


def test_large_bodies_pass_the_flow_control_windows(kube: KubeCluster, namespace: str) -> None:
    """A 900 kB request body (past the server's window for one stream) and a list of 9 MB
    (past ours) arrive whole."""
    async def go() -> None:
        api = client(kube)
        base = f"/api/v1/namespaces/{namespace}/configmaps"
        try:
            values = {}
            for k in range(10):
                values[k] = (f"{k}-" * 450_000)[:900_000]
                await api.request("POST", base, body=cm(f"big{k}", {"v": values[k]}), verb="CREATE")
            listed = await api.request("GET", base)
            by_name = {o["metadata"]["name"]: o["data"]["v"] for o in listed["items"]}
            assert {k: by_name[f"big{k}"] for k in range(10)} == values
            assert tcp_connections(kube.port) == 1
        finally:
            await api.close()

    asyncio.run(go())


def test_more_requests_at_once_than_the_server_allows_streams(kube: KubeCluster) -> None:
    async def go() -> None:
        api = client(kube)
        try:
            out = await asyncio.gather(*(api.request("GET", "/version") for _ in range(400)))
            assert all(o["major"] == "1" for o in out)
            assert tcp_connections(kube.port) == 1
        finally:
            await api.close()

    asyncio.run(go())


def test_a_watch_left_early_frees_its_stream(kube: KubeCluster, namespace: str) -> None:
    async def go() -> None:
        api = client(kube)
        base = f"/api/v1/namespaces/{namespace}/configmaps"
        try:
            await api.request("POST", base, body=cm("w", {"a": "b"}), verb="CREATE")
            for _ in range(300):  # more than the server's concurrent streams, were they kept
                gen = api.stream_lines(base, params={"watch": "true", "timeoutSeconds": 60})
                ev = await gen.__anext__()
                assert ev["type"] == "ADDED"
                await gen.aclose()
            assert api._h2 is not None and not api._h2._streams
            assert (await api.request("GET", f"{base}/w"))["data"] == {"a": "b"}
        finally:
            await api.close()

    asyncio.run(go())


def test_server_restart_fails_the_request_then_reconnects(kube: KubeCluster) -> None:
    async def go() -> None:
        api = client(kube)
        try:
            await api.request("GET", "/version")
            first = api._h2
            kube.stop_apiserver()
            with pytest.raises(ApiUnavailable):
                await api.request("GET", "/version")
            kube.start_apiserver()
            assert (await api.request("GET", "/version"))["major"] == "1"
            assert api._h2 is not None and api._h2 is not first
        finally:
            await api.close()

    try:
        asyncio.run(go())
    finally:
        if not kube.apiserver_running:
            kube.start_apiserver()


def test_a_server_without_h2_gets_http1(kube: KubeCluster) -> None:
    from aiohttp import web

    async def go() -> None:
        async def version(_: web.Request) -> web.Response:
            return web.json_response({"major": "1", "minor": "99"})

        app = web.Application()
        app.router.add_get("/version", version)
        runner = web.AppRunner(app)
        await runner.setup()
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(kube.pki / "server.crt"), str(kube.pki / "server.key"))
        port = free_port()
        site = web.TCPSite(runner, "127.0.0.1", port, ssl_context=ctx)
        await site.start()
        api = ApiClient(ConnectionConfig(server=f"https://127.0.0.1:{port}", ca_file=kube.ca_file, token="t"),
                        qps=0, burst=1, http2=True)
        try:
            assert (await api.request("GET", "/version"))["minor"] == "99"
            assert api._h2_off and api._h2 is None
            assert (await api.request("GET", "/version"))["minor"] == "99"
        finally:
            await api.close()
            await runner.cleanup()

    asyncio.run(go())


def test_a_request_cancelled_while_sending_leaves_no_stream(kube: KubeCluster, namespace: str) -> None:
    async def go() -> None:
        api = client(kube)
        base = f"/api/v1/namespaces/{namespace}/configmaps"
        try:
            await api.request("GET", "/version")
            conn = api._h2
            assert conn is not None
            task = asyncio.create_task(api.request("POST", base, body=cm("huge", {"v": "x" * 3_000_000})))
            for _ in range(50):  # until it waits for the server's window
                await asyncio.sleep(0)
                if conn._streams:
                    break
            assert conn._streams
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert not conn._streams
            assert (await api.request("GET", "/version"))["major"] == "1"
            assert api._h2 is conn
        finally:
            await api.close()

    asyncio.run(go())
