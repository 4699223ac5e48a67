"""The e2e harness itself: restarts, identities in child processes, manifest rendering."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import HttpError, KubeCluster, render_manifest_dir

pytestmark = pytest.mark.e2e


def test_admin_kubeconfig_and_version(kube: KubeCluster) -> None:
    assert kube.server.startswith("https://127.0.0.1:")
    assert kube.get("/version")["gitVersion"].startswith("v1.")
    who = kube.whoami()
    assert "system:masters" in who["groups"]
    assert Path(kube.kubeconfig).is_file() and Path(kube.ca_file).is_file()


def test_apiserver_restart_keeps_data(kube: KubeCluster, namespace: str) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep", "namespace": namespace},
          "data": {"k": "v"}}
    kube.apply_objects([cm])
    kube.stop_apiserver()
    assert not kube.apiserver_running
    with pytest.raises(OSError):
        kube.get(f"/api/v1/namespaces/{namespace}/configmaps/keep")
    kube.start_apiserver()
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/keep")["data"] == {"k": "v"}
    # CRD-backed resources and ServiceAccount tokens issued before the restart still work.
    assert kube.get("/apis/nfd.k8s-sigs.io/v1alpha1/nodefeaturerules")["kind"] == "NodeFeatureRuleList"


def test_serviceaccount_identity_in_child_process(kube: KubeCluster, namespace: str) -> None:
    kube.create_serviceaccount(namespace, "reader")
    kube.apply_objects([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "cm-reader", "namespace": namespace},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "cm-reader", "namespace": namespace},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
         "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}]},
    ])
    kc = kube.serviceaccount_kubeconfig(namespace, "reader")
    # nfd's client, in a separate process, loads the kubeconfig from $KUBECONFIG and is allowed
    # exactly what the Role grants.
    script = textwrap.dedent(f"""
        import asyncio, os
        from nfd.k8s.client import ApiClient
        from nfd.k8s.errors import ApiError
        from nfd.k8s.fetching import list_objects
        from nfd.k8s.resources import CONFIGMAPS, NODES

        async def main():
            api = await ApiClient.from_kubeconfig(os.environ["KUBECONFIG"])
            try:
                items, _ = await list_objects(api, CONFIGMAPS, namespace={namespace!r})
                print("listed", len(items), flush=True)
                try:
                    await list_objects(api, NODES)
                except ApiError as e:
                    print("nodes", e.status, flush=True)
            finally:
                await api.close()

        asyncio.run(main())
    """)
    proc = kube.start_process([sys.executable, "-c", script], kubeconfig=kc, name="sa-reader")
    assert proc.wait(timeout=60) == 0, proc.logs()
    assert "listed " in proc.logs()
    assert "nodes 403" in proc.logs()


def test_managed_process_stop_and_wait_log(kube: KubeCluster) -> None:
    script = "import signal,sys,time; print('up', flush=True); time.sleep(600)"
    proc = kube.start_process([sys.executable, "-c", script], kubeconfig=kube.kubeconfig, name="sleeper")
    proc.wait_log("up", timeout=30)
    assert proc.running
    assert proc.stop(timeout=10) is not None
    assert not proc.running
    with pytest.raises(RuntimeError):
        proc.wait_log("never printed", timeout=5)


def test_create_node_with_capacity(kube: KubeCluster) -> None:
    name = kube.unique_name("cap")
    node = kube.create_node(name, labels={"a": "b"}, capacity={"cpu": "8", "memory": "16Gi"})
    assert node["metadata"]["labels"] == {"a": "b"}
    assert node["status"]["allocatable"] == {"cpu": "8", "memory": "16Gi"}
    assert kube.delete_node(name) is True
    assert kube.delete_node(name) is False


def test_namespace_teardown_deletes_contents(kube: KubeCluster) -> None:
    ns = kube.unique_name("tmp")
    kube.create_namespace(ns)
    kube.create_pod(ns, "p", node_name="nowhere")
    kube.delete_namespace(ns)
    with pytest.raises(HttpError) as ei:
        kube.get(f"/api/v1/namespaces/{ns}/pods/p")
    assert ei.value.status == 404


def test_render_kustomization_subset(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "kustomization.yaml").write_text("resources: [sa.yaml]\n")
    (tmp_path / "sub" / "sa.yaml").write_text("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a}\n")
    (tmp_path / "crb.yaml").write_text(textwrap.dedent("""
        apiVersion: rbac.authorization.k8s.io/v1
        kind: ClusterRoleBinding
        metadata: {name: b}
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: b}
        subjects:
        - {kind: ServiceAccount, name: a, namespace: default}
        - {kind: ServiceAccount, name: c, namespace: other}
        - {kind: User, name: u}
    """))
    (tmp_path / "kustomization.yaml").write_text("namespace: ns1\nresources: [sub, crb.yaml]\n")
    objs = render_manifest_dir(tmp_path)
    assert objs[0]["metadata"] == {"name": "a", "namespace": "ns1"}
    assert "namespace" not in objs[1]["metadata"]
    assert [s.get("namespace") for s in objs[1]["subjects"]] == ["ns1", "other", None]
    (tmp_path / "kustomization.yaml").write_text("resources: [sub]\npatches: []\n")
    with pytest.raises(ValueError, match="patches"):
        render_manifest_dir(tmp_path)


def test_validating_admission_policy_sees_node_claim(kube: KubeCluster, namespace: str,
                                                     make_node: Any) -> None:
    """ValidatingAdmissionPolicy is on, and CEL sees the node claim of a pod-bound token."""
    node_a, node_b = make_node()["metadata"]["name"], make_node()["metadata"]["name"]
    label = "nfd.node.kubernetes.io/node-name"
    policy = kube.unique_name("own-node-only")
    kube.apply_objects([
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": policy},
         "spec": {"failurePolicy": "Fail",
                  "matchConstraints": {"resourceRules": [{
                      "apiGroups": ["nfd.k8s-sigs.io"], "apiVersions": ["*"], "resources": ["nodefeatures"],
                      "operations": ["CREATE", "UPDATE"]}]},
                  "validations": [{
                      "expression": f"!('authentication.kubernetes.io/node-name' in request.userInfo.extra) || "
                                    f"object.metadata.labels['{label}'] == "
                                    f"request.userInfo.extra['authentication.kubernetes.io/node-name'][0]",
                      "message": "may only publish its own node"}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": policy},
         "spec": {"policyName": policy, "validationActions": ["Deny"],
                  "matchResources": {"namespaceSelector": {"matchLabels": {
                      "kubernetes.io/metadata.name": namespace}}}}},
    ])
    try:
        kube.create_serviceaccount(namespace, "w")
        kube.apply_objects([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": "nf", "namespace": namespace},
             "rules": [{"apiGroups": ["nfd.k8s-sigs.io"], "resources": ["nodefeatures"], "verbs": ["create"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": "nf", "namespace": namespace},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "nf"},
             "subjects": [{"kind": "ServiceAccount", "name": "w", "namespace": namespace}]},
        ])
        kube.create_pod(namespace, "w-a", node_name=node_a, service_account="w")
        worker = kube.client(kube.serviceaccount_kubeconfig(namespace, "w", bound_pod=(namespace, "w-a")))
        path = f"/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/{namespace}/nodefeatures"

        def nf(node: str, name: str) -> dict[str, Any]:
            return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
                    "metadata": {"name": name, "labels": {label: node}}, "spec": {}}

        def denied() -> HttpError | None:
            try:
                worker.request("POST", path, body=nf(node_b, "other"), params={"dryRun": "All"})
            except HttpError as e:
                return e
            return None

        # The policy takes effect once the apiserver's policy informer has seen it.
        err = kube.wait_until(denied, timeout=30, message="policy enforced")
        assert err.status == 422 and "may only publish its own node" in err.message
        assert worker.request("POST", path, body=nf(node_a, node_a))["metadata"]["name"] == node_a
    finally:
        kube.request("DELETE", f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/{policy}")
        kube.request("DELETE", f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{policy}")
