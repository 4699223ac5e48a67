"""kustomize: upstream's layout, so overlays written for it and upstream's documented commands
work unchanged with deploy/ (upstream's `deployment/`).

- Every base, component and overlay upstream ships (76e6cc8) exists under the same name, and
  upstream's own overlay compositions (the resource and component lists of its overlays, and a
  user overlay patching by `labelSelector: app=nfd` as upstream's components and samples do)
  build against our tree.
- docs/deployment/kustomize.md and uninstallation.md, command by command, on a control plane of
  its own (uninstalling deletes the namespace, and no controller ever finishes that):
  `kubectl apply -k` = kustomize build + server-side apply, `kubectl delete -k` = delete each
  object of the build, with the GitHub URL replaced by the local directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.build import BuildError, ensure_built, find_go
from tests.e2e.harness import HttpError, KubeCluster
from tests.e2e.tools import DEPLOY_DIR, kustomize_bin, kustomize_build

__all__ = ["kustomize_bin"]  # fixture

pytestmark = pytest.mark.e2e

NS = "node-feature-discovery"

# upstream's deployment/ tree at 76e6cc8: directory names
UPSTREAM_BASES = ["gc", "master", "nfd-crds", "noderesourcetopologies-crd", "rbac", "rbac-topologyupdater",
                  "topologyupdater-daemonset", "worker-daemonset", "worker-job"]
UPSTREAM_COMPONENTS = ["common", "master-config", "topology-updater", "topology-updater-config", "worker-config",
                       "worker-node-rbac"]
UPSTREAM_OVERLAYS = ["default", "default-job", "master-worker-topologyupdater", "prometheus", "prune",
                     "samples/custom-rules", "topologyupdater"]

# upstream's overlays, as lists of what they compose (their namespace.yaml is base/namespace here)
UPSTREAM_COMPOSITIONS: dict[str, tuple[list[str], list[str]]] = {
    "default": (["rbac", "nfd-crds", "master", "worker-daemonset", "gc"],
                ["worker-config", "common", "master-config"]),
    "default-job": (["rbac", "nfd-crds", "master", "worker-job"],
                    ["worker-config", "worker-node-rbac", "common", "master-config"]),
    "master-worker-topologyupdater": (
        ["rbac", "rbac-topologyupdater", "nfd-crds", "master", "worker-daemonset", "noderesourcetopologies-crd",
         "topologyupdater-daemonset", "gc"],
        ["worker-config", "common", "topology-updater", "topology-updater-config", "master-config"]),
    "topologyupdater": (["rbac-topologyupdater", "noderesourcetopologies-crd", "topologyupdater-daemonset", "gc"],
                        ["common", "topology-updater", "topology-updater-config"]),
}


def _kustomization(path: Path) -> dict[str, Any]:
    k: dict[str, Any] = yaml.safe_load((path / "kustomization.yaml").read_text())
    return k


def _names(objs: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(o["kind"], o["metadata"]["name"]) for o in objs}


def test_upstream_layout_names() -> None:
    for b in UPSTREAM_BASES:
        assert _kustomization(DEPLOY_DIR / "base" / b)["kind"] == "Kustomization", b
    for c in UPSTREAM_COMPONENTS:
        assert _kustomization(DEPLOY_DIR / "components" / c)["kind"] == "Component", c
    for o in UPSTREAM_OVERLAYS:
        assert _kustomization(DEPLOY_DIR / "overlays" / o)["kind"] == "Kustomization", o


@pytest.mark.parametrize("overlay", sorted(UPSTREAM_COMPOSITIONS))
def test_upstream_overlay_compositions_build(overlay: str, kustomize_bin: Path, tmp_path: Path) -> None:
    """A user's copy of upstream's overlay, pointing at our bases and components, builds to the
    same workloads and ConfigMaps as our overlay of that name."""
    bases, components = UPSTREAM_COMPOSITIONS[overlay]
    mine = tmp_path / "my-overlay"
    mine.mkdir()
    rel = os.path.relpath(DEPLOY_DIR, mine)
    (mine / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": NS,
        "resources": [f"{rel}/base/namespace", *(f"{rel}/base/{b}" for b in bases)],
        "components": [f"{rel}/components/{c}" for c in components],
    }))
    built = kustomize_build(kustomize_bin, mine)
    ours = kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / overlay)
    kinds = {"Deployment", "DaemonSet", "Job", "ConfigMap", "ServiceAccount", "CustomResourceDefinition"}
    assert {n for n in _names(built) if n[0] in kinds} == {n for n in _names(ours) if n[0] in kinds}
    assert all(o["metadata"].get("namespace") == NS for o in built
               if o["kind"] in ("Deployment", "DaemonSet", "Job", "ConfigMap", "ServiceAccount"))


def test_user_overlay_patching_by_label_selector(kustomize_bin: Path, tmp_path: Path) -> None:
    """Upstream's components and samples target workloads by `labelSelector: app=nfd` and name;
    a user's patch written that way applies here, and the worker config replaced through the
    generator (`behavior: replace`) reaches the ConfigMap the DaemonSet mounts."""
    mine = tmp_path / "my-overlay"
    mine.mkdir()
    rel = os.path.relpath(DEPLOY_DIR, mine)
    (mine / "nfd-worker.conf").write_text("core:\n  sleepInterval: 10s\n")
    patch = [{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "-v=5"}]
    (mine / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [f"{rel}/overlays/default"],
        "configMapGenerator": [{"name": "nfd-worker-conf", "behavior": "replace", "files": ["nfd-worker.conf"]}],
        "patches": [{"target": {"labelSelector": "app=nfd", "name": name}, "patch": yaml.safe_dump(patch)}
                    for name in ("nfd-worker", "nfd-master", "nfd-gc")],
    }))
    objs = kustomize_build(kustomize_bin, mine)
    workloads = {o["metadata"]["name"]: o for o in objs if o["kind"] in ("Deployment", "DaemonSet")}
    assert set(workloads) == {"nfd-worker", "nfd-master", "nfd-gc"}
    for name, o in workloads.items():
        assert "-v=5" in o["spec"]["template"]["spec"]["containers"][0].get("args", []), name
    (cm,) = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("nfd-worker-conf")]
    assert cm["data"] == {"nfd-worker.conf": "core:\n  sleepInterval: 10s\n"}
    volumes = workloads["nfd-worker"]["spec"]["template"]["spec"]["volumes"]
    assert cm["metadata"]["name"] in {(v.get("configMap") or {}).get("name") for v in volumes}


@pytest.fixture
def fresh_kube() -> Iterator[KubeCluster]:
    if find_go() is None or os.environ.get("NFD_E2E", "1") == "0":
        pytest.skip("Go is not installed (or NFD_E2E=0): no control plane")
    try:
        cluster = KubeCluster.start(binary=ensure_built(), crds_dir=None)
    except BuildError as e:
        pytest.fail(f"cannot build the test kube-apiserver: {e}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.close()


def _apply_k(kube: KubeCluster, objs: list[dict[str, Any]]) -> None:
    """`kubectl apply -k`: every object of the build (a PodMonitor needs the Prometheus operator's
    CRD, which this control plane has not: it is checked to be the only thing left out)."""
    served = [o for o in objs if o["kind"] != "PodMonitor"]
    kube.apply_objects(served)


def _delete_k(kube: KubeCluster, objs: list[dict[str, Any]]) -> list[str]:
    """`kubectl delete -k`: delete each object of the build; the names not found."""
    missing = []
    for o in objs:
        if o["kind"] == "PodMonitor":
            continue
        try:
            kube.request("DELETE", kube.object_path(o))
        except HttpError as e:
            if e.status != 404:
                raise
            missing.append(f"{o['kind']}/{o['metadata']['name']}")
    return missing


def _exists(kube: KubeCluster, kind: str, name: str, *, namespaced: bool = True) -> bool:
    obj = {"apiVersion": {"DaemonSet": "apps/v1", "Deployment": "apps/v1", "Job": "batch/v1"}.get(kind, "v1"),
           "kind": kind, "metadata": {"name": name, **({"namespace": NS} if namespaced else {})}}
    if kind in ("ClusterRole", "ClusterRoleBinding"):
        obj["apiVersion"] = "rbac.authorization.k8s.io/v1"
    return kube.get_or_none(kube.object_path(obj)) is not None


def test_upstream_documented_install_one_shot_and_uninstall(kustomize_bin: Path, fresh_kube: KubeCluster) -> None:
    kube = fresh_kube
    overlay = DEPLOY_DIR / "overlays"
    # kubectl apply -k .../deployment/overlays/default; then .../topologyupdater beside it
    default = kustomize_build(kustomize_bin, overlay / "default")
    _apply_k(kube, default)
    topo = kustomize_build(kustomize_bin, overlay / "topologyupdater")
    _apply_k(kube, topo)
    # kubectl apply -k .../deployment/overlays/prometheus (beside default)
    prom = kustomize_build(kustomize_bin, overlay / "prometheus")
    assert [o["kind"] for o in prom] == ["PodMonitor"] and prom[0]["metadata"]["name"] == "nfd-metrics"
    # the one-by-one uninstall's objects exist under the names it deletes
    for kind, name, namespaced in (("DaemonSet", "nfd-worker", True), ("Deployment", "nfd-master", True),
                                   ("ServiceAccount", "nfd-master", True), ("ClusterRole", "nfd-master", False),
                                   ("ClusterRoleBinding", "nfd-master", False),
                                   ("DaemonSet", "nfd-topology-updater", True)):
        assert _exists(kube, kind, name, namespaced=namespaced), f"{kind}/{name}"

    # NUM_NODES=$(kubectl get no ... | wc -w); kubectl kustomize .../default-job | sed s"/NUM_NODES/$NUM_NODES/" | kubectl apply -f -
    for n in ("n1", "n2", "n3"):
        kube.create_node(n)
    num_nodes = len(kube.get("/api/v1/nodes")["items"])
    job_objs = kustomize_build(kustomize_bin, overlay / "default-job", num_nodes=num_nodes)
    _apply_k(kube, job_objs)
    job = kube.get(f"/apis/batch/v1/namespaces/{NS}/jobs/nfd-worker")
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == 3

    # uninstallation.md, "Removing feature labels": kubectl apply -k .../prune; wait for
    # job.batch/nfd-master to complete (no Job controller here: its command runs as its pod
    # would, under its ServiceAccount); kubectl delete -k .../prune; then kubectl delete -k .../default
    node = "n1"
    kube.request("PATCH", f"/api/v1/nodes/{node}", content_type="application/merge-patch+json", body={
        "metadata": {"labels": {"feature.node.kubernetes.io/cpu-cpuid.AVX2": "true"},
                     "annotations": {"nfd.node.kubernetes.io/feature-labels": "cpu-cpuid.AVX2"}}})
    prune = kustomize_build(kustomize_bin, overlay / "prune")
    _apply_k(kube, prune)
    pod = kube.get(f"/apis/batch/v1/namespaces/{NS}/jobs/nfd-master")["spec"]["template"]["spec"]
    c = pod["containers"][0]
    proc = kube.start_process([*c["command"], *c.get("args", [])], name="prune-job",
                              kubeconfig=kube.serviceaccount_kubeconfig(NS, pod["serviceAccountName"]),
                              env={"KUBERNETES_NAMESPACE": NS})
    assert proc.wait(timeout=120) == 0, proc.logs()[-2000:]
    meta = kube.get(f"/api/v1/nodes/{node}")["metadata"]
    assert "feature.node.kubernetes.io/cpu-cpuid.AVX2" not in meta.get("labels", {})
    assert "nfd.node.kubernetes.io/feature-labels" not in (meta.get("annotations") or {})
    builds = [prune, job_objs, topo, default]
    for objs in builds:
        _delete_k(kube, objs)
    left = []
    for objs in builds:
        for o in objs:
            if o["kind"] in ("PodMonitor", "Namespace"):
                continue
            got = kube.get_or_none(kube.object_path(o))
            if got is not None and not got["metadata"].get("deletionTimestamp"):
                left.append(f"{o['kind']}/{o['metadata']['name']}")
    assert left == []


@pytest.mark.parametrize("how", ["over-overlay", "own-composition"])
def test_masterless_flow_schema_follows_the_overlay_namespace(how: str, kustomize_bin: Path, tmp_path: Path) -> None:
    """components/masterless's FlowSchema names the worker's ServiceAccount with its namespace
    (a FlowSchema subject takes no wildcard namespace): an overlay's `namespace:` must reach it, as
    it reaches the ClusterRoleBinding, or the workers' requests would miss their priority level."""
    mine = tmp_path / "my-overlay"
    mine.mkdir()
    rel = os.path.relpath(DEPLOY_DIR, mine)
    k: dict[str, Any] = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                         "namespace": "my-nfd"}
    if how == "over-overlay":
        k["resources"] = [f"{rel}/overlays/masterless"]
    else:
        k["resources"] = [f"{rel}/base/{b}" for b in ("rbac", "master", "worker-daemonset")]
        k["components"] = [f"{rel}/components/{c}" for c in ("worker-config", "master-config", "masterless")]
    (mine / "kustomization.yaml").write_text(yaml.safe_dump(k))
    objs = kustomize_build(kustomize_bin, mine)
    (fs,) = [o for o in objs if o["kind"] == "FlowSchema"]
    (pl,) = [o for o in objs if o["kind"] == "PriorityLevelConfiguration"]
    assert fs["spec"]["rules"][0]["subjects"] == [
        {"kind": "ServiceAccount", "serviceAccount": {"name": "nfd-worker", "namespace": "my-nfd"}}]
    assert fs["spec"]["priorityLevelConfiguration"]["name"] == pl["metadata"]["name"]
    (crb,) = [o for o in objs if o["kind"] == "ClusterRoleBinding" and o["metadata"]["name"] == "nfd-worker-node-update"]
    assert crb["subjects"][0]["namespace"] == "my-nfd"
    (sa,) = [o for o in objs if o["kind"] == "ServiceAccount" and o["metadata"]["name"] == "nfd-worker"]
    assert sa["metadata"]["namespace"] == "my-nfd"
