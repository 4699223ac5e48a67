"""Our labels against NVIDIA's gpu-feature-discovery itself, both on the mock NVML library.

GFD v0.17.4 (tests/tools/gfd, built from the Go module proxy and cached) runs one-shot with
``--output-file`` over tests/tools/mocknvml's libnvidia-ml.so.1 (go-nvml dlopens it through
LD_LIBRARY_PATH) and the profile's host root (bind-mounted over /sys in a private mount
namespace: GFD reads PCI functions and the DMI name at fixed paths); the worker runs on the same
library and host root. Labels must be equal for every profile and MIG strategy, but for the
differences docs/compatibility.md lists ("NVIDIA GPU labels"), each asserted here as such.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nfd.nvml_fake import available_profiles, load_profile
from nfd.sources.nvml.naming import sanitise
from tests.support import hostroot, mocknvml
from tests.support.gfd import both

STRATEGIES = mocknvml.STRATEGIES
#: the labels that describe the model GFD's gpu.* labels are about
MODEL_KEYS = {f"nvidia.com/gpu.{k}" for k in ("product", "count", "memory", "family", "compute.major",
                                               "compute.minor", "replicas", "sharing-strategy")}


@pytest.fixture(scope="module")
def gfd() -> Path:
    from tests.e2e.build import BuildError, find_go
    from tests.e2e.tools import ensure_tool

    why = hostroot.why_not()
    if why:
        pytest.skip(f"gpu-feature-discovery reads /sys at fixed paths: {why}")
    if find_go() is None:
        pytest.skip("Go is not installed: cannot build gpu-feature-discovery (tests/tools/gfd)")
    try:
        return ensure_tool("gpu-feature-discovery",
                           log=lambda m: print(f"nfd gfd: {m}", file=sys.__stderr__, flush=True))
    except BuildError as e:
        pytest.fail(f"cannot build tests/tools/gfd: {e}", pytrace=False)



def test_gfd_runs_on_the_mock(gfd: Path, lib_dir: Path, tmp_path: Path) -> None:
    _, theirs = both(gfd, lib_dir, tmp_path, "h100x8", strategies=("none",))
    assert isinstance(theirs["none"], dict), theirs["none"]
    assert theirs["none"]["nvidia.com/gpu.count"] == "8"
    assert theirs["none"]["nvidia.com/gpu.machine"] == "PowerEdge-XE9680"  # DMI of the host root


@pytest.mark.parametrize("profile", [p for p in available_profiles() if p != "gpu-errors"])
def test_labels_equal_gfds(gfd: Path, lib_dir: Path, tmp_path: Path, profile: str) -> None:
    ours, theirs = both(gfd, lib_dir, tmp_path, profile)
    models = {sanitise(m["name"]) for m in load_profile(profile)["models"].values()}
    for strategy in STRATEGIES:
        mine, gfds = ours[strategy], theirs[strategy]
        assert isinstance(gfds, dict), f"{profile}/{strategy}: GFD failed: {gfds}"
        if len(models) > 1:
            # several models: our gpu.count.<model> labels, and GFD's gpu.* describe a random model
            mine = {k: v for k, v in mine.items() if not k.startswith("nvidia.com/gpu.count.")}
            assert gfds["nvidia.com/gpu.product"] in models
            if gfds["nvidia.com/gpu.product"] != mine["nvidia.com/gpu.product"]:
                mine = {k: v for k, v in mine.items() if k not in MODEL_KEYS}
                gfds = {k: v for k, v in gfds.items() if k not in MODEL_KEYS}
        assert mine == gfds, f"{profile}/{strategy}"


# faults, and how the two answer: "same" labels; "none" on both (GFD exits, nfd has no good pass
# to keep); or one of the differences docs/compatibility.md lists
FAULTS = [
    ("gpu-errors", "", "nfd-contains"),  # GPU 1's PCI info lost
    ("h100x8", "nvmlDeviceGetPciInfo@1=GPU_IS_LOST", "nfd-contains"),
    ("h100x8", "nvmlDeviceGetMemoryInfo@1=NO_PERMISSION", "same"),
    ("h100x8", "nvmlDeviceGetUUID@1=GPU_IS_LOST", "same"),
    ("h100x8", "nvmlDeviceGetBrand@0=NO_PERMISSION", "same"),
    ("h100x8", "nvmlSystemGetNVMLVersion=NO_PERMISSION", "same"),
    ("h100x8", "nvmlDeviceGetCudaComputeCapability@5=GPU_IS_LOST", "gfd-reads-one-gpu"),
    ("h100x8", "nvmlDeviceGetName@1=GPU_IS_LOST", "none"),
    ("h100x8", "nvmlDeviceGetCount=UNKNOWN", "none"),
    ("h100-mig-mixed", "nvmlDeviceGetMigMode@0=NO_PERMISSION", "none"),
    ("a100-mig-mixed", "nvmlDeviceGetAttributes@1=GPU_IS_LOST", "none"),
    ("h200-mig", "nvmlDeviceGetMemoryInfo@1=NO_PERMISSION", "none"),
]


@pytest.mark.parametrize(("profile", "faults", "outcome"), FAULTS, ids=[f"{p}:{f}" for p, f, _ in FAULTS])
def test_errors_as_gfd_or_as_documented(gfd: Path, lib_dir: Path, tmp_path: Path, profile: str, faults: str,
                                        outcome: str) -> None:
    ours, theirs = both(gfd, lib_dir, tmp_path, profile, faults, strategies=("mixed",))
    mine, gfds = ours["mixed"], theirs["mixed"]
    if outcome == "same":
        assert mine == gfds
    elif outcome == "none":
        assert isinstance(gfds, str) and mine == {}, (gfds, mine)
    elif outcome == "nfd-contains":
        # GFD exits on a GPU's failed PCI info query; nfd labels the node, gpu.mode=unknown
        assert isinstance(gfds, str) and "error getting PCI info" in gfds
        assert mine["nvidia.com/gpu.mode"] == "unknown" and mine["nvidia.com/gpu.count"]
    elif outcome == "gfd-reads-one-gpu":
        # GFD reads the compute capability of one GPU per model; nfd of every GPU, and a failure
        # of any is fatal to the pass (no good pass yet: no labels)
        assert isinstance(gfds, dict) and gfds["nvidia.com/gpu.compute.major"] == "9"
        assert mine == {}
    else:
        raise AssertionError(outcome)


def test_unreadable_pci_class_is_unknown_as_in_gfd_0_20(gfd: Path, lib_dir: Path, tmp_path: Path) -> None:
    """No sysfs class file for the GPU: GFD v0.17.4 exits ("unable to read PCI device class");
    nfd labels gpu.mode=unknown, as GFD does after v0.17 (docs/compatibility.md)."""
    doc = load_profile("l4")
    doc["models"]["l4"]["pciClass"] = None
    ours, theirs = both(gfd, lib_dir, tmp_path, doc, strategies=("none",))
    assert isinstance(theirs["none"], str) and "unable to read PCI device class" in theirs["none"]
    assert ours["none"]["nvidia.com/gpu.mode"] == "unknown"
