"""Helpers for the nvml source tests: fake NVML from a shipped profile, snapshot, labels.

A module of its own, not conftest.py: tests import these by name, and ``from conftest import``
gets whichever conftest.py pytest loaded last (tests/unit/sources has one too)."""

from __future__ import annotations

import copy
from typing import Any

from nfd.nvml_fake import FakeNvml, load_profile
from nfd.sources.nvml.collect import collect
from nfd.sources.nvml.labels import LabelSettings, gfd_labels
from nfd.sources.nvml.sharing import Sharing
from nfd.sources.nvml.snapshot import Snapshot


def make_fake(profile: str | dict[str, Any]) -> FakeNvml:
    doc = load_profile(profile) if isinstance(profile, str) else profile
    return FakeNvml(copy.deepcopy(doc))


def snap_of(profile: str | dict[str, Any] | FakeNvml) -> Snapshot:
    fake = profile if isinstance(profile, FakeNvml) else make_fake(profile)
    fake.nvmlInit()
    try:
        return collect(fake, fake.host)
    finally:
        fake.nvmlShutdown()


def labels_of(
    profile: str | dict[str, Any] | Snapshot,
    strategy: str = "none",
    sharing: Sharing | None = None,
    timestamp: int | None = None,
    warnings: list[str] | None = None,
) -> dict[str, str]:
    snap = profile if isinstance(profile, Snapshot) else snap_of(profile)
    settings = LabelSettings(mig_strategy=strategy, sharing=sharing or Sharing(), timestamp=timestamp)
    warn = warnings.append if warnings is not None else (lambda _m: None)
    return gfd_labels(snap, settings, warn=warn)


def gpu_only(labels: dict[str, str]) -> dict[str, str]:
    """Labels minus the driver/CUDA version family (checked separately)."""
    return {k: v for k, v in labels.items() if not k.startswith("nvidia.com/cuda.")}

