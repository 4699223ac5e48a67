"""GFD's naming rules: product sanitising, architecture family, MIG profile names, label validity.

Pure functions; the values they produce are compared byte-for-byte with what
gpu-feature-discovery publishes (see docs/gpu.md).
"""

from __future__ import annotations

import math
import re

from nfd.api.validation import is_valid_label_value, qualified_name_errors

# the nvml.* feature names (here, so the source can tell "no GPU" without loading the labeller)
GPU = "nvml.gpu"
MIG = "nvml.mig"
DRIVER = "nvml.driver"
SYSTEM = "nvml.system"
HEALTH = "nvml.health"
HEALTH_SUMMARY = "nvml.health_summary"

# NVML GPU-instance profile *indices* (pynvml NVML_GPU_INSTANCE_PROFILE_*) -> slice count and the
# attribute suffix go-nvlib appends ("+me", "+me.all", "+gfx", or the negative "-me").
_GI_PROFILES: dict[int, tuple[int, str]] = {
    0: (1, ""),  # 1_SLICE
    1: (2, ""),  # 2_SLICE
    2: (3, ""),  # 3_SLICE
    3: (4, ""),  # 4_SLICE
    4: (7, ""),  # 7_SLICE
    5: (8, ""),  # 8_SLICE
    6: (6, ""),  # 6_SLICE
    7: (1, "+me"),  # 1_SLICE_REV1
    8: (2, "+me"),  # 2_SLICE_REV1
    9: (1, ""),  # 1_SLICE_REV2
    10: (1, "+gfx"),  # 1_SLICE_GFX
    11: (2, "+gfx"),  # 2_SLICE_GFX
    12: (4, "+gfx"),  # 4_SLICE_GFX
    13: (1, "-me"),  # 1_SLICE_NO_ME
    14: (2, "-me"),  # 2_SLICE_NO_ME
    15: (1, "+me.all"),  # 1_SLICE_ALL_ME
    16: (2, "+me.all"),  # 2_SLICE_ALL_ME
    # 17 (3_SLICE_GFX) is not known to go-nvlib: it cannot name such a profile, nor can we
}

# NVML compute-instance profile indices -> slice count (7_SLICE_NVL counts as 7)
_CI_PROFILES: dict[int, int] = {0: 1, 1: 2, 2: 3, 3: 4, 4: 7, 5: 8, 6: 6, 7: 1, 8: 7}

GI_PROFILE_COUNT = 18
CI_PROFILE_COUNT = 9
CI_ENGINE_PROFILE_COUNT = 1

_MIB = 1 << 20
_GIB = 1 << 30


def mig_memory_gb(mig_memory_mib: int, parent_total_bytes: int) -> int:
    """go-nvlib's profile memory: eighths of the parent, times its size in whole GiB, rounded.

    Go's math.Round rounds halves away from zero; Python's round() would turn the H200's
    3g (0.5 x 141 = 70.5) into 70 instead of GFD's 71.
    """
    if parent_total_bytes <= 0:
        return 0
    frac = (mig_memory_mib * _MIB) / parent_total_bytes
    frac = math.ceil(frac * 8) / 8
    total_gb = (parent_total_bytes + _GIB - 1) // _GIB
    return int(math.floor(frac * total_gb + 0.5))


def mig_profile_name(
    gi_profile_index: int, ci_profile_index: int, mig_memory_mib: int, parent_total_bytes: int
) -> str:
    """The profile as GFD writes it in label keys and resource names (``+`` already ``.``).

    Raises ValueError for profile indices go-nvlib does not know.
    """
    if gi_profile_index not in _GI_PROFILES:
        raise ValueError(f"unknown GPU instance profile index {gi_profile_index}")
    if ci_profile_index not in _CI_PROFILES:
        raise ValueError(f"unknown compute instance profile index {ci_profile_index}")
    g, suffix = _GI_PROFILES[gi_profile_index]
    c = _CI_PROFILES[ci_profile_index]
    gb = mig_memory_gb(mig_memory_mib, parent_total_bytes)
    base = f"{g}g.{gb}gb" if c == g else f"{c}c.{g}g.{gb}gb"
    return (base + suffix).replace("+", ".")


_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9\-_. ]")


def sanitise(value: str) -> str:
    """GFD's sanitiser: drop characters outside ``A-Za-z0-9-_. ``, join whitespace runs with ``-``."""
    return "-".join(_NOT_ALLOWED.sub("", value).split())


def arch_family(major: int, minor: int) -> str:
    """``gpu.family`` from the CUDA compute capability, as GFD maps it."""
    if major == 7:
        return "volta" if minor < 5 else "turing"
    if major == 8:
        return "ampere" if minor < 9 else "ada-lovelace"
    return {
        1: "tesla",
        2: "fermi",
        3: "kepler",
        5: "maxwell",
        6: "pascal",
        9: "hopper",
        10: "blackwell",
        12: "blackwell",
        13: "rubin",
    }.get(major, "undefined")


ARCHITECTURES = {
    2: "kepler",
    3: "maxwell",
    4: "pascal",
    5: "volta",
    6: "turing",
    7: "ampere",
    8: "ada",
    9: "hopper",
    10: "blackwell",
    11: "dla",
    12: "dla2",
    13: "rubin",
    15: "npu3",
}

BRANDS = {
    0: "unknown",
    1: "quadro",
    2: "tesla",
    3: "nvs",
    4: "grid",
    5: "geforce",
    6: "titan",
    7: "nvidia-vapps",
    8: "nvidia-vpc",
    9: "nvidia-vcs",
    10: "nvidia-vws",
    11: "nvidia-cloud-gaming",
    12: "quadro-rtx",
    13: "nvidia-rtx",
    14: "nvidia",
    15: "geforce-rtx",
    16: "titan-rtx",
    17: "nvidia-dla",
    18: "nvidia-vgamedev",
    19: "nvidia-npu",
}

# -- Kubernetes label syntax: nfd.api.validation's, the one model of apimachinery's validators --


def label_key_error(key: str) -> str | None:
    """Why ``key`` is not a valid Kubernetes label key, or None."""
    errs = qualified_name_errors(key)
    return "; ".join(errs) if errs else None


def fix_label_value(value: str) -> str | None:
    """A valid form of a GFD value, or None to leave the label out.

    Only over-long values are repaired (cut to 63 characters, then a dangling ``-_.`` dropped);
    anything else invalid, such as VFIO's ``-1``, is left out rather than given a new meaning.
    """
    if is_valid_label_value(value):
        return value
    if len(value) > 63:
        v = value[:63].rstrip("-_.")
        if v and is_valid_label_value(v):
            return v
    return None
