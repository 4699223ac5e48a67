"""Expected GFD label sets per shipped profile and MIG strategy (values from gfd-inventory §1-2)."""

from __future__ import annotations

import dataclasses

from nvml_help import gpu_only, labels_of, snap_of

from nfd.sources.nvml.snapshot import Fabric, Vgpu

VERSIONS = {
    "nvidia.com/cuda.driver-version.major": "550",
    "nvidia.com/cuda.driver-version.minor": "54",
    "nvidia.com/cuda.driver-version.revision": "15",
    "nvidia.com/cuda.driver-version.full": "550.54.15",
    "nvidia.com/cuda.driver.major": "550",
    "nvidia.com/cuda.driver.minor": "54",
    "nvidia.com/cuda.driver.rev": "15",
    "nvidia.com/cuda.runtime-version.major": "12",
    "nvidia.com/cuda.runtime-version.minor": "4",
    "nvidia.com/cuda.runtime-version.full": "12.4",
    "nvidia.com/cuda.runtime.major": "12",
    "nvidia.com/cuda.runtime.minor": "4",
}


def full_gpu(
    product: str, count: int, memory: int, major: int, minor: int, family: str, machine: str
) -> dict[str, str]:
    return {
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(count),
        "nvidia.com/gpu.memory": str(memory),
        "nvidia.com/gpu.family": family,
        "nvidia.com/gpu.compute.major": str(major),
        "nvidia.com/gpu.compute.minor": str(minor),
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/gpu.machine": machine,
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mps.capable": "false",
        "nvidia.com/vgpu.present": "false",
    }


def test_version_labels_and_timestamp() -> None:
    labels = labels_of("h100x8", timestamp=1724632719)
    assert {k: v for k, v in labels.items() if k.startswith("nvidia.com/cuda.")} == VERSIONS
    assert labels["nvidia.com/gfd.timestamp"] == "1724632719"
    assert "nvidia.com/gfd.timestamp" not in labels_of("h100x8")


def test_driver_version_with_two_parts_has_empty_revision(profile_doc) -> None:
    doc = profile_doc("a100-40gb")
    doc["system"]["driverVersion"] = "535.104"
    labels = labels_of(doc)
    assert labels["nvidia.com/cuda.driver-version.revision"] == ""
    assert labels["nvidia.com/cuda.driver.rev"] == ""
    assert labels["nvidia.com/cuda.driver-version.full"] == "535.104"


def test_unparsable_driver_version_drops_only_driver_labels(profile_doc) -> None:
    doc = profile_doc("a100-40gb")
    doc["system"]["driverVersion"] = "weird"
    warnings: list[str] = []
    labels = labels_of(doc, warnings=warnings)
    assert not any(k.startswith("nvidia.com/cuda.driver") for k in labels)
    assert labels["nvidia.com/cuda.runtime-version.full"] == "12.4"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    assert any("weird" in w for w in warnings)


def test_h100x8_none() -> None:
    assert gpu_only(labels_of("h100x8")) == full_gpu(
        "NVIDIA-H100-80GB-HBM3", 8, 81559, 9, 0, "hopper", "PowerEdge-XE9680"
    )


def test_single_gpu_profiles_none() -> None:
    assert gpu_only(labels_of("a100-40gb")) == full_gpu(
        "NVIDIA-A100-SXM4-40GB", 1, 40960, 8, 0, "ampere", "Standard-PC-Q35-ICH9-2009"
    )
    assert gpu_only(labels_of("a100-80gb")) == full_gpu(
        "NVIDIA-A100-SXM4-80GB", 1, 81920, 8, 0, "ampere", "Virtual-Machine"
    )
    assert gpu_only(labels_of("h100-80gb")) == full_gpu(
        "NVIDIA-H100-80GB-HBM3", 1, 81559, 9, 0, "hopper", "PowerEdge-R760xa"
    )
    assert gpu_only(labels_of("h200")) == full_gpu(
        "NVIDIA-H200", 1, 143771, 9, 0, "hopper", "ThinkSystem-SR680a-V3"
    )


def test_strategy_label_only_for_single_and_mixed() -> None:
    assert "nvidia.com/mig.strategy" not in labels_of("h100x8", "none")
    assert labels_of("h100x8", "single")["nvidia.com/mig.strategy"] == "single"
    assert labels_of("h100x8", "mixed")["nvidia.com/mig.strategy"] == "mixed"
    # no MIG-enabled GPU: single and mixed are otherwise the same as none
    none = labels_of("h100x8", "none")
    for strategy in ("single", "mixed"):
        other = labels_of("h100x8", strategy)
        del other["nvidia.com/mig.strategy"]
        assert other == none


def test_a100_mig_mixed_layout_mixed_strategy() -> None:
    labels = gpu_only(labels_of("a100-mig-mixed", "mixed"))
    expected = {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
        "nvidia.com/gpu.count": "2",
        "nvidia.com/gpu.replicas": "0",  # every A100 is MIG-enabled
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/gpu.memory": "40960",
        "nvidia.com/gpu.family": "ampere",
        "nvidia.com/gpu.compute.major": "8",
        "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/gpu.machine": "DGX-A100",
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mps.capable": "false",
        "nvidia.com/vgpu.present": "false",
    }
    for profile, count, mem, sm, slices, copy, dec in (
        ("3g.20gb", 2, 19968, 42, 3, 3, 2),
        ("1g.5gb", 7, 4864, 14, 1, 1, 0),
    ):
        p = f"nvidia.com/mig-{profile}."
        expected.update(
            {
                p + "count": str(count),
                p + "product": f"NVIDIA-A100-SXM4-40GB-MIG-{profile}",
                p + "replicas": "1",
                p + "sharing-strategy": "none",
                p + "memory": str(mem),
                p + "multiprocessors": str(sm),
                p + "slices.gi": str(slices),
                p + "slices.ci": str(slices),
                p + "engines.copy": str(copy),
                p + "engines.decoder": str(dec),
                p + "engines.encoder": "0",
                p + "engines.jpeg": "0",
                p + "engines.ofa": "0",
            }
        )
    assert labels == expected


def test_a100_mig_mixed_layout_single_strategy_is_invalid() -> None:
    warnings: list[str] = []
    labels = labels_of("a100-mig-mixed", "single", warnings=warnings)
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-MIG-INVALID"
    assert labels["nvidia.com/gpu.count"] == "0"
    assert labels["nvidia.com/gpu.replicas"] == "0"
    assert labels["nvidia.com/gpu.memory"] == "0"
    assert labels["nvidia.com/gpu.sharing-strategy"] == ""
    # the parent's architecture labels survive, as on real hardware
    assert labels["nvidia.com/gpu.family"] == "ampere"
    assert labels["nvidia.com/gpu.compute.major"] == "8"
    assert not any(k.startswith("nvidia.com/mig-") for k in labels)
    assert any("more than one MIG device type" in w for w in warnings)


def test_h100_mig_mixed_layout() -> None:
    mixed = labels_of("h100-mig-mixed", "mixed")
    # GPU 1 is a full GPU, so the gpu.* family keeps sharing values (replicas 1, not 0)
    assert mixed["nvidia.com/gpu.count"] == "2"
    assert mixed["nvidia.com/gpu.replicas"] == "1"
    profiles = {
        k[len("nvidia.com/mig-") : -len(".count")] for k in mixed if k.endswith(".count") and "/mig-" in k
    }
    assert profiles == {"3g.40gb", "1c.2g.20gb", "1g.10gb", "1g.10gb.me"}
    assert mixed["nvidia.com/mig-3g.40gb.count"] == "1"
    assert mixed["nvidia.com/mig-1c.2g.20gb.count"] == "2"
    assert mixed["nvidia.com/mig-1c.2g.20gb.slices.gi"] == "2"
    assert mixed["nvidia.com/mig-1c.2g.20gb.slices.ci"] == "1"
    assert mixed["nvidia.com/mig-1c.2g.20gb.product"] == "NVIDIA-H100-80GB-HBM3-MIG-1c.2g.20gb"
    assert mixed["nvidia.com/mig-1g.10gb.count"] == "1"
    assert mixed["nvidia.com/mig-1g.10gb.memory"] == "9984"
    assert mixed["nvidia.com/mig-1g.10gb.multiprocessors"] == "16"
    assert mixed["nvidia.com/mig-1g.10gb.engines.jpeg"] == "1"
    assert mixed["nvidia.com/mig-1g.10gb.me.count"] == "1"
    assert mixed["nvidia.com/mig-1g.10gb.me.product"] == "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb.me"
    warnings: list[str] = []
    single = labels_of("h100-mig-mixed", "single", warnings=warnings)
    assert single["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-MIG-INVALID"
    assert any("enabled and disabled" in w for w in warnings)


def test_h200_mig_single_strategy() -> None:
    labels = gpu_only(labels_of("h200-mig", "single"))
    assert labels == {
        "nvidia.com/gpu.product": "NVIDIA-H200-MIG-3g.71gb",
        "nvidia.com/gpu.count": "4",
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/gpu.memory": "65536",
        "nvidia.com/gpu.multiprocessors": "60",
        "nvidia.com/gpu.slices.gi": "3",
        "nvidia.com/gpu.slices.ci": "3",
        "nvidia.com/gpu.engines.copy": "3",
        "nvidia.com/gpu.engines.decoder": "3",
        "nvidia.com/gpu.engines.encoder": "0",
        "nvidia.com/gpu.engines.jpeg": "3",
        "nvidia.com/gpu.engines.ofa": "0",
        "nvidia.com/gpu.family": "hopper",
        "nvidia.com/gpu.compute.major": "9",
        "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/gpu.machine": "ThinkSystem-SR680a-V3",
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/mps.capable": "false",
        "nvidia.com/vgpu.present": "false",
    }


def test_h200_mig_none_strategy_counts_physical_gpus_with_zero_replicas() -> None:
    labels = labels_of("h200-mig", "none")
    assert labels["nvidia.com/gpu.count"] == "2"
    assert labels["nvidia.com/gpu.replicas"] == "0"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200"
    assert labels["nvidia.com/gpu.memory"] == "143771"
    assert not any(k.startswith("nvidia.com/mig-") for k in labels)


def test_single_strategy_with_an_empty_mig_enabled_gpu_is_invalid(profile_doc) -> None:
    doc = profile_doc("h200-mig")
    doc["gpus"][1]["migDevices"] = []
    warnings: list[str] = []
    labels = labels_of(doc, "single", warnings=warnings)
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200-MIG-INVALID"
    assert any("enabled but empty" in w for w in warnings)
    # mixed ignores the empty GPU
    assert labels_of(doc, "mixed")["nvidia.com/mig-3g.71gb.count"] == "2"


def test_two_model_node_is_deterministic_and_counts_each_model() -> None:
    warnings: list[str] = []
    labels = gpu_only(labels_of("two-model", warnings=warnings))
    assert labels == {
        "nvidia.com/gpu.product": "NVIDIA-A100-80GB-PCIe",
        "nvidia.com/gpu.count": "2",
        "nvidia.com/gpu.memory": "81920",
        "nvidia.com/gpu.family": "ampere",
        "nvidia.com/gpu.compute.major": "8",
        "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/gpu.count.NVIDIA-A100-80GB-PCIe": "2",
        "nvidia.com/gpu.count.Tesla-T4": "1",
        "nvidia.com/gpu.machine": "ProLiant-DL380-Gen10-Plus",
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/mig.capable": "true",  # any GPU answering the MIG-mode query
        "nvidia.com/mps.capable": "false",
        "nvidia.com/vgpu.present": "false",
    }
    assert any("multiple GPU models" in w for w in warnings)


def test_two_model_tie_goes_to_the_model_owning_gpu0(profile_doc) -> None:
    doc = profile_doc("two-model")
    doc["gpus"] = doc["gpus"][:2]  # 1x T4 (GPU 0) + 1x A100
    assert labels_of(doc)["nvidia.com/gpu.product"] == "Tesla-T4"
    doc["gpus"].reverse()
    assert labels_of(doc)["nvidia.com/gpu.product"] == "NVIDIA-A100-80GB-PCIe"


def test_full_gpu_model_beats_mig_only_model(profile_doc) -> None:
    doc = profile_doc("two-model")
    for g in doc["gpus"][1:]:
        g["migMode"] = [1, 1]
        g["migDevices"] = [{"profile": "7g.80gb"}]
    labels = labels_of(doc)
    assert labels["nvidia.com/gpu.product"] == "Tesla-T4"
    assert labels["nvidia.com/gpu.family"] == "turing"
    assert labels["nvidia.com/gpu.count.NVIDIA-A100-80GB-PCIe"] == "2"


def test_non_mig_capable_node(profile_doc) -> None:
    doc = profile_doc("two-model")
    doc["gpus"] = doc["gpus"][:1]
    labels = labels_of(doc)
    assert labels["nvidia.com/mig.capable"] == "false"
    assert labels["nvidia.com/gpu.family"] == "turing"
    assert labels["nvidia.com/gpu.compute.minor"] == "5"
    assert not any(k.startswith("nvidia.com/gpu.count.") for k in labels)


def test_zero_gpus_only_timestamp_and_vgpu(profile_doc) -> None:
    doc = profile_doc("h100x8")
    doc["gpus"] = []
    assert labels_of(doc, timestamp=5) == {
        "nvidia.com/gfd.timestamp": "5",
        "nvidia.com/vgpu.present": "false",
    }


def test_gpu_mode_graphics_mixed_and_unknown(profile_doc) -> None:
    doc = profile_doc("h100x8")
    doc["models"]["h100-80gb"]["pciClass"] = 0x030000
    assert labels_of(doc)["nvidia.com/gpu.mode"] == "graphics"
    doc["gpus"][3]["pciClass"] = 0x030200
    assert labels_of(doc)["nvidia.com/gpu.mode"] == "unknown"
    doc["gpus"][3]["pciClass"] = None  # unreadable sysfs class
    assert labels_of(doc)["nvidia.com/gpu.mode"] == "unknown"


def test_memory_zero_omits_memory_label_and_cc_zero_omits_arch_labels() -> None:
    snap = snap_of("a100-40gb")
    gpu = dataclasses.replace(snap.gpus[0], memory_bytes=0, compute_major=0, compute_minor=0)
    labels = labels_of(dataclasses.replace(snap, gpus=(gpu,)))
    for suffix in ("memory", "family", "compute.major", "compute.minor"):
        assert f"nvidia.com/gpu.{suffix}" not in labels
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"


def test_machine_type_unknown_when_unreadable_empty_when_empty(profile_doc) -> None:
    doc = profile_doc("a100-40gb")
    del doc["host"]["machineType"]  # the fake host then cannot read it
    snap = snap_of(doc)
    assert snap.machine_type == "unknown"
    assert any("machine type unreadable" in w for w in snap.warnings)
    assert labels_of(snap)["nvidia.com/gpu.machine"] == "unknown"
    doc["host"]["machineType"] = "  \n"  # an empty DMI file: GFD labels the empty string
    assert labels_of(doc)["nvidia.com/gpu.machine"] == ""


def test_clique_label_when_all_attached_gpus_agree() -> None:
    snap = snap_of("h100x8")
    uuid = "7b968a6d-c8aa-45e1-9e07-e1e51be99c31"

    def with_fabric(fabrics: list[Fabric | None]):
        gpus = tuple(dataclasses.replace(g, fabric=f) for g, f in zip(snap.gpus, fabrics, strict=True))
        return dataclasses.replace(snap, gpus=gpus)

    ok = Fabric(state=3, status=0, cluster_uuid=uuid, clique_id=1)
    assert labels_of(with_fabric([ok] * 8))["nvidia.com/gpu.clique"] == f"{uuid}.1"
    # a GPU whose fabric is still in progress is not "attached" and does not veto
    pending = Fabric(state=2, status=0, cluster_uuid=uuid, clique_id=9)
    assert labels_of(with_fabric([ok] * 7 + [pending]))["nvidia.com/gpu.clique"] == f"{uuid}.1"
    # disagreeing clique ids or cluster UUIDs: no label
    other = Fabric(state=3, status=0, cluster_uuid=uuid, clique_id=2)
    assert "nvidia.com/gpu.clique" not in labels_of(with_fabric([ok] * 7 + [other]))
    zero = Fabric(state=3, status=0, cluster_uuid="00000000-0000-0000-0000-000000000000", clique_id=1)
    assert "nvidia.com/gpu.clique" not in labels_of(with_fabric([zero] * 8))
    assert "nvidia.com/gpu.clique" not in labels_of(snap)


def test_vgpu_labels() -> None:
    snap = dataclasses.replace(
        snap_of("a100-40gb"),
        vgpu=Vgpu(present=True, host_driver_version="550.54.16", host_driver_branch="r550_40"),
    )
    labels = labels_of(snap)
    assert labels["nvidia.com/vgpu.present"] == "true"
    assert labels["nvidia.com/vgpu.host-driver-version"] == "550.54.16"
    assert labels["nvidia.com/vgpu.host-driver-branch"] == "r550_40"
    # scan failed: no vGPU labels at all (GFD logs and skips)
    assert not any(k.startswith("nvidia.com/vgpu.") for k in labels_of(dataclasses.replace(snap, vgpu=None)))


def test_every_label_is_valid_for_kubernetes(profile_doc) -> None:
    doc = profile_doc("h100x8")
    doc["models"]["h100-80gb"]["name"] = "NVIDIA H100 " + "VeryLongMarketingName " * 4
    doc["host"]["machineType"] = "(weird)"
    warnings: list[str] = []
    labels = labels_of(doc, warnings=warnings)
    product = labels["nvidia.com/gpu.product"]
    assert len(product) <= 63 and product[-1].isalnum()
    assert labels["nvidia.com/gpu.machine"] == "weird"
    assert any("shortened" in w for w in warnings)
