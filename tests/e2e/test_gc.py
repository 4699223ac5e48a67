"""nfd-gc as a real process, under its ServiceAccount, against the real kube-apiserver.

It deletes NodeFeatures and NodeResourceTopologies of nodes that do not exist (at startup, on
node deletion and periodically), pages through thousands of objects, and never deletes an
object of a live node, also across an API server restart.
"""

from __future__ import annotations

import os
import signal
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.e2e.harness import (
    REPO_ROOT,
    KubeCluster,
    ManagedProcess,
    _set_namespace,
    free_port,
    load_manifest_objects,
)

pytestmark = pytest.mark.e2e

NS = "node-feature-discovery"
NFD = "/apis/nfd.k8s-sigs.io/v1alpha1"
NRT = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
NODE_LABEL = "nfd.node.kubernetes.io/node-name"


@pytest.fixture(scope="module")
def rbac(kube: KubeCluster) -> Iterator[KubeCluster]:
    # nfd-gc's RBAC sits beside its Deployment in base/gc, as upstream's
    kube.create_namespace(NS, exist_ok=True)
    objs = load_manifest_objects([REPO_ROOT / "deploy" / "base" / "gc" / "gc-rbac.yaml"])
    for obj in objs:
        _set_namespace(obj, NS)
    kube.apply_objects(objs)
    yield kube


def nodefeature(kube: KubeCluster, ns: str, name: str, node: str | None) -> None:
    labels = {NODE_LABEL: node} if node is not None else {}
    body = {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeature",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"features": {"flags": {}, "attributes": {}, "instances": {}}, "labels": {}},
    }
    kube.admin.request("POST", f"{NFD}/namespaces/{ns}/nodefeatures", body=body)


def nrt(kube: KubeCluster, name: str) -> None:
    body = {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name},
        "topologyPolicies": ["None"],
        "zones": [],
    }
    kube.admin.request("POST", NRT, body=body)


def nf_names(kube: KubeCluster, ns: str) -> set[str]:
    return {o["metadata"]["name"] for o in kube.get(f"{NFD}/namespaces/{ns}/nodefeatures")["items"]}


def nrt_names(kube: KubeCluster, prefix: str) -> set[str]:
    return {o["metadata"]["name"] for o in kube.get(NRT)["items"] if o["metadata"]["name"].startswith(prefix)}


def cluster_stale(kube: KubeCluster, *, exclude_ns: str, exclude_prefix: str) -> tuple[int, int]:
    """Stale NodeFeatures and NRTs in the whole cluster, other than this test's own."""
    nodes = {o["metadata"]["name"] for o in kube.get("/api/v1/nodes")["items"]}
    nfs = [
        o["metadata"]
        for o in kube.get(f"{NFD}/nodefeatures")["items"]
        if o["metadata"]["namespace"] != exclude_ns
    ]
    stale_nf = sum(1 for m in nfs if (m.get("labels") or {}).get(NODE_LABEL) not in nodes)
    stale_nrt = sum(
        1
        for o in kube.get(NRT)["items"]
        if o["metadata"]["name"] not in nodes and not o["metadata"]["name"].startswith(exclude_prefix)
    )
    return stale_nf, stale_nrt


class GcEnv:
    def __init__(self, kube: KubeCluster) -> None:
        self.kube = kube
        self.tag = kube.unique_name("gc")
        self.ns = self.tag + "-ns"
        kube.create_namespace(self.ns)
        self.kubeconfig = kube.serviceaccount_kubeconfig(NS, "nfd-gc")
        self.port = free_port()
        self.proc: ManagedProcess | None = None
        self.nodes: list[str] = []

    def node(self, suffix: str) -> str:
        name = f"{self.tag}-{suffix}"
        self.kube.create_node(name)
        self.nodes.append(name)
        return name

    def start(self, *extra: str) -> ManagedProcess:
        self.proc = self.kube.start_process(
            ["nfd-gc", f"-port={self.port}", "-v=1", *extra],
            kubeconfig=self.kubeconfig,
            name=f"nfd-gc-{self.tag}",
        )
        return self.proc

    def stop(self) -> None:
        if self.proc is not None and self.proc.running:
            os.kill(self.proc.pid, signal.SIGTERM)
            assert self.proc.wait(timeout=20) == 0, self.proc.logs()

    def metrics(self) -> dict[str, float]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                k, _, v = line.rpartition(" ")
                out[k] = float(v)
        return out

    def close(self) -> None:
        self.stop()
        for n in self.nodes:
            self.kube.delete_node(n)
        self.kube.delete_namespace(self.ns)


@pytest.fixture
def env(rbac: KubeCluster) -> Iterator[GcEnv]:
    e = GcEnv(rbac)
    yield e
    e.close()


def test_collects_stale_objects_at_startup_and_on_node_delete(env: GcEnv) -> None:
    kube = env.kube
    live = [env.node(f"live{i}") for i in range(3)]
    for n in live:
        nodefeature(kube, env.ns, n, n)
        nrt(kube, n)
    gone = f"{env.tag}-gone"
    nodefeature(kube, env.ns, gone, gone)
    nodefeature(kube, env.ns, f"{gone}-vendor", gone)
    nodefeature(kube, env.ns, "unlabelled", None)
    nrt(kube, gone)

    stale_before = cluster_stale(kube, exclude_ns=env.ns, exclude_prefix=env.tag)
    proc = env.start("-gc-interval=1h")
    try:
        kube.wait_until(
            lambda: nf_names(kube, env.ns) == set(live), timeout=30, message="stale NodeFeatures deleted"
        )
    except TimeoutError as e:
        raise TimeoutError(f"{e}; now {nf_names(kube, env.ns)}; logs:\n{proc.logs()[-5000:]}") from None
    kube.wait_until(lambda: nrt_names(kube, env.tag) == set(live), timeout=30, message="stale NRT deleted")
    # the cluster is shared with other tests: their leftovers of deleted nodes count too
    expected = (3 + stale_before[0], 1 + stale_before[1])

    def deleted() -> tuple[float, float]:
        m = env.metrics()
        return (
            m.get('nfd_gc_objects_deleted_total{kind="NodeFeature"}', 0.0),
            m.get('nfd_gc_objects_deleted_total{kind="NodeResourceTopology"}', 0.0),
        )

    kube.wait_until(lambda: deleted() == expected, timeout=30, message=f"deleted counters reach {expected}")
    m = env.metrics()
    assert any(k.startswith("nfd_gc_build_info{") for k in m)

    # node deletion: its objects go long before the next periodic pass
    kube.delete_node(live[1])
    kube.wait_until(
        lambda: live[1] not in nf_names(kube, env.ns), timeout=30, message="NodeFeature of deleted node"
    )
    kube.wait_until(
        lambda: live[1] not in nrt_names(kube, env.tag), timeout=30, message="NRT of deleted node"
    )
    assert nf_names(kube, env.ns) == {live[0], live[2]}
    assert proc.running
    # upstream's structured lines (docs/logging.md)
    from tests.support import klog

    text = proc.logs()
    assert klog.find(text, "NodeFeature object has been deleted", nodefeature=f"{env.ns}/{gone}"), text[-3000:]
    assert klog.find(text, "NodeResourceTopology object has been deleted", nodeName=gone)
    assert klog.find(text, "node name label missing from NodeFeature object", nodefeature=f"{env.ns}/unlabelled")
    assert klog.find(text, "performing garbage collection")
    assert klog.find(text, "starting HTTP server", port=str(env.port))
    assert klog.find(text, "node informer cache synced")[0].kv["duration"].endswith("s")


def test_thousands_of_objects_paginated_and_live_ones_kept(env: GcEnv) -> None:
    kube = env.kube
    live = [env.node(f"n{i}") for i in range(150)]
    n_stale = 2000

    def create(i: int) -> None:
        if i < len(live):
            nodefeature(kube, env.ns, live[i], live[i])
            nrt(kube, live[i])
        else:
            nodefeature(kube, env.ns, f"stale-{i}", f"{env.tag}-absent-{i}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(len(live) + n_stale)))
    assert len(nf_names(kube, env.ns)) == len(live) + n_stale

    start = time.monotonic()
    proc = env.start("-gc-interval=1h", "-list-size=100", "-kube-api-qps=500", "-kube-api-burst=500")
    kube.wait_until(
        lambda: nf_names(kube, env.ns) == set(live),
        timeout=240,
        interval=1,
        message=f"stale objects deleted; {proc.logs()[-3000:]}",
    )
    took = time.monotonic() - start
    assert nrt_names(kube, env.tag) == set(live)
    assert env.metrics()['nfd_gc_objects_deleted_total{kind="NodeFeature"}'] >= n_stale
    print(
        f"\nnfd-gc: deleted {n_stale} stale NodeFeatures among {len(live) * 2 + n_stale} objects in {took:.1f}s"
    )


def test_api_outage_and_restart_never_delete_live_objects(env: GcEnv) -> None:
    kube = env.kube
    live = [env.node(f"l{i}") for i in range(5)]
    for n in live:
        nodefeature(kube, env.ns, n, n)
        nrt(kube, n)
    proc = env.start("-gc-interval=1s")
    proc.wait_log("performing garbage collection", timeout=30)
    kube.stop_apiserver()
    time.sleep(3)  # several sweeps fail during the outage
    kube.start_apiserver()
    mark = len(proc.logs())
    proc.wait_log("performing garbage collection", timeout=60, start=mark)
    time.sleep(3)  # a few sweeps after recovery, with the re-listed node cache
    assert nf_names(kube, env.ns) == set(live)
    assert nrt_names(kube, env.tag) == set(live)
    # and it still works: a node that really goes away is collected
    kube.delete_node(live[0])
    kube.wait_until(
        lambda: live[0] not in nf_names(kube, env.ns), timeout=30, message="collected after recovery"
    )
    assert nf_names(kube, env.ns) == set(live[1:])
    assert proc.running
