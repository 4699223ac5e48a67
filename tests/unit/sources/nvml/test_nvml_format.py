"""Output format pinned by regular expressions (as GFD's expected-output files do), every profile."""

from __future__ import annotations

import re

import pytest
from nvml_help import labels_of

from nfd.nvml_fake import available_profiles
from nfd.sources.nvml.sharing import parse_device_plugin_config

INT = r"[0-9]+"
PROFILE = r"([0-9]+c\.)?[0-9]+g\.[0-9]+gb(\.me|\.me\.all|\.gfx|-me)?"
PRODUCT = r"[A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9]"
MIG_SUFFIXES = {
    "count": INT,
    "replicas": INT,
    "sharing-strategy": r"(none|time-slicing|mps)",
    "memory": INT,
    "multiprocessors": INT,
    "slices.gi": INT,
    "slices.ci": INT,
    "engines.copy": INT,
    "engines.decoder": INT,
    "engines.encoder": INT,
    "engines.jpeg": INT,
    "engines.ofa": INT,
}

ALWAYS = {
    r"nvidia\.com/gfd\.timestamp": r"[0-9]{10}",
    r"nvidia\.com/gpu\.machine": PRODUCT,
    r"nvidia\.com/cuda\.driver\.major": INT,
    r"nvidia\.com/cuda\.driver\.minor": INT,
    r"nvidia\.com/cuda\.driver\.rev": r"([0-9]+)?",
    r"nvidia\.com/cuda\.driver-version\.major": INT,
    r"nvidia\.com/cuda\.driver-version\.minor": INT,
    r"nvidia\.com/cuda\.driver-version\.revision": r"([0-9]+)?",
    r"nvidia\.com/cuda\.driver-version\.full": r"[0-9]+\.[0-9]+(\.[0-9]+)?",
    r"nvidia\.com/cuda\.runtime\.major": INT,
    r"nvidia\.com/cuda\.runtime\.minor": INT,
    r"nvidia\.com/cuda\.runtime-version\.major": INT,
    r"nvidia\.com/cuda\.runtime-version\.minor": INT,
    r"nvidia\.com/cuda\.runtime-version\.full": r"[0-9]+\.[0-9]+",
    r"nvidia\.com/gpu\.product": PRODUCT,
    r"nvidia\.com/gpu\.count": INT,
    r"nvidia\.com/gpu\.replicas": INT,
    r"nvidia\.com/gpu\.sharing-strategy": r"(none|time-slicing|mps|)",
    r"nvidia\.com/gpu\.memory": INT,
    r"nvidia\.com/mig\.capable": r"(true|false)",
    r"nvidia\.com/mps\.capable": r"(true|false)",
    r"nvidia\.com/gpu\.mode": r"(compute|graphics|unknown)",
    r"nvidia\.com/vgpu\.present": r"(true|false)",
}
OPTIONAL = {
    r"nvidia\.com/mig\.strategy": r"(single|mixed)",
    r"nvidia\.com/gpu\.family": r"[a-z-]+",
    r"nvidia\.com/gpu\.compute\.major": INT,
    r"nvidia\.com/gpu\.compute\.minor": INT,
    r"nvidia\.com/gpu\.count\." + PRODUCT: INT,
    r"nvidia\.com/gpu\.clique": r"[0-9a-f-]{36}\.[0-9]+",
    **{
        r"nvidia\.com/gpu\." + re.escape(k): v
        for k, v in MIG_SUFFIXES.items()
        if k not in ("count", "replicas", "memory")
    },
    **{r"nvidia\.com/mig-" + PROFILE + r"\." + re.escape(k): v for k, v in MIG_SUFFIXES.items()},
    r"nvidia\.com/mig-" + PROFILE + r"\.product": PRODUCT,
}

SHARING = parse_device_plugin_config(
    {"sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}, path="t"
).sharing


@pytest.mark.parametrize("strategy", ["none", "single", "mixed"])
@pytest.mark.parametrize("profile", available_profiles())
def test_every_label_matches_the_pinned_format(profile: str, strategy: str) -> None:
    for sharing in (None, SHARING):
        labels = labels_of(profile, strategy, sharing=sharing, timestamp=1724632719)
        for key_re, value_re in ALWAYS.items():
            found = [k for k in labels if re.fullmatch(key_re, k)]
            assert found, f"{profile}/{strategy}: missing {key_re}"
            assert re.fullmatch(value_re, labels[found[0]]), f"{found[0]}={labels[found[0]]!r}"
        patterns = {**ALWAYS, **OPTIONAL}
        for key, value in labels.items():
            matches = [v for k, v in patterns.items() if re.fullmatch(k, key)]
            assert matches, f"{profile}/{strategy}: unexpected label {key}"
            assert any(re.fullmatch(v, value) for v in matches), f"{key}={value!r}"
