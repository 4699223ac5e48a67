import base64

import pytest

from nfd.k8s.config import ConfigError, load_kubeconfig
from nfd.k8s.errors import AlreadyExists, Conflict, Gone, NotFound, ServerError, error_for
from nfd.k8s.patching import escape_json_pointer
from nfd.k8s.resources import NODEFEATURES, NODES


def test_paths() -> None:
    assert NODES.path(name="n1", subresource="status") == "/api/v1/nodes/n1/status"
    assert (
        NODEFEATURES.path(namespace="nfd", name="n1")
        == "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/nfd/nodefeatures/n1"
    )
    assert NODEFEATURES.path() == "/apis/nfd.k8s-sigs.io/v1alpha1/nodefeatures"


def test_error_mapping() -> None:
    assert isinstance(error_for(404, {"reason": "NotFound"}), NotFound)
    assert isinstance(error_for(409, {"reason": "AlreadyExists"}), AlreadyExists)
    e = error_for(409, {"reason": "Conflict", "message": "the object has been modified"})
    assert isinstance(e, Conflict) and not isinstance(e, AlreadyExists)
    assert "modified" in str(e)
    assert isinstance(error_for(410, {}), Gone)
    assert isinstance(error_for(503, "down"), ServerError)


def test_json_pointer_escape() -> None:
    assert escape_json_pointer("feature.node.kubernetes.io/cpu~x") == "feature.node.kubernetes.io~1cpu~0x"


def test_kubeconfig_token_and_ca_data(tmp_path) -> None:
    ca = base64.b64encode(b"CA").decode()
    kc = tmp_path / "kc"
    kc.write_text(
        f"""
apiVersion: v1
kind: Config
current-context: c
contexts: [{{name: c, context: {{cluster: k, user: u, namespace: nfd}}}}]
clusters: [{{name: k, cluster: {{server: "https://127.0.0.1:6443/", certificate-authority-data: {ca}}}}}]
users: [{{name: u, user: {{token: abc}}}}]
"""
    )
    cfg = load_kubeconfig(str(kc))
    assert cfg.server == "https://127.0.0.1:6443"
    assert cfg.bearer_token() == "abc"
    assert cfg.namespace == "nfd"
    assert cfg.ca_file
    with open(cfg.ca_file, "rb") as f:
        assert f.read() == b"CA"


def test_kubeconfig_bad_context_names_file(tmp_path) -> None:
    kc = tmp_path / "kc"
    kc.write_text("current-context: missing\ncontexts: []\n")
    with pytest.raises(ConfigError, match="kc: current-context 'missing'"):
        load_kubeconfig(str(kc))


def test_retry_after_429_is_retried() -> None:
    """A 429 with Retry-After is retried (as client-go); without it, it surfaces as TooManyRequests."""
    import asyncio

    from aiohttp import web

    from nfd.k8s.client import ApiClient
    from nfd.k8s.config import ConnectionConfig
    from nfd.k8s.errors import TooManyRequests

    calls = {"n": 0}

    async def handler(request: web.Request) -> web.Response:
        calls["n"] += 1
        if request.path == "/always" or calls["n"] < 3:
            headers = {"Retry-After": "0"} if request.path != "/always" else {}
            return web.json_response({"kind": "Status", "reason": "TooManyRequests"}, status=429, headers=headers)
        return web.json_response({"ok": True})

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/x", handler)
        app.router.add_get("/always", handler)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        api = ApiClient(ConnectionConfig(server=f"http://127.0.0.1:{port}"))
        try:
            assert await api.request("GET", "/x") == {"ok": True}
            assert calls["n"] == 3 and api.metrics["GET"] == 3
            with pytest.raises(TooManyRequests):
                await api.request("GET", "/always")
        finally:
            await api.close()
            await runner.cleanup()

    asyncio.run(main())


def test_list_retries_a_failed_continuation_page_only() -> None:
    """A 504 on a continuation page is retried with the same token; a first-page failure is not."""
    import asyncio

    from aiohttp import web

    from nfd.k8s.client import ApiClient
    from nfd.k8s.config import ConnectionConfig
    from nfd.k8s.errors import ServerError
    from nfd.k8s.fetching import list_objects

    seen: list[str] = []
    fail = {"page2": 2}

    async def handler(request: web.Request) -> web.Response:
        cont = request.query.get("continue", "")
        seen.append(cont)
        if "/broken/" in request.path:
            return web.json_response({"kind": "Status", "code": 504}, status=504)
        if cont == "p2" and fail["page2"] > 0:
            fail["page2"] -= 1
            return web.json_response({"kind": "Status", "reason": "Timeout",
                                      "message": "Too large resource version"}, status=504)
        if not cont:
            return web.json_response({"items": [{"metadata": {"name": "a"}}], "metadata": {"continue": "p2"}})
        return web.json_response({"items": [{"metadata": {"name": "b"}}], "metadata": {"resourceVersion": "7"}})

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/api/v1/nodes", handler)
        app.router.add_get("/api/v1/namespaces/broken/nodes", handler)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        api = ApiClient(ConnectionConfig(server=f"http://127.0.0.1:{port}"))
        try:
            from nfd.k8s.resources import Resource

            items, rv = await list_objects(api, Resource("", "v1", "nodes", "Node", False))
            assert [i["metadata"]["name"] for i in items] == ["a", "b"] and rv == "7"
            assert seen == ["", "p2", "p2", "p2"]  # page 1 read once, page 2 retried
            with pytest.raises(ServerError):
                await list_objects(api, Resource("", "v1", "nodes", "Node", True), namespace="broken")
        finally:
            await api.close()
            await runner.cleanup()

    asyncio.run(main())


def test_retry_delay_spreads_retries_over_as_much_again() -> None:
    from nfd.k8s.client import MAX_RETRY_AFTER_S, retry_delay

    delays = [retry_delay(1.0) for _ in range(2000)]
    assert all(1.0 <= d <= 2.0 for d in delays)
    # spread over the window, not bunched: each tenth of it gets some
    assert len({int((d - 1.0) * 10) for d in delays}) == 10
    assert all(0.0 <= retry_delay(0.0) <= 0.1 for _ in range(100))
    assert retry_delay(60.0) <= 2 * MAX_RETRY_AFTER_S
