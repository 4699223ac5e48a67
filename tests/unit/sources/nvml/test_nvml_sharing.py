"""Device-plugin sharing config: parsing, and its effect on GFD's labels."""

from __future__ import annotations

import pytest
from nvml_help import labels_of

from nfd.api.errors import ValidationError
from nfd.sources.nvml.sharing import Replicated, Sharing, parse_device_plugin_config


def parse(doc):
    return parse_device_plugin_config(doc, path="config.yaml")


def ts(replicas: int = 10, name: str = "nvidia.com/gpu", rename: bool = False) -> Sharing:
    return parse(
        {
            "version": "v1",
            "sharing": {
                "timeSlicing": {
                    "renameByDefault": rename,
                    "resources": [{"name": name, "replicas": replicas}],
                }
            },
        }
    ).sharing


def test_parse_full_config() -> None:
    cfg = parse(
        {
            "version": "v1",
            "flags": {"migStrategy": "mixed"},
            "sharing": {
                "timeSlicing": {
                    "renameByDefault": True,
                    "failRequestsGreaterThanOne": False,
                    "resources": [
                        {"name": "nvidia.com/gpu", "replicas": 4, "rename": "ignored", "devices": "all"}
                    ],
                }
            },
        }
    )
    assert cfg.mig_strategy == "mixed"
    assert cfg.sharing.time_slicing == Replicated(rename_by_default=True, resources=(("nvidia.com/gpu", 4),))
    assert cfg.sharing.strategy == "time-slicing"
    assert parse(None).sharing.strategy == "none"


@pytest.mark.parametrize(
    "doc, field",
    [
        ({"version": "v2"}, "config.yaml.version"),
        ({"flags": {"migStrategy": "both"}}, "config.yaml.flags.migStrategy"),
        ({"sharing": {"timeSlicing": {"resources": []}}}, "config.yaml.sharing.timeSlicing.resources"),
        (
            {"sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 1}]}}},
            "config.yaml.sharing.mps.resources[0].replicas",
        ),
        (
            {"sharing": {"timeSlicing": {"resources": [{"replicas": 2}]}}},
            "config.yaml.sharing.timeSlicing.resources[0].name",
        ),
        ([], "config.yaml"),
    ],
)
def test_bad_config_names_the_field(doc, field: str) -> None:
    with pytest.raises(ValidationError) as e:
        parse(doc)
    assert e.value.path == field


def test_mps_is_active_when_present() -> None:
    both = parse(
        {
            "sharing": {
                "timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]},
                "mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 3}]},
            }
        }
    ).sharing
    assert both.strategy == "mps"
    assert both.active.replicas("nvidia.com/gpu") == 3


def test_time_slicing_full_gpus() -> None:
    labels = labels_of("h100x8", sharing=ts(10))
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-SHARED"
    assert labels["nvidia.com/gpu.replicas"] == "10"
    assert labels["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    assert labels["nvidia.com/gpu.count"] == "8"
    assert labels["nvidia.com/mps.capable"] == "false"


def test_rename_by_default_drops_the_shared_suffix() -> None:
    labels = labels_of("h100x8", sharing=ts(10, rename=True))
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert labels["nvidia.com/gpu.replicas"] == "10"
    assert labels["nvidia.com/gpu.sharing-strategy"] == "time-slicing"


def test_sharing_of_another_resource_leaves_gpu_unshared() -> None:
    labels = labels_of("h100x8", sharing=ts(4, name="nvidia.com/mig-1g.10gb"))
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert labels["nvidia.com/gpu.replicas"] == "1"
    assert labels["nvidia.com/gpu.sharing-strategy"] == "none"


def test_mps_full_gpus() -> None:
    mps = parse({"sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}).sharing
    labels = labels_of("h100x8", sharing=mps)
    assert labels["nvidia.com/mps.capable"] == "true"
    assert labels["nvidia.com/gpu.sharing-strategy"] == "mps"
    assert labels["nvidia.com/gpu.replicas"] == "4"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-SHARED"


def test_mps_with_mig_enabled_gpu_is_not_capable_and_warns() -> None:
    mps = parse({"sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}).sharing
    warnings: list[str] = []
    labels = labels_of("h100-mig-mixed", sharing=mps, warnings=warnings)
    assert labels["nvidia.com/mps.capable"] == "false"
    assert any("MPS" in w for w in warnings)


def test_mig_enabled_gpus_ignore_sharing_under_none() -> None:
    labels = labels_of("a100-mig-mixed", "none", sharing=ts(10))
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    assert labels["nvidia.com/gpu.replicas"] == "0"
    assert labels["nvidia.com/gpu.sharing-strategy"] == "none"


def test_single_strategy_time_sliced_mig() -> None:
    labels = labels_of("h200-mig", "single", sharing=ts(3))
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200-MIG-3g.71gb-SHARED"
    assert labels["nvidia.com/gpu.replicas"] == "3"
    assert labels["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    assert labels["nvidia.com/gpu.count"] == "4"


def test_mixed_strategy_time_slices_one_mig_resource() -> None:
    labels = labels_of("a100-mig-mixed", "mixed", sharing=ts(5, name="nvidia.com/mig-1g.5gb"))
    assert labels["nvidia.com/mig-1g.5gb.product"] == "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED"
    assert labels["nvidia.com/mig-1g.5gb.replicas"] == "5"
    assert labels["nvidia.com/mig-1g.5gb.sharing-strategy"] == "time-slicing"
    assert labels["nvidia.com/mig-3g.20gb.product"] == "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb"
    assert labels["nvidia.com/mig-3g.20gb.replicas"] == "1"
    assert labels["nvidia.com/mig-3g.20gb.sharing-strategy"] == "none"


def test_invalid_single_layout_never_gets_shared_suffix() -> None:
    labels = labels_of("a100-mig-mixed", "single", sharing=ts(10))
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-MIG-INVALID"
    assert labels["nvidia.com/gpu.replicas"] == "0"
