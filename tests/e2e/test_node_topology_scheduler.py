"""The topology-aware scheduler on the real node (tests/e2e/node.py): kubernetes-sigs/
scheduler-plugins' NodeResourceTopologyMatch reads the NodeResourceTopology our
nfd-topology-updater publishes from the real kubelet's podresources.

The kubelet is restarted with the topology manager policy the plugin filters for
(``single-numa-node``, scope ``pod``), and the updater reads that same configuration file. A
device plugin for the tests (tests/support/deviceplugin) registers ``nfd-e2e.example.com/widget``
devices on the node's NUMA zones; the updater (the one tests/e2e/test_node_device_plugin.py
starts, under its ServiceAccount) publishes the object; the second scheduler (``kube-scheduler-
nrt``, built from scheduler-plugins v0.34.7 by tests/tools/schedplugins, started as
tests/e2e/test_topology_scheduler.py starts it) schedules the pods whose ``schedulerName`` is
its profile:

- a Guaranteed pod (1 CPU, 2 widgets) that fits a zone is bound by it, its filter admitting it
  to that zone (the plugin's own log line), and runs there: the kubelet's CPU manager and
  device manager give it a CPU and devices of that NUMA node;
- once the updater has republished (the zone's exclusive CPU taken), a Guaranteed pod that the
  node's allocatable still fits but no zone of the NodeResourceTopology does (100m more CPU
  than any zone has available) stays Pending with the plugin's reason, ``cannot align pod``,
  in its PodScheduled condition and its FailedScheduling event.

Without our object the plugin's filter admits every node (no NodeResourceTopology: no verdict),
so the first check fails, and the second pod is bound.

Runs after the device plugin and DRA tests and before tests/e2e/test_real_node.py, whose last
test deletes the Node (pytest runs the files in name order); the kubelet gets its own
configuration back at the end.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

from nfd.api.noderesourcetopology import parse_int_quantity
from nfd.topology_updater.podresources import api_pb2, api_pb2_grpc
from tests.e2e.harness import REPO_ROOT, HttpError, ManagedProcess
from tests.e2e.node import RealNode, real_node
from tests.e2e.test_node_device_plugin import RESOURCE, Env, numa_zones, podresources_view
from tests.e2e.test_real_node import APPS_NS, NRT_API, _cpu_list, app_pod, delete_pod, pod_state, ready
from tests.e2e.test_topology_scheduler import (
    SCHEDULER,
    _unschedulable,
    filter_verdicts,
    kube_scheduler_nrt_bin,
    start_topology_scheduler,
)
from tests.support.deviceplugin import DevicePlugin, FakeDevice

pytestmark = [pytest.mark.node, pytest.mark.slow]
__all__ = ["kube_scheduler_nrt_bin", "real_node"]  # fixtures

NS = "node-feature-discovery"
PER_ZONE = 3
#: what the plugin filters for, set in the kubelet's configuration for these tests
TOPOLOGY = {"topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "pod"}
#: and the memory manager, so that the zones carry memory: the plugin refuses a Guaranteed pod's
#: memory request on a zone without memory ("cannot align pod", reason memory; scheduler-plugins
#: #249), and the kubelet's podresources lists memory per NUMA node only under the Static policy
#: (which needs reserved memory, per NUMA node, equal to what Node Allocatable reserves)
KUBELET = {**TOPOLOGY, "memoryManagerPolicy": "Static", "kubeReserved": {"cpu": "100m", "memory": "128Mi"},
           "reservedMemory": [{"numaNode": 0, "limits": {"memory": "128Mi"}}]}


@dataclass
class Sched:
    env: Env
    scheduler: ManagedProcess
    pods: list[str] = field(default_factory=list)

    @property
    def node(self) -> RealNode:
        return self.env.node

    def pod(self, name: str, *, cpu: str, widgets: int) -> dict[str, Any]:
        """A Guaranteed pod for the topology-aware scheduler."""
        res = {"cpu": cpu, "memory": "32Mi", RESOURCE: str(widgets)}
        body = app_pod(name, requests=res, limits=res)
        body["spec"]["schedulerName"] = SCHEDULER
        self.pods.append(name)
        return body

    def zones(self) -> dict[str, dict[str, int]]:
        """zone -> resource -> available, as the NodeResourceTopology shows it."""
        nrt = self.node.kube.get_or_none(f"{NRT_API}/{self.node.name}") or {}
        return {z["name"]: {r["name"]: parse_int_quantity(r["available"]) for r in z.get("resources") or []}
                for z in nrt.get("zones") or []}

    def log(self) -> str:
        return self.scheduler.logs()[-6000:]


@pytest.fixture(scope="module")
def sched(real_node: RealNode, kube_scheduler_nrt_bin: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sched]:
    node = real_node
    kube = node.kube
    kube.create_namespace(NS, exist_ok=True)
    kube.apply_manifest_dir(REPO_ROOT / "deploy" / "base" / "rbac-topologyupdater")
    kube.create_namespace(APPS_NS, exist_ok=True)
    conf = yaml.safe_load((node.tmp / "kubelet.yaml").read_text())
    before = {k: conf.get(k) for k in KUBELET}
    node.restart_kubelet(config=KUBELET)
    devices = [FakeDevice(f"widget-n{z}-{i}", numa=[z]) for z in numa_zones() for i in range(PER_ZONE)]
    env = Env(node=node, plugin=DevicePlugin(RESOURCE, devices, plugin_dir=node.root_dir / "device-plugins"))
    scheduler: ManagedProcess | None = None
    s: Sched | None = None
    try:
        # every process before the plugin's gRPC server runs in this process: a fork beside
        # gRPC's threads can crash the child (grpc's fork handlers)
        env.start_updater()
        scheduler = start_topology_scheduler(kube, kube_scheduler_nrt_bin, tmp_path_factory.mktemp("sched"))
        env.plugin.start()
        # the kubelet's devices, as podresources lists them, in the object; and its new policy
        env.wait_agree("the plugin's devices in the NodeResourceTopology", timeout=120,
                       expect=lambda v: sum(z["allocatable"] for z in v.values()) == len(devices))
        nrt = kube.get(f"{NRT_API}/{node.name}")
        attrs = {a["name"]: a["value"] for a in nrt.get("attributes") or []}
        assert {k: attrs.get(k) for k in TOPOLOGY} == TOPOLOGY, nrt
        kube.wait_until(lambda: node.node()["status"]["allocatable"].get(RESOURCE) == str(len(devices)),
                        timeout=60, interval=0.5, message=f"{RESOURCE} in the Node's allocatable")
        s = Sched(env=env, scheduler=scheduler)
        yield s
    finally:
        for name in s.pods if s is not None else []:
            with contextlib.suppress(HttpError):
                delete_pod(node, name)
        if scheduler is not None:
            scheduler.stop()
        env.plugin.stop()
        if env.updater is not None:
            env.updater.stop()
        with contextlib.suppress(HttpError):  # the later real-node tests start from no object
            kube.request("DELETE", f"{NRT_API}/{node.name}")
        node.restart_kubelet(config=before)


def test_a_guaranteed_pod_that_fits_a_zone_is_bound_there_and_runs(sched: Sched) -> None:
    node, kube = sched.node, sched.node.kube
    zones = sched.zones()
    assert any(z.get("cpu", 0) >= 1 and z.get(RESOURCE, 0) >= 2 for z in zones.values()), zones
    kube.request("POST", f"/api/v1/namespaces/{APPS_NS}/pods", body=sched.pod("fits", cpu="1", widgets=2))
    path = f"/api/v1/namespaces/{APPS_NS}/pods/fits"
    try:
        bound = kube.wait_until(lambda: kube.get(path)["spec"].get("nodeName"), timeout=60, interval=0.5,
                                message="pod fits bound")
    except TimeoutError:
        raise AssertionError(f"pod fits not bound: {kube.get(path)['status']}\nscheduler log:\n{sched.log()}") from None
    assert bound == node.name
    # the plugin's filter admitted it to one NUMA zone of our object (no object: no verdict)
    verdicts = filter_verdicts(sched.scheduler.logs(), APPS_NS, "fits")
    assert len(verdicts) == 1 and next(iter(verdicts))[0] == node.name, (verdicts, zones, sched.log())
    ((_, cell),) = verdicts
    try:
        pod = kube.wait_until(lambda: (p := kube.get(path)) and ready(p) and p, timeout=120, interval=0.5,
                              message="pod fits running")
    except TimeoutError:
        raise AssertionError(f"pod fits not running:\n{pod_state(node, APPS_NS)}\n{node.describe()}") from None
    assert pod["status"]["qosClass"] == "Guaranteed"
    # and the kubelet gave it a CPU and devices of that NUMA node
    zone_cpus = _cpu_list(Path(f"/sys/devices/system/node/node{cell}/cpulist").read_text().strip())
    given = _cpu_list(node.cpu_manager_state()["entries"][pod["metadata"]["uid"]]["app"])
    assert len(given) == 1 and given <= zone_cpus, (given, cell, zone_cpus)
    _, held = podresources_view(node)
    ids = held[(APPS_NS, "fits")]
    assert len(ids) == 2 and all(sched.env.plugin.devices[i].numa == [cell] for i in ids), (ids, cell)


def test_a_guaranteed_pod_that_fits_no_zone_stays_pending_with_the_plugins_reason(sched: Sched) -> None:
    node, kube = sched.node, sched.node.kube
    # the updater republished: what the kubelet gave the first pod is gone from its zone
    sched.env.wait_agree("the first pod's devices taken", timeout=60,
                         expect=lambda v: sum(z["allocatable"] - z["available"] for z in v.values()) == 2)
    exclusive = len(allocatable_cpus(node))
    kube.wait_until(lambda: sum(z.get("cpu", 0) for z in sched.zones().values()) == exclusive - 1,
                    timeout=60, interval=0.5, message="the first pod's CPU taken from its zone")
    zones = sched.zones()
    most = max(z.get("cpu", 0) for z in zones.values()) * 1000  # millicores, the most any zone has
    want = most + 100
    free = node_cpu_free_m(node)
    assert want <= free, f"the node's allocatable ({free}m free) must fit {want}m for the test to mean anything"
    assert any(z.get(RESOURCE, 0) >= 1 for z in zones.values()), zones
    kube.request("POST", f"/api/v1/namespaces/{APPS_NS}/pods", body=sched.pod("stuck", cpu=f"{want}m", widgets=1))
    path = f"/api/v1/namespaces/{APPS_NS}/pods/stuck"
    try:
        cond = kube.wait_until(lambda: _unschedulable(kube.get(path)), timeout=60, interval=0.5,
                               message="pod stuck unschedulable")
    except TimeoutError:
        raise AssertionError(f"pod stuck: {kube.get(path)['spec'].get('nodeName')!r}, {kube.get(path)['status']}"
                             f"\nscheduler log:\n{sched.log()}") from None
    assert "1 cannot align pod" in cond["message"], cond
    pod = kube.get(path)
    assert not pod["spec"].get("nodeName") and pod["status"]["phase"] == "Pending", pod["status"]
    events = kube.get(f"/api/v1/namespaces/{APPS_NS}/events",
                      params={"fieldSelector": "involvedObject.name=stuck"})["items"]
    assert any(e["reason"] == "FailedScheduling" and "cannot align pod" in e["message"] for e in events), events


def allocatable_cpus(node: RealNode) -> list[int]:
    """The CPUs the kubelet can give Guaranteed pods (podresources GetAllocatableResources)."""
    with grpc.insecure_channel(f"unix://{node.root_dir / 'pod-resources' / 'kubelet.sock'}") as ch:
        alloc = api_pb2_grpc.PodResourcesListerStub(ch).GetAllocatableResources(
            api_pb2.AllocatableResourcesRequest(), timeout=10)
    return list(alloc.cpu_ids)


def node_cpu_free_m(node: RealNode) -> int:
    """The node's allocatable CPU minus the requests of the pods bound to it (what the default
    NodeResourcesFit filter checks), in millicores."""
    alloc = node.node()["status"]["allocatable"]["cpu"]
    free = int(alloc[:-1]) if alloc.endswith("m") else int(alloc) * 1000
    pods = node.kube.get("/api/v1/pods", params={"fieldSelector": f"spec.nodeName={node.name}"})["items"]
    for p in pods:
        if p["status"].get("phase") in ("Succeeded", "Failed"):
            continue
        for c in p["spec"]["containers"]:
            cpu = (c.get("resources") or {}).get("requests", {}).get("cpu", "0")
            free -= int(cpu[:-1]) if cpu.endswith("m") else int(float(cpu) * 1000)
    return free
