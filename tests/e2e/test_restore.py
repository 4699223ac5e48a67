"""Each daemon restores what it owns when someone deletes or overwrites it, within one interval,
and sends no write while nothing changes: against the real kube-apiserver, each component a
process under its ServiceAccount, writes counted from the apiserver's audit log (or, for the
worker, its own request counter).

- nfd-topology-updater: its NodeResourceTopology (upstream's e2e spec "when kubelet state
  monitoring disabled should still create or update CRs with periodic updates", with the
  ``unix://`` socket form upstream's pods pass), with our RBAC (watch: back at once) and with
  the role upstream's v0.17.3 e2e suite gives it (no patch: get + create/update; no list/watch:
  checked and restored on the next interval tick);
- nfd-worker: its NodeFeature;
- nfd-master: its leader-election Lease, a NodeFeatureGroup's status, a node's labels and
  bookkeeping annotations.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import tools
from tests.e2e.harness import REPO_ROOT, KubeCluster
from tests.e2e.test_master import FEATURE_LABELS, FNS, NFD, Env, converged, setup_world, wait_for
from tests.e2e.test_topology_updater import NS as TU_NS
from tests.e2e.test_topology_updater import SA as TU_SA
from tests.e2e.test_topology_updater import UpdaterEnv, _apply_rbac, api_pod
from tests.e2e.test_worker import WorkerEnv
from tests.e2e.tools import AuditedCluster
from tests.support.kubelet import Container, Pod

pytestmark = pytest.mark.e2e

install_kube = tools.install_kube  # the audited control plane (session fixture)

WRITES = ("create", "update", "patch", "delete")
LEASE = "/apis/coordination.k8s.io/v1/namespaces/node-feature-discovery/leases/nfd-master.nfd.kubernetes.io"


def writes_by(kube: AuditedCluster, user: str, since: int) -> list[str]:
    return [f"{ev['verb']} {ev.get('requestURI')}" for ev in kube.audit_events(since=since)
            if ev.get("user", {}).get("username") == user and ev["verb"] in WRITES]


def back_within(fn: Any, seconds: float, what: str) -> float:
    """Seconds until ``fn()`` is true; fails past ``seconds``."""
    t0 = time.monotonic()
    wait_for(fn, timeout=seconds, what=what)
    return time.monotonic() - t0


# -- nfd-topology-updater -------------------------------------------------------------------------

INTERVAL_S = 3.0  # upstream's spec: -sleep-interval=3s


@pytest.fixture
def tu_env(install_kube: AuditedCluster, tmp_path: Path) -> Iterator[UpdaterEnv]:
    _apply_rbac(install_kube)
    install_kube.wait_crd_established("noderesourcetopologies.topology.node.k8s.io")
    e = UpdaterEnv(install_kube, tmp_path)
    e.kubelet.start()
    yield e
    e.close()
    _apply_rbac(install_kube)  # a test that narrowed the ClusterRole leaves ours behind


def _start_as_upstream_spec(e: UpdaterEnv) -> None:
    # upstream's pods: the socket as a unix:// URL, no kubelet state monitoring, 3 s interval
    e.start(f"-podresources-socket=unix://{e.socket}", "-kubelet-state-dir=", f"-sleep-interval={INTERVAL_S:g}s")


def test_topology_updater_restores_its_nrt_at_once_and_writes_nothing_while_idle(tu_env: UpdaterEnv) -> None:
    e, kube = tu_env, tu_env.kube
    assert isinstance(kube, AuditedCluster)
    user = f"system:serviceaccount:{TU_NS}:{TU_SA}"
    _start_as_upstream_spec(e)
    wait_for(lambda: e.nrt() is not None, timeout=60, what="NRT created (unix:// socket)")
    zones = e.nrt()["zones"]  # type: ignore[index]

    mark = kube.audit_mark()
    time.sleep(3 * INTERVAL_S)  # three interval scans of an unchanged node
    assert writes_by(kube, user, mark) == []

    kube.request("DELETE", e.path)
    took = back_within(lambda: e.nrt() is not None, INTERVAL_S, "the deleted NRT is back within one interval")
    assert e.nrt()["zones"] == zones, took  # type: ignore[index]

    # overwritten: someone empties the zones
    kube.request("PATCH", e.path, body={"zones": []}, content_type="application/merge-patch+json")
    back_within(lambda: (e.nrt() or {}).get("zones") == zones, INTERVAL_S, "the overwritten zones are back")

    mark = kube.audit_mark()
    time.sleep(3 * INTERVAL_S)
    assert writes_by(kube, user, mark) == []
    assert e.proc is not None and "Traceback" not in e.proc.logs()


#: the ClusterRole upstream's v0.17.3 e2e suite binds its updater pods to (test/e2e/utils/rbac.go,
#: createClusterRoleTopologyUpdater), rule for rule; its Helm chart and kustomize base grant the
#: same three verbs on noderesourcetopologies: no patch, no list, no watch
UPSTREAM_E2E_RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
    {"apiGroups": ["topology.node.k8s.io"], "resources": ["noderesourcetopologies"],
     "verbs": ["create", "get", "update"]},
]


def test_topology_updater_under_upstreams_e2e_role_writes_with_get_create_update(tu_env: UpdaterEnv) -> None:
    """Under upstream's role PATCH is refused (403) once: the updater says so in one line and
    writes with get + create/update from then on. The object is created, follows a change,
    is back within one interval after a deletion (no watch: re-checked every tick), and an
    unchanged node costs a GET per tick but no write."""
    e, kube = tu_env, tu_env.kube
    assert isinstance(kube, AuditedCluster)
    user = f"system:serviceaccount:{TU_NS}:{TU_SA}"
    role = kube.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/nfd-topology-updater")
    role["rules"] = UPSTREAM_E2E_RULES
    kube.request("PUT", "/apis/rbac.authorization.k8s.io/v1/clusterroles/nfd-topology-updater", body=role)
    start = kube.audit_mark()
    _start_as_upstream_spec(e)
    wait_for(lambda: e.nrt() is not None, timeout=60, what="NRT created under upstream's e2e role")
    proc = e.proc
    assert proc is not None
    proc.wait_log("cannot watch NodeResourceTopology", timeout=30)
    assert proc.logs().count("cannot patch noderesourcetopologies") == 1, proc.logs()[-4000:]
    assert e.available("node-0", "cpu") == 70

    # a change: a Guaranteed pod with two exclusive CPUs on node-0
    api_pod(kube, e.ns, e.node, "pinned", cpu="2", memory="4Gi")
    e.kubelet.add_pod(Pod(e.ns, "pinned", [Container("main", cpus=[2, 74])]))
    e.wait_available("node-0", "cpu", 68)

    mark = kube.audit_mark()
    time.sleep(3 * INTERVAL_S)  # three interval scans of an unchanged node
    assert writes_by(kube, user, mark) == []

    kube.request("DELETE", e.path)
    back_within(lambda: e.nrt() is not None, INTERVAL_S + 1.0, "the deleted NRT is back within one interval")
    assert e.available("node-0", "cpu") == 68

    verbs = [w.split()[0] for w in writes_by(kube, user, start)]
    assert verbs.count("patch") == 1, verbs  # the refused one; never asked again
    assert "create" in verbs and "update" in verbs, verbs
    assert "Traceback" not in proc.logs()


#: the ClusterRole upstream's v0.17.3 Helm chart (templates/clusterrole.yaml) and kustomize base
#: (rbac-topologyupdater) give the updater, rule for rule: pods get only (upstream's updater GETs
#: each listed pod), no list or watch anywhere
UPSTREAM_CHART_RULES = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
    {"apiGroups": ["topology.node.k8s.io"], "resources": ["noderesourcetopologies"],
     "verbs": ["create", "get", "update"]},
]


def test_topology_updater_under_upstreams_chart_role_reads_each_pod_with_get(tu_env: UpdaterEnv) -> None:
    """Under upstream's Helm/kustomize role the pod LIST is refused (403): the updater says so in
    one line and reads each listed pod with GET on every scan, as upstream; it publishes, and a
    Guaranteed pod's exclusive CPUs leave the zone. (It exited after 120 s of
    'timed out waiting for node-scoped Pod cache sync' before.)"""
    e, kube = tu_env, tu_env.kube
    assert isinstance(kube, AuditedCluster)
    user = f"system:serviceaccount:{TU_NS}:{TU_SA}"
    role = kube.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/nfd-topology-updater")
    role["rules"] = UPSTREAM_CHART_RULES
    kube.request("PUT", "/apis/rbac.authorization.k8s.io/v1/clusterroles/nfd-topology-updater", body=role)
    _start_as_upstream_spec(e)
    proc = e.proc
    assert proc is not None
    proc.wait_log("reading each listed pod with get", timeout=30)
    wait_for(lambda: e.nrt() is not None, timeout=60, what="NRT created under upstream's chart role")
    assert e.available("node-0", "cpu") == 70

    mark = kube.audit_mark()
    api_pod(kube, e.ns, e.node, "pinned", cpu="2", memory="4Gi")
    e.kubelet.add_pod(Pod(e.ns, "pinned", [Container("main", cpus=[2, 74])]))
    e.wait_available("node-0", "cpu", 68)
    reads = [ev for ev in kube.audit_events(since=mark)
             if (ev.get("user") or {}).get("username") == user and (ev.get("objectRef") or {}).get("resource") == "pods"]
    assert reads and {ev["verb"] for ev in reads} == {"get"}, reads
    assert proc.logs().count("cannot list and watch pods") == 1
    assert "Traceback" not in proc.logs()


# -- nfd-worker ---------------------------------------------------------------------------------

WORKER_CONF = "core:\n  sleepInterval: 60s\n  featureSources: [all, -nvml]\n  labelSources: [all, -nvml]\n"


@pytest.fixture
def worker_env(kube: KubeCluster, tmp_path: Path) -> Iterator[WorkerEnv]:
    kube.apply_manifest_dir(REPO_ROOT / "deploy" / "base" / "rbac")
    e = WorkerEnv(kube, tmp_path)
    e.conf.write_text(WORKER_CONF)
    yield e
    if e.proc is not None and e.proc.running:
        e.proc.stop()
    with contextlib.suppress(Exception):
        kube.request("DELETE", e.path)
    kube.delete_node(e.node)


def test_worker_restores_its_nodefeature_within_a_tick_and_sends_nothing_while_idle(worker_env: WorkerEnv) -> None:
    """sleepInterval is 60 s: the object comes back from the watch, not from the next pass."""
    e, kube = worker_env, worker_env.kube
    e.start()
    first = kube.wait_until(e.nodefeature, timeout=60, message="NodeFeature created")
    spec = first["spec"]
    m1 = e.wait_metrics()
    time.sleep(3.0)
    m2 = e.metrics()
    for verb in ("GET", "UPDATE", "CREATE", "LIST"):
        k = f'nfd_worker_api_requests_total{{verb="{verb}"}}'
        assert m2.get(k, 0) == m1.get(k, 0), (verb, m1.get(k), m2.get(k))

    kube.request("DELETE", e.path)
    back_within(lambda: e.nodefeature() is not None, 5.0, "the deleted NodeFeature is back")
    assert e.nodefeature()["spec"] == spec  # type: ignore[index]

    kube.request("PATCH", e.path, body={"spec": {"labels": {"forged": "1"}}},
                 content_type="application/merge-patch+json")
    back_within(lambda: (e.nodefeature() or {}).get("spec") == spec, 5.0, "the overwritten spec is back")

    m3 = e.metrics()
    time.sleep(3.0)
    m4 = e.metrics()
    for verb in ("GET", "UPDATE", "CREATE", "LIST"):
        k = f'nfd_worker_api_requests_total{{verb="{verb}"}}'
        assert m4.get(k, 0) == m3.get(k, 0), (verb, m3.get(k), m4.get(k))
    assert e.proc is not None and "Traceback" not in e.proc.logs()


# -- nfd-master ---------------------------------------------------------------------------------


@pytest.fixture
def master_env(install_kube: AuditedCluster, tmp_path: Path) -> Iterator[Env]:
    install_kube.apply_manifest_dir(REPO_ROOT / "deploy" / "base" / "rbac")
    e = Env(install_kube, tmp_path)
    try:
        yield e
    finally:
        e.close()
        with contextlib.suppress(Exception):
            install_kube.request("DELETE", LEASE)


MASTER = "system:serviceaccount:node-feature-discovery:nfd-master"


def test_master_restores_its_lease_within_a_retry_period(master_env: Env) -> None:
    """A Lease is renewed every retryPeriod (2 s) by design: those writes are the election itself,
    so no idle check here. Deleted, it is created again by the next renewal, same holder."""
    env = master_env
    m = env.start_master("-enable-leader-election")
    m.wait_log("Successfully acquired lease", timeout=60)
    holder = env.kube.get(LEASE)["spec"]["holderIdentity"]
    env.kube.request("DELETE", LEASE)
    back_within(lambda: env.kube.get_or_none(LEASE) is not None, 2.0 + 1.0, "the Lease is back")
    assert env.kube.get(LEASE)["spec"]["holderIdentity"] == holder
    assert m.running and m.logs().count("Successfully acquired lease") == 1


def test_master_restores_group_status_and_node_bookkeeping_and_writes_nothing_while_idle(master_env: Env) -> None:
    env = master_env
    kube = env.kube
    assert isinstance(kube, AuditedCluster)
    nodes = setup_world(env, 2)
    name = f"{env.tag}-avx512"
    grp = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureGroup",
           "metadata": {"name": name, "namespace": "node-feature-discovery"},
           "spec": {"featureGroupRules": [{"name": "avx512", "matchFeatures": [
               {"feature": "e2e.tag", "matchExpressions": {env.tag: {"op": "Exists"}}},
               {"feature": "cpu.cpuid", "matchExpressions": {"AVX512F": {"op": "Exists"}}}]}]}}
    path = f"{NFD}/namespaces/node-feature-discovery/nodefeaturegroups/{name}"
    kube.request("POST", f"{NFD}/namespaces/node-feature-discovery/nodefeaturegroups", body=grp)
    try:
        m = env.start_master("-feature-gates=NodeFeatureGroupAPI=true")
        want = {"nodes": [{"name": n} for n in sorted(nodes)], "nodeCount": 2}

        def status() -> dict[str, Any]:
            return dict(kube.get(path).get("status") or {})

        wait_for(lambda: status() == want, what="group status")
        for n in nodes:
            wait_for(lambda n=n: converged(env, n), what=f"{n} converged")

        mark = kube.audit_mark()
        time.sleep(5.0)
        assert writes_by(kube, MASTER, mark) == []

        # someone overwrites the group's status
        cur = kube.get(path)
        cur["status"] = {"nodes": [{"name": "forged"}], "nodeCount": 1}
        kube.request("PUT", f"{path}/status", body=cur)
        back_within(lambda: status() == want, 5.0, "the group status is back")

        # someone strips a label nfd manages and its bookkeeping annotation from a node
        node = nodes[0]
        patch = {"metadata": {"labels": {f"{FNS}/cpu-avx": None},
                              "annotations": {FEATURE_LABELS: None}}}
        kube.request("PATCH", f"/api/v1/nodes/{node}", body=patch, content_type="application/merge-patch+json")
        back_within(lambda: converged(env, node)
                    and FEATURE_LABELS in (env.get_node(node)["metadata"].get("annotations") or {}),
                    5.0, "the node's label and bookkeeping annotation are back")

        mark = kube.audit_mark()
        time.sleep(5.0)
        assert writes_by(kube, MASTER, mark) == []
        assert "Traceback" not in m.logs()
    finally:
        with contextlib.suppress(Exception):
            kube.request("DELETE", path)
