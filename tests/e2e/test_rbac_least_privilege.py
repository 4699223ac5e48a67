"""RBAC exactly as needed, proven on the real apiserver with its audit log.

deploy/ is rendered (kustomize overlays, and the Helm chart) and applied; each component then
does its whole job as a process under the ServiceAccount its workload names: workers publish
(DaemonSet mode with pod+DaemonSet owners, and the one-shot Job with a Node owner), the master
labels nodes from NodeFeatureRules (extended resources, a NodeFeatureGroup's status, events,
leader-election Lease, NodeFeature namespace selector), gc deletes orphans, the topology
updater applies its NodeResourceTopology, and the prune Job cleans the nodes. The audit log
then says which (verb, group, resource) each identity used; every verb the rendered
Roles/ClusterRoles grant must be among them, and no request may have been refused.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.build import BuildError, find_go
from tests.e2e.harness import HttpError, free_port
from tests.e2e.tools import (
    DEPLOY_DIR,
    NFD_API,
    NRT_API,
    RBAC_KINDS,
    AuditedCluster,
    Installed,
    helm_bin,
    helm_template,
    install_kube,
    kustomize_bin,
    kustomize_build,
    service_accounts,
    start_audited_cluster,
)
from tests.support.kubelet import FakeKubelet

__all__ = ["helm_bin", "install_kube", "kustomize_bin"]  # fixtures

pytestmark = pytest.mark.e2e

FNS = "feature.node.kubernetes.io"
NUMA_TWO = Path(__file__).resolve().parents[1] / "fixtures" / "numa" / "two"

# Grants used by something other than an apiserver request of the component itself, so the
# audit log cannot show them: the kubelet authorizes the topology updater's /configz read
# with a SubjectAccessReview for nodes/configz (Kubernetes >= 1.33).
NOT_AUDITABLE = {("topology-updater", "", "nodes/configz", "get")}


def render(kind: str, *, kustomize: Path, helm: Path, tmp: Path) -> tuple[list[dict[str, Any]], str]:
    if kind == "kustomize":
        # every overlay a user may apply: DaemonSet workers, the one-shot Job (with the Node
        # RBAC), the topology updater and the prune Job
        objs: dict[tuple[str, str], dict[str, Any]] = {}
        for overlay in ("master-worker-topologyupdater", "default-job", "prune"):
            for o in kustomize_build(kustomize, DEPLOY_DIR / "overlays" / overlay, num_nodes=1):
                objs.setdefault((o["kind"], o["metadata"]["name"]), o)
        return list(objs.values()), "node-feature-discovery"
    # the chart grants namespaces and leases only when the values need them
    selector = {"matchLabels": {"kubernetes.io/metadata.name": "nfd-rbac-helm"}}
    values = {"worker": {"ownerRefs": ["node", "pod", "ds"]}, "topologyUpdater": {"enable": True},
              "master": {"replicaCount": 2, "config": {"restrictions": {"nodeFeatureNamespaceSelector": selector}}},
              "postDeleteCleanup": True}
    return helm_template(helm, namespace="nfd-rbac-helm", release="lp", values=values, tmpdir=tmp), "nfd-rbac-helm"


def granted(objs: list[dict[str, Any]], namespace: str, sa: str) -> set[tuple[str, str, str]]:
    """(group, resource[/subresource], verb) the rendered RBAC grants ServiceAccount `sa`."""
    roles = {(o["kind"], o["metadata"]["name"]): o for o in objs if o["kind"] in ("Role", "ClusterRole")}
    out: set[tuple[str, str, str]] = set()
    for b in objs:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(s.get("kind") == "ServiceAccount" and s["name"] == sa and s.get("namespace") == namespace
                   for s in b.get("subjects") or []):
            continue
        role = roles[(b["roleRef"]["kind"], b["roleRef"]["name"])]
        for rule in role.get("rules") or []:
            for g in rule.get("apiGroups") or []:
                for r in rule.get("resources") or []:
                    for v in rule.get("verbs") or []:
                        out.add((g, r, v))
    return out


def used(events: list[dict[str, Any]], namespace: str, sa: str) -> tuple[set[tuple[str, str, str]], list[str]]:
    """(group, resource[/subresource], verb) the identity's requests used, and refused requests."""
    user = f"system:serviceaccount:{namespace}:{sa}"
    out: set[tuple[str, str, str]] = set()
    refused: list[str] = []
    for e in events:
        if e.get("user", {}).get("username") != user or "objectRef" not in e:
            continue
        ref = e["objectRef"]
        res = ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        code = (e.get("responseStatus") or {}).get("code", 0)
        if code == 403:
            refused.append(f"{e['verb']} {e.get('requestURI')}: {(e.get('responseStatus') or {}).get('message')}")
        elif code < 400 or code in (404, 409):  # the verb was authorized
            out.add((ref.get("apiGroup", ""), res, e["verb"]))
            if e["verb"] == "watch" and "sendInitialEvents=true" in (e.get("requestURI") or ""):
                # A streaming list is the informer's LIST: on a server without WatchList it
                # falls back to paginated LISTs, which need the grant.
                out.add((ref.get("apiGroup", ""), res, "list"))
            if e["verb"] == "patch" and code == 201:
                # a server-side apply that created the object was also authorized for create
                out.add((ref.get("apiGroup", ""), res, "create"))
    return out, refused


def _wait(inst: Installed, fn: Any, what: str, timeout: float = 60) -> Any:
    return inst.kube.wait_until(fn, timeout=timeout, interval=0.2, message=what)


def run_everything(inst: Installed) -> None:
    kube, ns = inst.kube, inst.namespace
    a, b = inst.make_node("lp-a"), inst.make_node("lp-b")
    root_a = inst.host_root("gpu-server")

    # -- workers: DaemonSet mode on A (pod + DaemonSet owners), one-shot Job mode on B (Node owner)
    worker = inst.start_worker(a, root_a, "-owner-refs=pod,ds")
    first = _wait(inst, lambda: inst.nodefeature(a), "worker A published")
    (root_a / "etc/kubernetes/node-feature-discovery/features.d/e2e").write_text("e2e-zone=z1\n")
    _wait(inst, lambda: (inst.nodefeature(a) or {}).get("metadata", {}).get("resourceVersion")
          != first["metadata"]["resourceVersion"], "worker A updated")
    oneshot = inst.start_worker(b, inst.host_root("kvm-guest"), "-oneshot", "-owner-refs=node", daemonset=False)
    assert oneshot.wait(timeout=120) == 0, oneshot.logs()
    owners = (inst.nodefeature(b) or {})["metadata"]["ownerReferences"]
    assert [o["kind"] for o in owners] == ["Node"], owners
    assert {o["kind"] for o in first["metadata"]["ownerReferences"]} == {"Pod", "DaemonSet"}

    # -- master, with every optional path that needs a grant switched on
    tag = kube.unique_name("lp")
    rule = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": tag},
            "spec": {"rules": [
                {"name": "gpu", "labels": {f"{tag}-gpu": "true"}, "extendedResources": {f"{tag}-slots": "2"},
                 "matchFeatures": [{"feature": "pci.device", "matchExpressions": {"vendor": {"op": "In", "value": ["10de"]}}}]},
                {"name": "bad", "labels": {"bad": "1"},  # accepted by the CRD, refused by the engine: an event
                 "matchFeatures": [{"feature": "kernel.version", "matchExpressions": {"major": {"op": "Gt", "value": ["x"]}}}]},
            ]}}
    kube.request("POST", f"{NFD_API}/nodefeaturerules", body=rule)
    kube.request("POST", f"{NFD_API}/namespaces/{ns}/nodefeaturegroups", body={
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureGroup", "metadata": {"name": tag},
        "spec": {"featureGroupRules": [{"name": "gpu", "matchFeatures": [
            {"feature": "pci.device", "matchExpressions": {"vendor": {"op": "In", "value": ["10de"]}}}]}]}})
    options = {"restrictions": {"nodeFeatureNamespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}}
    # on node B, as a Deployment pod: it reads its own Node at start (upstream's master.version clean-up)
    master = inst.start_master("-enable-leader-election", "-feature-gates=NodeFeatureGroupAPI=true",
                               f"-options={json.dumps(options)}", "-config-poll-interval=0.5s", node_name=b)
    _wait(inst, lambda: inst.node(a)["metadata"]["labels"].get(f"{FNS}/{tag}-gpu") == "true"
          and inst.node(a)["status"]["allocatable"].get(f"{FNS}/{tag}-slots") == "2", "master labelled A")
    _wait(inst, lambda: (kube.get(f"{NFD_API}/namespaces/{ns}/nodefeaturegroups/{tag}").get("status") or {})
          .get("nodes") == [{"name": a}], "NodeFeatureGroup status")
    # a label removed: the master records an event on the Node
    cur = kube.get(f"{NFD_API}/nodefeaturerules/{tag}")
    cur["spec"]["rules"][0]["labels"] = {f"{tag}-other": "true"}
    kube.request("PUT", f"{NFD_API}/nodefeaturerules/{tag}", body=cur)
    _wait(inst, lambda: f"{FNS}/{tag}-gpu" not in inst.node(a)["metadata"]["labels"], "label removed")
    _wait(inst, lambda: [e for e in kube.get("/api/v1/namespaces/default/events")["items"]
                         if e["involvedObject"].get("name") == a], "node event")
    assert kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/nfd-master.nfd.kubernetes.io")

    # -- gc: a NodeFeature and a NodeResourceTopology of a node that no longer exists
    ghost = kube.unique_name("gone")
    kube.request("POST", f"{NFD_API}/namespaces/{ns}/nodefeatures", body={
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
        "metadata": {"name": ghost, "labels": {"nfd.node.kubernetes.io/node-name": ghost}}, "spec": {}})
    kube.request("POST", NRT_API, body={"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
                                        "metadata": {"name": ghost}, "zones": [], "topologyPolicies": ["None"]})
    gc = kube.start_process(["nfd-gc", "-gc-interval=1s", f"-port={free_port()}"], kubeconfig=inst.kubeconfig("gc"),
                            name=f"gc-{ns}")
    _wait(inst, lambda: inst.nodefeature(ghost) is None and kube.get_or_none(f"{NRT_API}/{ghost}") is None,
          "gc removed the orphans")

    # -- topology updater on A, fed by a kubelet's PodResources socket
    sockdir = tempfile.mkdtemp(prefix="nfd-lp-")
    kubelet = FakeKubelet(os.path.join(sockdir, "kubelet.sock"), cpus=list(range(2, 16))).start()
    try:
        kcfg = inst.tmp / "kubelet-config.yaml"
        kcfg.write_text("kind: KubeletConfiguration\ntopologyManagerPolicy: none\n")
        (inst.tmp / "kubelet-state").mkdir(exist_ok=True)
        # a daemon, not -oneshot: it also watches its own object (list, watch)
        tu = kube.start_process(
            ["nfd-topology-updater", f"-kubelet-config-uri=file://{kcfg}",
             f"-podresources-socket={kubelet.socket_path}", f"-kubelet-state-dir={inst.tmp / 'kubelet-state'}",
             f"-port={free_port()}", "-config=/nonexistent"],
            kubeconfig=inst.kubeconfig("topology-updater"),
            env={"NODE_NAME": a, "KUBERNETES_NAMESPACE": ns, "NFD_HOST_ROOT": str(NUMA_TWO)}, name=f"tu-{ns}")
        # its watch opens before the first scan; the audit log shows it once it ends (stop)
        _wait(inst, lambda: kube.get_or_none(f"{NRT_API}/{a}"), "topology updater published")
        tu.stop()
    finally:
        kubelet.stop()
        shutil.rmtree(sockdir, ignore_errors=True)
    assert kube.get(f"{NRT_API}/{a}")["zones"]

    # -- uninstall: the prune Job's identity removes what the master set
    worker.stop()
    master.stop()
    gc.stop()
    prune = inst.start_master("-prune", component="prune")
    assert prune.wait(timeout=120) == 0, prune.logs()
    # nothing nfd put on the nodes is left: labels, bookkeeping annotations, extended resources
    for n in (a, b):
        node = inst.node(n)
        assert not [k for k in node["metadata"].get("labels") or {} if k.startswith(f"{FNS}/")], n
        assert not [k for k in node["metadata"].get("annotations") or {} if k.startswith("nfd.node.kubernetes.io/")], n
        assert not [r for r in node["status"].get("capacity") or {} if r.startswith(f"{FNS}/")], n
    kube.request("DELETE", f"{NFD_API}/nodefeaturerules/{tag}")
    kube.request("DELETE", f"{NRT_API}/{a}")


@pytest.fixture(scope="module")
def rbac_kube() -> Iterator[AuditedCluster]:
    """A control plane of its own: the components' requests here stay out of other tests'
    audit readings (and theirs out of this one)."""
    if find_go() is None or os.environ.get("NFD_E2E", "1") == "0":
        pytest.skip("Go is not installed (or NFD_E2E=0): no control plane")
    try:
        cluster = start_audited_cluster()
    except BuildError as e:
        pytest.fail(f"cannot build the test kube-apiserver: {e}", pytrace=False)
    yield cluster
    cluster.close()


@pytest.fixture(params=["kustomize", "helm"])
def installed(request: pytest.FixtureRequest, rbac_kube: AuditedCluster, kustomize_bin: Path, helm_bin: Path,
              tmp_path: Path) -> Iterator[Installed]:
    objs, ns = render(request.param, kustomize=kustomize_bin, helm=helm_bin, tmp=tmp_path)
    inst = Installed(rbac_kube, objs, namespace=ns, tmp=tmp_path)
    yield inst
    inst.close()


def test_every_granted_verb_is_used_and_nothing_is_refused(installed: Installed) -> None:
    kube = installed.kube
    assert isinstance(kube, AuditedCluster)
    start = kube.audit_mark()
    run_everything(installed)
    events = kube.audit_events(since=start)

    assert set(installed.sa) == {"master", "worker", "gc", "topology-updater", "prune"}, installed.sa
    unused: list[str] = []
    refused: list[str] = []
    report: dict[str, list[str]] = {}
    for component, sa in sorted(installed.sa.items()):
        grants = granted(installed.objs, installed.namespace, sa)
        uses, denied = used(events, installed.namespace, sa)
        refused += [f"{component}: {d}" for d in denied]
        report[component] = sorted("/".join(u) for u in uses)
        for g in sorted(grants - uses):
            if (component, *g) in NOT_AUDITABLE:
                continue
            unused.append(f"{component} ({sa}): {g[2]} {g[1]} (group {g[0] or 'core'!r})")
    print(yaml.safe_dump(report))
    assert not refused, "requests refused by RBAC:\n" + "\n".join(refused)
    assert not unused, "granted but never used:\n" + "\n".join(unused)


def test_grants_read_from_the_rendering_are_not_empty(kustomize_bin: Path, helm_bin: Path, tmp_path: Path) -> None:
    """The checker itself: each component's ServiceAccount is bound to something in both
    renderings, so an empty grant set cannot pass the test above vacuously."""
    for kind in ("kustomize", "helm"):
        objs, ns = render(kind, kustomize=kustomize_bin, helm=helm_bin, tmp=tmp_path)
        assert [o for o in objs if o["kind"] in RBAC_KINDS]
        for component, sa in service_accounts(objs).items():
            assert granted(objs, ns, sa), f"{kind}: {component} ({sa}) has no grants"


def test_unauthorized_write_shows_up_as_refused(install_kube: AuditedCluster) -> None:
    """The audit reading sees refusals: a ServiceAccount without grants is refused and recorded."""
    ns = install_kube.unique_name("lp-none")
    install_kube.create_namespace(ns)
    start = install_kube.audit_mark()
    client = install_kube.client(install_kube.serviceaccount_kubeconfig(ns, "default"))
    with pytest.raises(HttpError) as ei:
        client.get("/api/v1/nodes")
    assert ei.value.status == 403
    uses, denied = used(install_kube.audit_events(since=start), ns, "default")
    assert denied and ("", "nodes", "list") not in uses


def test_granted_and_used_read_rbac_and_audit_events() -> None:
    """The two readings the least-privilege test compares, on hand-written inputs."""
    objs = [
        {"kind": "ClusterRole", "metadata": {"name": "r"},
         "rules": [{"apiGroups": ["", "x.io"], "resources": ["nodes", "nodes/status"], "verbs": ["get", "patch"]}]},
        {"kind": "ClusterRoleBinding", "metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "r"},
         "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]},
        {"kind": "ClusterRoleBinding", "metadata": {"name": "other"}, "roleRef": {"kind": "ClusterRole", "name": "r"},
         "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "elsewhere"}]},
    ]
    assert granted(objs, "ns", "sa") == {(g, r, v) for g in ("", "x.io") for r in ("nodes", "nodes/status")
                                         for v in ("get", "patch")}
    assert granted(objs, "ns", "nobody") == set()
    user = {"username": "system:serviceaccount:ns:sa"}
    events = [
        {"user": user, "verb": "patch", "objectRef": {"resource": "nodes", "subresource": "status"},
         "responseStatus": {"code": 200}},
        {"user": user, "verb": "patch", "objectRef": {"apiGroup": "x.io", "resource": "things"},
         "responseStatus": {"code": 201}},
        {"user": user, "verb": "get", "objectRef": {"resource": "nodes"}, "responseStatus": {"code": 404}},
        {"user": user, "verb": "list", "objectRef": {"resource": "pods"}, "requestURI": "/api/v1/pods",
         "responseStatus": {"code": 403, "message": "forbidden"}},
        {"user": {"username": "system:serviceaccount:ns:other"}, "verb": "delete", "objectRef": {"resource": "nodes"},
         "responseStatus": {"code": 200}},
        {"user": user, "verb": "get", "requestURI": "/healthz", "responseStatus": {"code": 200}},
    ]
    uses, refused = used(events, "ns", "sa")
    assert uses == {("", "nodes/status", "patch"), ("x.io", "things", "patch"), ("x.io", "things", "create"),
                    ("", "nodes", "get")}
    assert refused == ["list /api/v1/pods: forbidden"]
