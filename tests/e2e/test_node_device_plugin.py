"""Device plugin -> kubelet -> NodeResourceTopology, on the real node (tests/e2e/node.py).

A device plugin (tests/support/deviceplugin: the kubelet's device plugin API v1beta1 over real
unix sockets, as a GPU vendor's plugin speaks it) registers `nfd-e2e.example.com/widget`
devices on the node's NUMA zones; Guaranteed pods request them and run (pause image). Our
nfd-topology-updater runs beside the kubelet as a host process under its ServiceAccount
(deploy/base/rbac-topologyupdater), on the kubelet's podresources socket and state directory,
with -sleep-interval=5s. Throughout, the NodeResourceTopology's capacity/allocatable/available
of the resource, per zone, equal what the kubelet's podresources API answers
(GetAllocatableResources and List, read here with grpcio, not with nfd's client):

- a plugin that registers after the updater started is tracked within one interval (upstream
  #1424: never), and so is its re-registration after a kubelet restart, with a pod that kept
  its devices across the restart still accounted;
- pods starting and ending move `available`;
- a device turning unhealthy leaves `allocatable` (and comes back);
- a stopped plugin's devices leave the zones.

The tests share one updater and one plugin and run in file order (before test_real_node.py,
whose last test deletes the Node); the last one removes everything they created.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from nfd.api.noderesourcetopology import parse_int_quantity
from nfd.topology_updater.podresources import api_pb2, api_pb2_grpc
from tests.e2e.harness import REPO_ROOT, HttpError, ManagedProcess, free_port
from tests.e2e.node import RealNode, real_node
from tests.e2e.test_real_node import APPS_NS, NRT_API, app_pod, delete_pod, run_pod
from tests.support.deviceplugin import ENV_DEVICES, DevicePlugin, FakeDevice

pytestmark = [pytest.mark.node, pytest.mark.slow]
__all__ = ["real_node"]  # fixture

NS = "node-feature-discovery"
SA = "nfd-topology-updater"
RESOURCE = "nfd-e2e.example.com/widget"
INTERVAL_S = 5
#: one interval, plus the scan and the API write on a loaded 2-core machine
TRACKED_WITHIN_S = INTERVAL_S + 10
PER_ZONE = 3
GUARANTEED = {"cpu": "100m", "memory": "32Mi"}


def numa_zones() -> list[int]:
    """The host's NUMA node ids (the NodeResourceTopology's zones node-<id>)."""
    ids = sorted(int(p.name[4:]) for p in Path("/sys/devices/system/node").glob("node[0-9]*"))
    return ids or [0]


Amounts = dict[str, dict[str, int]]  # zone -> capacity/allocatable/available


def podresources_view(node: RealNode) -> tuple[Amounts, dict[tuple[str, str], list[str]]]:
    """What the kubelet's podresources API says about RESOURCE: per zone its allocatable
    devices (capacity = allocatable, as the kubelet reports only healthy devices) and what the
    listed pods hold of them; and each pod's device ids."""
    sock = node.root_dir / "pod-resources" / "kubelet.sock"
    with grpc.insecure_channel(f"unix://{sock}") as ch:
        stub = api_pb2_grpc.PodResourcesListerStub(ch)
        alloc = stub.GetAllocatableResources(api_pb2.AllocatableResourcesRequest(), timeout=10)
        listed = stub.List(api_pb2.ListPodResourcesRequest(), timeout=10)
    zones_of: dict[str, list[str]] = {}
    for d in alloc.devices:
        if d.resource_name == RESOURCE:
            for i in d.device_ids:
                zones_of[i] = [f"node-{n.ID}" for n in d.topology.nodes]
    total = Counter(z for zs in zones_of.values() for z in zs)
    used: Counter[str] = Counter()
    held: dict[tuple[str, str], list[str]] = {}
    for p in listed.pod_resources:
        for c in p.containers:
            for d in c.devices:
                if d.resource_name != RESOURCE:
                    continue
                held.setdefault((p.namespace, p.name), []).extend(d.device_ids)
                for i in d.device_ids:
                    used.update(zones_of.get(i, []))
    view = {z: {"capacity": n, "allocatable": n, "available": n - used[z]} for z, n in total.items()}
    return view, held


def nrt_view(node: RealNode) -> Amounts | None:
    """RESOURCE in the node's NodeResourceTopology, per zone (None: no object)."""
    nrt = node.kube.get_or_none(f"{NRT_API}/{node.name}")
    if nrt is None:
        return None
    out: Amounts = {}
    for z in nrt.get("zones") or []:
        for r in z.get("resources") or []:
            if r["name"] == RESOURCE:
                out[z["name"]] = {k: parse_int_quantity(r[k]) for k in ("capacity", "allocatable", "available")}
    return out


def container_env(node: RealNode, pod: dict[str, Any]) -> dict[str, str]:
    """The environment containerd gave the pod's container (its OCI spec)."""
    cid = pod["status"]["containerStatuses"][0]["containerID"].removeprefix("containerd://")
    spec = json.loads(node.ctr("containers", "info", cid))["Spec"]
    return dict(kv.split("=", 1) for kv in spec["process"].get("env") or [])


@dataclass
class Env:
    node: RealNode
    plugin: DevicePlugin
    updater: ManagedProcess | None = None
    pods: list[str] = field(default_factory=list)
    nrt_uid: str = ""

    def start_updater(self) -> ManagedProcess:
        kube = self.node.kube
        self.updater = kube.start_process(
            ["nfd-topology-updater", f"-kubelet-config-uri=file://{self.node.tmp / 'kubelet.yaml'}",
             f"-podresources-socket={self.node.root_dir / 'pod-resources' / 'kubelet.sock'}",
             f"-kubelet-state-dir={self.node.root_dir}", f"-sleep-interval={INTERVAL_S}s",
             f"-port={free_port()}", "-bind-address=127.0.0.1", "-config=/nonexistent/nfd-topology-updater.conf",
             "-v=2"],
            kubeconfig=kube.serviceaccount_kubeconfig(NS, SA), name="nfd-topology-updater-host",
            env={"NODE_NAME": self.node.name, "KUBERNETES_NAMESPACE": NS})
        return self.updater

    def wait_agree(self, message: str, *, timeout: float, expect: Any = None) -> tuple[float, Amounts]:
        """Wait until the NRT shows what podresources says (and `expect(view)` holds); returns
        the seconds it took and the view."""
        began = time.monotonic()
        last: list[Any] = [None, None]

        def agree() -> tuple[Amounts] | None:
            assert self.updater is not None and self.updater.running, self.updater and self.updater.logs()[-3000:]
            view, _ = podresources_view(self.node)
            got = nrt_view(self.node)
            last[:] = [view, got]
            if got == view and (expect is None or expect(view)):
                return (view,)  # truthy also when the view is empty
            return None

        try:
            (view,) = self.node.kube.wait_until(agree, timeout=timeout, interval=0.25, message=message)
        except TimeoutError:
            raise AssertionError(f"{message}: podresources {last[0]}, NodeResourceTopology {last[1]}\n"
                                 f"updater log:\n{self.updater.logs()[-3000:] if self.updater else ''}") from None
        took = time.monotonic() - began
        print(f"device plugin e2e: {message}: {took:.1f}s", file=sys.__stderr__)
        return took, view

    def run(self, name: str, widgets: int) -> dict[str, Any]:
        limits = dict(GUARANTEED, **{RESOURCE: str(widgets)})
        self.pods.append(name)
        pod = run_pod(self.node, app_pod(name, requests=limits, limits=limits))
        assert pod["status"]["qosClass"] == "Guaranteed", pod["status"]
        return pod


@pytest.fixture(scope="module")
def env(real_node: RealNode) -> Iterator[Env]:
    kube = real_node.kube
    kube.create_namespace(NS, exist_ok=True)
    kube.apply_manifest_dir(REPO_ROOT / "deploy" / "base" / "rbac-topologyupdater")
    kube.create_namespace(APPS_NS, exist_ok=True)
    devices = [FakeDevice(f"widget-n{z}-{i}", numa=[z]) for z in numa_zones() for i in range(PER_ZONE)]
    e = Env(node=real_node, plugin=DevicePlugin(RESOURCE, devices, plugin_dir=real_node.root_dir / "device-plugins"))
    try:
        yield e
    finally:
        for name in e.pods:
            with contextlib.suppress(HttpError):
                delete_pod(real_node, name)
        e.plugin.stop()
        if e.updater is not None:
            e.updater.stop()
        with contextlib.suppress(HttpError):  # the later real-node tests start from no object
            kube.request("DELETE", f"{NRT_API}/{real_node.name}")


def test_a_plugin_registered_after_the_updater_started_is_tracked_within_one_interval(env: Env) -> None:
    node = env.node
    env.start_updater()
    node.kube.wait_until(lambda: nrt_view(node) is not None, timeout=120, interval=0.5,
                         message="the NodeResourceTopology published")
    assert nrt_view(node) == {}, "no plugin registered yet"
    env.nrt_uid = node.kube.get(f"{NRT_API}/{node.name}")["metadata"]["uid"]
    env.plugin.start()
    assert env.plugin.registrations == 1
    took, view = env.wait_agree("the plugin's devices in the NodeResourceTopology", timeout=TRACKED_WITHIN_S,
                                expect=lambda v: v != {})
    assert view == {f"node-{z}": {"capacity": PER_ZONE, "allocatable": PER_ZONE, "available": PER_ZONE}
                    for z in numa_zones()}, view
    assert env.plugin.list_and_watch_calls >= 1
    # the kubelet advertises them on the Node too
    node.kube.wait_until(
        lambda: node.node()["status"]["allocatable"].get(RESOURCE) == str(PER_ZONE * len(numa_zones())),
        timeout=30, interval=0.5, message=f"{RESOURCE} in the Node's allocatable")


def test_guaranteed_pods_take_devices_and_give_them_back(env: Env) -> None:
    node = env.node
    one = env.run("widget-one", 1)
    _, view = env.wait_agree("one pod's device taken", timeout=TRACKED_WITHIN_S,
                             expect=lambda v: sum(z["available"] for z in v.values()) == sum(
                                 z["allocatable"] for z in v.values()) - 1)
    two = env.run("widget-two", 2)
    env.wait_agree("three devices taken", timeout=TRACKED_WITHIN_S,
                   expect=lambda v: sum(z["allocatable"] - z["available"] for z in v.values()) == 3)
    # the devices the kubelet lists for each pod are the ones it asked the plugin to Allocate
    _, held = podresources_view(node)
    assert sorted(held[(APPS_NS, "widget-one")]) in [sorted(a) for a in env.plugin.allocations]
    assert sorted(held[(APPS_NS, "widget-two")]) in [sorted(a) for a in env.plugin.allocations]
    assert len(held[(APPS_NS, "widget-one")]) == 1 and len(held[(APPS_NS, "widget-two")]) == 2
    # and containerd ran the container with what Allocate answered for it
    for pod in (one, two):
        env_vars = container_env(node, pod)
        ids = held[(APPS_NS, pod["metadata"]["name"])]
        assert sorted(env_vars.get(ENV_DEVICES, "").split(",")) == sorted(ids), env_vars
    delete_pod(node, "widget-one")
    env.pods.remove("widget-one")
    env.wait_agree("the ended pod's device back", timeout=TRACKED_WITHIN_S,
                   expect=lambda v: sum(z["allocatable"] - z["available"] for z in v.values()) == 2)


def test_an_unhealthy_device_leaves_allocatable(env: Env) -> None:
    _, held = podresources_view(env.node)
    taken = {i for ids in held.values() for i in ids}
    free = next(d for d in env.plugin.devices if d not in taken)
    zone = f"node-{env.plugin.devices[free].numa[0]}"
    _, before = env.wait_agree("steady before the health change", timeout=TRACKED_WITHIN_S)
    env.plugin.set_health(free, False)
    _, view = env.wait_agree(f"unhealthy {free} out of allocatable", timeout=TRACKED_WITHIN_S,
                             expect=lambda v: v.get(zone, {}).get("allocatable") == before[zone]["allocatable"] - 1)
    assert view[zone]["available"] == before[zone]["available"] - 1, (before, view)
    env.node.kube.wait_until(
        lambda: env.node.node()["status"]["allocatable"].get(RESOURCE) == str(PER_ZONE * len(numa_zones()) - 1),
        timeout=30, interval=0.5, message="the Node's allocatable without the unhealthy device")
    env.plugin.set_health(free, True)
    env.wait_agree(f"healthy {free} back", timeout=TRACKED_WITHIN_S, expect=lambda v: v == before)


def test_the_plugin_registering_again_after_a_kubelet_restart_is_tracked_within_one_interval(env: Env) -> None:
    node = env.node
    _, before = env.wait_agree("steady before the kubelet restart", timeout=TRACKED_WITHIN_S)
    registered = env.plugin.registrations
    node.restart_kubelet()
    node.kube.wait_until(lambda: env.plugin.registrations > registered, timeout=60, interval=0.2,
                         message=f"the plugin registered again (errors: {env.plugin.errors})")
    took, view = env.wait_agree("the re-registered plugin's devices tracked", timeout=TRACKED_WITHIN_S,
                                expect=lambda v: v == before)
    # the pod that kept running across the restart still holds its two devices
    _, held = podresources_view(node)
    assert len(held.get((APPS_NS, "widget-two"), [])) == 2, held
    # the updater kept its object through the kubelet's absence (never deleted, never re-created)
    assert node.kube.get(f"{NRT_API}/{node.name}")["metadata"]["uid"] == env.nrt_uid
    assert env.updater is not None and env.updater.running


def test_a_stopped_plugins_devices_leave_the_zones(env: Env) -> None:
    env.plugin.stop()
    env.wait_agree("the stopped plugin's devices gone", timeout=TRACKED_WITHIN_S, expect=lambda v: v == {})
