"""The dra feature source against the real apiserver and the real DRA scheduler plugin.

deploy/ is rendered with kustomize and applied (so nfd-master runs under its real ClusterRole,
which must allow list/watch on resourceslices); nodes get ResourceSlices as the NVIDIA GPU DRA
driver, the kubernetes-sigs example driver (one pool with a pre-release driver version) and DraNet
publish them (tests/fixtures/dra), plus a pool with a missing slice. No worker runs: the nodes are DRA-only, as on a cluster where the
GPU Operator's DRA path replaces the device plugin and GFD.

- the shipped sample rules give the GFD labels a GPU user expects, and NIC labels;
- the same CEL selectors, evaluated by nfd (``devices.exists(device, <selector>)`` in
  matchCEL) and by kube-scheduler's DRA plugin (a ResourceClaim per selector and node, the pod
  pinned to the node), agree on which nodes have a matching device, for selectors on strings,
  ints, bools, capacities (``compareTo(quantity(...))``), versions (``semver``: ``compareTo``,
  ``isGreaterThan``, pre-release and build metadata), ``cel.bind`` and optional access;
- the incomplete pool is named in a warning and removes nothing; deleting a driver's slice
  removes the labels derived from it and only those.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.harness import ManagedProcess
from tests.e2e.test_journey import start_scheduler
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

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "dra"
SAMPLES = REPO / "deploy" / "nodefeaturerule" / "samples"
GPU_LABELS = REPO / "deploy" / "nodefeaturerule" / "nvidia-gpu-labels-from-dra" / "nvidia-gpu-labels-from-dra.yaml"
RESOURCE = "/apis/resource.k8s.io/v1"

NV = 'device.attributes["gpu.nvidia.com"]'
EX = 'device.attributes["gpu.example.com"]'

# DeviceClass/ResourceClaim selectors as users write them (from the drivers' docs and examples).
SELECTORS = {
    "h100": 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"',
    "gpu40gi": 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0',
    "hbm": 'device.driver == "gpu.nvidia.com" && device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("64Gi"))',
    "rdma": 'device.attributes["dra.net"].rdma == true && device.attributes["dra.net"].numaNode == 1',
    "index7": 'device.attributes["gpu.example.com"].index >= 7',
    "split": 'device.attributes["gpu.example.com"].model == "SPLIT-GPU-MODEL"',  # only in the incomplete pool
    "nothing": 'device.attributes["gpu.example.com"].model == "NO-SUCH-MODEL"',
    # versions are semver in DRA: compareTo/isGreaterThan/isLessThan, the pre-release counts
    # (1.1.0-beta.2 < 1.1.0), build metadata does not
    "drv550": f'{NV}.driverVersion.compareTo(semver("550.0.0")) >= 0',
    "drvgt": f'{NV}.driverVersion.isGreaterThan(semver("550.54.14")) && {NV}.cudaDriverVersion.isLessThan(semver("12.5.0"))',
    "prerelease": f'device.driver == "gpu.example.com" && {EX}.driverVersion.isLessThan(semver("1.1.0")) && '
                  f'{EX}.driverVersion.isGreaterThan(semver("1.0.0"))',
    "buildmeta": f'device.driver == "gpu.example.com" && {EX}.driverVersion == semver("1.1.0-beta.2")',
    # cel.bind and optional access, as DRA's CEL environment has them
    "bind": f'cel.bind(a, {NV}, a.cudaComputeCapability.major() >= 9 && a.productName.startsWith("NVIDIA H100"))',
    "bindmem": 'device.driver == "gpu.nvidia.com" && cel.bind(mem, device.capacity["gpu.nvidia.com"].memory, '
               'mem.compareTo(quantity("40Gi")) >= 0 && mem.compareTo(quantity("80Gi")) < 0)',
    "optional": f'{EX}.?driverVersion.orValue(semver("0.0.0")).isGreaterThan(semver("1.0.0"))',
}


def slices(name: str, node: str) -> list[dict[str, Any]]:
    return [o for o in yaml.safe_load_all((FIXTURES / name).read_text().replace("NODE", node)) if o]


def selector_rule() -> dict[str, Any]:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
            "metadata": {"name": "e2e-dra-selectors"},
            "spec": {"rules": [{"name": key, "labels": {f"e2e.dra/{key}": "true"},
                                "matchCEL": [f"devices.exists(device, {sel})"]} for key, sel in SELECTORS.items()]}}


class DraSetup:
    def __init__(self, inst: Installed, master: ManagedProcess, nodes: dict[str, str], devices: dict[str, int]) -> None:
        self.inst, self.master, self.nodes = inst, master, nodes
        self.devices = devices  # per node: devices in complete pools

    def labels(self, node: str) -> dict[str, str]:
        out: dict[str, str] = self.inst.node(self.nodes[node])["metadata"].get("labels") or {}
        return out


@pytest.fixture(scope="module")
def dra(install_kube: AuditedCluster, kustomize_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DraSetup]:
    kube = install_kube
    objs = kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / "default")
    inst = Installed(kube, objs, namespace="node-feature-discovery", tmp=tmp_path_factory.mktemp("dra"))
    made: list[dict[str, Any]] = []
    devices: dict[str, int] = {}
    try:
        nodes = {k: inst.make_node(f"dra-{k}") for k in ("nvidia", "example", "nic", "plain")}
        # The plain node has a NodeFeature (as a worker would publish it): its labels must
        # survive everything the DRA side does.
        kube.request("POST", f"{NFD_API}/namespaces/node-feature-discovery/nodefeatures", body={
            "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
            "metadata": {"name": nodes["plain"], "labels": {"nfd.node.kubernetes.io/node-name": nodes["plain"]}},
            "spec": {"labels": {"worker-label": "kept"}}})
        for fixture, node in (("nvidia-gpu-h100x8.yaml", "nvidia"), ("example-driver-gpus.yaml", "example"),
                              ("dranet-nics.yaml", "nic"), ("incomplete-pool.yaml", "nic"),
                              ("incomplete-pool.yaml", "plain"), ("example-driver-beta.yaml", "plain")):
            for s in slices(fixture, nodes[node]):
                made.append(kube.request("POST", f"{RESOURCE}/resourceslices", body=s))
                if fixture != "incomplete-pool.yaml":
                    devices[node] = devices.get(node, 0) + len(s["spec"]["devices"])
        rules = [yaml.safe_load((SAMPLES / f).read_text()) for f in ("dra-nvidia-gpu.yaml", "dra-dranet-nics.yaml")]
        rules.append(yaml.safe_load(GPU_LABELS.read_text()))
        kube.apply_objects([*rules, selector_rule()])
        master = inst.start_master()
        kube.wait_until(lambda: "nvidia.com/gpu.product" in (inst.node(nodes["nvidia"])["metadata"].get("labels") or {}),
                        timeout=90, message="GPU labels from the NVIDIA driver's slices")
        yield DraSetup(inst, master, nodes, devices)
    finally:
        for s in made:
            _delete_quietly(kube, s)
        for r in ("dra-nvidia-gpu", "dra-dranet-nics", "e2e-dra-selectors", "nvidia-gpu-labels-from-dra"):
            _delete_quietly(kube, {"metadata": {"name": r}}, path=f"{NFD_API}/nodefeaturerules/{r}")
        inst.close()


def _delete_quietly(kube: Any, obj: dict[str, Any], *, path: str | None = None) -> None:
    try:
        kube.request("DELETE", path or f"{RESOURCE}/resourceslices/{obj['metadata']['name']}")
    except Exception:  # noqa: BLE001 - already gone
        pass


def test_sample_rules_label_dra_only_nodes_as_gfd(dra: DraSetup) -> None:
    gpu = dra.labels("nvidia")
    assert {k: v for k, v in gpu.items() if k.startswith(("nvidia.com/gpu.", "nvidia.com/cuda."))} == {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.memory": "81559",
        "nvidia.com/gpu.memory-40gi-plus": "true",
        "nvidia.com/gpu.family": "hopper",
        "nvidia.com/gpu.compute.major": "9",
        "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/cuda.driver-version.full": "550.54.15",
        "nvidia.com/cuda.driver-version.major": "550",
        "nvidia.com/cuda.driver-version.minor": "54",
        "nvidia.com/cuda.driver-version.revision": "15",
        "nvidia.com/cuda.driver.major": "550",
        "nvidia.com/cuda.driver.minor": "54",
        "nvidia.com/cuda.driver.rev": "15",
        "nvidia.com/cuda.runtime-version.full": "12.4",
        "nvidia.com/cuda.runtime-version.major": "12",
        "nvidia.com/cuda.runtime-version.minor": "4",
        "nvidia.com/cuda.runtime.major": "12",
        "nvidia.com/cuda.runtime.minor": "4",
    }
    dra.inst.kube.wait_until(lambda: dra.labels("nic").get("feature.node.kubernetes.io/rdma.capable") == "true",
                             timeout=30, message="NIC labels")
    nic = dra.labels("nic")
    assert nic["feature.node.kubernetes.io/network-rdma.count"] == "2"
    assert nic["feature.node.kubernetes.io/network-rdma.vendor"] == "Mellanox-Technologies"
    assert not [k for k in nic if k.startswith("nvidia.com/")]
    assert not [k for k in dra.labels("example") if k.startswith(("nvidia.com/", "feature.node.kubernetes.io/rdma"))]
    assert dra.labels("plain").get("feature.node.kubernetes.io/worker-label") == "kept"


def test_nfd_and_the_dra_scheduler_agree_on_matching_nodes(dra: DraSetup, kube_scheduler_bin: Path) -> None:
    kube = dra.inst.kube
    # nfd's answer: the nodes carrying e2e.dra/<key>
    kube.wait_until(lambda: dra.labels("example").get("e2e.dra/index7") == "true", timeout=30,
                    message="selector labels")
    nfd_says = {key: {n for n in dra.nodes if dra.labels(n).get(f"e2e.dra/{key}") == "true"} for key in SELECTORS}
    # a bound claim holds its device: a node needs a device for each selector matching there
    for n in dra.nodes:
        wanted = sum(n in matched for matched in nfd_says.values())
        assert wanted <= dra.devices.get(n, 0), f"{n}: {wanted} selectors match, {dra.devices.get(n, 0)} devices"

    # the scheduler's answer: for each selector and node, a claim with that selector and a
    # pod pinned to the node; bound = the node has a matching device
    ns = kube.unique_name("dra-claims")
    kube.create_namespace(ns)
    cls = kube.unique_name("e2e-all-devices")
    kube.request("POST", f"{RESOURCE}/deviceclasses", body={
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": cls}, "spec": {}})
    pods: dict[tuple[str, str], str] = {}
    for key, sel in SELECTORS.items():
        for n, node in dra.nodes.items():
            name = f"{key}-{n}"
            kube.request("POST", f"{RESOURCE}/namespaces/{ns}/resourceclaims", body={
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
                "spec": {"devices": {"requests": [{"name": "dev", "exactly": {
                    "deviceClassName": cls, "selectors": [{"cel": {"expression": sel}}]}}]}}})
            kube.request("POST", f"/api/v1/namespaces/{ns}/pods", body={
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                "spec": {"nodeSelector": {"kubernetes.io/hostname": node},
                         "resourceClaims": [{"name": "dev", "resourceClaimName": name}],
                         "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                                         "resources": {"requests": {"cpu": "10m"}, "claims": [{"name": "dev"}]}}]}})
            pods[(key, n)] = name
    scheduler = start_scheduler(kube, kube_scheduler_bin)
    try:
        def outcome(name: str) -> str | None:
            obj = kube.get(f"/api/v1/namespaces/{ns}/pods/{name}")
            if obj["spec"].get("nodeName"):
                return "bound"
            conds = (obj.get("status") or {}).get("conditions") or []
            c = next((c for c in conds if c["type"] == "PodScheduled"), {})
            if c.get("reason") == "SchedulerError" and "CEL runtime error" in (c.get("message") or ""):
                # a device without the selector's attribute: DRA fails the node, as nfd's
                # devices.exists() fails the rule (no label)
                return "cel-error"
            return "unschedulable" if c.get("reason") == "Unschedulable" else None

        results = {p: kube.wait_until(lambda name=name: outcome(name), timeout=120,  # type: ignore[misc]
                                      message=f"scheduler decided {name}") for p, name in pods.items()}
        scheduler_says = {key: {n for n in dra.nodes if results[(key, n)] == "bound"} for key in SELECTORS}
        assert scheduler_says == nfd_says
        # and the answer is the one the fixtures imply (neither side found nothing everywhere)
        assert nfd_says == {"h100": {"nvidia"}, "gpu40gi": {"example", "plain"}, "hbm": {"nvidia"}, "rdma": {"nic"},
                            "index7": {"example"}, "split": set(), "nothing": set(),
                            "drv550": {"nvidia"}, "drvgt": {"nvidia"}, "prerelease": {"plain"},
                            "buildmeta": {"plain"}, "bind": {"nvidia"}, "bindmem": {"nvidia"},
                            "optional": {"plain"}}
        assert scheduler.running, scheduler.logs()[-2000:]
    finally:
        scheduler.stop()
        kube.delete_namespace(ns)
        kube.request("DELETE", f"{RESOURCE}/deviceclasses/{cls}")


def test_incomplete_pool_warns_and_slice_delete_removes_only_its_labels(dra: DraSetup) -> None:
    kube = dra.inst.kube
    # the pool with a missing slice is named once in a warning, and contributes nothing
    dra.master.wait_log(f"ResourceSlice pool gpu.example.com/{dra.nodes['plain']}-split: generation 1 has 1 of 2 slices",
                        timeout=30)
    assert dra.labels("plain").get("feature.node.kubernetes.io/worker-label") == "kept"
    assert "e2e.dra/split" not in dra.labels("plain")
    # the NVIDIA driver's slice goes: the labels derived from it go, nothing else
    nic_before = {k: v for k, v in dra.labels("nic").items() if "dra" in k or "rdma" in k}
    kube.request("DELETE", f"{RESOURCE}/resourceslices/{dra.nodes['nvidia']}-gpu.nvidia.com-x7k2q")
    kube.wait_until(lambda: "nvidia.com/gpu.product" not in dra.labels("nvidia"), timeout=60,
                    message="GPU labels removed with the slice")
    assert not [k for k in dra.labels("nvidia") if k.startswith(("nvidia.com/", "e2e.dra/"))]
    assert {k: v for k, v in dra.labels("nic").items() if "dra" in k or "rdma" in k} == nic_before
    assert dra.labels("plain").get("feature.node.kubernetes.io/worker-label") == "kept"
    # the missing slice arrives: the pool is complete and counts
    part2 = slices("incomplete-pool.yaml", dra.nodes["plain"])[0]
    part2["metadata"]["name"] = part2["metadata"]["name"].replace("part1", "part2")
    part2["spec"]["devices"][0]["name"] = "gpu-1"
    kube.request("POST", f"{RESOURCE}/resourceslices", body=part2)
    try:
        kube.wait_until(lambda: dra.labels("plain").get("e2e.dra/split") == "true", timeout=60,
                        message="the completed pool's devices count")
        assert dra.labels("plain").get("feature.node.kubernetes.io/worker-label") == "kept"
        assert "e2e.dra/split" not in dra.labels("nic")  # the nic node's copy of the pool is still incomplete
    finally:
        _delete_quietly(kube, part2)
    assert dra.master.running, dra.master.logs()[-3000:]


def test_shipped_gpu_rule_on_mixed_model_and_mig_nodes(dra: DraSetup) -> None:
    """deploy/nodefeaturerule/nvidia-gpu-labels-from-dra on slices as NVIDIA's driver writes
    them, through the API server and nfd-master: a count per model on a node with two models,
    whole GPUs counted once under MIG, and a rewrite listing the devices in another order
    changes no label."""
    kube = dra.inst.kube
    nodes = {k: dra.inst.make_node(f"dra-{k}") for k in ("mixed", "mig")}
    made: list[dict[str, Any]] = []

    def nv(k: str) -> dict[str, str]:
        labels = dra.inst.node(nodes[k])["metadata"].get("labels") or {}
        return {key: v for key, v in labels.items() if key.startswith(("nvidia.com/gpu.", "nvidia.com/mig"))}

    try:
        for fixture, k in (("nvidia-gpu-mixed-models.yaml", "mixed"), ("nvidia-gpu-mig-static.yaml", "mig")):
            for s in slices(fixture, nodes[k]):
                made.append(kube.request("POST", f"{RESOURCE}/resourceslices", body=s))
        kube.wait_until(lambda: nv("mixed").get("nvidia.com/gpu.count.Tesla-T4") == "1"
                        and nv("mig").get("nvidia.com/mig-1g.10gb.count") == "2", timeout=90,
                        message="GPU labels from the shipped rule")
        mixed = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A100-80GB-PCIe",
                 "nvidia.com/gpu.count": "2", "nvidia.com/gpu.memory": "81920", "nvidia.com/gpu.family": "ampere",
                 "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0",
                 "nvidia.com/gpu.count.NVIDIA-A100-80GB-PCIe": "2", "nvidia.com/gpu.count.Tesla-T4": "1",
                 "nvidia.com/gpu.memory-40gi-plus": "true"}  # the sample's pasted selector
        assert nv("mixed") == mixed
        assert nv("mig") == {
            "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.count": "2", "nvidia.com/gpu.memory": "81559", "nvidia.com/gpu.family": "hopper",
            "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0",
            "nvidia.com/mig-3g.40gb.count": "1", "nvidia.com/mig-1g.10gb.count": "2", "nvidia.com/mig.capable": "true",
            "nvidia.com/gpu.memory-40gi-plus": "true"}
        # the driver republishes its pool (generation 2) listing the devices in another order
        obj = made[0]
        obj["spec"]["devices"] = list(reversed(obj["spec"]["devices"]))
        obj["spec"]["pool"]["generation"] = 2
        made[0] = kube.request("PUT", f"{RESOURCE}/resourceslices/{obj['metadata']['name']}", body=obj)
        for _ in range(40):  # 10 s: the master re-evaluates the node within its batching delay
            assert nv("mixed") == mixed
            time.sleep(0.25)
    finally:
        for s in made:
            _delete_quietly(kube, s)
