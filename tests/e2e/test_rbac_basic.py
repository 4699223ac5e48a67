"""deploy/ RBAC, exercised with real ServiceAccount tokens against the real apiserver.

Each identity gets a TokenRequest token (the worker's bound to a Pod scheduled on its
node) and makes the requests its process makes; what it must not do is refused with 403.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.harness import (
    REPO_ROOT,
    HttpError,
    KubeCluster,
    RestClient,
    _set_namespace,
    load_manifest_objects,
)

pytestmark = pytest.mark.e2e

NS = "node-feature-discovery"
NFD = "/apis/nfd.k8s-sigs.io/v1alpha1"
# As upstream's bases: master and worker in base/rbac, the topology updater's in
# base/rbac-topologyupdater, gc's beside its Deployment in base/gc.
BASE = REPO_ROOT / "deploy" / "base"


@pytest.fixture(scope="module")
def rbac(kube: KubeCluster) -> Iterator[KubeCluster]:
    kube.apply_manifest_dir(BASE / "rbac")
    kube.apply_manifest_dir(BASE / "rbac-topologyupdater")
    kube.create_namespace(NS, exist_ok=True)
    gc = load_manifest_objects([BASE / "gc" / "gc-rbac.yaml"])
    for obj in gc:
        _set_namespace(obj, NS)
    kube.apply_objects(gc)
    yield kube


@pytest.fixture
def node(kube: KubeCluster) -> Iterator[str]:
    name = kube.unique_name("node")
    kube.create_node(name, labels={"kubernetes.io/hostname": name})
    yield name
    kube.delete_node(name)


def _client(kube: KubeCluster, sa: str, **kw: Any) -> RestClient:
    return kube.client(kube.serviceaccount_kubeconfig(NS, sa, **kw))


def _forbidden(fn: Any, *args: Any, **kw: Any) -> HttpError:
    with pytest.raises(HttpError) as ei:
        fn(*args, **kw)
    assert ei.value.status == 403, ei.value
    return ei.value


def _nodefeature(node: str) -> dict[str, Any]:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
            "metadata": {"name": node, "labels": {"nfd.node.kubernetes.io/node-name": node}},
            "spec": {"features": {"flags": {}, "attributes": {"kernel.version": {"elements": {"major": "6"}}},
                                  "instances": {}},
                     "labels": {}}}


def _label_patch(key: str, value: str) -> dict[str, Any]:
    return {"metadata": {"labels": {key: value}}}


def test_rbac_objects_applied_with_kustomize_namespace(rbac: KubeCluster) -> None:
    for sa in ("nfd-master", "nfd-worker", "nfd-topology-updater", "nfd-gc"):
        assert rbac.get(f"/api/v1/namespaces/{NS}/serviceaccounts/{sa}")["metadata"]["name"] == sa
    crb = rbac.get("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/nfd-master")
    assert crb["subjects"] == [{"kind": "ServiceAccount", "name": "nfd-master", "namespace": NS}]
    rb = rbac.get(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings/nfd-worker")
    assert rb["subjects"][0]["namespace"] == NS


def test_worker_manages_its_nodefeature_but_not_nodes(rbac: KubeCluster, node: str) -> None:
    pod = rbac.unique_name("nfd-worker")
    rbac.create_pod(NS, pod, node_name=node, service_account="nfd-worker")
    kc = rbac.serviceaccount_kubeconfig(NS, "nfd-worker", bound_pod=(NS, pod))
    assert rbac.whoami(kc)["extra"]["authentication.kubernetes.io/node-name"] == [node]
    worker = rbac.client(kc)
    base = f"{NFD}/namespaces/{NS}/nodefeatures"

    created = worker.request("POST", base, body=_nodefeature(node))
    created["spec"]["labels"] = {"example.com/x": "y"}
    updated = worker.request("PUT", f"{base}/{node}", body=created)
    assert updated["spec"]["labels"] == {"example.com/x": "y"}
    assert worker.get(f"{base}/{node}")["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]
    # It reads its own pod (owner references) ...
    assert worker.get(f"/api/v1/namespaces/{NS}/pods/{pod}")["spec"]["nodeName"] == node

    # ... and lists (watches) its own NodeFeature by name in its namespace (what get already
    # allows: a deleted or overwritten object is seen at once) ...
    mine = worker.get(base, fieldSelector=f"metadata.name={node}")["items"]
    assert [o["metadata"]["name"] for o in mine] == [node]
    # ... but cannot touch Nodes, list NodeFeatures elsewhere, or write outside its namespace.
    _forbidden(worker.request, "PATCH", f"/api/v1/nodes/{node}", body=_label_patch("a", "b"),
               content_type="application/merge-patch+json")
    _forbidden(worker.get, f"/api/v1/nodes/{node}")
    _forbidden(worker.get, f"{NFD}/namespaces/default/nodefeatures")
    _forbidden(worker.get, f"{NFD}/nodefeatures")
    _forbidden(worker.request, "POST", f"{NFD}/namespaces/default/nodefeatures", body=_nodefeature(node))
    _forbidden(worker.request, "PATCH", f"{base}/{node}", body={"spec": {"labels": {}}},
               content_type="application/merge-patch+json")

    # It never deletes its NodeFeature (nfd-gc does), so it may not.
    _forbidden(worker.request, "DELETE", f"{base}/{node}")
    rbac.request("DELETE", f"{base}/{node}")
    rbac.request("DELETE", f"/api/v1/namespaces/{NS}/pods/{pod}", params={"gracePeriodSeconds": "0"})


def test_admin_can_patch_nodes(kube: KubeCluster, node: str) -> None:
    out = kube.request("PATCH", f"/api/v1/nodes/{node}", body=_label_patch("feature.node.kubernetes.io/x", "1"),
                       content_type="application/merge-patch+json")
    assert out["metadata"]["labels"]["feature.node.kubernetes.io/x"] == "1"


def test_master_labels_nodes_and_reads_features(rbac: KubeCluster, node: str) -> None:
    master = _client(rbac, "nfd-master")
    patched = master.request("PATCH", f"/api/v1/nodes/{node}",
                             body=[{"op": "add", "path": "/metadata/labels/feature.node.kubernetes.io~1y",
                                    "value": "true"}],
                             content_type="application/json-patch+json")
    assert patched["metadata"]["labels"]["feature.node.kubernetes.io/y"] == "true"
    status = master.request("PATCH", f"/api/v1/nodes/{node}/status",
                            body={"status": {"capacity": {"example.com/widget": "2"}}},
                            content_type="application/merge-patch+json")
    assert status["status"]["capacity"]["example.com/widget"] == "2"
    assert isinstance(master.get(f"{NFD}/nodefeatures")["items"], list)
    assert isinstance(master.get(f"{NFD}/nodefeaturerules")["items"], list)
    master.get("/api/v1/namespaces")
    _forbidden(master.request, "POST", f"{NFD}/namespaces/{NS}/nodefeatures", body=_nodefeature(node))
    _forbidden(master.request, "DELETE", f"/api/v1/nodes/{node}")


def test_master_reads_and_watches_the_rule_crds_only(rbac: KubeCluster) -> None:
    """nfd-master reads the NodeFeatureRule and NodeFeatureGroup CRDs at start and watches them
    (field-selected by name, which RBAC's resourceNames authorizes for list and watch too)."""
    master = _client(rbac, "nfd-master")
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for name in ("nodefeaturerules.nfd.k8s-sigs.io", "nodefeaturegroups.nfd.k8s-sigs.io"):
        assert master.get(f"{crds}/{name}")["metadata"]["name"] == name
        listed = master.get(crds, fieldSelector=f"metadata.name={name}")
        assert [o["metadata"]["name"] for o in listed["items"]] == [name]
        watched = master.get(crds, fieldSelector=f"metadata.name={name}", watch="true", timeoutSeconds="1")
        assert watched is not None
    _forbidden(master.get, crds)
    _forbidden(master.get, f"{crds}/nodefeatures.nfd.k8s-sigs.io")


def test_master_lease_only_its_own_name(rbac: KubeCluster, namespace: str) -> None:
    # The ClusterRole grants the Lease in any namespace; a fresh one keeps this test away
    # from the Lease of any nfd-master the session runs.
    master = _client(rbac, "nfd-master")
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "nfd-master.nfd.kubernetes.io"},
             "spec": {"holderIdentity": "e2e", "leaseDurationSeconds": 15}}
    own = f"{leases}/nfd-master.nfd.kubernetes.io"
    master.request("POST", leases, body=lease)
    got = master.get(own)
    got["spec"]["holderIdentity"] = "e2e-2"
    assert master.request("PUT", own, body=got)["spec"]["holderIdentity"] == "e2e-2"
    rbac.request("POST", leases, body={**lease, "metadata": {"name": "someone-else"}})
    _forbidden(master.get, f"{leases}/someone-else")
    _forbidden(master.get, leases)
    _forbidden(master.request, "DELETE", own)


def test_gc_deletes_nodefeatures_and_cannot_modify_nodes(rbac: KubeCluster, node: str) -> None:
    rbac.request("POST", f"{NFD}/namespaces/{NS}/nodefeatures", body=_nodefeature(node))
    gc = _client(rbac, "nfd-gc")
    names = [o["metadata"]["name"] for o in gc.get(f"{NFD}/nodefeatures")["items"]]
    assert node in names
    gc.request("DELETE", f"{NFD}/namespaces/{NS}/nodefeatures/{node}")
    assert node in [o["metadata"]["name"] for o in gc.get("/api/v1/nodes")["items"]]
    _forbidden(gc.request, "PATCH", f"/api/v1/nodes/{node}", body=_label_patch("a", "b"),
               content_type="application/merge-patch+json")
    _forbidden(gc.get, f"/api/v1/nodes/{node}")


def test_topology_updater_applies_nrt_only(rbac: KubeCluster, node: str) -> None:
    tu = _client(rbac, "nfd-topology-updater")
    nrt = {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
           "metadata": {"name": node}, "zones": [{"name": "node-0", "type": "Node"}]}
    path = f"/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/{node}"
    try:
        out = tu.request("PATCH", path, body=nrt, params={"fieldManager": "node-feature-discovery",
                                                          "force": "true"},
                         content_type="application/apply-patch+yaml")
        assert out["zones"] == nrt["zones"]
        _forbidden(tu.get, f"/api/v1/nodes/{node}")  # it never reads Node objects
        _forbidden(tu.request, "DELETE", path)
        _forbidden(tu.request, "PATCH", f"/api/v1/nodes/{node}", body=_label_patch("a", "b"),
                   content_type="application/merge-patch+json")
    finally:
        with contextlib.suppress(HttpError):
            rbac.request("DELETE", path)
