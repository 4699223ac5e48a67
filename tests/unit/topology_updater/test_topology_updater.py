"""The updater cycle through real gRPC (test kubelet on a unix socket) and a fake API."""

from __future__ import annotations

import asyncio
import os
import tempfile

import pytest
from topo_fakeapi import FakeApi

from nfd.api.noderesourcetopology import NodeResourceTopology
from nfd.k8s.errors import ApiUnavailable
from nfd.topology_updater.fingerprint import sign
from nfd.topology_updater.kubelet import PodResourcesClient
from nfd.topology_updater.updater import FIELD_MANAGER, INTERVAL, Options, TopologyUpdater
from tests.support.kubelet import Container, Device, FakeKubelet, Memory, Pod

GiB = 1 << 30


class PodCache:
    """Stands in for the pod Informer: only .get(name, namespace) is used by scans."""

    def __init__(self) -> None:
        self.pods: dict[tuple[str, str], dict] = {}

    def add(self, ns: str, name: str, *, guaranteed: bool = True, exclusive: bool = True) -> None:
        self.pods[(ns, name)] = {
            "metadata": {"namespace": ns, "name": name},
            "guaranteed": guaranteed,
            "exclusiveCPUs": exclusive,
        }

    def get(self, name: str, namespace: str = "") -> dict | None:
        return self.pods.get((namespace, name))


@pytest.fixture
def sock(tmp_path) -> str:
    # unix socket paths are limited to ~107 bytes; tmp_path can be long
    d = f"{tempfile.gettempdir()}/nfd-kl-{os.getpid()}-{abs(hash(str(tmp_path))) % 10**8}"
    os.makedirs(d, exist_ok=True)
    yield os.path.join(d, "kubelet.sock")


@pytest.fixture
def kubelet(sock) -> FakeKubelet:
    gpus = [Device("nvidia.com/gpu", [f"gpu-{i}"], [i // 4]) for i in range(8)]
    mem = [Memory("memory", 250 * GiB, [0]), Memory("memory", 250 * GiB, [1])]
    k = FakeKubelet(sock, cpus=[c for c in range(144) if c not in (0, 72)], devices=gpus, memory=mem)
    k.start()
    yield k
    k.stop()


def kubelet_config(tmp_path, policy="single-numa-node", scope="pod") -> str:
    p = tmp_path / "kubelet-config.yaml"
    p.write_text(
        f"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ntopologyManagerPolicy: {policy}\ntopologyManagerScope: {scope}\n"
    )
    return "file://" + str(p)


def make(tmp_path, sock, topo, **kw) -> tuple[TopologyUpdater, FakeApi, PodCache]:
    opts = Options(
        node_name="node-a",
        kubelet_config_uri=kw.pop("uri", None) or kubelet_config(tmp_path),
        podresources_socket=sock,
        namespace="nfd",
        **kw,
    )
    api = FakeApi()
    u = TopologyUpdater(opts, api=api, kubelet=PodResourcesClient(sock, timeout_s=2), topology=topo)
    cache = PodCache()
    u.pods = cache
    return u, api, cache


async def cycle(u: TopologyUpdater, reasons=frozenset({INTERVAL})) -> NodeResourceTopology | None:
    nrt = await u.scan_once(set(reasons))
    if nrt is not None:
        await u.publish(nrt)
    return nrt


def resources(obj: dict, zone: str) -> dict[str, tuple[str, str, str]]:
    """Quantities as published (Go DecimalSI strings)."""
    z = next(z for z in obj["zones"] if z["name"] == zone)
    return {r["name"]: (r["capacity"], r["allocatable"], r["available"]) for r in z["resources"]}


def test_publishes_upstream_shaped_object_by_server_side_apply(tmp_path, sock, kubelet, topo_two) -> None:
    u, api, cache = make(tmp_path, sock, topo_two)
    kubelet.add_pod(
        Pod(
            "team",
            "train",
            [
                Container(
                    "c",
                    cpus=[1, 2, 73],
                    devices=[Device("nvidia.com/gpu", ["gpu-1"], [0])],
                    memory=[Memory("memory", 10 * GiB, [0])],
                )
            ],
        )
    )
    kubelet.add_pod(Pod("team", "web", [Container("c")]))
    cache.add("team", "train")
    cache.add("team", "web", guaranteed=False, exclusive=False)

    async def go() -> None:
        await cycle(u)
        await u.kubelet.close()

    asyncio.run(go())
    (method, path, params, body, ctype) = api.writes()[0]
    assert (method, path) == ("PATCH", "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/node-a")
    assert ctype == "application/apply-patch+yaml"
    assert params["fieldManager"] == FIELD_MANAGER and params["force"] is True
    obj = api.objects["node-a"]
    assert obj["apiVersion"] == "topology.node.k8s.io/v1alpha2" and obj["kind"] == "NodeResourceTopology"
    assert obj["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Namespace", "name": "nfd", "uid": "ns-uid-1"}
    ]
    assert obj["topologyPolicies"] == ["SingleNUMANodePodLevel"]
    assert obj["attributes"] == [
        {"name": "topologyManagerPolicy", "value": "single-numa-node"},
        {"name": "topologyManagerScope", "value": "pod"},
        {"name": "nodeTopologyPodsFingerprint", "value": sign([("team", "train"), ("team", "web")])},
    ]
    assert [z["name"] for z in obj["zones"]] == ["node-0", "node-1"]
    assert obj["zones"][0]["type"] == "Node"
    assert obj["zones"][0]["costs"] == [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 21}]
    r0 = resources(obj, "node-0")
    assert r0["cpu"] == ("72", "70", "67")
    assert r0["nvidia.com/gpu"] == ("4", "4", "3")
    # 250 GiB is a multiple of 1000: Go renders it with a "k" suffix
    assert r0["memory"] == (str(256 * GiB), "268435456k", str(240 * GiB))
    assert resources(obj, "node-1")["cpu"] == ("72", "72", "72")


def test_writes_only_when_changed_and_never_gets_pods(tmp_path, sock, kubelet, topo_two) -> None:
    u, api, cache = make(tmp_path, sock, topo_two)
    for i in range(20):
        kubelet.add_pod(Pod("ns", f"p{i}", [Container("c", cpus=[10 + i])]))
        cache.add("ns", f"p{i}")

    async def go() -> None:
        for _ in range(3):
            await cycle(u)
        kubelet.remove_pod("ns", "p3")
        await cycle(u)
        await cycle(u)
        await u.kubelet.close()

    asyncio.run(go())
    assert len(api.writes()) == 2
    # one namespace GET for the owner reference, nothing per pod
    assert [r[1] for r in api.gets()] == ["/api/v1/namespaces/nfd"]
    assert resources(api.objects["node-a"], "node-0")["cpu"][2] == str(70 - 19)
    assert u.scans == 5


def test_kubelet_down_or_restarting_keeps_the_published_object(tmp_path, sock, kubelet, topo_two) -> None:
    u, api, cache = make(tmp_path, sock, topo_two)
    kubelet.add_pod(Pod("ns", "a", [Container("c", cpus=[5])]))
    cache.add("ns", "a")

    async def go() -> None:
        assert await cycle(u) is not None
        kubelet.stop()
        assert not os.path.exists(sock)
        assert await cycle(u) is None
        assert await cycle(u) is None
        kubelet.add_pod(Pod("ns", "b", [Container("c", cpus=[6])]))
        cache.add("ns", "b")
        kubelet.start()
        for _ in range(50):  # the channel reconnects with backoff after the socket reappears
            if await cycle(u) is not None:
                break
            await asyncio.sleep(0.1)
        await u.kubelet.close()

    asyncio.run(go())
    assert u.metrics.scan_errors._value.get() >= 2
    assert not [w for w in api.writes() if w[0] == "DELETE"]
    assert len(api.writes()) == 2
    assert resources(api.objects["node-a"], "node-0")["cpu"][2] == "68"


def test_missing_kubelet_config_skips_publish(tmp_path, sock, kubelet, topo_two) -> None:
    u, api, _ = make(tmp_path, sock, topo_two, uri="file://" + str(tmp_path / "absent.yaml"))

    async def go() -> None:
        assert await cycle(u) is None
        await u.kubelet.close()

    asyncio.run(go())
    assert api.writes() == []
    assert u.metrics.scan_errors._value.get() == 1


def test_defaults_when_kubelet_config_leaves_fields_empty(tmp_path, sock, kubelet, topo_one) -> None:
    p = tmp_path / "k.yaml"
    p.write_text("kind: KubeletConfiguration\n")
    u, api, _ = make(tmp_path, sock, topo_one, uri="file://" + str(p))

    async def go() -> None:
        nrt = await cycle(u)
        assert nrt is not None
        assert (
            nrt.attribute("topologyManagerPolicy") == "none"
            and nrt.attribute("topologyManagerScope") == "container"
        )
        assert nrt.topology_policies == ["None"]
        await u.kubelet.close()

    asyncio.run(go())


def test_api_failure_is_retried_on_next_cycle(tmp_path, sock, kubelet, topo_two) -> None:
    u, api, _ = make(tmp_path, sock, topo_two)

    async def go() -> None:
        api.fail = ApiUnavailable("connection refused")
        await cycle(u)
        api.fail = None
        await cycle(u)
        await u.kubelet.close()

    asyncio.run(go())
    assert "node-a" in api.objects
    assert u.metrics.scan_errors._value.get() == 1


def test_pod_missing_from_cache_defers_then_publishes(tmp_path, sock, kubelet, topo_two) -> None:
    u, api, cache = make(tmp_path, sock, topo_two, missing_pod_grace_s=0.3)
    kubelet.add_pod(Pod("ns", "fresh", [Container("c", cpus=[7, 8])]))

    async def go() -> None:
        assert await cycle(u) is None  # deferred: pod cache has not caught up
        cache.add("ns", "fresh", guaranteed=False, exclusive=False)
        nrt = await cycle(u)
        assert nrt is not None and resources(nrt.to_json(), "node-0")["cpu"][2] == "70"
        kubelet.add_pod(Pod("ns", "ghost", [Container("c", cpus=[9])]))
        assert await cycle(u) is None
        await asyncio.sleep(0.35)
        nrt = await cycle(u)  # grace over: accounted from kubelet data alone
        assert nrt is not None and resources(nrt.to_json(), "node-0")["cpu"][2] == "69"
        await u.kubelet.close()

    asyncio.run(go())


def test_exclude_list_from_config(tmp_path, sock, kubelet, topo_two) -> None:
    from nfd.topology_updater.config import parse_config

    cfg = parse_config({"excludeList": {"node-a": ["memory"], "*": ["nvidia.com/gpu"], "other": ["cpu"]}})
    u, api, _ = make(tmp_path, sock, topo_two, config=cfg)

    async def go() -> None:
        await cycle(u)
        await u.kubelet.close()

    asyncio.run(go())
    assert set(resources(api.objects["node-a"], "node-0")) == {"cpu"}


def test_run_oneshot_publishes_once_at_startup(tmp_path, sock, kubelet, topo_two) -> None:
    u, api, _ = make(tmp_path, sock, topo_two, oneshot=True, sleep_interval=0)

    async def go() -> int:
        rc = await asyncio.wait_for(u.run(), 10)
        await u.kubelet.close()
        return rc

    assert asyncio.run(go()) == 0
    assert len(api.writes()) == 1


def test_state_file_change_triggers_scan(tmp_path, sock, kubelet, topo_two) -> None:
    state = tmp_path / "kubelet"
    (state / "device-plugins").mkdir(parents=True)
    u, api, cache = make(tmp_path, sock, topo_two, sleep_interval=0, kubelet_state_dir=str(state))

    async def go() -> None:
        task = asyncio.create_task(u.run())
        for _ in range(100):
            if u.publishes == 1:
                break
            await asyncio.sleep(0.05)
        scans = u.scans
        kubelet.add_pod(Pod("ns", "p", [Container("c", cpus=[3])]))
        cache.add("ns", "p")
        (state / "unrelated").write_text("x")
        (state / "cpu_manager_state").write_text("{}")
        for _ in range(100):
            if u.publishes == 2:
                break
            await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await u.kubelet.close()
        assert u.scans > scans

    asyncio.run(go())
    assert u.publishes == 2


def test_interval_ticker_triggers_scans(tmp_path, sock, kubelet, topo_one) -> None:
    u, _, _ = make(tmp_path, sock, topo_one, sleep_interval=0.05, initial_scan=False)

    async def go() -> None:
        task = asyncio.create_task(u.run())
        for _ in range(100):
            if u.scans >= 3:
                break
            await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await u.kubelet.close()

    asyncio.run(go())
    assert u.scans >= 3


def test_unexpected_scan_error_does_not_stop_the_daemon(tmp_path, sock, kubelet, topo_one) -> None:
    u, api, _ = make(tmp_path, sock, topo_one, sleep_interval=0.05)
    real = u.kubelet.allocatable
    calls = {"n": 0}

    async def flaky():
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("garbage from the kubelet")
        return await real()

    u.kubelet.allocatable = flaky

    async def go() -> None:
        task = asyncio.create_task(u.run())
        for _ in range(100):
            if u.publishes:
                break
            await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await u.kubelet.close()

    asyncio.run(go())
    assert u.publishes == 1
    assert u.metrics.scan_errors._value.get() == 1


def test_deferred_publish_is_retried_after_grace_without_ticks(tmp_path, sock, kubelet, topo_two) -> None:
    state = tmp_path / "kubelet"
    (state / "device-plugins").mkdir(parents=True)
    u, api, _ = make(
        tmp_path, sock, topo_two, sleep_interval=0, kubelet_state_dir=str(state), missing_pod_grace_s=0.3
    )
    kubelet.add_pod(Pod("ns", "static-a", [Container("c", cpus=[4])]))  # never in the pod cache

    async def wait_publishes(n: int) -> None:
        for _ in range(100):
            if u.publishes >= n:
                return
            await asyncio.sleep(0.05)

    async def go() -> None:
        task = asyncio.create_task(u.run())
        await wait_publishes(1)
        assert resources(api.objects["node-a"], "node-0")["cpu"][2] == "69"
        kubelet.add_pod(Pod("ns", "static-b", [Container("c", cpus=[5])]))
        (state / "cpu_manager_state").write_text("{}")  # one trigger; the retry must come by itself
        await wait_publishes(2)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await u.kubelet.close()

    asyncio.run(go())
    assert u.publishes == 2
    assert resources(api.objects["node-a"], "node-0")["cpu"][2] == "68"


def test_podresources_client_names_the_socket_and_the_grpc_status(sock, kubelet) -> None:
    """The gRPC calls (our framing on HTTP/2) against the test kubelet's grpcio server: answers
    decode, a refused call carries its status and message (with the feature-gate hint), a
    stopped kubelet is UNAVAILABLE, and the client reconnects once it is back."""
    from nfd.topology_updater.kubelet import KubeletUnavailable

    kubelet.add_pod(Pod("ns", "p", [Container("c", cpus=[3, 4])]))

    async def go() -> None:
        c = PodResourcesClient(sock, timeout_s=2)
        listed = await c.list()
        assert [(p.namespace, p.name, list(p.containers[0].cpu_ids)) for p in listed.pod_resources] == [
            ("ns", "p", [3, 4])]
        assert len((await c.allocatable()).cpu_ids) == 142
        kubelet.allocatable_enabled = False
        with pytest.raises(KubeletUnavailable) as e:
            await c.allocatable()
        assert str(e.value) == (f"podresources GetAllocatableResources on {sock}: UNKNOWN: Pod Resources API "
                                "GetAllocatableResources disabled (enable the kubelet feature gate "
                                "KubeletPodResourcesGetAllocatable)")
        kubelet.allocatable_enabled = True
        kubelet.stop()
        with pytest.raises(KubeletUnavailable, match=f"podresources List on {sock}: UNAVAILABLE: "):
            await c.list()
        kubelet.start()
        assert len((await c.list()).pod_resources) == 1
        await c.close()

    asyncio.run(go())


class OwnWatch:
    """Stands in for nfd.k8s.ownwatch.OwnObjectWatch: only .check() is used by the loop."""

    def __init__(self, usable: bool) -> None:
        self.usable = usable

    async def check(self, fallback: str) -> bool:
        return self.usable


def test_own_object_deleted_or_overwritten_is_applied_again_echo_is_not(tmp_path, sock, kubelet, topo_two) -> None:
    u, api, _ = make(tmp_path, sock, topo_two)
    u.own = OwnWatch(usable=True)

    async def go() -> None:
        await cycle(u)
        assert len(api.writes()) == 1
        echo = dict(api.objects["node-a"], metadata={**api.objects["node-a"]["metadata"], "resourceVersion": "7"})
        u._on_own_change(echo)  # our own apply coming back: nothing to do
        assert not u._trigger.is_set()
        await cycle(u)
        assert len(api.writes()) == 1  # unchanged: no write
        u._on_own_change(None)  # deleted by someone
        assert u._trigger.is_set() and "ownObject" in u._reasons
        await cycle(u, reasons={"ownObject"})
        assert len(api.writes()) == 2
        forged = dict(api.objects["node-a"], zones=[])
        u._on_own_change(forged)  # overwritten by someone
        await cycle(u, reasons={"ownObject"})
        assert len(api.writes()) == 3
        await u.kubelet.close()

    asyncio.run(go())


@pytest.mark.parametrize(("usable", "writes"), [(True, 1), (False, 3)])
def test_interval_reapplies_only_without_a_working_watch(tmp_path, sock, kubelet, topo_two, usable, writes) -> None:
    """Upstream's RBAC refuses the watch: every interval tick applies, as upstream does."""
    u, api, _ = make(tmp_path, sock, topo_two)
    u.own = OwnWatch(usable=usable)

    async def go() -> None:
        for _ in range(3):
            nrt = await u.scan_once({INTERVAL})
            assert nrt is not None
            await u.publish(nrt, reapply=not await u.own_watch_usable())
        await u.kubelet.close()

    asyncio.run(go())
    assert len(api.writes()) == writes


class UpstreamRoleApi(FakeApi):
    """RBAC as upstream's roles: create, get and update on noderesourcetopologies, no patch.
    ``conflicts`` PUTs are answered 409 first, as when someone writes between our GET and PUT."""

    def __init__(self) -> None:
        super().__init__()
        self.rv = 0
        self.conflicts = 0

    async def _request(self, method: str, path: str, **kw):  # type: ignore[override]
        import json

        from nfd.k8s.errors import Conflict, Forbidden, NotFound

        if "/noderesourcetopologies" not in path:
            return await super()._request(method, path, **kw)
        self.requests.append((method, path, dict(kw.get("params") or {}), kw.get("body"), ""))
        if method == "PATCH":
            raise Forbidden(403, "Forbidden", 'cannot patch resource "noderesourcetopologies"')
        name = path.rsplit("/", 1)[1]
        if method == "GET":
            if name not in self.objects:
                raise NotFound(404, "NotFound", "not found")
            return json.loads(json.dumps(self.objects[name]))
        obj = kw["body"] if isinstance(kw["body"], dict) else json.loads(kw["body"])
        if method == "PUT":
            if self.conflicts:
                self.conflicts -= 1
                self.rv += 1
                self.objects[name]["metadata"]["resourceVersion"] = str(self.rv)
                raise Conflict(409, "Conflict", "the object has been modified")
            assert obj["metadata"]["resourceVersion"] == self.objects[name]["metadata"]["resourceVersion"]
        else:
            name = obj["metadata"]["name"]
        self.rv += 1
        obj = json.loads(json.dumps(obj))
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.objects[name] = obj
        return obj


def test_patch_refused_falls_back_to_get_create_update_once(tmp_path, sock, kubelet, topo_two, caplog) -> None:
    u, _, cache = make(tmp_path, sock, topo_two)
    api = u.api = UpstreamRoleApi()

    def verbs() -> list[str]:
        return [r[0] for r in api.requests if "/noderesourcetopologies" in r[1]]

    async def go() -> None:
        await cycle(u)  # PATCH refused, then GET (absent), POST
        assert verbs() == ["PATCH", "GET", "POST"]
        nrt = await u.scan_once({INTERVAL})
        assert nrt is not None
        await u.publish(nrt, reapply=True)  # no watch: re-checked each tick, nothing to write
        assert verbs()[3:] == ["GET"]
        api.objects["node-a"]["metadata"]["labels"] = {"someone": "else"}
        kubelet.add_pod(Pod("ns", "p", [Container("c", cpus=[10])]))
        cache.add("ns", "p")
        api.conflicts = 1
        await cycle(u)  # a change: GET, PUT (409), GET, PUT
        assert verbs()[4:] == ["GET", "PUT", "GET", "PUT"]
        await u.kubelet.close()

    asyncio.run(go())
    obj = api.objects["node-a"]
    assert resources(obj, "node-0")["cpu"][2] == "69"
    assert obj["metadata"]["labels"] == {"someone": "else"}  # others' metadata kept
    assert obj["metadata"]["ownerReferences"][0]["uid"] == "ns-uid-1"
    refused = [r for r in caplog.records if "cannot patch noderesourcetopologies" in r.getMessage()]
    assert len(refused) == 1 and u.publishes == 2
