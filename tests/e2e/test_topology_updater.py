"""nfd-topology-updater as a real process, under its ServiceAccount, against the real
kube-apiserver, fed by the test kubelet (PodResources v1 over a real unix socket).

It creates and updates its node's NodeResourceTopology as pods come and go, survives a missing
or restarting kubelet without deleting anything, and reads pods with one LIST + one WATCH
(the audit log shows no per-pod GET).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nfd.api.noderesourcetopology import parse_int_quantity
from tests.e2e import tools
from tests.e2e.harness import REPO_ROOT, KubeCluster, ManagedProcess, free_port
from tests.e2e.tools import AuditedCluster
from tests.support.kubelet import Container, Device, FakeKubelet, Memory, Pod

pytestmark = pytest.mark.e2e

install_kube = tools.install_kube  # the audited control plane (session fixture)

NS = "node-feature-discovery"
SA = "nfd-topology-updater"
NRT = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
NUMA_TWO = REPO_ROOT / "tests" / "fixtures" / "numa" / "two"
GiB = 1 << 30


def _apply_rbac(kube: KubeCluster) -> None:
    kube.apply_manifest_dir(REPO_ROOT / "deploy" / "base" / "rbac-topologyupdater")  # as upstream's base


@pytest.fixture(scope="module")
def rbac(kube: KubeCluster) -> Iterator[KubeCluster]:
    _apply_rbac(kube)
    yield kube


def api_pod(
    kube: KubeCluster,
    ns: str,
    node: str,
    name: str,
    *,
    cpu: str,
    memory: str = "1Gi",
    guaranteed: bool = True,
) -> dict[str, Any]:
    res: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if guaranteed:
        res["limits"] = {"cpu": cpu, "memory": memory}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": res}],
        },
    }
    pod: dict[str, Any] = kube.admin.request("POST", f"/api/v1/namespaces/{ns}/pods", body=body)
    return pod


def delete_api_pod(kube: KubeCluster, ns: str, name: str) -> None:
    kube.admin.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}", params={"gracePeriodSeconds": "0"})


class UpdaterEnv:
    def __init__(self, kube: KubeCluster, tmp: Path) -> None:
        self.kube = kube
        self.node = kube.unique_name("numa-node")
        kube.create_node(self.node, labels={"kubernetes.io/hostname": self.node})
        self.ns = kube.unique_name("workloads")
        kube.create_namespace(self.ns)
        # unix socket paths must stay short
        self.sockdir = tempfile.mkdtemp(prefix="nfd-e2e-kl-")
        self.socket = os.path.join(self.sockdir, "kubelet.sock")
        self.state = tmp / "kubelet-state"
        (self.state / "device-plugins").mkdir(parents=True)
        self.kubelet = FakeKubelet(
            self.socket,
            cpus=[c for c in range(144) if c not in (0, 72)],
            devices=[Device("nvidia.com/gpu", [f"GPU-{g}"], [g // 2]) for g in range(4)],
            memory=[Memory("memory", 250 * GiB, [0]), Memory("memory", 250 * GiB, [1])],
        )
        self.kcfg = tmp / "kubelet-config.yaml"
        self.kcfg.write_text(
            "kind: KubeletConfiguration\ntopologyManagerPolicy: restricted\ntopologyManagerScope: pod\n"
        )
        self.kubeconfig = kube.serviceaccount_kubeconfig(NS, SA)
        self.port = free_port()
        self.proc: ManagedProcess | None = None

    @property
    def path(self) -> str:
        return f"{NRT}/{self.node}"

    def start(self, *extra: str) -> ManagedProcess:
        self.proc = self.kube.start_process(
            [
                "nfd-topology-updater",
                f"-kubelet-config-uri=file://{self.kcfg}",
                f"-podresources-socket={self.socket}",
                f"-kubelet-state-dir={self.state}",
                "-sleep-interval=1s",
                "-v=2",
                f"-port={self.port}",
                "-config=/nonexistent/nfd-topology-updater.conf",
                *extra,
            ],
            kubeconfig=self.kubeconfig,
            env={"NODE_NAME": self.node, "KUBERNETES_NAMESPACE": NS, "NFD_HOST_ROOT": str(NUMA_TWO)},
        )
        return self.proc

    def stop(self) -> None:
        if self.proc is not None and self.proc.running:
            os.kill(self.proc.pid, signal.SIGTERM)
            assert self.proc.wait(timeout=20) == 0, self.proc.logs()

    def close(self) -> None:
        self.stop()
        self.kubelet.stop()
        shutil.rmtree(self.sockdir, ignore_errors=True)
        self.kube.delete_node(self.node)
        self.kube.delete_namespace(self.ns)
        with contextlib.suppress(Exception):  # leave no NRT of a deleted node in the shared cluster
            self.kube.admin.request("DELETE", self.path)

    def nrt(self) -> dict[str, Any] | None:
        obj: dict[str, Any] | None = self.kube.get_or_none(self.path)
        return obj

    def available(self, zone: str, resource: str) -> int | None:
        obj = self.nrt()
        if obj is None:
            return None
        for z in obj.get("zones") or []:
            if z["name"] == zone:
                for r in z["resources"]:
                    if r["name"] == resource:
                        return parse_int_quantity(r["available"])
        return None

    def wait_available(self, zone: str, resource: str, value: int, timeout: float = 30.0) -> None:
        try:
            self._wait_available(zone, resource, value, timeout)
        except TimeoutError:
            if self.proc is not None and self.proc.running:
                os.kill(self.proc.pid, signal.SIGUSR1)  # stack dump into the log
                time.sleep(1)
                raise TimeoutError(self.proc.logs()[-6000:]) from None
            raise

    def _wait_available(self, zone: str, resource: str, value: int, timeout: float) -> None:
        self.kube.wait_until(
            lambda: self.available(zone, resource) == value,
            timeout=timeout,
            message=f"{zone} {resource} available == {value} (now {self.available(zone, resource)}); "
            f"logs:\n{self.proc.logs() if self.proc else ''}",
        )


@pytest.fixture
def env(rbac: KubeCluster, tmp_path: Path) -> Iterator[UpdaterEnv]:
    e = UpdaterEnv(rbac, tmp_path)
    yield e
    e.close()


def test_creates_and_updates_nrt_as_pods_come_and_go(env: UpdaterEnv) -> None:
    kube = env.kube
    env.kubelet.start()
    env.start()
    kube.wait_until(lambda: env.nrt() is not None, timeout=60, message="NRT created")
    obj = env.nrt()
    assert obj is not None
    ns_uid = kube.get(f"/api/v1/namespaces/{NS}")["metadata"]["uid"]
    assert obj["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Namespace", "name": NS, "uid": ns_uid}
    ]
    attrs = {a["name"]: a["value"] for a in obj["attributes"]}
    assert attrs["topologyManagerPolicy"] == "restricted" and attrs["topologyManagerScope"] == "pod"
    assert "nodeTopologyPodsFingerprint" not in attrs  # no pods listed yet
    assert obj["topologyPolicies"] == ["RestrictedPodLevel"]
    managers = {m["manager"]: m["operation"] for m in obj["metadata"]["managedFields"]}
    assert managers == {"node-feature-discovery-topology-updater": "Apply"}
    assert sorted(z["name"] for z in obj["zones"]) == ["node-0", "node-1"]
    assert env.available("node-0", "cpu") == 70 and env.available("node-1", "nvidia.com/gpu") == 2

    # a Guaranteed pod with exclusive CPUs, a GPU and pinned memory arrives
    api_pod(kube, env.ns, env.node, "pinned", cpu="2", memory="4Gi")
    env.kubelet.add_pod(
        Pod(
            env.ns,
            "pinned",
            [
                Container(
                    "main",
                    cpus=[2, 74],
                    devices=[Device("nvidia.com/gpu", ["GPU-0"], [0])],
                    memory=[Memory("memory", 4 * GiB, [0])],
                )
            ],
        )
    )
    (env.state / "cpu_manager_state").write_text("{}")
    env.wait_available("node-0", "cpu", 68)
    assert env.available("node-0", "nvidia.com/gpu") == 1
    assert env.available("node-0", "memory") == 246 * GiB
    attrs = {a["name"]: a["value"] for a in (env.nrt() or {})["attributes"]}
    assert attrs["nodeTopologyPodsFingerprint"].startswith("pfp0v001")

    # a Burstable pod whose containers the kubelet lists with CPU ids: CPUs not accounted
    api_pod(kube, env.ns, env.node, "shared", cpu="1", guaranteed=False)
    env.kubelet.add_pod(Pod(env.ns, "shared", [Container("main", cpus=[3])]))
    fp = attrs["nodeTopologyPodsFingerprint"]
    kube.wait_until(
        lambda: (
            {a["name"]: a["value"] for a in (env.nrt() or {})["attributes"]}["nodeTopologyPodsFingerprint"]
            != fp
        ),
        timeout=30,
        message="fingerprint follows the pod set",
    )
    assert env.available("node-0", "cpu") == 68

    # the pinned pod goes away
    env.kubelet.remove_pod(env.ns, "pinned")
    delete_api_pod(kube, env.ns, "pinned")
    env.wait_available("node-0", "cpu", 70)
    assert env.available("node-0", "nvidia.com/gpu") == 2
    delete_api_pod(kube, env.ns, "shared")
    env.stop()
    assert env.nrt() is not None  # stopping the updater never deletes the object


def test_survives_missing_and_restarting_kubelet(env: UpdaterEnv) -> None:
    kube = env.kube
    proc = env.start()  # no kubelet socket yet
    proc.wait_log("scan failed", timeout=30)
    assert proc.running and env.nrt() is None
    assert env.socket in proc.logs()  # the log names the socket

    env.kubelet.start()
    kube.wait_until(lambda: env.nrt() is not None, timeout=30, message="NRT created once the kubelet is up")
    rv = (env.nrt() or {})["metadata"]["resourceVersion"]

    # kubelet restarts: socket disappears for a while, then comes back with a new pod
    mark = len(proc.logs())
    env.kubelet.stop()
    proc.wait_log("scan failed", timeout=30, start=mark)
    obj = env.nrt()
    assert obj is not None and obj["metadata"]["resourceVersion"] == rv
    api_pod(kube, env.ns, env.node, "after-restart", cpu="1")
    env.kubelet.add_pod(Pod(env.ns, "after-restart", [Container("main", cpus=[5])]))
    env.kubelet.start()
    env.wait_available("node-0", "cpu", 69)
    assert proc.running
    delete_api_pod(kube, env.ns, "after-restart")


def test_reads_pods_with_one_list_and_watch_no_per_pod_gets(
    install_kube: AuditedCluster, tmp_path: Path
) -> None:
    kube = install_kube
    _apply_rbac(kube)
    kube.wait_crd_established("noderesourcetopologies.topology.node.k8s.io")
    e = UpdaterEnv(kube, tmp_path)
    try:
        e.kubelet.start()
        n = 30
        for i in range(n):
            api_pod(kube, e.ns, e.node, f"p{i}", cpu="1")
            e.kubelet.add_pod(Pod(e.ns, f"p{i}", [Container("main", cpus=[10 + i])]))
        mark = kube.audit_mark()  # the shared audited cluster: earlier tests ran this SA too
        e.start()
        e.wait_available("node-0", "cpu", 70 - 26, timeout=60)  # CPUs 10..35 are on NUMA 0
        for _ in range(5):  # several fs-triggered and interval scans with unchanged state
            (e.state / "memory_manager_state").write_text("{}")
            time.sleep(1)
        e.stop()
        user = f"system:serviceaccount:{NS}:{SA}"
        events = [ev for ev in kube.audit_events(since=mark) if ev.get("user", {}).get("username") == user]
        pods = [ev for ev in events if (ev.get("objectRef") or {}).get("resource") == "pods"]
        verbs = sorted(ev["verb"] for ev in pods)
        assert "get" not in verbs, verbs
        # one list: a streaming list (a watch with sendInitialEvents that goes on watching), or a
        # LIST then watches on a server without WatchList
        streaming = [ev for ev in pods if "sendInitialEvents=true" in (ev.get("requestURI") or "")]
        assert len(streaming) + verbs.count("list") == 1 and verbs.count("watch") >= 1, verbs
        writes = [ev for ev in events if ev["verb"] in ("patch", "update", "create", "delete")]
        # one apply for the initial state; unchanged scans write nothing
        assert len(writes) == 1, [(w["verb"], w["requestURI"]) for w in writes]
        assert {(w["objectRef"]["resource"], w["verb"]) for w in writes} == {
            ("noderesourcetopologies", "patch")
        }
    finally:
        for i in range(30):
            with contextlib.suppress(Exception):
                delete_api_pod(kube, e.ns, f"p{i}")
        e.close()
