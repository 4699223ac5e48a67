"""Config file, kubelet config sources, policy names, NRT JSON, flags, HTTP endpoints, inotify."""

from __future__ import annotations

import argparse
import asyncio
import json
import struct

import pytest
from topo_fakeapi import FakeApi

from nfd.api.noderesourcetopology import CostInfo, NodeResourceTopology, ResourceInfo, Zone
from nfd.common import httpserver
from nfd.common.goflags import GoFlagSet, add_klog_flags, parse_bool, parse_duration
from nfd.topology_updater import kubeletconfig
from nfd.topology_updater.config import ConfigError, load_config, parse_config
from nfd.topology_updater.notifier import STATE_FILES, parse_events
from nfd.topology_updater.topologymanager import topology_policy


def test_exclude_list_config(tmp_path) -> None:
    p = tmp_path / "nfd-topology-updater.conf"
    p.write_text("excludeList:\n  node1: [cpu]\n  '*': [hugepages-2Mi]\n  node2: [memory, example/deviceA]\n")
    cfg = load_config(str(p))
    assert cfg.excluded_for("node1") == {"cpu", "hugepages-2Mi"}
    assert cfg.excluded_for("node3") == {"hugepages-2Mi"}
    # Go's YAML decoding into a struct matches field names case-insensitively
    assert parse_config({"ExcludeList": {"*": ["x"]}}).excluded_for("n") == {"x"}
    assert load_config(str(tmp_path / "missing.conf")).exclude_list == {}
    assert parse_config(None).exclude_list == {}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("excludeList: [cpu]\n", "excludeList"),
        ("excludeList:\n  n1: cpu\n", "excludeList.n1"),
        ("- a\n", "top level"),
        (":\n  - [", "invalid YAML"),
    ],
)
def test_bad_config_names_file_and_field(tmp_path, text: str, fragment: str) -> None:
    p = tmp_path / "bad.conf"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(str(p))
    assert str(p) in str(e.value) and fragment in str(e.value)


@pytest.mark.parametrize(
    ("policy", "scope", "expected"),
    [
        ("single-numa-node", "pod", "SingleNUMANodePodLevel"),
        ("restricted", "pod", "RestrictedPodLevel"),
        ("best-effort", "pod", "BestEffortPodLevel"),
        ("none", "pod", "None"),
        ("single-numa-node", "container", "SingleNUMANodeContainerLevel"),
        ("restricted", "container", "RestrictedContainerLevel"),
        ("best-effort", "container", "BestEffortContainerLevel"),
        ("bogus", "container", "None"),
        ("restricted", "node", "None"),
    ],
)
def test_topology_policy_names(policy: str, scope: str, expected: str) -> None:
    assert topology_policy(policy, scope) == expected


def test_kubelet_config_file_and_defaults(tmp_path) -> None:
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"kind": "KubeletConfiguration", "topologyManagerPolicy": "best-effort"}))
    info = asyncio.run(kubeletconfig.load("file://" + str(p), token_file=""))
    assert (info.policy, info.scope) == ("best-effort", "container")
    with pytest.raises(kubeletconfig.KubeletConfigError) as e:
        asyncio.run(kubeletconfig.load("file://" + str(tmp_path / "nope"), token_file=""))
    assert "nope" in str(e.value)


def test_kubelet_config_uri_checks() -> None:
    kubeletconfig.check_uri("file:///var/lib/kubelet/config.yaml")
    kubeletconfig.check_uri("https://10.0.0.1:10250/configz")
    kubeletconfig.check_uri("/api/v1/nodes/${NODE_NAME}/proxy/configz")
    with pytest.raises(kubeletconfig.KubeletConfigError):
        kubeletconfig.check_uri("http://10.0.0.1:10255/configz")
    assert kubeletconfig.default_uri("10.0.0.1") == "https://10.0.0.1:10250/configz"
    assert kubeletconfig.default_uri("fd00::1") == "https://[fd00::1]:10250/configz"
    with pytest.raises(kubeletconfig.KubeletConfigError) as e:
        kubeletconfig.default_uri("")
    assert "NODE_ADDRESS" in str(e.value)


def test_kubelet_configz_over_https_path_with_token(tmp_path) -> None:
    from aiohttp import web

    token = tmp_path / "token"
    token.write_text("s3cret\n")
    seen: dict[str, str] = {}

    async def configz(request: web.Request) -> web.Response:
        seen["auth"] = request.headers.get("Authorization", "")
        return web.json_response(
            {"kubeletconfig": {"topologyManagerPolicy": "restricted", "topologyManagerScope": "pod"}}
        )

    async def go() -> kubeletconfig.TopologyManagerInfo:
        app = web.Application()
        app.router.add_get("/configz", configz)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            # fetch_configz is scheme-agnostic; TLS is not what is under test here
            return await kubeletconfig.fetch_configz(f"http://127.0.0.1:{port}/configz", str(token))
        finally:
            await runner.cleanup()

    info = asyncio.run(go())
    assert (info.policy, info.scope) == ("restricted", "pod")
    assert seen["auth"] == "Bearer s3cret"


def test_kubelet_configz_through_apiserver() -> None:
    api = FakeApi()

    async def request(method, path, **kw):
        api.requests.append((method, path, {}, None, ""))
        return {"kubeletconfig": {"topologyManagerPolicy": "single-numa-node"}}

    api.request = request  # type: ignore[method-assign]
    info = asyncio.run(
        kubeletconfig.load("/api/v1/nodes/${NODE_NAME}/proxy/configz", token_file="", api=api, node_name="n1")
    )
    assert info.policy == "single-numa-node"
    assert api.requests[0][1] == "/api/v1/nodes/n1/proxy/configz"


def test_nrt_json_round_trip() -> None:
    nrt = NodeResourceTopology(
        name="n1",
        zones=[
            Zone(
                "node-0",
                "Node",
                (ResourceInfo("cpu", 8, 6, 4), ResourceInfo("memory", 2000, 1000, 0)),
                (CostInfo("node-0", 10),),
            )
        ],
        topology_policies=["None"],
    )
    nrt.set_attribute("a", "1")
    nrt.set_attribute("b", "2")
    nrt.set_attribute("a", "3")
    obj = nrt.to_json()
    assert obj["attributes"] == [{"name": "a", "value": "3"}, {"name": "b", "value": "2"}]
    assert obj["zones"][0]["resources"][1] == {
        "name": "memory",
        "capacity": "2k",
        "allocatable": "1k",
        "available": "0",
    }
    back = NodeResourceTopology.from_json(json.loads(json.dumps(obj)))
    assert back.zones == nrt.zones and back.attributes == nrt.attributes


def test_go_flags() -> None:
    assert parse_duration("1h30m") == 5400 and parse_duration("300ms") == 0.3 and parse_duration("0") == 0
    for bad in ("10", "1x", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_duration(bad)
    assert parse_bool("false") is False and parse_bool("T") is True
    p = GoFlagSet("x")
    add_klog_flags(p, wrapped=False)
    p.bool("oneshot", False, "")
    p.duration("sleep-interval", 60.0, "")
    ns = p.parse(["-oneshot", "--sleep-interval=3s", "-v", "4", "-logtostderr=false"])
    assert (ns.oneshot, ns.sleep_interval, ns.v, ns.logtostderr) == (True, 3.0, 4, False)
    with pytest.raises(SystemExit) as e:
        p.parse_go(["positional"])
    assert e.value.code == 2


def test_http_endpoints() -> None:
    from prometheus_client import CollectorRegistry, Counter

    reg = CollectorRegistry()
    Counter("nfd_test_things", "things", registry=reg).inc(3)

    async def get(port: int, path: str, method: str = "GET") -> tuple[int, bytes]:
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(f"{method} {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = await r.read()
        w.close()
        head, _, body = data.partition(b"\r\n\r\n")
        return int(head.split()[1]), body

    async def go() -> list[tuple[int, bytes]]:
        server = await httpserver.serve(
            0, {"/healthz": httpserver.healthz, "/metrics": httpserver.metrics_route(reg)}, host="127.0.0.1"
        )
        port = server.sockets[0].getsockname()[1]
        try:
            return [
                await get(port, "/healthz"),
                await get(port, "/metrics"),
                await get(port, "/nope"),
                await get(port, "/healthz", "POST"),
            ]
        finally:
            server.close()

    (h, hb), (m, mb), (n, _), (p, _) = asyncio.run(go())
    assert (h, hb) == (200, b"ok") and m == 200 and n == 404 and p == 405
    assert b"nfd_test_things_total 3.0" in mb


def test_inotify_event_parsing() -> None:
    def ev(name: bytes, pad: int = 16) -> bytes:
        raw = name + b"\0" * (pad - len(name))
        return struct.pack("iIII", 1, 0x80, 0, len(raw)) + raw

    assert parse_events(ev(b"cpu_manager_state", 32) + ev(b"x") + struct.pack("iIII", 1, 0x100, 0, 0)) == [
        "cpu_manager_state",
        "x",
        "",
    ]
    assert {"cpu_manager_state", "memory_manager_state", "kubelet_internal_checkpoint"} == STATE_FILES
