"""The nvml source through the CLI: export with a fake profile, and rules matching its features."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml
from nvml_help import snap_of

from nfd.api.nodefeature import NodeFeature
from nfd.sources.nvml.snapshotfeatures import snapshot_to_features


def nfd(*args: str, profile: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("NFD_NVML_FAULTS", None)
    if profile:
        env["NFD_NVML_PROFILE"] = profile
    else:
        env.pop("NFD_NVML_PROFILE", None)
    return subprocess.run(
        [sys.executable, "-m", "nfd.cli", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_export_labels_with_fake_profile() -> None:
    r = nfd("export", "labels", "--sources", "nvml", "-o", "json", profile="h100x8")
    assert r.returncode == 0, r.stderr
    labels = json.loads(r.stdout)
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert labels["nvidia.com/gpu.count"] == "8"
    assert labels["nvidia.com/gpu.machine"] == "PowerEdge-XE9680"
    assert labels["nvidia.com/gfd.timestamp"].isdigit()


def test_export_features_with_fake_profile() -> None:
    r = nfd("export", "features", "--sources", "nvml", profile="a100-mig-mixed")
    assert r.returncode == 0, r.stderr
    feats = json.loads(r.stdout)
    migs = feats["instances"]["nvml.mig"]["elements"]
    assert sorted({m["attributes"]["profile"] for m in migs}) == ["1g.5gb", "3g.20gb"]
    assert feats["attributes"]["nvml.system"]["elements"]["gpu_count"] == "2"


RULE = {
    "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
    "kind": "NodeFeatureRule",
    "metadata": {"name": "gpus"},
    "spec": {
        "rules": [
            {
                "name": "big-hopper",
                "labels": {"example.com/big-hopper": "true"},
                "matchFeatures": [
                    {
                        "feature": "nvml.gpu",
                        "matchExpressions": {
                            "family": {"op": "In", "value": ["hopper"]},
                            "memory": {"op": "Gt", "value": ["80000"]},
                        },
                    }
                ],
            },
            {
                "name": "small-mig",
                "labels": {"example.com/mig-1g": "true"},
                "matchFeatures": [
                    {
                        "feature": "nvml.mig",
                        "matchExpressions": {"profile": {"op": "In", "value": ["1g.5gb", "1g.10gb"]}},
                    }
                ],
            },
        ]
    },
}


def test_rules_match_nvml_features(tmp_path) -> None:
    rule = tmp_path / "rule.yaml"
    rule.write_text(yaml.safe_dump(RULE))
    results = {}
    for profile in ("h100x8", "a100-mig-mixed"):
        nf = NodeFeature(
            name="node-" + profile, namespace="nfd", features=snapshot_to_features(snap_of(profile))
        )
        path = tmp_path / f"{profile}.yaml"
        path.write_text(yaml.safe_dump(nf.to_json()))
        r = nfd("rules", "dryrun", "-f", str(rule), "--nodefeature", str(path), "-o", "json")
        assert r.returncode == 0, r.stderr
        results[profile] = r.stdout
    assert "example.com/big-hopper" in results["h100x8"]
    assert "example.com/mig-1g" not in results["h100x8"]
    assert "example.com/big-hopper" not in results["a100-mig-mixed"]
    assert "example.com/mig-1g" in results["a100-mig-mixed"]
