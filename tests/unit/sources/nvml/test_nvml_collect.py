"""The NVML -> snapshot collector against the fake: call sequence, benign and fatal errors."""

from __future__ import annotations

import ctypes
from typing import Any

import pynvml
import pytest
from nvml_help import make_fake, snap_of

from nfd.nvml_fake import PROFILE_DIR, available_profiles, load_profile
from nfd.sources.nvml.collect import CollectError, collect
from nfd.sources.nvml.snapshotfeatures import snapshot_from_features, snapshot_to_features


def run(fake):
    fake.nvmlInit()
    try:
        return collect(fake, fake.host)
    finally:
        fake.nvmlShutdown()


def test_shipped_profiles_are_listed_and_load() -> None:
    names = set(available_profiles())
    assert {
        "a100-40gb",
        "a100-80gb",
        "h100-80gb",
        "h200",
        "h200-mig",
        "a100-mig-mixed",
        "h100-mig-mixed",
        "h100x8",
        "two-model",
    } <= names
    for name in names:
        doc = load_profile(name)
        assert doc.get("unverified"), f"{name}: say which values are unverified"
        with open(f"{PROFILE_DIR}/{name}.yaml", encoding="utf-8") as f:
            assert "NOT recorded on hardware" in f.read(), f"{name}: say it was not recorded on a GPU"


def test_unknown_profile_names_the_shipped_ones() -> None:
    with pytest.raises(ValueError, match="h100x8"):
        load_profile("no-such-gpu")


def test_h100x8_snapshot() -> None:
    snap = snap_of("h100x8")
    assert snap.driver_version == "550.54.15"
    assert snap.cuda_driver_version == 12040
    assert snap.nvml_version == "12.550.54.15"
    assert snap.machine_type == "PowerEdge XE9680"
    assert len(snap.gpus) == 8
    g = snap.gpus[4]
    assert (g.index, g.name, g.memory_mib) == (4, "NVIDIA H100 80GB HBM3", 81559)
    assert (g.compute_major, g.compute_minor) == (9, 0)
    assert (g.architecture, g.brand) == ("hopper", "nvidia")
    assert g.pci_bus_id == "00000000:9A:00.0"
    assert g.pci_device_id == "0x233010de"
    assert g.pci_class == 0x030200
    assert g.numa_node == 1
    assert g.uuid == "GPU-1a2b3c4d-0000-4000-8000-000000000004"
    assert (g.mig_capable, g.mig_enabled, g.mig_devices) == (True, False, ())
    assert g.fabric is None
    assert snap.warnings == ()


def test_mig_devices_and_profiles_resolved_through_nvml_tables() -> None:
    snap = snap_of("h100-mig-mixed")
    migs = snap.gpus[0].mig_devices
    assert [m.profile for m in migs] == ["3g.40gb", "1c.2g.20gb", "1c.2g.20gb", "1g.10gb", "1g.10gb.me"]
    assert [(m.gi_id, m.ci_id) for m in migs] == [(2, 0), (5, 0), (5, 1), (9, 0), (11, 0)]
    assert migs[0].multiprocessors == 60 and migs[1].multiprocessors == 16
    assert all(m.uuid.startswith("MIG-") for m in migs)
    assert snap.gpus[1].mig_devices == ()


def test_empty_mig_slots_are_skipped() -> None:
    fake = make_fake("h200-mig")
    # slots 0 and 1 are populated, 2..6 answer NOT_FOUND
    snap = run(fake)
    assert [len(g.mig_devices) for g in snap.gpus] == [2, 2]
    assert fake.calls["nvmlDeviceGetMigDeviceHandleByIndex"] == 14


def test_memory_error_is_only_a_warning() -> None:
    fake = make_fake("h100x8")
    fake.inject("nvmlDeviceGetMemoryInfo", "UNKNOWN", device=2)
    snap = run(fake)
    assert snap.gpus[2].memory_bytes == 0
    assert snap.gpus[1].memory_mib == 81559
    assert any("nvmlDeviceGetMemoryInfo (GPU 2)" in w for w in snap.warnings)


def test_mig_profiles_are_not_named_without_the_parents_memory() -> None:
    """The profile's size is a fraction of the GPU's memory: unread, it is unresolved, not
    ``3g.0gb`` (a resource the device plugin never advertises); GFD fails there too."""
    fake = make_fake("h200-mig")
    fake.inject("nvmlDeviceGetMemoryInfo", "NO_PERMISSION", device=1)
    snap = run(fake)
    assert [m.profile for m in snap.gpus[0].mig_devices] == ["3g.71gb", "3g.71gb"]
    assert [m.profile for m in snap.gpus[1].mig_devices] == ["", ""]
    assert "memory of GPU 1 unreadable" in snap.gpus[1].mig_devices[0].profile_error


def test_optional_calls_not_supported_are_silent() -> None:
    snap = snap_of("a100-40gb")  # numaNode: null -> NOT_SUPPORTED
    assert snap.gpus[0].numa_node is None
    assert snap.warnings == ()


@pytest.mark.parametrize(
    "call, error",
    [
        ("nvmlDeviceGetName", "GPU_IS_LOST"),
        ("nvmlDeviceGetCudaComputeCapability", "UNKNOWN"),
        ("nvmlDeviceGetHandleByIndex", "GPU_IS_LOST"),
        ("nvmlDeviceGetMigMode", "GPU_IS_LOST"),
        ("nvmlDeviceGetGpuFabricInfoV", "UNKNOWN"),
    ],
)
def test_fatal_device_errors(call: str, error: str) -> None:
    fake = make_fake("h100x8")
    fake.inject(call, error, device=3)
    with pytest.raises(CollectError) as e:
        run(fake)
    assert e.value.call == call and e.value.device == 3
    assert "GPU 3" in str(e.value)


def test_fatal_system_errors() -> None:
    fake = make_fake("h100x8")
    fake.inject("nvmlSystemGetDriverVersion", "UNINITIALIZED")
    with pytest.raises(CollectError, match="nvmlSystemGetDriverVersion"):
        run(fake)


def test_mig_attribute_error_is_fatal() -> None:
    fake = make_fake("a100-mig-mixed")
    fake.inject("nvmlDeviceGetAttributes", "GPU_IS_LOST", device=1)
    with pytest.raises(CollectError, match="nvmlDeviceGetAttributes"):
        run(fake)


def test_mig_mode_not_supported_or_missing_symbol_means_not_capable() -> None:
    fake = make_fake("h100x8")
    fake.inject("nvmlDeviceGetMigMode", "FUNCTION_NOT_FOUND")
    snap = run(fake)
    assert not any(g.mig_capable for g in snap.gpus)


def test_no_mig_monitor_permission_leaves_profile_unresolved() -> None:
    fake = make_fake("a100-mig-mixed")
    fake.inject("nvmlDeviceGetGpuInstanceById", "NO_PERMISSION")
    snap = run(fake)
    migs = snap.mig_devices()
    assert len(migs) == 9
    assert all(m.profile == "" for m in migs)
    assert "nvmlDeviceGetGpuInstanceById" in migs[0].profile_error
    assert "NVML code 4" in migs[0].profile_error  # NVML_ERROR_NO_PERMISSION
    assert migs[0].memory_mib == 19968  # attributes are still known


def test_old_driver_profile_info_falls_back_to_v1() -> None:
    fake = make_fake("a100-mig-mixed")
    fake.inject("nvmlDeviceGetGpuInstanceProfileInfoV", "FUNCTION_NOT_FOUND")
    fake.inject("nvmlGpuInstanceGetComputeInstanceProfileInfoV", "FUNCTION_NOT_FOUND")
    snap = run(fake)
    assert {m.profile for m in snap.mig_devices()} == {"3g.20gb", "1g.5gb"}
    assert fake.calls["nvmlDeviceGetGpuInstanceProfileInfo"] > 0


def test_fabric_info_fills_the_ctypes_struct(profile_doc) -> None:
    doc = profile_doc("h100x8")
    doc["models"]["h100-80gb"]["fabric"] = {
        "clusterUuid": "7b968a6d-c8aa-45e1-9e07-e1e51be99c31",
        "cliqueId": 1,
        "state": 3,
        "status": 0,
    }
    snap = snap_of(doc)
    f = snap.gpus[0].fabric
    assert f is not None and f.attached
    assert (f.cluster_uuid, f.clique_id) == ("7b968a6d-c8aa-45e1-9e07-e1e51be99c31", 1)


def test_legacy_fabric_call_when_v_is_missing(profile_doc) -> None:
    doc = profile_doc("h100x8")
    doc["models"]["h100-80gb"]["fabric"] = {
        "clusterUuid": "7b968a6d-c8aa-45e1-9e07-e1e51be99c31",
        "cliqueId": 4,
    }
    fake = make_fake(doc)
    fake.inject("nvmlDeviceGetGpuFabricInfoV", "FUNCTION_NOT_FOUND")
    snap = run(fake)
    assert snap.gpus[0].fabric is not None and snap.gpus[0].fabric.clique_id == 4
    assert fake.calls["nvmlDeviceGetGpuFabricInfo"] == 8


def test_fake_raises_real_pynvml_errors() -> None:
    fake = make_fake("h100x8")
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        fake.nvmlDeviceGetCount()
    fake.inject("nvmlInit", "DRIVER_NOT_LOADED", times=1)
    with pytest.raises(pynvml.NVMLError_DriverNotLoaded):
        fake.nvmlInit()
    fake.nvmlInit()  # the fault fired once
    fake.inject("nvmlDeviceGetName", "GPU_IS_LOST", device=3, after=1)
    h3 = fake.nvmlDeviceGetHandleByIndex(3)
    assert fake.nvmlDeviceGetName(h3) == "NVIDIA H100 80GB HBM3"
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        fake.nvmlDeviceGetName(h3)
    assert fake.nvmlDeviceGetName(fake.nvmlDeviceGetHandleByIndex(2)) == "NVIDIA H100 80GB HBM3"
    with pytest.raises(pynvml.NVMLError_NotSupported):
        fake.nvmlDeviceGetMigMode(make_fake("two-model").gpus[0])


def test_fault_spec_string() -> None:
    fake = make_fake("h100x8")
    fake.inject_spec("nvmlInit=LIBRARY_NOT_FOUND*2, nvmlDeviceGetName@1=GPU_IS_LOST")
    assert [(f.call, f.code, f.device, f.times) for f in fake.faults] == [
        ("nvmlInit", pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, None, 2),
        ("nvmlDeviceGetName", pynvml.NVML_ERROR_GPU_IS_LOST, 1, None),
    ]
    with pytest.raises(ValueError):
        fake.inject("nvmlInit", "NOT_AN_ERROR")


def test_features_round_trip_keeps_everything_labels_need() -> None:
    for name in available_profiles():
        snap = snap_of(name)
        back = snapshot_from_features(snapshot_to_features(snap))
        assert back == snap, name


def test_features_shape_for_rules() -> None:
    f = snapshot_to_features(snap_of("a100-mig-mixed"))
    gpu0 = f.instances["nvml.gpu"][0]
    assert gpu0["product"] == "NVIDIA-A100-SXM4-40GB"
    assert gpu0["mig_mode"] == "enabled"
    assert gpu0["family"] == "ampere"
    assert gpu0["compute_capability"] == "8.0"
    assert gpu0["memory"] == "40960"
    assert len(f.instances["nvml.mig"]) == 9
    assert f.instances["nvml.mig"][2]["profile"] == "1g.5gb"
    assert f.instances["nvml.mig"][2]["parent_index"] == "1"
    assert f.attributes["nvml.driver"]["cuda_version"] == "12.4"
    assert f.attributes["nvml.system"]["gpu_count"] == "2"
    assert f.attributes["nvml.system"]["mig_device_count"] == "9"
    # upstream JSON shape round-trips too
    from nfd.api.features import Features

    assert Features.from_json(f.to_json()) == f


@pytest.mark.parametrize("element", [ctypes.c_char, ctypes.c_ubyte], ids=["c_char", "c_ubyte"])
def test_cluster_uuid_bytes_whatever_pynvml_declares(element: Any) -> None:
    """nvidia-ml-py 12.570-12.575 declare the fabric clusterUuid as c_char[16] (reading the field
    gives bytes cut at the first NUL), 13.580+ as c_ubyte[16]: the UUID is read whole either way."""
    from nfd.sources.nvml import backend as nv

    class Info(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint), ("clusterUuid", element * 16), ("status", ctypes.c_uint)]

    raw = bytes(range(16))  # a NUL first: c_char would read it as b""
    info = Info()
    nv.set_field_bytes(info, "clusterUuid", raw)
    info.status = 7
    assert nv.field_bytes(info, "clusterUuid") == raw and info.status == 7
