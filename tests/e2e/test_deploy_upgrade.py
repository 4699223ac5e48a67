"""`helm upgrade` of an upstream release to this chart, with the same values, keeps every label.

On a control plane of its own (the upgrade installs cluster-wide RBAC and an admission
policy): the state an upstream release leaves is reproduced — its Helm release (a stand-in
chart, `upstream_chart/release`, with the objects, names, selectors and ServiceAccount wiring
upstream's chart renders for these values; upstream's chart cannot be pulled here), node labels
and upstream's bookkeeping annotations (`feature-labels`, `extended-resources`, `taints`, in
upstream's format), extended resources, taints, NodeFeatures as upstream's worker writes them
and a NodeFeatureRule. Then, as docs/install.md says: our CRDs applied, `helm upgrade` of the
same release to deploy/helm with the same values, and our nfd-master run as the upgraded
Deployment runs it (its args, its ConfigMap, its ServiceAccount). Nothing on the nodes may
change, and the release's objects are exactly our chart's: none left over, none twice.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.build import BuildError, ensure_built, find_go
from tests.e2e.harness import KubeCluster, free_port
from tests.e2e.tools import CHART_DIR, REPO_ROOT, _docs, helm_bin

__all__ = ["helm_bin"]  # fixture

pytestmark = pytest.mark.e2e

NS = "node-feature-discovery"
RELEASE = "nfd"
STANDIN = Path(__file__).parent / "upstream_chart" / "release"
NFD_API = "/apis/nfd.k8s-sigs.io/v1alpha1"
GPU_NODE, CPU_NODE = "gpu-node-1", "cpu-node-1"

# The GPU Operator's subchart values (one ServiceAccount for master, worker and gc), and a
# user's: separate accounts, taints, the topology updater with its templated CRD.
VALUES: dict[str, dict[str, Any]] = {
    "gpu-operator": {
        "priorityClassName": "system-node-critical",
        "master": {"serviceAccount": {"create": True, "name": "node-feature-discovery"},
                   "config": {"extraLabelNs": ["nvidia.com"]}},
        "worker": {"serviceAccount": {"create": False, "name": "node-feature-discovery"},
                   "config": {"sources": {"pci": {"deviceClassWhitelist": ["02", "0200", "0207", "0300", "0302"],
                                                  "deviceLabelFields": ["vendor"]}}},
                   "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
        "gc": {"enable": True, "replicaCount": 1,
               "serviceAccount": {"create": False, "name": "node-feature-discovery"}},
    },
    "separate-accounts": {
        "master": {"enableTaints": True, "extraLabelNs": ["nvidia.com"], "config": {"resyncPeriod": "1h"}},
        "worker": {"config": {"core": {"sleepInterval": "30s"}}},
        "topologyUpdater": {"enable": True, "createCRDs": True},
    },
}

GPU_RULE: dict[str, Any] = {
    "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "nvidia-gpu"},
    "spec": {"rules": [{
        "name": "nvidia gpu",
        "labels": {"nvidia.com/gpu.present": "true"},
        "extendedResources": {"nvidia.com/gpu-slots": "8"},
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        "matchFeatures": [{"feature": "pci.device", "matchExpressions": {"vendor": {"op": "In", "value": ["10de"]}}}],
    }]},
}


def _worker_nodefeature(node: str, *, gpu: bool) -> dict[str, Any]:
    """A NodeFeature as upstream's v0.18 worker writes it (labels from its label sources)."""
    labels = {"feature.node.kubernetes.io/cpu-cpuid.AVX2": "true",
              "feature.node.kubernetes.io/kernel-version.major": "6"}
    devices = [{"attributes": {"vendor": "8086", "class": "0200"}}]
    if gpu:
        labels["feature.node.kubernetes.io/pci-10de.present"] = "true"
        devices.append({"attributes": {"vendor": "10de", "class": "0302"}})
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
        "metadata": {"name": node, "namespace": NS, "labels": {"nfd.node.kubernetes.io/node-name": node},
                     "annotations": {"nfd.node.kubernetes.io/worker.version": "v0.18.3"}},
        "spec": {"features": {"flags": {"cpu.cpuid": {"elements": {"AVX2": {}}}},
                              "attributes": {"kernel.version": {"elements": {"major": "6"}}},
                              "instances": {"pci.device": {"elements": devices}}},
                 "labels": labels},
    }


def _upstream_node_state(kube: KubeCluster, node: str, *, gpu: bool, taints: bool) -> None:
    """What upstream's master left on the node: labels, its bookkeeping annotations (names
    sorted, the default feature.node.kubernetes.io/ prefix dropped, taints as key=value:effect),
    the extended resource in capacity/allocatable and the taint."""
    nf = _worker_nodefeature(node, gpu=gpu)
    labels = dict(nf["spec"]["labels"])
    annotations: dict[str, str] = {}
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    if gpu:
        labels["nvidia.com/gpu.present"] = "true"
        annotations["nfd.node.kubernetes.io/extended-resources"] = "nvidia.com/gpu-slots"
        capacity["nvidia.com/gpu-slots"] = "8"
        if taints:
            annotations["nfd.node.kubernetes.io/taints"] = "nvidia.com/gpu=present:NoSchedule"
    annotations["nfd.node.kubernetes.io/feature-labels"] = ",".join(
        sorted(k.removeprefix("feature.node.kubernetes.io/") for k in labels))
    kube.create_node(node, labels={"kubernetes.io/hostname": node, **labels}, capacity=capacity,
                     annotations=annotations)
    if gpu and taints:
        current = kube.get(f"/api/v1/nodes/{node}")["spec"].get("taints") or []
        kube.request("PATCH", f"/api/v1/nodes/{node}", content_type="application/merge-patch+json",
                     body={"spec": {"taints": [*current, {"key": "nvidia.com/gpu", "value": "present",
                                                          "effect": "NoSchedule"}]}})
    kube.request("POST", f"{NFD_API}/namespaces/{NS}/nodefeatures", body=nf)


def _node_state(kube: KubeCluster, node: str) -> dict[str, Any]:
    obj = kube.get(f"/api/v1/nodes/{node}")
    return {
        "labels": obj["metadata"].get("labels") or {},
        "annotations": {k: v for k, v in (obj["metadata"].get("annotations") or {}).items()
                        if k.startswith("nfd.node.kubernetes.io/")},
        "capacity": obj["status"].get("capacity") or {},
        "allocatable": obj["status"].get("allocatable") or {},
        "taints": sorted((t["key"], t.get("value", ""), t["effect"]) for t in obj["spec"].get("taints") or []),
    }


def _helm(helm: Path, kube: KubeCluster, *args: str) -> str:
    env = {**os.environ, "KUBECONFIG": kube.kubeconfig, "HELM_CACHE_HOME": str(Path(kube.tmpdir) / "helm-cache"),
           "HELM_CONFIG_HOME": str(Path(kube.tmpdir) / "helm-config"),
           "HELM_DATA_HOME": str(Path(kube.tmpdir) / "helm-data")}
    proc = subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=300, check=False, env=env)
    assert proc.returncode == 0, f"helm {' '.join(args)}: {proc.stdout}\n{proc.stderr}"
    return proc.stdout


# kinds a release of either chart owns, and where to list them
LISTED = {
    "ServiceAccount": f"/api/v1/namespaces/{NS}/serviceaccounts",
    "ConfigMap": f"/api/v1/namespaces/{NS}/configmaps",
    "Role": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles",
    "RoleBinding": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "Deployment": f"/apis/apps/v1/namespaces/{NS}/deployments",
    "DaemonSet": f"/apis/apps/v1/namespaces/{NS}/daemonsets",
    "ValidatingAdmissionPolicy": "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
    "ValidatingAdmissionPolicyBinding": "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
    "CustomResourceDefinition": "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
}


def _release_objects(kube: KubeCluster) -> set[tuple[str, str]]:
    """(kind, name) of every object Helm marks as the release's (meta.helm.sh/release-name),
    and of every ServiceAccount in the namespace but `default`."""
    out = set()
    for kind, path in LISTED.items():
        for o in kube.get(path)["items"]:
            meta = o["metadata"]
            ours = (meta.get("annotations") or {}).get("meta.helm.sh/release-name") == RELEASE
            if ours or (kind == "ServiceAccount" and meta["name"] != "default"):
                out.add((kind, meta["name"]))
    return out


def _master_argv(deployment: dict[str, Any], conf: Path, port: int) -> list[str]:
    """The master container's command line, as its pod runs it, with a local config path and port."""
    c = deployment["spec"]["template"]["spec"]["containers"][0]
    argv = [*c["command"], *c.get("args", [])]
    argv = [a for a in argv if not a.startswith(("-config=", "-port="))]
    return [*argv, f"-config={conf}", f"-port={port}"]


def _metric(port: int, name: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    m = re.search(rf"^{re.escape(name)}(?:{{[^}}]*}})? ([0-9.e+]+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


@pytest.fixture
def fresh_kube(tmp_path: Path) -> Iterator[KubeCluster]:
    if find_go() is None or os.environ.get("NFD_E2E", "1") == "0":
        pytest.skip("Go is not installed (or NFD_E2E=0): no control plane")
    try:
        cluster = KubeCluster.start(binary=ensure_built(), crds_dir=None)
    except BuildError as e:
        pytest.fail(f"cannot build the test kube-apiserver: {e}", pytrace=False)
    try:
        yield cluster
    finally:
        for p in cluster.processes:
            p.stop()
        cluster.close()


def _crds(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((REPO_ROOT / "crds" / name).read_text())
            if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]


@pytest.mark.parametrize("case", sorted(VALUES))
def test_helm_upgrade_from_upstream_release_keeps_every_label(case: str, helm_bin: Path, fresh_kube: KubeCluster,
                                                             tmp_path: Path) -> None:
    kube, values = fresh_kube, VALUES[case]
    taints = bool(values["master"].get("enableTaints"))
    templated_nrt = bool(values.get("topologyUpdater", {}).get("createCRDs"))
    vf = tmp_path / "values.yaml"
    vf.write_text(yaml.safe_dump(values))

    # --- the upstream release and the state its components left
    kube.create_namespace(NS)
    kube.apply_objects(_crds("nfd-api-crds.yaml"))  # upstream's chart crds/ (same CRDs)
    standin = tmp_path / "upstream-chart"
    shutil.copytree(STANDIN, standin)
    if templated_nrt:  # upstream templates the NodeResourceTopology CRD behind createCRDs
        shutil.copy(CHART_DIR / "templates" / "topologyupdater-crds.yaml", standin / "templates")
    else:
        kube.apply_objects(_crds("noderesourcetopologies.yaml"))
    _helm(helm_bin, kube, "install", RELEASE, str(standin), "-n", NS, "-f", str(vf))
    kube.wait_crd_established("noderesourcetopologies.topology.node.k8s.io")
    before_objects = _release_objects(kube)
    kube.request("POST", f"{NFD_API}/nodefeaturerules", body=GPU_RULE)
    _upstream_node_state(kube, GPU_NODE, gpu=True, taints=taints)
    _upstream_node_state(kube, CPU_NODE, gpu=False, taints=taints)
    nrt = {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
           "metadata": {"name": GPU_NODE}, "zones": [], "topologyPolicies": ["None"]}
    kube.request("POST", "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies", body=nrt)
    before = {n: _node_state(kube, n) for n in (GPU_NODE, CPU_NODE)}

    # --- the upgrade, as docs/install.md says: our CRDs, then helm upgrade with the same values
    kube.apply_objects(_crds("nfd-api-crds.yaml"))
    _helm(helm_bin, kube, "upgrade", RELEASE, str(CHART_DIR), "-n", NS, "-f", str(vf))

    manifest = [o for o in _docs(_helm(helm_bin, kube, "get", "manifest", RELEASE, "-n", NS))]
    expected = {(o["kind"], o["metadata"]["name"]) for o in manifest}
    after_objects = _release_objects(kube)
    assert after_objects == expected, (f"left over: {sorted(after_objects - expected)}; "
                                       f"missing: {sorted(expected - after_objects)}")
    # one ServiceAccount per identity the values name, none left from the old release
    sas = {n for k, n in after_objects if k == "ServiceAccount"}
    workloads = [o for o in manifest if o["kind"] in ("Deployment", "DaemonSet")]
    assert {o["spec"]["template"]["spec"]["serviceAccountName"] for o in workloads} == sas
    renamed = {k for k in before_objects - after_objects}
    assert not {k for k in renamed if k[0] in ("ServiceAccount", "Deployment", "DaemonSet", "ConfigMap")}, renamed
    # the templated CRD stayed (Helm deletes a templated object the new chart lacks), its objects too
    crd = kube.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/noderesourcetopologies.topology.node.k8s.io")
    assert "deletionTimestamp" not in crd["metadata"]
    assert kube.get(f"/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/{GPU_NODE}")

    # --- our master, as the upgraded Deployment runs it
    dep = kube.get(f"/apis/apps/v1/namespaces/{NS}/deployments/{RELEASE}-node-feature-discovery-master")
    cm = kube.get(f"/api/v1/namespaces/{NS}/configmaps/{RELEASE}-node-feature-discovery-master-conf")
    conf = tmp_path / "nfd-master.conf"
    conf.write_text(cm["data"]["nfd-master.conf"])
    port = free_port()
    sa = dep["spec"]["template"]["spec"]["serviceAccountName"]
    master = kube.start_process(_master_argv(dep, conf, port), kubeconfig=kube.serviceaccount_kubeconfig(NS, sa),
                                env={"KUBERNETES_NAMESPACE": NS, "NODE_NAME": ""}, name=f"master-{case}")
    requests = "nfd_master_node_update_requests_total"
    kube.wait_until(lambda: _metric(port, requests) >= 2, timeout=60, message="master evaluated both nodes")
    # a second full pass, with every cache surely synced (the first pass may hold back removals)
    first = _metric(port, requests)
    noop: dict[str, Any] = copy.deepcopy(GPU_RULE)
    noop["metadata"]["name"] = "matches-nothing"
    noop["spec"]["rules"][0]["matchFeatures"][0]["matchExpressions"] = {"vendor": {"op": "In", "value": ["ffff"]}}
    kube.request("POST", f"{NFD_API}/nodefeaturerules", body=noop)
    master.wait_log("\"NodeFeatureRule added\" nodefeaturerule=\"matches-nothing\"", timeout=30)
    kube.wait_until(lambda: _metric(port, requests) >= first + 2, timeout=60, message="second pass")

    after = {n: _node_state(kube, n) for n in (GPU_NODE, CPU_NODE)}
    assert after == before, f"{master.logs()[-3000:]}"
    assert _metric(port, "nfd_master_node_updates_total") == 0, master.logs()[-3000:]
    assert master.running
