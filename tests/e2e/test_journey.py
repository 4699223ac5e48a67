"""The whole journey, once: install deploy/ as a user does, let nfd label two nodes, and let a
real kube-scheduler place pods by what nfd found.

On the real apiserver: `kustomize build deploy/overlays/default` applied; two Nodes made
schedulable as a kubelet would (Ready condition, capacity and allocatable through the status
subresource); an nfd-worker per node (each reading a different host, under the deploy/
ServiceAccount with a token bound to its pod on that node); nfd-master with the rendered
config; a NodeFeatureRule written by the user as YAML. Three pods are created first and stay
pending; the scheduler (built from the same k8s.io/kubernetes as the apiserver, running under
the system:kube-scheduler role) then binds each to the one node nfd made eligible:
- nodeSelector on a label the worker published (cpu vendor),
- nodeSelector on a label the user's rule derived (an NVIDIA PCI device),
- a request for an extended resource the user's rule advertised.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.harness import KubeCluster, ManagedProcess
from tests.e2e.tools import (
    DEPLOY_DIR,
    NFD_API,
    AuditedCluster,
    Installed,
    install_kube,
    kube_scheduler_bin,
    kustomize_bin,
    kustomize_build,
)

__all__ = ["install_kube", "kube_scheduler_bin", "kustomize_bin"]  # fixtures

pytestmark = pytest.mark.e2e

USER_RULE = """
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: journey-accelerators
spec:
  rules:
    - name: "nvidia gpu present"
      labels:
        "example.com/gpu": "nvidia"
      matchFeatures:
        - feature: pci.device
          matchExpressions:
            vendor: {op: In, value: ["10de"]}
    - name: "vm slots on virtual machines"
      extendedResources:
        "example.com/vm-slots": "3"
      matchFeatures:
        - feature: cpu.cpuid
          matchExpressions:
            HYPERVISOR: {op: Exists}
"""


def start_scheduler(kube: KubeCluster, binary: Path) -> ManagedProcess:
    """kube-scheduler under a ServiceAccount bound to the bootstrap scheduler roles."""
    kube.create_serviceaccount("kube-system", "e2e-kube-scheduler", exist_ok=True)
    for role in ("system:kube-scheduler", "system:volume-scheduler"):
        kube.apply_objects([{
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": f"e2e-{role.replace(':', '-')}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": "e2e-kube-scheduler", "namespace": "kube-system"}]}])
    kc = kube.serviceaccount_kubeconfig("kube-system", "e2e-kube-scheduler")
    return kube.start_process([str(binary), f"--kubeconfig={kc}", "--leader-elect=false", "--secure-port=0",
                               "--v=2"], kubeconfig=kc, name="kube-scheduler")


def pod(name: str, *, node_selector: dict[str, str] | None = None,
        resources: dict[str, str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
    if resources:
        container["resources"]["requests"].update(resources)
        container["resources"]["limits"] = dict(resources)
    spec: dict[str, Any] = {"containers": [container]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def installed(install_kube: AuditedCluster, kustomize_bin: Path, tmp_path: Path) -> Iterator[Installed]:
    objs = kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / "default")
    inst = Installed(install_kube, objs, namespace="node-feature-discovery", tmp=tmp_path)
    yield inst
    inst.close()


def test_install_label_and_schedule(installed: Installed, kube_scheduler_bin: Path) -> None:
    kube = installed.kube
    began = time.monotonic()
    gpu_node = installed.make_node("gpu-server")
    vm_node = installed.make_node("kvm-guest")

    # Workloads first: nothing nfd provides exists yet, so they cannot be placed.
    apps = kube.unique_name("apps")
    kube.create_namespace(apps)
    pods = {
        "amd": pod("on-amd-cpu", node_selector={"feature.node.kubernetes.io/cpu-model.vendor_id": "AMD"}),
        "gpu": pod("needs-gpu", node_selector={"example.com/gpu": "nvidia"}),
        "slots": pod("needs-vm-slots", resources={"example.com/vm-slots": "2"}),
    }
    for p in pods.values():
        kube.request("POST", f"/api/v1/namespaces/{apps}/pods", body=p)
    scheduler = start_scheduler(kube, kube_scheduler_bin)

    def phase(name: str) -> tuple[str | None, str | None]:
        obj = kube.get(f"/api/v1/namespaces/{apps}/pods/{name}")
        conds: list[dict[str, Any]] = (obj.get("status") or {}).get("conditions") or []
        cond = next((c for c in conds if c["type"] == "PodScheduled"), {})
        return obj["spec"].get("nodeName"), cond.get("reason")

    for name in (p["metadata"]["name"] for p in pods.values()):
        kube.wait_until(lambda name=name: phase(name) == (None, "Unschedulable"), timeout=60,  # type: ignore[misc]
                        message=f"{name} found unschedulable by the scheduler")

    # nfd as installed: one worker per node, the master with its rendered config.
    conf = next(o for o in installed.objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "nfd-master-conf")
    (installed.tmp / "nfd-master.conf").write_text(conf["data"]["nfd-master.conf"])
    installed.start_worker(gpu_node, installed.host_root("gpu-server"))
    installed.start_worker(vm_node, installed.host_root("kvm-guest"))
    installed.start_master(f"-config={installed.tmp / 'nfd-master.conf'}")

    # The worker-published label alone places the first pod.
    kube.wait_until(lambda: phase("on-amd-cpu")[0] == gpu_node, timeout=90, message="on-amd-cpu bound")

    # The user's rule, applied as YAML.
    rule = yaml.safe_load(USER_RULE)
    kube.apply_objects([rule])
    try:
        kube.wait_until(lambda: phase("needs-gpu")[0] == gpu_node, timeout=90, message="needs-gpu bound")
        kube.wait_until(lambda: phase("needs-vm-slots")[0] == vm_node, timeout=90, message="needs-vm-slots bound")
        print(f"journey: installed, labelled and scheduled in {time.monotonic() - began:.1f}s")

        # Each went to the only node nfd made eligible, and the nodes say why.
        gpu, vm = installed.node(gpu_node), installed.node(vm_node)
        assert gpu["metadata"]["labels"].get("example.com/gpu") == "nvidia"
        assert "example.com/gpu" not in vm["metadata"]["labels"]
        assert vm["status"]["allocatable"].get("example.com/vm-slots") == "3"
        assert "example.com/vm-slots" not in gpu["status"].get("allocatable", {})
        assert vm["metadata"]["labels"].get("feature.node.kubernetes.io/cpu-model.vendor_id") == "Intel"
        for n in (gpu_node, vm_node):
            assert installed.nodefeature(n) is not None
        assert kube.get(f"{NFD_API}/nodefeaturerules/journey-accelerators")
        assert scheduler.running, scheduler.logs()[-2000:]
    finally:
        scheduler.stop()
        kube.request("DELETE", f"{NFD_API}/nodefeaturerules/journey-accelerators")
        kube.delete_namespace(apps)
