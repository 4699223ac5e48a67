"""The nvml source inside the worker's discovery and label pipeline (nfd.sources.discovery)."""

from __future__ import annotations

import pytest
from nvml_help import make_fake

from nfd.sources import registry
from nfd.sources.base import DiscoveryContext
from nfd.sources.discovery import compute_labels, discover, parse_source_configs
from nfd.sources.nvml import NvmlSource


@pytest.fixture
def nvml_source(monkeypatch):
    def install(profile: str) -> tuple[NvmlSource, object]:
        fake = make_fake(profile)
        src = NvmlSource(backend=fake, host=fake.host)
        monkeypatch.setitem(registry._loaded, "nvml", src)
        return src, fake

    return install


def test_labels_pass_the_worker_pipeline_unchanged(nvml_source) -> None:
    src, _ = nvml_source("a100-mig-mixed")
    ctx = DiscoveryContext()
    configs = parse_source_configs({"nvml": {"migStrategy": "single"}})
    res = discover(ctx, ["nvml"], configs)
    assert not res.errors
    feats = res.merged()
    labels = compute_labels(feats, ["nvml"], configs, ctx)
    assert labels == src.labels(feats, configs["nvml"], ctx)
    # the invalid single layout's empty sharing-strategy value survives validation
    assert labels["nvidia.com/gpu.sharing-strategy"] == ""
    assert all(k.startswith("nvidia.com/") for k in labels)


def test_mid_run_error_keeps_labels_through_the_pipeline(nvml_source) -> None:
    _, fake = nvml_source("h100x8")
    ctx = DiscoveryContext()
    configs = parse_source_configs(None)
    first = compute_labels(discover(ctx, ["nvml"], configs).merged(), ["nvml"], configs, ctx)
    fake.inject("nvmlDeviceGetCount", "GPU_IS_LOST")
    again = discover(ctx, ["nvml"], configs)
    assert not again.errors  # the source itself absorbed the NVML error
    assert compute_labels(again.merged(), ["nvml"], configs, ctx) == first


def test_bad_source_config_is_reported_with_its_path() -> None:
    with pytest.raises(ValueError, match=r"sources\.nvml\.migStrategy"):
        parse_source_configs({"nvml": {"migStrategy": "all"}})
