"""nfd-master as its own process, under its ServiceAccount, against the real kube-apiserver.

Functional: rules -> labels, annotations, extended resources (capacity and allocatable), taints;
rule change and delete; NodeFeature delete; hand-made labels; upstream's bookkeeping format.
Faults, each watched from a Node watch that records every state the nodes pass through and
asserts that no managed item ever disappeared: master restart, leader failover between two
masters, worker NodeFeature delete-and-recreate, the apiserver stopped for 10 s mid-reconcile.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import REPO_ROOT, HttpError, KubeCluster, ManagedProcess, free_port

pytestmark = pytest.mark.e2e

NS = "node-feature-discovery"
NFD = "/apis/nfd.k8s-sigs.io/v1alpha1"
FNS = "feature.node.kubernetes.io"
FEATURE_LABELS = "nfd.node.kubernetes.io/feature-labels"
FEATURE_ANNOTATIONS = "nfd.node.kubernetes.io/feature-annotations"
EXTENDED_RESOURCES = "nfd.node.kubernetes.io/extended-resources"
TAINTS = "nfd.node.kubernetes.io/taints"


# -- helpers ----------------------------------------------------------------------------------------


class NodeWatch:
    """Records every state of the watched nodes from a raw watch (reconnecting across outages)."""

    def __init__(self, kube: KubeCluster, nodes: list[str]) -> None:
        self.kube = kube
        self.nodes = set(nodes)
        self.states: dict[str, list[dict[str, Any]]] = {n: [] for n in nodes}
        self._stop = threading.Event()
        self._ctx = ssl.create_default_context(cafile=kube.ca_file)
        lst = kube.get("/api/v1/nodes")
        self._rv = lst["metadata"]["resourceVersion"]
        for obj in lst["items"]:
            if obj["metadata"]["name"] in self.nodes:
                self.states[obj["metadata"]["name"]].append(obj)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            url = f"{self.kube.server}/api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion={self._rv}"
            req = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.kube.admin_token}"})
            try:
                with urllib.request.urlopen(req, context=self._ctx, timeout=5) as resp:
                    for line in resp:
                        if self._stop.is_set():
                            return
                        ev = json.loads(line)
                        obj = ev["object"]
                        rv = obj.get("metadata", {}).get("resourceVersion")
                        if rv:
                            self._rv = rv
                        name = obj.get("metadata", {}).get("name")
                        if ev["type"] in ("ADDED", "MODIFIED") and name in self.nodes:
                            self.states[name].append(obj)
            except Exception:
                time.sleep(0.2)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def removals(self, node: str, items: Callable[[dict[str, Any]], set[str]]) -> list[str]:
        """Items present in one observed state and missing from the next."""
        out = []
        seq = self.states[node]
        for a, b in zip(seq, seq[1:], strict=False):
            gone = items(a) - items(b)
            out += sorted(gone)
        return out


def managed_items(node: dict[str, Any]) -> set[str]:
    """Everything nfd manages on a node, as strings, read from its bookkeeping annotations."""
    meta = node["metadata"]
    anns = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    out: set[str] = set()
    for name in filter(None, (anns.get(FEATURE_LABELS) or "").split(",")):
        key = name if "/" in name else f"{FNS}/{name}"
        if key in labels:
            out.add(f"label {key}={labels[key]}")
    for name in filter(None, (anns.get(FEATURE_ANNOTATIONS) or "").split(",")):
        key = name if "/" in name else f"{FNS}/{name}"
        if key in anns:
            out.add(f"annotation {key}")
    cap = (node.get("status") or {}).get("capacity") or {}
    for name in filter(None, (anns.get(EXTENDED_RESOURCES) or "").split(",")):
        key = name if "/" in name else f"{FNS}/{name}"
        if key in cap:
            out.add(f"resource {key}")
    for t in (node.get("spec") or {}).get("taints") or []:
        out.add(f"taint {t['key']}:{t['effect']}")
    return out


def wait_for(cond: Callable[[], Any], *, timeout: float = 60.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = cond()
            if last:
                return last
        except HttpError as e:
            last = e
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


def nodefeature(name: str, node: str, *, flags: dict[str, list[str]] | None = None,
                attrs: dict[str, dict[str, str]] | None = None, labels: dict[str, str] | None = None,
                namespace: str = NS) -> dict[str, Any]:
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeature",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"nfd.node.kubernetes.io/node-name": node}},
        "spec": {
            "features": {
                "flags": {k: {"elements": {e: {} for e in v}} for k, v in (flags or {}).items()},
                "attributes": {k: {"elements": v} for k, v in (attrs or {}).items()},
                "instances": {},
            },
            "labels": labels or {},
        },
    }


def rule(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
            "metadata": {"name": name}, "spec": {"rules": rules}}


class Env:
    """One test's world: its nodes, NodeFeatures, rules and master processes."""

    def __init__(self, kube: KubeCluster, tmp: Path) -> None:
        self.kube = kube
        self.tmp = tmp
        self.tag = kube.unique_name("t")
        self.rules: list[str] = []
        self.nodes: list[str] = []
        self.nfs: list[tuple[str, str]] = []
        self.masters: list[ManagedProcess] = []
        self.kubeconfig = kube.serviceaccount_kubeconfig(NS, "nfd-master")
        self.config = tmp / "nfd-master.conf"
        self.config.write_text("enableTaints: true\n")

    def node(self, suffix: str, **kw: Any) -> str:
        name = f"{self.tag}-{suffix}"
        self.kube.create_node(name, **kw)
        self.nodes.append(name)
        return name

    def put_nf(self, obj: dict[str, Any]) -> dict[str, Any]:
        ns, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
        base = f"{NFD}/namespaces/{ns}/nodefeatures"
        cur = self.kube.get_or_none(f"{base}/{name}")
        if (ns, name) not in self.nfs:
            self.nfs.append((ns, name))
        if cur is None:
            created: dict[str, Any] = self.kube.request("POST", base, body=obj)
            return created
        obj = json.loads(json.dumps(obj))
        obj["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
        updated: dict[str, Any] = self.kube.request("PUT", f"{base}/{name}", body=obj)
        return updated

    def delete_nf(self, ns: str, name: str) -> None:
        self.kube.request("DELETE", f"{NFD}/namespaces/{ns}/nodefeatures/{name}")

    def put_rule(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        cur = self.kube.get_or_none(f"{NFD}/nodefeaturerules/{name}")
        if name not in self.rules:
            self.rules.append(name)
        if cur is None:
            self.kube.request("POST", f"{NFD}/nodefeaturerules", body=obj)
        else:
            obj = json.loads(json.dumps(obj))
            obj["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
            self.kube.request("PUT", f"{NFD}/nodefeaturerules/{name}", body=obj)

    def delete_rule(self, name: str) -> None:
        self.kube.request("DELETE", f"{NFD}/nodefeaturerules/{name}")

    def start_master(self, *extra: str, name: str | None = None) -> ManagedProcess:
        argv = ["nfd-master", "-port=0", f"-config={self.config}", "-config-poll-interval=0.5s", *extra]
        p = self.kube.start_process(argv, kubeconfig=self.kubeconfig, name=name,
                                    env={"KUBERNETES_NAMESPACE": NS, "NODE_NAME": ""})
        self.masters.append(p)
        return p

    def get_node(self, name: str) -> dict[str, Any]:
        node: dict[str, Any] = self.kube.get(f"/api/v1/nodes/{name}")
        return node

    def labels(self, name: str) -> dict[str, str]:
        return dict(self.get_node(name)["metadata"].get("labels") or {})

    def close(self) -> None:
        for p in self.masters:
            p.stop()
        for r in self.rules:
            with contextlib.suppress(HttpError):
                self.delete_rule(r)
        for ns, name in self.nfs:
            with contextlib.suppress(HttpError):
                self.delete_nf(ns, name)
        for n in self.nodes:
            self.kube.delete_node(n)


@pytest.fixture(scope="module")
def rbac(kube: KubeCluster) -> KubeCluster:
    kube.apply_manifest_dir(REPO_ROOT / "deploy" / "base" / "rbac")
    kube.create_namespace("vendor-e2e", exist_ok=True)
    return kube


@pytest.fixture
def env(rbac: KubeCluster, tmp_path: Path) -> Iterator[Env]:
    e = Env(rbac, tmp_path)
    try:
        yield e
    finally:
        e.close()


def base_rules(tag: str) -> list[dict[str, Any]]:
    """Rules that only match nodes of this test (flag e2e.tag.<tag>)."""
    mine = {"feature": "e2e.tag", "matchExpressions": {tag: {"op": "Exists"}}}
    return [
        {"name": "avx", "labels": {"cpu-avx": "true", "vendor.example.com/accel": "yes"},
         "matchFeatures": [mine, {"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Exists"}}}]},
        {"name": "kernel", "labels": {"kernel-major": "@kernel.version.major"},
         "annotations": {"kernel-full": "6.1.0-test"},
         "extendedResources": {"widgets": "4", "vendor.example.com/gadgets": "@kernel.version.major"},
         "matchFeatures": [mine, {"feature": "kernel.version", "matchExpressions": {"major": {"op": "Gt", "value": ["5"]}}}]},
        {"name": "taint", "taints": [{"key": "example.com/special", "value": "true", "effect": "NoSchedule"}],
         "matchFeatures": [mine, {"feature": "cpu.cpuid", "matchExpressions": {"AVX512F": {"op": "Exists"}}}]},
    ]


def features_for(tag: str, *, avx512: bool = True) -> dict[str, Any]:
    flags = {"e2e.tag": [tag], "cpu.cpuid": ["AVX", "SSE4"] + (["AVX512F"] if avx512 else [])}
    return {"flags": flags, "attrs": {"kernel.version": {"major": "6", "minor": "1"}}}


def converged(env: Env, node: str, *, avx512: bool = True) -> bool:
    n = env.get_node(node)
    labels = n["metadata"].get("labels") or {}
    anns = n["metadata"].get("annotations") or {}
    cap = (n.get("status") or {}).get("capacity") or {}
    alloc = (n.get("status") or {}).get("allocatable") or {}
    taints = (n.get("spec") or {}).get("taints") or []
    ok = (
        labels.get(f"{FNS}/cpu-avx") == "true"
        and labels.get(f"{FNS}/kernel-major") == "6"
        and anns.get(f"{FNS}/kernel-full") == "6.1.0-test"
        and cap.get(f"{FNS}/widgets") == "4" and alloc.get(f"{FNS}/widgets") == "4"
        and cap.get("vendor.example.com/gadgets") == "6"
    )
    has_taint = any(t["key"] == "example.com/special" for t in taints)
    return ok and has_taint == avx512


def setup_world(env: Env, count: int = 2) -> list[str]:
    nodes = [env.node(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}", "admin/hand": "made"},
                      capacity={"cpu": "8"}) for i in range(count)]
    env.put_rule(rule(f"{env.tag}-rules", base_rules(env.tag)))
    for n in nodes:
        env.put_nf(nodefeature(n, n, labels={"worker-label": "w"}, **features_for(env.tag)))
    return nodes


# -- functional -------------------------------------------------------------------------------------


def test_rules_to_labels_annotations_resources_taints(env: Env) -> None:
    (node,) = setup_world(env, 1)
    env.start_master()
    wait_for(lambda: converged(env, node), what="node state from rules")
    n = env.get_node(node)
    anns = n["metadata"]["annotations"]
    # upstream's bookkeeping format, exactly
    assert anns[FEATURE_LABELS] == "cpu-avx,kernel-major,vendor.example.com/accel,worker-label"
    assert anns[FEATURE_ANNOTATIONS] == "kernel-full"
    assert anns[EXTENDED_RESOURCES] == "vendor.example.com/gadgets,widgets"
    assert anns[TAINTS] == "example.com/special=true:NoSchedule"
    assert n["metadata"]["labels"]["admin/hand"] == "made"

    # rule change propagates; a dropped output is removed, hand-made labels stay
    rules = base_rules(env.tag)
    rules[0]["labels"] = {"cpu-avx": "v2"}
    env.put_rule(rule(f"{env.tag}-rules", rules))
    wait_for(lambda: env.labels(node).get(f"{FNS}/cpu-avx") == "v2", what="rule change")
    wait_for(lambda: "vendor.example.com/accel" not in env.labels(node), what="dropped label removed")
    assert env.labels(node)["admin/hand"] == "made"

    # rule delete removes everything it produced (and only that)
    env.delete_rule(f"{env.tag}-rules")
    wait_for(lambda: f"{FNS}/cpu-avx" not in env.labels(node), what="rule delete")
    n = wait_for(lambda: (lambda x: x if TAINTS not in x["metadata"]["annotations"] else None)(env.get_node(node)),
                 what="taint annotation removed")
    assert not [t for t in n["spec"].get("taints") or [] if t["key"].startswith("example.com/")]
    assert f"{FNS}/widgets" not in n["status"]["capacity"]
    assert f"{FNS}/widgets" not in (n["status"].get("allocatable") or {})
    assert n["metadata"]["labels"][f"{FNS}/worker-label"] == "w"
    assert n["metadata"]["labels"]["admin/hand"] == "made"
    assert n["metadata"]["annotations"][FEATURE_LABELS] == "worker-label"


def test_nodefeature_delete_removes_exactly_what_it_provided(env: Env) -> None:
    (node,) = setup_world(env, 1)
    env.put_nf(nodefeature("vendor-gpu", node, namespace="vendor-e2e", labels={"vendor.example.com/gpu": "true"}))
    env.start_master()
    wait_for(lambda: converged(env, node) and env.labels(node).get("vendor.example.com/gpu") == "true",
             what="labels from two NodeFeatures")
    env.delete_nf("vendor-e2e", "vendor-gpu")
    wait_for(lambda: "vendor.example.com/gpu" not in env.labels(node), what="third-party label removed")
    assert converged(env, node)
    assert env.labels(node)[f"{FNS}/worker-label"] == "w"


def test_invalid_rules_reported_and_skipped(env: Env) -> None:
    (node,) = setup_world(env, 1)
    env.put_rule(rule(f"{env.tag}-bad", [
        # the CRD schema accepts these; the engine cannot evaluate them
        {"name": "bad-op", "labels": {"bad": "1"},
         "matchFeatures": [{"feature": "kernel.version", "matchExpressions": {"major": {"op": "Gt", "value": ["six"]}}}]},
        {"name": "bad-template", "labelsTemplate": "{{ range .x }",
         "matchFeatures": [{"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Exists"}}}]},
        {"name": "good", "labels": {"good": "1"}},
    ]))
    m = env.start_master()
    wait_for(lambda: converged(env, node) and env.labels(node).get(f"{FNS}/good") == "1", what="good rules applied")
    assert f"{FNS}/bad" not in env.labels(node)
    log = m.wait_log("bad-op", timeout=10)
    assert "bad-template" in log


def test_upstream_bookkeeping_round_trip(env: Env) -> None:
    """A node as upstream's master left it: stale owned items go, unowned ones stay."""
    node = env.node("up", labels={f"{FNS}/stale": "true", f"{FNS}/cpu-avx": "old", "vendor.example.com/x": "1",
                                  "admin/hand": "made"},
                    annotations={FEATURE_LABELS: "cpu-avx,stale,vendor.example.com/x",
                                 EXTENDED_RESOURCES: "old-res", TAINTS: "example.com/old=1:NoExecute",
                                 "nfd.node.kubernetes.io/master.version": "v0.16.0"},
                    capacity={"cpu": "8", f"{FNS}/old-res": "2"})
    env.kube.request("PATCH", f"/api/v1/nodes/{node}", content_type="application/merge-patch+json",
                     body={"spec": {"taints": [{"key": "example.com/old", "value": "1", "effect": "NoExecute"},
                                               {"key": "admin/t", "effect": "NoSchedule"}]}})
    env.put_rule(rule(f"{env.tag}-rules", base_rules(env.tag)))
    env.put_nf(nodefeature(node, node, **features_for(env.tag, avx512=False)))
    env.start_master()
    wait_for(lambda: converged(env, node, avx512=False), what="converged")
    n = wait_for(lambda: (lambda x: x if f"{FNS}/stale" not in x["metadata"]["labels"] else None)(env.get_node(node)),
                 what="stale label removed")
    labels, anns = n["metadata"]["labels"], n["metadata"]["annotations"]
    assert labels[f"{FNS}/cpu-avx"] == "true"
    assert "vendor.example.com/x" not in labels
    assert labels["admin/hand"] == "made"
    assert f"{FNS}/old-res" not in n["status"]["capacity"]
    # the apiserver adds node.kubernetes.io/not-ready itself (no kubelet)
    assert [t for t in n["spec"]["taints"] if not t["key"].startswith("node.kubernetes.io/")] == [
        {"key": "admin/t", "effect": "NoSchedule"}
    ]
    assert TAINTS not in anns
    assert "nfd.node.kubernetes.io/master.version" not in anns
    assert anns[FEATURE_LABELS] == "cpu-avx,kernel-major,vendor.example.com/accel"


# -- faults: nothing managed may disappear ------------------------------------------------------------


def assert_no_removals(watch: NodeWatch, nodes: list[str]) -> None:
    for n in nodes:
        gone = watch.removals(n, managed_items)
        assert not gone, f"node {n}: managed items removed during the fault: {gone}"
        assert watch.states[n], f"no states observed for {n}"


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_master_restart_removes_nothing(env: Env, how: str) -> None:
    nodes = setup_world(env, 3)
    m = env.start_master()
    for n in nodes:
        wait_for(lambda n=n: converged(env, n), what=f"{n} converged")
    watch = NodeWatch(env.kube, nodes)
    try:
        if how == "sigkill":
            m.kill()
        else:
            m.stop()
        # while it is down a worker re-publishes and a rule changes
        env.put_rule(rule(f"{env.tag}-extra", [{"name": "x", "labels": {"extra": "1"}}]))
        m2 = env.start_master()
        for n in nodes:
            wait_for(lambda n=n: env.labels(n).get(f"{FNS}/extra") == "1", what="new master applied new rule")
        m2.wait_log("will process all nodes in the cluster", timeout=30)
        time.sleep(1.0)
    finally:
        watch.stop()
    assert_no_removals(watch, nodes)


def test_leader_failover_removes_nothing(env: Env) -> None:
    nodes = setup_world(env, 3)
    a = env.start_master("-enable-leader-election", name="master-a")
    a.wait_log("Successfully acquired lease", timeout=60)
    b = env.start_master("-enable-leader-election", name="master-b")
    b.wait_log("informer caches synced", timeout=60)
    for n in nodes:
        wait_for(lambda n=n: converged(env, n), what=f"{n} converged")
    watch = NodeWatch(env.kube, nodes)
    try:
        a.kill()  # no lease release: b takes over after leaseDuration
        b.wait_log("Successfully acquired lease", timeout=60)
        rules = base_rules(env.tag)
        rules[0]["labels"]["after-failover"] = "1"
        env.put_rule(rule(f"{env.tag}-rules", rules))
        for n in nodes:
            wait_for(lambda n=n: env.labels(n).get(f"{FNS}/after-failover") == "1", what="standby took over")
    finally:
        watch.stop()
    assert_no_removals(watch, nodes)


def test_worker_nodefeature_delete_and_recreate_removes_nothing(env: Env) -> None:
    nodes = setup_world(env, 2)
    env.start_master()
    for n in nodes:
        wait_for(lambda n=n: converged(env, n), what=f"{n} converged")
    watch = NodeWatch(env.kube, nodes)
    try:
        for n in nodes:
            obj = env.kube.get(f"{NFD}/namespaces/{NS}/nodefeatures/{n}")
            env.delete_nf(NS, n)
            obj["metadata"] = {k: obj["metadata"][k] for k in ("name", "namespace", "labels")}
            env.put_nf(obj)
        time.sleep(8.0)  # past the delete grace period and a processing round
        for n in nodes:
            assert converged(env, n)
    finally:
        watch.stop()
    assert_no_removals(watch, nodes)


def test_apiserver_outage_mid_reconcile_removes_nothing(env: Env) -> None:
    nodes = setup_world(env, 4)
    m = env.start_master()
    for n in nodes:
        wait_for(lambda n=n: converged(env, n), what=f"{n} converged")
    watch = NodeWatch(env.kube, nodes)
    try:
        rules = base_rules(env.tag)
        rules[0]["labels"]["during-outage"] = "1"
        env.put_rule(rule(f"{env.tag}-rules", rules))
        env.kube.stop_apiserver()
        time.sleep(10.0)
        env.kube.start_apiserver()
        for n in nodes:
            wait_for(lambda n=n: env.labels(n).get(f"{FNS}/during-outage") == "1", timeout=90,
                     what="reconcile finished after the outage")
            assert converged(env, n)
        assert m.running
    finally:
        watch.stop()
    assert_no_removals(watch, nodes)


def test_node_feature_group_status(env: Env) -> None:
    nodes = setup_world(env, 2)
    grp = {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureGroup",
        "metadata": {"name": f"{env.tag}-avx512", "namespace": NS},
        "spec": {"featureGroupRules": [{"name": "avx512", "matchFeatures": [
            {"feature": "e2e.tag", "matchExpressions": {env.tag: {"op": "Exists"}}},
            {"feature": "cpu.cpuid", "matchExpressions": {"AVX512F": {"op": "Exists"}}}]}]},
    }
    path = f"{NFD}/namespaces/{NS}/nodefeaturegroups"
    env.kube.request("POST", path, body=grp)
    try:
        env.start_master("-feature-gates=NodeFeatureGroupAPI=true")

        def members() -> list[str]:
            g = env.kube.get(f"{path}/{grp['metadata']['name']}")
            return [x["name"] for x in (g.get("status") or {}).get("nodes") or []]

        wait_for(lambda: sorted(members()) == sorted(nodes), what="both nodes in the group")
        # one node loses the feature: membership follows
        env.put_nf(nodefeature(nodes[0], nodes[0], **features_for(env.tag, avx512=False)))
        wait_for(lambda: members() == [nodes[1]], what="membership updated")
    finally:
        env.kube.request("DELETE", f"{path}/{grp['metadata']['name']}")


def test_prune_removes_everything_nfd_owns(env: Env) -> None:
    (node,) = setup_world(env, 1)
    m = env.start_master()
    wait_for(lambda: converged(env, node), what="converged")
    m.stop()
    p = env.start_master("-prune", name="master-prune")
    assert p.wait(timeout=60) == 0, p.logs()
    n = env.get_node(node)
    assert not [k for k in n["metadata"]["labels"] if k.startswith(FNS) or k.startswith("vendor.example.com")]
    assert n["metadata"]["labels"]["admin/hand"] == "made"
    assert not [k for k in n["metadata"].get("annotations") or {} if "nfd.node.kubernetes.io" in k or k.startswith(FNS)]
    assert f"{FNS}/widgets" not in n["status"]["capacity"]
    assert not [t for t in n["spec"].get("taints") or [] if t["key"].startswith("example.com/")]


def test_config_live_reload_and_invalid_config_kept(env: Env) -> None:
    (node,) = setup_world(env, 1)
    m = env.start_master()
    wait_for(lambda: converged(env, node), what="converged with taints")
    # an invalid file is reported and the previous config stays
    env.config.write_text("enableTaints: true\nnfdApiParallelism: 0\n")
    m.wait_log("invalid configuration, keeping the previous one", timeout=30)
    assert "nfdApiParallelism" in m.logs()
    time.sleep(1.0)
    assert converged(env, node)
    # a valid change applies without a restart: taints off removes nfd's taint
    env.config.write_text("enableTaints: false\n")
    wait_for(lambda: converged(env, node, avx512=False), what="taint removed after reload")
    assert TAINTS not in env.get_node(node)["metadata"]["annotations"]
    assert m.running


def test_resources_and_labels_in_one_status_write(env: Env) -> None:
    """Without a taint change, extended resources, labels and annotations go in one nodes/status
    patch, and the real apiserver keeps the metadata part (no fallback to two requests)."""
    node = env.node("one-write", labels={"kubernetes.io/hostname": "one-write"}, capacity={"cpu": "8"})
    env.put_rule(rule(f"{env.tag}-rules", base_rules(env.tag)))
    env.put_nf(nodefeature(node, node, **features_for(env.tag, avx512=False)))
    m = env.start_master()
    wait_for(lambda: converged(env, node, avx512=False), what="node state from rules")
    assert "ignored metadata in a nodes/status patch" not in m.logs()


def test_go_only_label_whitelist_patterns(env: Env) -> None:
    """Go regexps Python's re refuses (\\z, \\pL) as labelWhiteList, from the config and the flag."""
    (node,) = setup_world(env, 1)
    env.config.write_text('enableTaints: true\nlabelWhiteList: "^(cpu|worker)-\\\\pL+\\\\z"\n')
    m = env.start_master()

    def mine(n: str) -> set[str]:
        return {k.rpartition("/")[2] for k in env.labels(n) if k.startswith(f"{FNS}/") or k.startswith("vendor.example.com/")}

    wait_for(lambda: mine(node) == {"cpu-avx", "worker-label"}, what="labels through the config's whitelist")
    assert m.running
    m.stop()
    env.config.write_text("enableTaints: true\n")
    m = env.start_master(r"-label-whitelist=^kernel-\p{Ll}+\z")
    wait_for(lambda: mine(node) == {"kernel-major"}, what="labels through the flag's whitelist")
    assert m.running
    assert env.labels(node)[f"{FNS}/kernel-major"] == "6"


def test_outputs_the_apiserver_refuses_do_not_block_the_node(env: Env) -> None:
    """An extended resource -1 or a taint value 'bad value!' was a 422 for the whole node update."""
    (node,) = setup_world(env, 1)
    mine = {"feature": "e2e.tag", "matchExpressions": {env.tag: {"op": "Exists"}}}
    env.put_rule(rule(f"{env.tag}-bad", [{
        "name": "bad-outputs", "labels": {"still-applied": "yes"},
        "extendedResources": {"vendor.example.com/neg": "-1", "vendor.example.com/frac": "1.5",
                              "half": "0.5", "vendor.example.com/fine": "3"},
        "taints": [{"key": "example.com/bad", "value": "bad value!", "effect": "NoSchedule"},
                   {"key": "example.com/good", "value": "ok", "effect": "PreferNoSchedule"}],
        "matchFeatures": [mine],
    }]))
    m = env.start_master()
    wait_for(lambda: env.labels(node).get(f"{FNS}/still-applied") == "yes", what="the node's good outputs")
    n = env.get_node(node)
    cap = n["status"]["capacity"]
    assert cap.get("vendor.example.com/fine") == "3" and cap.get(f"{FNS}/half") in ("500m", "0.5")
    assert "vendor.example.com/neg" not in cap and "vendor.example.com/frac" not in cap
    keys = {t["key"] for t in n["spec"].get("taints") or []}
    assert "example.com/good" in keys and "example.com/bad" not in keys
    assert converged(env, node)
    assert "must be greater than or equal to 0" in m.logs() and "invalid taint value" in m.logs()


def test_hostile_node_does_not_stall_probes_or_other_nodes(env: Env) -> None:
    """A 600 kB kernel.version.full and 40 rules that each spend a template's whole step budget
    on one node: /healthz answers every probe within 1 s and a rule change for a healthy node
    lands within 5 s meanwhile (before: 142.8 s without an answer)."""
    (healthy,) = setup_world(env, 1)
    hostile = env.node("hostile")
    hostile_tag = f"{env.tag}-hostile"
    env.put_nf(nodefeature(hostile, hostile, flags={"e2e.tag": [hostile_tag]},
                           attrs={"kernel.version": {"full": "5." * 300_000 + "-generic"}}))
    mine = {"feature": "e2e.tag", "matchExpressions": {hostile_tag: {"op": "Exists"}}}
    spend = "{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}x=y"
    env.put_rule(rule(f"{env.tag}-hostile", [
        {"name": "generic", "labels": {"generic": "true"},
         "matchFeatures": [mine, {"feature": "kernel.version",
                                  "matchExpressions": {"full": {"op": "InRegexp", "value": [".*-generic$"]}}}]},
        *({"name": f"spend-{i}", "labelsTemplate": spend, "matchFeatures": [mine]} for i in range(40)),
    ]))
    port = free_port()
    m = env.start_master(f"-port={port}")
    wait_for(lambda: converged(env, healthy), what="healthy node converged")
    wait_for(lambda: env.labels(hostile).get(f"{FNS}/generic") == "true", what="hostile node's regexp label")

    slowest = [0.0]
    failures: list[str] = []
    stop = threading.Event()

    def probe() -> None:
        while not stop.is_set():
            t0 = time.monotonic()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
                    r.read()
            except Exception as e:  # noqa: BLE001 - a failed probe is what this test counts
                failures.append(repr(e))
            slowest[0] = max(slowest[0], time.monotonic() - t0)
            time.sleep(0.2)

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    try:
        for k in range(3):  # each rule change re-evaluates the hostile node too
            rules = base_rules(env.tag)
            rules[0]["labels"] = {"cpu-avx": f"canary{k}"}
            t0 = time.monotonic()
            env.put_rule(rule(f"{env.tag}-rules", rules))
            wait_for(lambda k=k: env.labels(healthy).get(f"{FNS}/cpu-avx") == f"canary{k}", timeout=5.0,
                     what=f"canary rule change {k} on the healthy node within 5 s")
            assert time.monotonic() - t0 < 5.0
            time.sleep(2.0)
    finally:
        stop.set()
        t.join(timeout=10)
    assert not failures, failures[:3]
    assert slowest[0] < 1.0, f"slowest /healthz answer {slowest[0]:.2f}s"
    assert m.running
    assert "step budget" in m.logs() or "time budget" in m.logs()


SPEND = "{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}x=y"  # a whole step budget


def test_hostile_rule_on_50_nodes_keeps_probes_and_canary(env: Env) -> None:
    """One NodeFeatureRule of 40 rules that each spend a template's whole step budget, matching
    50 nodes, present when the master starts: /healthz answers every probe within 1 s through
    the first pass and after; the object is deferred after 3 nodes, with one log line and one
    Event; a rule change lands on a healthy node within 2 s, three times; a burst of 600 kB
    NodeFeature updates on the 50 keeps the probes within 1 s; nothing is removed from any node
    (before: 10 probes in a row failed, 25 s without an answer, 26 s for the
    rule change)."""
    from tests.e2e.probing import Prober

    nodes = setup_world(env, 50)
    healthy = env.node("zhealthy")  # last in the master's (name) order: it waits behind the 50
    env.put_nf(nodefeature(healthy, healthy, labels={"worker-label": "w"}, **features_for(env.tag)))
    mine = {"feature": "e2e.tag", "matchExpressions": {env.tag: {"op": "Exists"}}}
    hostile_name = f"{env.tag}-hostile"
    only_hostile = {"feature": "e2e.hostile", "matchExpressions": {"yes": {"op": "Exists"}}}
    env.put_rule(rule(hostile_name, [
        {"name": f"spend-{i}", "labelsTemplate": SPEND, "matchFeatures": [mine, only_hostile]} for i in range(40)
    ]))
    for n in nodes:  # the 50 carry e2e.hostile.yes
        env.put_nf(nodefeature(n, n, labels={"worker-label": "w"},
                               flags={"e2e.tag": [env.tag], "cpu.cpuid": ["AVX", "SSE4", "AVX512F"], "e2e.hostile": ["yes"]},
                               attrs={"kernel.version": {"major": "6", "minor": "1"}}))
    port = free_port()
    m = env.start_master(f"-port={port}")
    prober = Prober(f"http://127.0.0.1:{port}/healthz", interval_s=0.2).start()
    watch: NodeWatch | None = None
    try:
        t0 = time.monotonic()
        for n in [healthy, *nodes]:
            wait_for(lambda n=n: converged(env, n), timeout=180, what=f"first pass: {n} converged")
        first_pass = time.monotonic() - t0
        m.wait_log(f"NodeFeatureRule {hostile_name} ran out of its evaluation budget on 3 nodes", timeout=60)
        first_pass_probes = prober.summary()
        watch = NodeWatch(env.kube, [healthy, *nodes])
        took = []
        for k in range(3):
            rules = base_rules(env.tag)
            rules[0]["labels"]["cpu-avx"] = f"canary{k}"
            t1 = time.monotonic()
            env.put_rule(rule(f"{env.tag}-rules", rules))
            wait_for(lambda k=k: env.labels(healthy).get(f"{FNS}/cpu-avx") == f"canary{k}", timeout=2.0,
                     what=f"canary rule change {k} on the healthy node within 2 s")
            took.append(time.monotonic() - t1)
            for n in nodes:
                wait_for(lambda n=n, k=k: env.labels(n).get(f"{FNS}/cpu-avx") == f"canary{k}", timeout=30,
                         what=f"canary rule change {k} on {n}")
            took.append(time.monotonic() - t1)
            time.sleep(1.0)
        # a burst of large NodeFeature updates: a 600 kB value of its own on every node at once
        t2 = time.monotonic()
        for i, n in enumerate(nodes):
            env.put_nf(nodefeature(n, n, labels={"worker-label": "w", "burst": "1"},
                                   flags={"e2e.tag": [env.tag], "cpu.cpuid": ["AVX", "SSE4", "AVX512F"],
                                          "e2e.hostile": ["yes"]},
                                   attrs={"kernel.version": {"major": "6", "minor": "1",
                                                             "full": f"{i % 10}." * 300_000}}))
        for n in nodes:
            wait_for(lambda n=n: env.labels(n).get(f"{FNS}/burst") == "1", timeout=120, what=f"burst on {n}")
        burst = time.monotonic() - t2
    finally:
        prober.stop()
        if watch is not None:
            watch.stop()
    print(f"first pass of 51 nodes {first_pass:.1f}s ({first_pass_probes}); canary (healthy node, all 51) "
          f"{', '.join(f'{x:.2f}s' for x in took)}; 50 NodeFeatures of 600 kB sent and processed in {burst:.1f}s; "
          f"overall {prober.summary()}")
    assert not prober.failures, prober.failures[:3]
    assert max(prober.latencies) < 1.0, (prober.summary(), m.logs()[-3000:])
    assert m.running
    assert m.logs().count("ran out of its evaluation budget") == 1
    events = env.kube.get("/api/v1/namespaces/default/events",
                          fieldSelector=f"involvedObject.name={hostile_name},reason=RuleBudgetExceeded")["items"]
    assert len(events) == 1, events
    assert watch is not None
    def keys(node: dict[str, Any]) -> set[str]:  # the canary changes a value, not a key
        return {item.split("=", 1)[0] for item in managed_items(node)}

    removed = [(n, r) for n in [healthy, *nodes] for r in watch.removals(n, keys)]
    assert not removed, f"removed: {removed[:5]}"


def test_broken_edit_and_runtime_errors_strip_no_labels(env: Env) -> None:
    """A typo in an edit (invalid regexp, CEL or template syntax) keeps the last good revision
    in force and a rule failing at run time keeps each node's previous output from it; deleting
    the rule still removes its labels (upstream's BrokenRule removed them from every node)."""
    nodes = setup_world(env, 3)
    name = f"{env.tag}-edit"
    mine = {"feature": "e2e.tag", "matchExpressions": {env.tag: {"op": "Exists"}}}
    good = [{"name": "gpu", "labels": {"edited": "v1"},
             "matchFeatures": [mine, {"feature": "kernel.version",
                                      "matchExpressions": {"major": {"op": "InRegexp", "value": ["^[0-9]+$"]}}}]}]
    env.put_rule(rule(name, good))
    m = env.start_master()
    for n in nodes:
        wait_for(lambda n=n: env.labels(n).get(f"{FNS}/edited") == "v1", what="labels of the good revision")
    watch = NodeWatch(env.kube, nodes)
    try:
        broken_edits = [
            {"op": "InRegexp", "value": ["(unclosed"]},  # a regexp that does not compile
        ]
        for expr in broken_edits:
            bad = json.loads(json.dumps(good))
            bad[0]["labels"] = {"edited": "v2"}
            bad[0]["matchFeatures"][1]["matchExpressions"]["major"] = expr
            env.put_rule(rule(name, bad))
            m.wait_log("keeping its previous version", timeout=30)
        cel = json.loads(json.dumps(good))
        cel[0]["labels"] = {"edited": "v2"}
        cel[0]["matchCEL"] = ["node.name.startsWith("]  # CEL syntax error
        env.put_rule(rule(name, cel))
        m.wait_log("node.name.startsWith(", timeout=30)
        # a revision that compiles but fails at run time on every node (a template error)
        runtime = json.loads(json.dumps(good))
        runtime[0]["labels"] = {"edited": "v3"}
        runtime[0]["labelsTemplate"] = '{{ fail "boom" }}'
        env.put_rule(rule(name, runtime))
        m.wait_log("boom", timeout=30)
        time.sleep(3)
        for n in nodes:
            assert env.labels(n).get(f"{FNS}/edited") == "v1"
        # the InvalidRule Warning event on the (cluster-scoped) object, in "default"
        assert env.kube.get("/api/v1/namespaces/default/events",
                            fieldSelector=f"involvedObject.name={name},reason=InvalidRule")["items"]
        assert m.logs().count("keeping its previous version") >= 2
        assert not [r for n in nodes for r in watch.removals(n, managed_items)], "a label was removed"
    finally:
        watch.stop()
    # deleting the rule still removes its labels
    env.delete_rule(name)
    for n in nodes:
        wait_for(lambda n=n: f"{FNS}/edited" not in env.labels(n), what="labels removed with the rule")


def test_watch_410_loop_backs_off_with_one_log_line(env: Env, tmp_path: Path) -> None:
    """A proxy ends every NodeFeature streaming list right after its initial events and answers
    every NodeFeature watch that follows with 410 Gone: the master relists once at once, then backs off with jitter and logs the episode once (before:
    5,523 WATCH requests in 29 s and a log line each); the cluster keeps being served."""
    from tests.e2e.faultproxy import FaultProxy

    def rule_(method: str, path: str, query: dict[str, list[str]]) -> Any:
        if (method == "GET" and path.endswith("/nodefeatures") and query.get("watch")
                and not query.get("sendInitialEvents")):
            return 200, [{"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                                        "reason": "Expired", "code": 410, "message": "too old"}}]
        return None

    proxy = FaultProxy(env.kube.server, env.kube.ca_file, rule_,
                       cut_after_initial_events=lambda path: path.endswith("/nodefeatures"))
    try:
        (node,) = setup_world(env, 1)
        env.kubeconfig = proxy.kubeconfig(env.kubeconfig, tmp_path / "proxied.kubeconfig")
        m = env.start_master()
        wait_for(lambda: converged(env, node), what="converged through the proxy")
        start = proxy.injected
        time.sleep(20)
        gone = proxy.injected - start
        assert 2 <= gone <= 12, f"{gone} watches answered 410 in 20 s"
        assert m.logs().count("410 Gone again right after a relist") == 1, m.logs()[-3000:]
        # still serving: a rule change lands through the same proxy
        rules = base_rules(env.tag)
        rules[0]["labels"] = {"cpu-avx": "after-410s"}
        env.put_rule(rule(f"{env.tag}-rules", rules))
        wait_for(lambda: env.labels(node).get(f"{FNS}/cpu-avx") == "after-410s", what="rule change during 410s")
        assert m.running
    finally:
        proxy.close()


def test_master_logs_upstream_structured_lines(env: Env) -> None:
    """What operators grep for, as upstream writes it (docs/logging.md): the banner, the config,
    the informer sync, leader election, a rule error naming its NodeFeatureRule and rule, a rule
    change, the node updated with its counts."""
    from tests.support import klog

    (node,) = setup_world(env, 1)
    env.put_rule(rule(f"{env.tag}-bad", [
        {"name": "bad-op", "labels": {"bad": "1"},
         "matchFeatures": [{"feature": "kernel.version", "matchExpressions": {"major": {"op": "Gt", "value": ["six"]}}}]},
    ]))
    m = env.start_master("-enable-leader-election", "-instance=logs")
    wait_for(lambda: converged(env, node), what="rules applied")
    m.wait_log(f'"node updated" nodeName="{node}"', timeout=20)
    env.put_rule(rule(f"{env.tag}-more", [{"name": "more", "labels": {"more": "1"}}]))
    m.wait_log(f'"NodeFeatureRule added" nodefeaturerule="{env.tag}-more"', timeout=20)
    wait_for(lambda: env.labels(node).get(f"{FNS}/more") == "1", what="rule change applied")
    text = m.logs()
    assert klog.find(text, "Node Feature Discovery Master", namespace=NS), text[-3000:]
    assert klog.find(text, "Master instance", instance="logs")
    assert klog.find(text, "configuration file parsed", path=str(env.config))
    (cfg,) = klog.find(text, "configuration successfully updated")
    assert "enableTaints: true" in cfg.kv["configuration"]
    (synced,) = klog.find(text, "informer caches synced")
    assert synced.kv["duration"].endswith("s") and int(synced.kv["nodes"]) >= 1
    lock = f"{NS}/nfd-master.nfd.kubernetes.io"
    assert klog.find(text, "Attempting to acquire leader lease...", lock=lock)
    assert klog.find(text, "Successfully acquired lease", lock=lock)
    # once per rule and error per rules generation (ours), not once per node
    errs = klog.find(text, "failed to process rule", ruleName="bad-op", nodefeaturerule=f"{env.tag}-bad",
                     nodeName=node)
    assert errs and all(e.severity == "E" and e.kv["err"] for e in errs)
    assert klog.find(text, "will process all nodes in the cluster")
    first = klog.find(text, "node updated", nodeName=node)[0]
    assert (first.kv["labelsAdded"], first.kv["resourcesSet"], first.kv["taintsSet"]) == ("4", "2", "1"), first.raw
