"""The consumer of nfd-topology-updater's NodeResourceTopology: kubernetes-sigs/scheduler-plugins'
NodeResourceTopologyMatch, run as a second scheduler against the real kube-apiserver.

Three Nodes (no kubelet): each has its own test kubelet (PodResources v1 on a unix socket), a
sysfs fixture (tests/fixtures/numa: two NUMA zones, or one) and its own nfd-topology-updater
process publishing the node's NodeResourceTopology (kubelet topology manager
``single-numa-node``, scope ``pod``: the policy the plugin filters for, read from the object's
``topologyManagerPolicy``/``topologyManagerScope`` attributes and its ``topologyPolicies``).
The scheduler (``kube-scheduler-nrt``, built from scheduler-plugins v0.34.7 by tests/tools/
schedplugins) has one profile, ``topology-aware``, with the plugin's filter and score.

Guaranteed pods arrive one by one; each fits exactly one zone of one node, while node-level
totals (what the default scheduler checks) would let several nodes take it. The scheduler must
bind each to that node, and its filter must place it in that zone (the plugin's own verdict,
from its log); then the test plays the kubelet and allocates the pod's CPUs, memory and GPU
from that zone, the updater republishes, and the next pod sees the smaller zone. The last pod
fits the node's total but no single zone: it stays Pending with the plugin's reason.

Upstream's nfd-topology-updater (the release on the Go module proxy, built by tests/tools/
upstream-nfd; ``UPSTREAM_NFD_TOPOLOGY_UPDATER=<binary>`` names another build) runs the same
scenario publishing the objects, reading the same fixtures through a private mount namespace
(tests/support/hostroot.py): the placements must be the same as with ours.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nfd.api.noderesourcetopology import parse_int_quantity
from tests.e2e.harness import REPO_ROOT, KubeCluster, ManagedProcess, free_port
from tests.e2e.tools import (
    kube_scheduler_nrt_bin,
    make_ready_node,
    upstream_nfd_topology_updater_bin,
    upstream_topology_updater_bin,
)
from tests.support import hostroot
from tests.support.kubelet import Container, Device, FakeKubelet, Memory, Pod

pytestmark = pytest.mark.e2e

__all__ = ["kube_scheduler_nrt_bin", "upstream_nfd_topology_updater_bin", "upstream_topology_updater_bin"]  # fixtures

NS = "node-feature-discovery"
SA = "nfd-topology-updater"
NRT = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
NUMA = REPO_ROOT / "tests" / "fixtures" / "numa"
SCHEDULER = "topology-aware"
GPU = "nvidia.com/gpu"
GiB = 1 << 30

# fixture "two": NUMA node 0 = CPUs 0-35,72-107; node 1 = CPUs 36-71,108-143; "one": CPUs 0-7


@functools.cache
def _has_port_flag(binary: str) -> bool:
    usage = subprocess.run([binary, "-help"], capture_output=True, text=True, check=False)
    return "-port" in (usage.stdout + usage.stderr).split()


def _port_flags(binary: str) -> list[str]:
    """Free ports for the updater's servers: ``-port`` (ours; upstream since v0.18), or
    ``-metrics`` and ``-grpc-health`` (upstream v0.17, the release on the Go module proxy)."""
    if binary and not _has_port_flag(binary):
        return [f"-metrics={free_port()}", f"-grpc-health={free_port()}"]
    return [f"-port={free_port()}"]


@dataclass
class NodeModel:
    """One node: its fixture, the kubelet's allocatable CPUs and GPUs per NUMA zone."""

    key: str
    fixture: str
    cpus: dict[int, list[int]]
    gpus: dict[int, int] = field(default_factory=dict)

    def devices(self) -> list[Device]:
        return [Device(GPU, [f"{self.key}-gpu{zone}-{i}"], [zone]) for zone, n in self.gpus.items() for i in range(n)]

    def node_allocatable(self) -> dict[str, str]:
        res = {"cpu": str(sum(len(c) for c in self.cpus.values())), "memory": f"{8 * len(self.cpus)}Gi",
               "pods": "110"}
        if self.gpus:
            res[GPU] = str(sum(self.gpus.values()))
        return res


MODELS = [
    NodeModel("a", "two", {0: list(range(2, 10)), 1: list(range(36, 40))}, {0: 1, 1: 1}),
    NodeModel("b", "two", {0: list(range(10, 16)), 1: list(range(40, 44))}, {1: 2}),
    NodeModel("c", "one", {0: [2, 3]}),
]

# (pod, cpus, gpus, the node and zone it fits in; None: no zone fits, Pending)
STEPS: list[tuple[str, int, int, tuple[str, int] | None]] = [
    ("gpu-big", 6, 1, ("a", 0)),    # only a's zone 0 has 6 CPUs with a GPU
    ("cpu-six", 6, 0, ("b", 0)),    # a still has 6 CPUs in all, but 2 + 4 across its zones
    ("gpu-pair", 3, 2, ("b", 1)),   # only b's zone 1 has two GPUs
    ("gpu-one", 3, 1, ("a", 1)),    # a's zone 0 has no GPU left, b none at all
    ("stuck", 3, 0, None),          # a has 3 CPUs, 2 + 1 across its zones; b and c fewer
]


class Node:
    """A Node object, its test kubelet and the updater publishing its NodeResourceTopology."""

    def __init__(self, kube: KubeCluster, model: NodeModel, *, run: str, tmp: Path) -> None:
        self.kube = kube
        self.model = model
        self.name = make_ready_node(kube, f"nrt-{model.key}", allocatable=model.node_allocatable(),
                                    labels={"e2e.nfd/topology-run": run})
        self.sockdir = tempfile.mkdtemp(prefix="nfd-e2e-nrt-")  # unix socket paths must stay short
        self.kubelet = FakeKubelet(
            os.path.join(self.sockdir, "kubelet.sock"),
            cpus=[c for zone in model.cpus.values() for c in zone],
            devices=model.devices(),
            memory=[Memory("memory", 8 * GiB, [zone]) for zone in model.cpus],
        ).start()
        self.kubelet_config = tmp / f"kubelet-{model.key}.yaml"
        self.kubelet_config.write_text(
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ntopologyManagerPolicy: single-numa-node\ntopologyManagerScope: pod\n")
        self.proc: ManagedProcess | None = None
        self.used: dict[int, dict[str, int]] = {z: {"cpu": 0, GPU: 0, "memory": 0} for z in model.cpus}

    def start_updater(self, upstream: str, kubeconfig: str) -> None:
        root = NUMA / self.model.fixture
        flags = [f"-kubelet-config-uri=file://{self.kubelet_config}",
                 f"-podresources-socket={self.kubelet.socket_path}", "-kubelet-state-dir=",
                 "-sleep-interval=1s", "-v=2"]
        env = {"NODE_NAME": self.name, "KUBERNETES_NAMESPACE": NS, "POD_NAMESPACE": NS}
        flags += _port_flags(upstream)
        if upstream:
            conf = self.kubelet_config.with_suffix(".updater.conf")
            conf.write_text("")
            argv = hostroot.in_host_root([upstream, f"-kubeconfig={kubeconfig}", f"-config={conf}", *flags], root)
        else:
            argv = ["nfd-topology-updater", "-config=/nonexistent/nfd-topology-updater.conf", *flags]
            env["NFD_HOST_ROOT"] = str(root)
        self.proc = self.kube.start_process(argv, kubeconfig=kubeconfig, env=env,
                                            name=f"updater-{'upstream' if upstream else 'nfd'}-{self.name}")

    def nrt(self) -> dict[str, Any] | None:
        obj: dict[str, Any] | None = self.kube.get_or_none(f"{NRT}/{self.name}")
        return obj

    def available(self) -> dict[int, dict[str, int]]:
        """zone id -> resource -> available, as published."""
        out: dict[int, dict[str, int]] = {}
        for z in (self.nrt() or {}).get("zones") or []:
            zid = int(z["name"].rsplit("-", 1)[1])
            out[zid] = {r["name"]: parse_int_quantity(r["available"]) for r in z.get("resources") or []}
        return out

    def expected(self) -> dict[int, dict[str, int]]:
        """What a zone should show: the kubelet's allocatable minus what the test allocated."""
        out = {}
        for zone, cpus in self.model.cpus.items():
            want = {"cpu": len(cpus) - self.used[zone]["cpu"], "memory": 8 * GiB - self.used[zone]["memory"]}
            if self.model.gpus.get(zone):
                want[GPU] = self.model.gpus[zone] - self.used[zone][GPU]
            out[zone] = want
        return out

    def published_as_expected(self) -> bool:
        avail = self.available()
        return all({k: avail.get(z, {}).get(k) for k in want} == want for z, want in self.expected().items())

    def allocate(self, ns: str, pod: str, zone: int, cpus: int, gpus: int) -> None:
        """Play the kubelet: the pod gets CPUs, memory and GPUs from one zone (single-numa-node)."""
        taken = {c for p in self.kubelet.pods.values() for ctr in p.containers for c in ctr.cpus}
        free = [c for c in self.model.cpus[zone] if c not in taken]
        devs_taken = {i for p in self.kubelet.pods.values() for ctr in p.containers for d in ctr.devices for i in d.ids}
        free_devs = [d.ids[0] for d in self.model.devices() if d.numa == [zone] and d.ids[0] not in devs_taken]
        devices = [Device(GPU, free_devs[:gpus], [zone])] if gpus else []
        self.kubelet.add_pod(Pod(ns, pod, [Container("main", cpus=free[:cpus], devices=devices,
                                                     memory=[Memory("memory", GiB, [zone])])]))
        self.used[zone]["cpu"] += cpus
        self.used[zone][GPU] += gpus
        self.used[zone]["memory"] += GiB

    def close(self) -> None:
        if self.proc is not None and self.proc.running:
            os.kill(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=20)
        self.kubelet.stop()
        shutil.rmtree(self.sockdir, ignore_errors=True)
        self.kube.delete_node(self.name)
        with contextlib.suppress(Exception):
            self.kube.admin.request("DELETE", f"{NRT}/{self.name}")


def start_topology_scheduler(kube: KubeCluster, binary: Path, tmp: Path) -> ManagedProcess:
    """The scheduler-plugins build as a second scheduler: one profile with NodeResourceTopologyMatch
    (filter and score; its reserve-side cache off, so it reads the objects as published), under
    a ServiceAccount with the bootstrap scheduler roles plus read access to the objects."""
    sa = "e2e-topology-scheduler"
    kube.create_serviceaccount("kube-system", sa, exist_ok=True)
    subject = [{"kind": "ServiceAccount", "name": sa, "namespace": "kube-system"}]
    kube.apply_objects([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "e2e-topology-scheduler-nrt"},
         "rules": [{"apiGroups": ["topology.node.k8s.io"], "resources": ["noderesourcetopologies"],
                    "verbs": ["get", "list", "watch"]}]},
        *[{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
           "metadata": {"name": f"e2e-topology-scheduler-{role.replace(':', '-')}"},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
           "subjects": subject}
          for role in ("system:kube-scheduler", "system:volume-scheduler", "e2e-topology-scheduler-nrt")],
    ])
    kc = kube.serviceaccount_kubeconfig("kube-system", sa)
    config = tmp / "topology-scheduler.yaml"
    config.write_text(f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: {kc}
profiles:
- schedulerName: {SCHEDULER}
  plugins:
    multiPoint:
      enabled:
      - name: NodeResourceTopologyMatch
    reserve:
      disabled:
      - name: NodeResourceTopologyMatch
  pluginConfig:
  - name: NodeResourceTopologyMatch
    args:
      scoringStrategy:
        type: LeastAllocated
""")
    # -v=4: the plugin logs its filter's verdict per node ("all container placed" numaCell=N)
    return kube.start_process([str(binary), f"--config={config}", "--secure-port=0", "--v=4"],
                              kubeconfig=kc, name=f"kube-scheduler-nrt-{kube.unique_name('run')}")


def guaranteed_pod(name: str, *, cpus: int, gpus: int, run: str) -> dict[str, Any]:
    res = {"cpu": str(cpus), "memory": "1Gi"}
    if gpus:
        res[GPU] = str(gpus)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"schedulerName": SCHEDULER, "nodeSelector": {"e2e.nfd/topology-run": run},
                     "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": res, "limits": res}}]}}


def filter_verdicts(log: str, ns: str, pod: str) -> set[tuple[str, int]]:
    """(node, NUMA cell) of every node the plugin's filter admitted the pod to, from its log."""
    out = set()
    for line in log.splitlines():
        if "all container placed" in line and f'pod="{ns}/{pod}"' in line:
            node, cell = re.search(r'node="([^"]+)"', line), re.search(r"numaCell=(\d+)", line)
            if node and cell:
                out.add((node.group(1), int(cell.group(1))))
    return out


def run_placements(kube: KubeCluster, scheduler_bin: Path, tmp: Path, *, upstream: str = "") -> list[str]:
    """Run STEPS with ours (or upstream's) updater publishing; returns one line per pod."""
    kube.apply_manifest_dir(REPO_ROOT / "deploy" / "base" / "rbac-topologyupdater")
    if upstream:  # upstream's updater reads each pod and replaces its object: its chart's verbs (v0.17)
        kube.apply_objects([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "e2e-upstream-topology-updater"},
             "rules": [{"apiGroups": ["topology.node.k8s.io"], "resources": ["noderesourcetopologies"],
                        "verbs": ["create", "get", "update"]},
                       {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "e2e-upstream-topology-updater"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                         "name": "e2e-upstream-topology-updater"},
             "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}]},
        ])
    kube.wait_crd_established("noderesourcetopologies.topology.node.k8s.io")
    tmp.mkdir(parents=True, exist_ok=True)
    run = kube.unique_name("run")
    ns = kube.unique_name("topo-pods")
    kube.create_namespace(ns)
    nodes: dict[str, Node] = {}
    scheduler: ManagedProcess | None = None
    placements = []
    try:
        kc = kube.serviceaccount_kubeconfig(NS, SA)
        for m in MODELS:
            nodes[m.key] = Node(kube, m, run=run, tmp=tmp)
            nodes[m.key].start_updater(upstream, kc)
        for n in nodes.values():
            try:
                kube.wait_until(n.published_as_expected, timeout=60, message=f"{n.name}: NodeResourceTopology")
            except TimeoutError as e:  # the logs as they are at the end of the wait
                raise AssertionError(f"{n.name}: NodeResourceTopology {n.expected()} (now {n.available()}); "
                                     f"logs:\n{n.proc.logs()[-3000:] if n.proc else ''}") from e
            attrs = {a["name"]: a["value"] for a in (n.nrt() or {}).get("attributes") or []}
            assert attrs.get("topologyManagerPolicy") == "single-numa-node", attrs
        scheduler = start_topology_scheduler(kube, scheduler_bin, tmp)
        by_name = {n.name: n for n in nodes.values()}
        for pod, cpus, gpus, where in STEPS:
            kube.request("POST", f"/api/v1/namespaces/{ns}/pods", body=guaranteed_pod(pod, cpus=cpus, gpus=gpus, run=run))
            path = f"/api/v1/namespaces/{ns}/pods/{pod}"
            if where is None:
                cond = kube.wait_until(lambda path=path: _unschedulable(kube.get(path)), timeout=60,
                                       message=f"{pod} found unschedulable; scheduler log:\n{scheduler.logs()[-4000:]}")
                assert not kube.get(path)["spec"].get("nodeName")
                placements.append(f"{pod}: Pending: {cond['message']}")
                continue
            bound = kube.wait_until(lambda path=path: kube.get(path)["spec"].get("nodeName"), timeout=60,
                                    message=f"{pod} bound; scheduler log:\n{scheduler.logs()[-4000:]}")
            key, zone = where
            node = by_name[bound]
            verdicts = filter_verdicts(scheduler.logs(), ns, pod)
            placements.append(f"{pod}: {node.model.key} zone {sorted(c for n, c in verdicts if n == bound)}")
            assert (node.model.key, verdicts) == (key, {(bound, zone)}), (
                f"{pod}: bound to {node.model.key} ({bound}); the plugin admitted it to {verdicts}, "
                f"expected {where}; scheduler log:\n{scheduler.logs()[-4000:]}")
            node.allocate(ns, pod, zone, cpus, gpus)  # the kubelet admits it on that zone
            try:
                kube.wait_until(node.published_as_expected, timeout=30, message=f"{node.name} republished")
            except TimeoutError as e:  # the logs as they are at the end of the wait
                raise AssertionError(f"{node.name} republished after {pod}: want {node.expected()}, now "
                                     f"{node.available()}; logs:\n{node.proc.logs()[-3000:] if node.proc else ''}"
                                     ) from e
        return placements
    finally:
        if scheduler is not None:
            scheduler.stop()
        for n in nodes.values():
            n.close()
        kube.delete_namespace(ns)


def _unschedulable(pod: dict[str, Any]) -> dict[str, Any] | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable":
            return c
    return None


def test_scheduler_plugin_places_pods_by_our_topology(kube: KubeCluster, kube_scheduler_nrt_bin: Path,
                                                      tmp_path: Path) -> None:
    placements = run_placements(kube, kube_scheduler_nrt_bin, tmp_path)
    stuck = placements[-1]
    # the plugin's own reason (pod scope: "cannot align pod") for the node whose total fits
    assert "1 cannot align pod" in stuck and "2 Insufficient cpu" in stuck, placements
    assert placements[:-1] == ["gpu-big: a zone [0]", "cpu-six: b zone [0]", "gpu-pair: b zone [1]",
                               "gpu-one: a zone [1]"], placements


def test_same_placements_with_upstreams_updater(kube: KubeCluster, kube_scheduler_nrt_bin: Path,
                                                upstream_topology_updater_bin: Path, tmp_path: Path) -> None:
    why = hostroot.why_not()
    if why:
        pytest.skip(f"upstream's updater reads /sys: running it on the fixtures {why}")
    ours = run_placements(kube, kube_scheduler_nrt_bin, tmp_path / "ours")
    theirs = run_placements(kube, kube_scheduler_nrt_bin, tmp_path / "upstream", upstream=str(upstream_topology_updater_bin))
    assert theirs == ours
