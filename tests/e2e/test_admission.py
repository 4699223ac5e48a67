"""Workers confined to their own node: deploy/'s ValidatingAdmissionPolicy on the real apiserver.

A worker's pod-bound ServiceAccount token carries the node its pod runs on; with the policy
installed (kustomize or Helm rendering) that worker may write the NodeFeature of its node and
of no other node, and a token without the node claim may write none. Other identities are not
affected.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import HttpError, RestClient
from tests.e2e.tools import (
    DEPLOY_DIR,
    AuditedCluster,
    helm_bin,
    helm_template,
    install_kube,
    kustomize_bin,
    kustomize_build,
)

__all__ = ["helm_bin", "install_kube", "kustomize_bin"]  # fixtures

pytestmark = pytest.mark.e2e

NFD = "/apis/nfd.k8s-sigs.io/v1alpha1"
NODE_LABEL = "nfd.node.kubernetes.io/node-name"
POLICY_KINDS = {"Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding",
                "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}


@dataclass
class Install:
    kube: AuditedCluster
    namespace: str
    worker_sa: str


def _install(kube: AuditedCluster, objs: list[dict[str, Any]], namespace: str, worker_sa: str) -> Install:
    kube.create_namespace(namespace, exist_ok=True)
    kube.apply_objects([o for o in objs if o["kind"] in POLICY_KINDS])
    return Install(kube, namespace, worker_sa)


@pytest.fixture(scope="module", params=["kustomize", "helm"])
def install(request: pytest.FixtureRequest, install_kube: AuditedCluster, tmp_path_factory: pytest.TempPathFactory,
            kustomize_bin: Path, helm_bin: Path) -> Iterator[Install]:
    if request.param == "kustomize":
        objs = kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / "default")
        yield _install(install_kube, objs, "node-feature-discovery", "nfd-worker")
    else:
        # Its own worker ServiceAccount name, so the kustomize policy (which matches
        # ServiceAccounts named nfd-worker) cannot be what refuses these requests.
        objs = helm_template(helm_bin, namespace="nfd-admission-helm", release="adm",
                             values={"worker": {"serviceAccount": {"name": "worker-helm"}}},
                             tmpdir=tmp_path_factory.mktemp("helm"))
        assert any(o["kind"] == "ValidatingAdmissionPolicy" for o in objs)
        yield _install(install_kube, objs, "nfd-admission-helm", "worker-helm")


def _nodefeature(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
            "metadata": {"name": name, "labels": {NODE_LABEL: node}},
            "spec": {"features": {"flags": {}, "attributes": {}, "instances": {}},
                     "labels": {"feature.node.kubernetes.io/e2e": "true"}}}


class Worker:
    """The identity of an nfd-worker pod on `node` (token bound to the pod)."""

    def __init__(self, inst: Install, node: str, *, bound: bool = True) -> None:
        kube = inst.kube
        self.base = f"{NFD}/namespaces/{inst.namespace}/nodefeatures"
        pod = kube.unique_name("nfd-worker")
        kube.create_pod(inst.namespace, pod, node_name=node, service_account=inst.worker_sa)
        kc = kube.serviceaccount_kubeconfig(inst.namespace, inst.worker_sa,
                                            bound_pod=(inst.namespace, pod) if bound else None)
        self.client: RestClient = kube.client(kc)

    def create(self, name: str, node: str) -> Any:
        return self.client.request("POST", self.base, body=_nodefeature(name, node))

    def update(self, obj: dict[str, Any]) -> Any:
        return self.client.request("PUT", f"{self.base}/{obj['metadata']['name']}", body=obj)


def _refused(fn: Any, *args: Any) -> HttpError:
    with pytest.raises(HttpError) as ei:
        fn(*args)
    assert ei.value.status == 403, ei.value
    return ei.value


@pytest.fixture
def nodes(install: Install) -> Iterator[tuple[str, str]]:
    kube = install.kube
    a, b = kube.unique_name("node-a"), kube.unique_name("node-b")
    for n in (a, b):
        kube.create_node(n, labels={"kubernetes.io/hostname": n})
    yield a, b
    for n in (a, b):
        with contextlib.suppress(HttpError):
            kube.request("DELETE", f"{NFD}/namespaces/{install.namespace}/nodefeatures/{n}")
        kube.delete_node(n)


def _wait_enforced(inst: Install, worker: Worker, other: str) -> None:
    """The policy is loaded asynchronously after it is created: wait until it refuses."""
    def refused() -> bool:
        try:
            worker.create(other, other)
        except HttpError as e:
            return e.status == 403 and "ValidatingAdmissionPolicy" in e.message
        inst.kube.request("DELETE", f"{worker.base}/{other}")
        return False
    inst.kube.wait_until(refused, timeout=30, message="admission policy enforced")


def test_worker_writes_only_its_own_nodes_nodefeature(install: Install, nodes: tuple[str, str]) -> None:
    a, b = nodes
    worker = Worker(install, a)
    _wait_enforced(install, worker, b)

    # Its own node: create and update are allowed.
    created = worker.create(a, a)
    created["spec"]["labels"] = {"feature.node.kubernetes.io/e2e": "updated"}
    assert worker.update(created)["spec"]["labels"]["feature.node.kubernetes.io/e2e"] == "updated"

    # Another node's NodeFeature: refused, with the reason in the message.
    err = _refused(worker.create, b, b)
    assert f"nfd-worker on node {a} may only write" in err.message
    # Its own name but labelled for another node (the label is what nfd-master trusts).
    with contextlib.suppress(HttpError):
        install.kube.request("DELETE", f"{worker.base}/{a}")
    _refused(worker.create, a, b)
    # Rewriting another node's existing object (created by someone allowed to) is refused too.
    other = install.kube.request("POST", worker.base, body=_nodefeature(b, b))
    other["spec"]["labels"] = {"feature.node.kubernetes.io/e2e": "hijacked"}
    _refused(worker.update, other)
    assert install.kube.get(f"{worker.base}/{b}")["spec"]["labels"] == {"feature.node.kubernetes.io/e2e": "true"}


def test_worker_without_node_claim_is_refused(install: Install, nodes: tuple[str, str]) -> None:
    a, b = nodes
    _wait_enforced(install, Worker(install, a), b)
    unbound = Worker(install, a, bound=False)
    err = _refused(unbound.create, a, a)
    assert "pod-bound ServiceAccount token" in err.message


def test_worker_on_node_b_writes_node_b(install: Install, nodes: tuple[str, str]) -> None:
    a, b = nodes
    worker_b = Worker(install, b)
    _wait_enforced(install, worker_b, a)
    assert worker_b.create(b, b)["metadata"]["labels"][NODE_LABEL] == b
    _refused(worker_b.create, a, a)


GPU_OPERATOR_VALUES = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "gap-audit" / \
    "values-gpu-operator-nfd.yaml"


def test_shared_service_account_confines_workers_but_not_gc(install_kube: AuditedCluster, helm_bin: Path,
                                                             tmp_path: Path) -> None:
    """The GPU Operator's values give master, worker and gc one ServiceAccount: the policy then
    tells a worker by the pod its token is bound to (a pod of the <fullname>-worker DaemonSet),
    so gc can delete any node's NodeFeature and a worker still only writes its own."""
    import yaml

    if not GPU_OPERATOR_VALUES.exists():
        pytest.skip(f"{GPU_OPERATOR_VALUES} is not there (../shared is read at test time)")
    values = yaml.safe_load(GPU_OPERATOR_VALUES.read_text())
    ns, release = "nfd-gpu-operator", "gpuop"
    objs = helm_template(helm_bin, namespace=ns, release=release, values=values, tmpdir=tmp_path)
    sa = values["worker"]["serviceAccount"]["name"]
    kube = install_kube
    kube.create_namespace(ns, exist_ok=True)
    kube.apply_objects([o for o in objs if o["kind"] in POLICY_KINDS])
    if not any(o["kind"] == "ServiceAccount" and o["metadata"]["name"] == sa for o in objs):
        kube.apply_objects([{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": ns}}])
    inst = Install(kube, ns, sa)
    fullname = f"{release}-node-feature-discovery"
    a, b = kube.unique_name("node-a"), kube.unique_name("node-b")
    for n in (a, b):
        kube.create_node(n, labels={"kubernetes.io/hostname": n})
    try:
        def client_for(pod_prefix: str, node: str) -> RestClient:
            pod = f"{pod_prefix}-{kube.unique_name('x').rsplit('-', 1)[-1][:5]}"
            kube.create_pod(ns, pod, node_name=node, service_account=sa)
            return kube.client(kube.serviceaccount_kubeconfig(ns, sa, bound_pod=(ns, pod)))

        base = f"{NFD}/namespaces/{ns}/nodefeatures"
        worker = client_for(f"{fullname}-worker", a)
        gc = client_for(f"{fullname}-gc-7d9f8c6b5", a)  # a Deployment's pod on node a

        def worker_refused() -> bool:
            try:
                worker.request("POST", base, body=_nodefeature(b, b))
            except HttpError as e:
                return e.status == 403 and "ValidatingAdmissionPolicy" in e.message
            kube.request("DELETE", f"{base}/{b}")
            return False

        kube.wait_until(worker_refused, timeout=30, message="admission policy enforced for the worker pod")
        assert worker.request("POST", base, body=_nodefeature(a, a))["metadata"]["name"] == a
        # another node's NodeFeature (nfd-gc's job when that node is gone): gc may delete it
        kube.request("POST", base, body=_nodefeature(b, b))
        with pytest.raises(HttpError) as ei:
            worker.request("DELETE", f"{base}/{b}")
        assert ei.value.status == 403
        gc.request("DELETE", f"{base}/{b}")
        assert kube.get_or_none(f"{base}/{b}") is None
        gc.request("DELETE", f"{base}/{a}")
    finally:
        for n in (a, b):
            with contextlib.suppress(HttpError):
                kube.request("DELETE", f"{NFD}/namespaces/{inst.namespace}/nodefeatures/{n}")
            kube.delete_node(n)
