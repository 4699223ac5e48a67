"""The shipped NodeFeatureRule deploy/nodefeaturerule/nvidia-gpu-labels-from-dra: GFD's labels
from the ResourceSlices of NVIDIA's GPU DRA driver, through the rule engine as nfd-master runs
it (issue 47): one model per node chosen as the nvml source chooses it, a count per model, full
GPUs counted once under MIG, and the same labels whatever order the driver lists devices in."""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfd.api.features import Features
from nfd.dra.pools import DraIndex
from nfd.dra.slices import parse_slice
from nfd.rules.engine import compile_nodefeaturerule, iter_process_rule_sets, run_to_end

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "dra"
RULE = ROOT / "deploy" / "nodefeaturerule" / "nvidia-gpu-labels-from-dra" / "nvidia-gpu-labels-from-dra.yaml"
NV_PREFIXES = ("nvidia.com/gpu.", "nvidia.com/cuda.", "nvidia.com/mig")

CUDA_550_124 = {
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


def slices(*names: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in names:
        out += [o for o in yaml.safe_load_all((FIXTURES / n).read_text().replace("NODE", "n1")) if o]
    return out


def labels(objs: list[dict[str, Any]]) -> dict[str, str]:
    idx = DraIndex()
    for o in objs:
        s = parse_slice(o)
        assert s.warnings == [], s.warnings
        idx.upsert(s)
    nd = idx.node_devices("n1", {})
    f = Features()
    f.add_instances("dra.device", nd.instances)
    rules = [compile_nodefeaturerule(yaml.safe_load(RULE.read_text()))]
    res = run_to_end(iter_process_rule_sets(rules, f, node_name="n1", devices=nd.cel))
    assert res.errors == []
    return dict(res.master_output.labels)


def nvml_labels(profile: str) -> dict[str, str]:
    """What the nvml source (GFD's labels, checked against GFD itself) publishes for the same
    machine, from its fake-NVML profile."""
    from nfd.nvml_fake import FakeNvml, load_profile
    from nfd.sources.nvml.collect import collect
    from nfd.sources.nvml.labels import LabelSettings, gfd_labels

    fake = FakeNvml(load_profile(profile))
    fake.nvmlInit()
    try:
        snap = collect(fake, fake.host)
    finally:
        fake.nvmlShutdown()
    return {k: v for k, v in gfd_labels(snap, LabelSettings()).items() if k.startswith(NV_PREFIXES)}


def test_eight_h100_equal_what_gfd_publishes() -> None:
    got = labels(slices("nvidia-gpu-h100x8.yaml"))
    assert got == {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                   "nvidia.com/gpu.count": "8", "nvidia.com/gpu.memory": "81559", "nvidia.com/gpu.family": "hopper",
                   "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0", **CUDA_550_124}
    gfd = nvml_labels("h100x8")
    assert {k: gfd[k] for k in got if k in gfd} == {k: v for k, v in got.items() if k in gfd}
    # what GFD has and DRA slices cannot say: sharing (DRA shares by claims), the MIG capability
    # of a GPU without MIG devices published, the machine's DMI name, the PCI class (gpu.mode)
    assert set(gfd) - set(got) == {"nvidia.com/gpu.replicas", "nvidia.com/gpu.sharing-strategy", "nvidia.com/mig.capable",
                                   "nvidia.com/gpu.machine", "nvidia.com/gpu.mode"}


def test_two_models_a_count_per_model_and_one_product_in_any_device_order() -> None:
    objs = slices("nvidia-gpu-mixed-models.yaml")
    want = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A100-80GB-PCIe",
            "nvidia.com/gpu.count": "2", "nvidia.com/gpu.memory": "81920", "nvidia.com/gpu.family": "ampere",
            "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0",
            "nvidia.com/gpu.count.NVIDIA-A100-80GB-PCIe": "2", "nvidia.com/gpu.count.Tesla-T4": "1", **CUDA_550_124}
    assert labels(objs) == want
    # the nvml source on the same machine (profile two-model) says the same where both speak
    nv = nvml_labels("two-model")
    assert {k: nv[k] for k in want if k in nv} == {k: v for k, v in want.items() if k in nv}
    for order in itertools.permutations(objs[0]["spec"]["devices"]):
        o = copy.deepcopy(objs[0])
        o["spec"]["devices"] = list(order)
        assert labels([o]) == want, [d["name"] for d in order]


@pytest.mark.parametrize(("minors", "product"), [((0, 1), "Tesla-T4"), ((1, 0), "NVIDIA-A100-80GB-PCIe")])
def test_tie_goes_to_the_model_owning_the_lowest_minor(minors: tuple[int, int], product: str) -> None:
    """1x T4 + 1x A100: as the nvml source, the model owning GPU minor 0 describes the node."""
    (o,) = slices("nvidia-gpu-mixed-models.yaml")
    t4 = next(d for d in o["spec"]["devices"] if d["attributes"]["productName"]["string"] == "Tesla T4")
    a100 = next(d for d in o["spec"]["devices"] if d["name"] == "gpu-1")
    t4["name"], a100["name"] = (f"gpu-{m}" for m in minors)
    o["spec"]["devices"] = [a100, t4]
    got = labels([o])
    assert got["nvidia.com/gpu.product"] == product and got["nvidia.com/gpu.count"] == "1"
    assert got["nvidia.com/gpu.count.Tesla-T4"] == got["nvidia.com/gpu.count.NVIDIA-A100-80GB-PCIe"] == "1"


def test_static_mig_counts_full_gpus_and_mig_devices_per_profile() -> None:
    """GPU 0 published as its three MIG devices, GPU 1 whole: two GPUs, not four."""
    got = labels(slices("nvidia-gpu-mig-static.yaml"))
    assert got == {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                   "nvidia.com/gpu.count": "2", "nvidia.com/gpu.memory": "81559", "nvidia.com/gpu.family": "hopper",
                   "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0",
                   "nvidia.com/mig-3g.40gb.count": "1", "nvidia.com/mig-1g.10gb.count": "2",
                   "nvidia.com/mig.capable": "true", **CUDA_550_124}


def test_dynamic_mig_placements_are_not_devices() -> None:
    """DynamicMIG: the GPU and its possible MIG placements (no uuid): one GPU, no MIG counts."""
    got = labels(slices("nvidia-gpu-mig-dynamic.yaml"))
    assert got["nvidia.com/gpu.count"] == "1" and got["nvidia.com/gpu.memory"] == "81559"
    assert got["nvidia.com/mig.capable"] == "true"
    assert not [k for k in got if k.startswith("nvidia.com/mig-")]


def test_mig_only_gpus_count_but_a_model_published_whole_describes_the_node() -> None:
    """All MIG-enabled (static MIG) H100s and one whole T4: the T4 is the gpu.* model, as GFD
    and the nvml source let a model with a non-MIG GPU win; the H100s keep their count, and a
    MIG-only model alone has no gpu.memory (its whole-GPU memory is not in the slice)."""
    (mig,) = slices("nvidia-gpu-mig-static.yaml")
    (mixed,) = slices("nvidia-gpu-mixed-models.yaml")
    t4 = next(d for d in mixed["spec"]["devices"] if d["attributes"]["productName"]["string"] == "Tesla T4")
    t4 = copy.deepcopy(t4)
    t4["name"] = "gpu-2"
    migs = [d for d in mig["spec"]["devices"] if d["attributes"]["type"]["string"] == "mig"]
    other = copy.deepcopy(migs[0])  # a second MIG-only H100 (minor 1), 7g.80gb
    other["name"] = "gpu-1-mig-7g80gb-0-0"
    other["attributes"]["parentUUID"]["string"] = "GPU-7c8d9eaf-b0c1-42d3-94e5-f60718293a49"
    other["attributes"]["uuid"]["string"] = "MIG-0a1b2c3d-4e5f-5a6b-8c7d-9e0f1a2b3c49"
    other["attributes"]["profile"]["string"] = "7g.80gb"
    mig["spec"]["devices"] = [*migs, other, t4]
    got = labels([mig])
    assert got["nvidia.com/gpu.product"] == "Tesla-T4" and got["nvidia.com/gpu.count"] == "1"
    assert got["nvidia.com/gpu.family"] == "turing" and got["nvidia.com/gpu.compute.minor"] == "5"
    assert got["nvidia.com/gpu.memory"] == str(15 * 1024)
    assert got["nvidia.com/gpu.count.NVIDIA-H100-80GB-HBM3"] == "2" and got["nvidia.com/gpu.count.Tesla-T4"] == "1"
    assert got["nvidia.com/mig-1g.10gb.count"] == "2" and got["nvidia.com/mig-7g.80gb.count"] == "1"
    mig["spec"]["devices"] = [*migs, other]
    got = labels([mig])
    assert got["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3" and got["nvidia.com/gpu.count"] == "2"
    assert "nvidia.com/gpu.memory" not in got and got["nvidia.com/gpu.family"] == "hopper"


def test_other_drivers_devices_are_not_gpus() -> None:
    assert labels(slices("example-driver-gpus.yaml", "dranet-nics.yaml")) == {}
    assert labels(slices("example-driver-gpus.yaml", "nvidia-gpu-mixed-models.yaml"))["nvidia.com/gpu.count"] == "2"


def test_shipped_as_the_other_deploy_pieces_name_it() -> None:
    """The chart carries the same bytes (Helm reads only files inside the chart), its template
    inserts that file behind the value, and the kustomize component includes the rule's
    directory."""
    chart = ROOT / "deploy" / "helm" / "node-feature-discovery"
    assert (chart / "files" / RULE.name).read_bytes() == RULE.read_bytes()
    tmpl = (chart / "templates" / "nodefeaturerules.yaml").read_text()
    assert f'.Files.Get "files/{RULE.name}"' in tmpl and "nvidiaGpuLabelsFromDRA" in tmpl
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert values["nodeFeatureRules"]["nvidiaGpuLabelsFromDRA"] is False
    comp = yaml.safe_load((ROOT / "deploy" / "components" / "nvidia-gpu-labels-from-dra" / "kustomization.yaml").read_text())
    assert comp["kind"] == "Component"
    (res,) = comp["resources"]
    rule_dir = (ROOT / "deploy" / "components" / "nvidia-gpu-labels-from-dra" / res).resolve()
    assert rule_dir == RULE.parent
    assert yaml.safe_load((rule_dir / "kustomization.yaml").read_text())["resources"] == [RULE.name]
