"""The sample NodeFeatureRules shipped under deploy/nodefeaturerule/samples validate cleanly."""

from __future__ import annotations

from pathlib import Path

from nfd.cli.rules import main

SAMPLES = Path(__file__).resolve().parents[3] / "deploy" / "nodefeaturerule" / "samples"


def test_samples_validate(capsys) -> None:  # type: ignore[no-untyped-def]
    files = sorted(SAMPLES.glob("*.yaml"))
    assert files
    argv = ["validate"]
    for f in files:
        argv += ["-f", str(f)]
    assert main(argv) == 0, capsys.readouterr()


def test_samples_under_upstreams_file_names() -> None:
    """`kubectl apply -f .../nodefeaturerule/samples/nodefeaturerule-<source>.yaml` as upstream's
    docs write it finds a sample for each feature source (the contents are ours)."""
    names = {p.name for p in SAMPLES.glob("*.yaml")}
    for source in ("cpu", "custom", "kernel", "local", "memory", "network", "pci", "storage", "system", "usb"):
        assert f"nodefeaturerule-{source}.yaml" in names, source


def test_samples_match_a_gpu_server(capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """On the gpu-server fixture host the samples label what it has (AVX-512 VNNI, an NVIDIA
    GPU, NVMe, SR-IOV NICs, NUMA) and nothing it lacks."""
    import json

    import yaml

    from nfd.cli.export import main as export_main

    root = Path(__file__).resolve().parents[2] / "fixtures" / "sysfs" / "gpu-server" / "root"
    feats = tmp_path / "features.json"
    assert export_main(["features", "--host-root", str(root), "-p", str(feats)]) == 0
    nf = tmp_path / "nf.yaml"
    nf.write_text(yaml.safe_dump({"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
                                  "metadata": {"name": "n1"}, "spec": {"features": json.loads(feats.read_text())}}))
    argv = ["dryrun", "--nodefeature", str(nf), "-o", "json"]
    for f in sorted(SAMPLES.glob("nodefeaturerule-*.yaml")):
        argv += ["-f", str(f)]
    capsys.readouterr()
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    labels = {k for k in json.dumps(out).split('"') if k.startswith("feature.node.kubernetes.io/sample-")}
    assert {"feature.node.kubernetes.io/sample-cpu-avx512-vnni", "feature.node.kubernetes.io/sample-pci-nvidia-gpu",
            "feature.node.kubernetes.io/sample-storage-nvme", "feature.node.kubernetes.io/sample-network-sriov",
            "feature.node.kubernetes.io/sample-memory-multi-numa"} <= labels
    assert "feature.node.kubernetes.io/sample-usb-vendor-specific" not in labels
