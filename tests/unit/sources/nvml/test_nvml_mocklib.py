"""The nvml source through the real pynvml, on the mock libnvidia-ml.so.1 (tests/tools/mocknvml).

Every other GPU test replaces pynvml with the Python fake; here pynvml loads a C library with
NVML's ABI (compiled against go-nvml's nvml.h) through its own ``CDLL("libnvidia-ml.so.1")``,
so its ctypes structures, the versioned structs, NVML's error codes and nvmlErrorString run.
Each profile runs in a fresh process (the library loads once per process), and what the worker
makes of it -- features, labels for every MIG strategy, the error it counted -- must equal what
the Python fake gives for the same profile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nfd.nvml_fake import available_profiles, load_profile
from tests.support import mocknvml


def _views(lib_dir: Path, tmp_path: Path, profile: str, faults: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
    env = mocknvml.prepare(profile, tmp_path, faults=faults, lib_dir=lib_dir)
    return mocknvml.mock_view(env), mocknvml.fake_view(profile, faults)


@pytest.mark.parametrize("profile", available_profiles())
def test_worker_through_pynvml_equals_the_python_fake(lib_dir: Path, tmp_path: Path, profile: str) -> None:
    mock, fake = _views(lib_dir, tmp_path, profile)
    assert mock["backend"] == "pynvml" and mock["library"] == mocknvml.LIBRARY, mock
    assert mock["features"] == fake["features"]
    assert mock["labels"] == fake["labels"]
    assert (mock["errors_total"], mock["last_error"]) == (fake["errors_total"], fake["last_error"])
    system = mock["features"]["attributes"]["nvml.system"]["elements"]
    assert system["gpu_count"] == str(len(load_profile(profile)["gpus"]))


def test_shipped_profiles_cover_the_kinds_of_node() -> None:
    """H100 x8, A100 mixed MIG, H200 MIG, a GB200 tray in a clique, L4 and a consumer card, and
    a node whose driver answers errors."""
    assert {"h100x8", "a100-mig-mixed", "h200-mig", "gb200-nvl", "l4", "rtx4090", "gpu-errors"} <= set(
        available_profiles())


FAULTS = [
    # fatal: the pass fails, nothing was good before, the error is counted with NVML's own words
    ("gpu-errors", "nvmlDeviceGetName@1=GPU_IS_LOST"),
    ("h100x8", "nvmlDeviceGetCudaComputeCapability@5=GPU_IS_LOST"),
    ("gb200-nvl", "nvmlDeviceGetGpuFabricInfoV@2=NO_PERMISSION"),
    ("h100-mig-mixed", "nvmlDeviceGetMigMode@0=NO_PERMISSION"),
    ("a100-mig-mixed", "nvmlDeviceGetAttributes@1=GPU_IS_LOST"),
    ("h100x8", "nvmlDeviceGetCount=UNKNOWN"),
    # benign: warnings, the labels from what answered
    ("a100-mig-mixed", "nvmlDeviceGetGpuInstanceProfileInfoV@0=NO_PERMISSION"),
    ("h200-mig", "nvmlDeviceGetMemoryInfo@1=NO_PERMISSION"),
    ("l4", "nvmlDeviceGetPciInfo=GPU_IS_LOST"),
    # health: a lost GPU (every call on it GPU_IS_LOST), a health read failing with another error
    ("h100x8-unhealthy", "*@7=GPU_IS_LOST"),
    ("h100x8", "nvmlDeviceGetRemappedRows@2=NO_PERMISSION"),
    # no usable NVML: the source is off
    ("h100x8", "nvmlInit=DRIVER_NOT_LOADED"),
    ("h100x8", "nvmlInit=LIBRARY_NOT_FOUND"),
]


@pytest.mark.parametrize(("profile", "faults"), FAULTS, ids=[f"{p}:{f}" for p, f in FAULTS])
def test_errors_through_pynvml_equal_the_python_fake(lib_dir: Path, tmp_path: Path, profile: str,
                                                     faults: str) -> None:
    mock, fake = _views(lib_dir, tmp_path, profile, faults)
    assert mock["features"] == fake["features"]
    assert mock["labels"] == fake["labels"]
    assert (mock["errors_total"], mock["last_error"]) == (fake["errors_total"], fake["last_error"])


def test_a_lost_gpu_is_reported_in_nvmls_words(lib_dir: Path, tmp_path: Path) -> None:
    mock, _ = _views(lib_dir, tmp_path, "gpu-errors", "nvmlDeviceGetName@1=GPU_IS_LOST")
    assert mock["errors_total"] == {"none": 1, "single": 1, "mixed": 1}
    assert mock["last_error"]["none"] == "nvmlDeviceGetName (GPU 1): GPU is lost (NVML code 15)"
    assert mock["labels"] == {"none": {}, "single": {}, "mixed": {}}  # nothing good yet: no labels at all


def test_profile_errors_reach_the_worker_as_warnings(lib_dir: Path, tmp_path: Path) -> None:
    mock, _ = _views(lib_dir, tmp_path, "gpu-errors")
    assert "nvmlDeviceGetMemoryInfo (GPU 0): Insufficient Permissions (NVML code 4)" in mock["stderr"]
    assert "nvmlDeviceGetUUID (GPU 1): GPU is lost (NVML code 15)" in mock["stderr"]
    labels = mock["labels"]["none"]
    assert labels["nvidia.com/gpu.count"] == "2" and labels["nvidia.com/gpu.mode"] == "unknown"


def test_clique_from_the_versioned_fabric_struct(lib_dir: Path, tmp_path: Path) -> None:
    mock, _ = _views(lib_dir, tmp_path, "gb200-nvl")
    labels = mock["labels"]["none"]
    assert labels["nvidia.com/gpu.clique"] == "3f1c2b7a-8d4e-4c6b-9a1f-5e2d7c9b0a14.32766"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-GB200" and labels["nvidia.com/gpu.family"] == "blackwell"


def test_mig_profiles_resolved_through_pynvml(lib_dir: Path, tmp_path: Path) -> None:
    mock, _ = _views(lib_dir, tmp_path, "h100-mig-mixed")
    migs = mock["features"]["instances"]["nvml.mig"]["elements"]
    assert sorted(m["attributes"]["profile"] for m in migs) == [
        "1c.2g.20gb", "1c.2g.20gb", "1g.10gb", "1g.10gb.me", "3g.40gb"]
    assert mock["labels"]["mixed"]["nvidia.com/mig-1c.2g.20gb.count"] == "2"


def test_health_through_pynvml(lib_dir: Path, tmp_path: Path) -> None:
    """Each health signal of h100x8-unhealthy arrives through pynvml's ctypes calls; a lost GPU
    is reported lost while the GPU features stay out (nothing good was read yet)."""
    mock, _ = _views(lib_dir, tmp_path, "h100x8-unhealthy", "*@7=GPU_IS_LOST")
    summary = mock["features"]["attributes"]["nvml.health_summary"]["elements"]
    assert summary["reason"] == "gpu-lost" and summary["unhealthy_gpus"] == "1,2,3,4,6,7"
    assert summary["reasons"] == "gpu-lost,row-remap-failed,ecc-uncorrected,row-remap-pending,pages-pending,nvlink-down"
    gpus = [e["attributes"] for e in mock["features"]["instances"]["nvml.health"]["elements"]]
    assert [g["reasons"] for g in gpus] == ["", "ecc-uncorrected", "pages-pending", "row-remap-pending",
                                            "row-remap-failed", "", "nvlink-down", "gpu-lost"]
    assert gpus[7]["lost"] == "true" and gpus[7]["uuid"] == ""  # never answered: not known
    consumer, _ = _views(lib_dir, tmp_path / "rtx", "rtx4090")
    (g,) = [e["attributes"] for e in consumer["features"]["instances"]["nvml.health"]["elements"]]
    assert g["healthy"] == "true" and "ecc_uncorrected_volatile" not in g and "row_remap_pending" not in g


def test_cli_under_the_mock(lib_dir: Path, tmp_path: Path) -> None:
    """`python -m tests.support.mocknvml PROFILE -- nfd ...`: the documented way to try it."""
    env = {k: v for k, v in os.environ.items() if k not in ("NFD_NVML_PROFILE", "NFD_NVML_FAULTS")}
    r = subprocess.run([sys.executable, "-m", "tests.support.mocknvml", "rtx4090", "--", sys.executable, "-m",
                        "nfd.cli", "export", "labels", "--sources", "nvml", "-o", "json"],
                       cwd=mocknvml.REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    labels = json.loads(r.stdout)
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-GeForce-RTX-4090"
    assert labels["nvidia.com/gpu.mode"] == "graphics"  # the PCI class from the host root's sysfs


# ---- the library's ABI, straight through ctypes ------------------------------------------------

ABI_SCRIPT = r"""
import ctypes, json, os, sys

lib = ctypes.CDLL("libnvidia-ml.so.1")
names = json.loads(sys.argv[3])
out = {"missing": [n for n in names if not hasattr(lib, n)]}
u, i = ctypes.c_uint, ctypes.c_int
ref = ctypes.byref


class Fabric(ctypes.Structure):  # nvmlGpuFabricInfo_v3_t
    _fields_ = [("version", u), ("clusterUuid", ctypes.c_ubyte * 16), ("status", u), ("cliqueId", u),
                ("state", u), ("healthMask", u), ("healthSummary", ctypes.c_ubyte)]


class FabricV2(ctypes.Structure):  # nvmlGpuFabricInfo_v2_t
    _fields_ = Fabric._fields_[:-1]


class Memory2(ctypes.Structure):  # nvmlMemory_v2_t
    _fields_ = [("version", u), ("total", ctypes.c_ulonglong), ("reserved", ctypes.c_ulonglong),
                ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class GiProfile2(ctypes.Structure):  # nvmlGpuInstanceProfileInfo_v2_t
    _fields_ = [(n, u) for n in ("version", "id", "isP2pSupported", "sliceCount", "instanceCount",
                                 "multiprocessorCount", "copyEngineCount", "decoderCount", "encoderCount",
                                 "jpegCount", "ofaCount")] + [("memorySizeMB", ctypes.c_ulonglong),
                                                              ("name", ctypes.c_char * 96)]


def version(struct, v):
    return ctypes.sizeof(struct) | (v << 24)


lib.nvmlErrorString.restype = ctypes.c_char_p
n = u()
dev = ctypes.c_void_p()
out["count_before_init"] = lib.nvmlDeviceGetCount_v2(ref(n))
data = os.environ.pop("NFD_MOCK_NVML_DATA")
out["init_without_data"] = lib.nvmlInit_v2()
os.environ["NFD_MOCK_NVML_DATA"] = sys.argv[1]
out["init"] = lib.nvmlInit_v2()
out["init_with_flags"] = lib.nvmlInitWithFlags(0)
out["count"] = (lib.nvmlDeviceGetCount_v2(ref(n)), n.value)
out["count_null"] = lib.nvmlDeviceGetCount_v2(None)
out["handle_out_of_range"] = lib.nvmlDeviceGetHandleByIndex_v2(99, ref(dev))
out["handle_null"] = lib.nvmlDeviceGetHandleByIndex_v2(0, None)
out["handle"] = lib.nvmlDeviceGetHandleByIndex_v2(0, ref(dev))
buf = ctypes.create_string_buffer(96)
out["name"] = (lib.nvmlDeviceGetName(dev, buf, 96), buf.value.decode())
out["name_short_buffer"] = lib.nvmlDeviceGetName(dev, buf, 5)
out["name_null"] = lib.nvmlDeviceGetName(dev, None, 96)
out["driver_short_buffer"] = lib.nvmlSystemGetDriverVersion(buf, 3)
out["unknown_handle"] = lib.nvmlDeviceGetName(ctypes.c_void_p(0x1000), buf, 96)
fab = Fabric()
out["fabric_no_version"] = lib.nvmlDeviceGetGpuFabricInfoV(dev, ref(fab))
fab.version = version(Fabric, 3)
out["fabric_v3"] = (lib.nvmlDeviceGetGpuFabricInfoV(dev, ref(fab)), fab.cliqueId, fab.state, bytes(fab.clusterUuid).hex())
fab2 = FabricV2(version=version(FabricV2, 2))
out["fabric_v2"] = (lib.nvmlDeviceGetGpuFabricInfoV(dev, ref(fab2)), fab2.cliqueId)
fab2.version = version(FabricV2, 3)
out["fabric_wrong_version"] = lib.nvmlDeviceGetGpuFabricInfoV(dev, ref(fab2))
mem = Memory2()
out["memory_v2_no_version"] = lib.nvmlDeviceGetMemoryInfo_v2(dev, ref(mem))
mem.version = version(Memory2, 2)
out["memory_v2"] = (lib.nvmlDeviceGetMemoryInfo_v2(dev, ref(mem)), mem.total)
gi = GiProfile2()
out["gi_profile_no_version"] = lib.nvmlDeviceGetGpuInstanceProfileInfoV(dev, 0, ref(gi))
gi.version = version(GiProfile2, 2)
out["gi_profile_lacking"] = lib.nvmlDeviceGetGpuInstanceProfileInfoV(dev, 0, ref(gi))
out["gi_profile_out_of_range"] = lib.nvmlDeviceGetGpuInstanceProfileInfoV(dev, 99, ref(gi))
cur, pend = u(), u()
out["mig_mode"] = (lib.nvmlDeviceGetMigMode(dev, ref(cur), ref(pend)), cur.value, pend.value)
out["errors"] = {c: lib.nvmlErrorString(c).decode() for c in (0, 3, 4, 15, 25, 999)}
out["shutdowns"] = [lib.nvmlShutdown(), lib.nvmlDeviceGetCount_v2(ref(n)), lib.nvmlShutdown(),
                    lib.nvmlDeviceGetCount_v2(ref(n)), lib.nvmlShutdown()]
# another profile after a full shutdown: its per-GPU errors
os.environ["NFD_MOCK_NVML_DATA"] = sys.argv[2]
out["init_errors_profile"] = lib.nvmlInit_v2()
mem1 = (ctypes.c_ulonglong * 3)()
per_gpu = []
for index in range(2):
    lib.nvmlDeviceGetHandleByIndex_v2(index, ref(dev))
    per_gpu.append({"memory": lib.nvmlDeviceGetMemoryInfo(dev, mem1),
                    "uuid": lib.nvmlDeviceGetUUID(dev, buf, 96),
                    "name": lib.nvmlDeviceGetName(dev, buf, 96)})
out["per_gpu"] = per_gpu
lib.nvmlShutdown()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def abi(lib_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("abi")
    env = mocknvml.prepare("gb200-nvl", tmp / "gb200", lib_dir=lib_dir, with_host=False)
    mocknvml.prepare("gpu-errors", tmp / "errors", lib_dir=lib_dir, with_host=False)
    r = subprocess.run([sys.executable, "-c", ABI_SCRIPT, str(tmp / "gb200" / "nvml.data"),
                        str(tmp / "errors" / "nvml.data"),
                        json.dumps(mocknvml.PYNVML_SYMBOLS + mocknvml.GO_SYMBOLS)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    result: dict[str, Any] = json.loads(r.stdout)
    return result


SUCCESS, UNINITIALIZED, INVALID_ARGUMENT, NOT_SUPPORTED, NO_PERMISSION = 0, 1, 2, 3, 4
INSUFFICIENT_SIZE, DRIVER_NOT_LOADED, GPU_IS_LOST, ARGUMENT_VERSION_MISMATCH = 7, 9, 15, 25


def test_abi_exports_every_symbol_pynvml_gfd_and_the_device_plugin_use(abi: dict[str, Any]) -> None:
    assert abi["missing"] == []


def test_abi_init_and_shutdown_are_reference_counted(abi: dict[str, Any]) -> None:
    assert abi["count_before_init"] == UNINITIALIZED
    assert abi["init_without_data"] == DRIVER_NOT_LOADED  # no profile: as a machine without the driver
    assert (abi["init"], abi["init_with_flags"]) == (SUCCESS, SUCCESS)
    assert abi["count"] == [SUCCESS, 4]
    # two inits: the first shutdown leaves NVML up, the second takes it down, a third is refused
    assert abi["shutdowns"] == [SUCCESS, SUCCESS, SUCCESS, UNINITIALIZED, UNINITIALIZED]


def test_abi_arguments(abi: dict[str, Any]) -> None:
    assert abi["count_null"] == INVALID_ARGUMENT
    assert abi["handle_out_of_range"] == INVALID_ARGUMENT
    assert abi["handle_null"] == INVALID_ARGUMENT
    assert abi["name_null"] == INVALID_ARGUMENT
    assert abi["unknown_handle"] == INVALID_ARGUMENT
    assert abi["name"] == [SUCCESS, "NVIDIA GB200"]
    assert abi["name_short_buffer"] == INSUFFICIENT_SIZE
    assert abi["driver_short_buffer"] == INSUFFICIENT_SIZE


def test_abi_versioned_structs(abi: dict[str, Any]) -> None:
    assert abi["fabric_no_version"] == ARGUMENT_VERSION_MISMATCH
    assert abi["fabric_wrong_version"] == ARGUMENT_VERSION_MISMATCH  # v3's number on a v2-sized struct
    assert abi["fabric_v3"] == [SUCCESS, 32766, 3, "3f1c2b7a8d4e4c6b9a1f5e2d7c9b0a14"]
    assert abi["fabric_v2"] == [SUCCESS, 32766]
    assert abi["memory_v2_no_version"] == ARGUMENT_VERSION_MISMATCH
    assert abi["memory_v2"] == [SUCCESS, 198674743296]
    assert abi["gi_profile_no_version"] == ARGUMENT_VERSION_MISMATCH
    assert abi["gi_profile_lacking"] == NOT_SUPPORTED  # GB200 profile without a GPU-instance table
    assert abi["gi_profile_out_of_range"] == INVALID_ARGUMENT
    assert abi["mig_mode"] == [SUCCESS, 0, 0]


def test_abi_error_strings(abi: dict[str, Any]) -> None:
    assert abi["errors"] == {"0": "Success", "3": "Not Supported", "4": "Insufficient Permissions",
                             "15": "GPU is lost", "25": "Argument version mismatch", "999": "Unknown Error"}


def test_abi_per_gpu_errors_from_the_profile(abi: dict[str, Any]) -> None:
    assert abi["init_errors_profile"] == SUCCESS
    assert abi["per_gpu"] == [
        {"memory": NO_PERMISSION, "uuid": SUCCESS, "name": SUCCESS},
        {"memory": SUCCESS, "uuid": GPU_IS_LOST, "name": SUCCESS},
    ]


XID_WATCHER_SCRIPT = r"""
import json, sys, time
import pynvml
from nfd.sources.nvml.health import HealthTracker, XidWatcher

tracker = HealthTracker()
watcher = XidWatcher(pynvml, tracker, wait_ms=100)
watcher.start()
deadline = time.monotonic() + 30
while watcher.registered < int(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.02)
print(json.dumps({"registered": watcher.registered}), flush=True)
sys.stdin.readline()  # the parent has written its events
want = int(sys.argv[2])
while len(tracker._pending) < want and time.monotonic() < deadline:
    time.sleep(0.02)
watcher.stop()
print(json.dumps({"xids": sorted([u, x] for u, x, _ in tracker._pending), "errors": watcher.errors}), flush=True)
"""


def test_the_xid_watcher_reads_the_library_s_events_through_pynvml(lib_dir: Path, tmp_path: Path) -> None:
    """XIDs injected through the mock's event file reach the health tracker by pynvml's own
    nvmlEventSetCreate/RegisterEvents/EventSetWait_v2 (the versioned event struct), each once,
    with the GPU named by its UUID; the watcher's bounded waits time out without an error."""
    env = mocknvml.prepare("h100x8", tmp_path, lib_dir=lib_dir)
    uuids = [g["uuid"] for g in load_profile("h100x8")["gpus"]]
    proc = subprocess.Popen([sys.executable, "-c", XID_WATCHER_SCRIPT, "8", "2"], cwd=mocknvml.REPO_ROOT,
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert json.loads(proc.stdout.readline()) == {"registered": 8}
        events = tmp_path / mocknvml.EVENTS_FILE
        mocknvml.inject_event(events, 2, 79)
        mocknvml.inject_event(events, uuids[5], 48)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out = json.loads(proc.stdout.readline())
    finally:
        proc.kill()
        proc.wait(10)
    assert out == {"xids": sorted([[uuids[2], 79], [uuids[5], 48]]), "errors": 0}, proc.stderr.read() if proc.stderr else ""
