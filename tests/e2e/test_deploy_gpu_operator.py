"""The GPU Operator preset (docs/gpu-operator.md): deploy/helm/gpu-operator-values.yaml and
deploy/overlays/gpu-operator render the NFD settings the operator's chart gives its
node-feature-discovery subchart, and `nfd export labels` with the rendered worker config gives
the labels the operator reads.

The operator's settings are recorded below from NVIDIA/gpu-operator
deployments/gpu-operator/values.yaml (`node-feature-discovery:`, chart dependency
node-feature-discovery 0.19.0); `NFD_GPU_OPERATOR_VALUES=<that values.yaml>` compares them with
a checkout of the operator (skipped, with the reason, when it is not set). The overlay's and
the chart's objects are also dry-run against the API server with the others
(tests/e2e/test_deploy.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfd.cli.export import main as export_main
from tests.e2e.tools import DEPLOY_DIR, REPO_ROOT, helm_bin, helm_template, kustomize_bin, kustomize_build

__all__ = ["helm_bin", "kustomize_bin"]  # fixtures

pytestmark = pytest.mark.e2e

VALUES_FILE = DEPLOY_DIR / "helm" / "gpu-operator-values.yaml"
OVERLAY = DEPLOY_DIR / "overlays" / "gpu-operator"
GPU_HOST = REPO_ROOT / "tests" / "fixtures" / "sysfs" / "gpu-server" / "root"

# The operator chart's subchart values (what nfd must reproduce)
OPERATOR_WORKER_CONFIG = {"sources": {"pci": {"deviceClassWhitelist": ["02", "0200", "0207", "0300", "0302"],
                                              "deviceLabelFields": ["vendor"]}}}
OPERATOR_MASTER_CONFIG = {"extraLabelNs": ["nvidia.com"]}
OPERATOR_WORKER_TOLERATIONS = [
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
]
OPERATOR_PRIORITY_CLASS = "system-node-critical"
# The node labels the operator reads (controllers/state_manager.go gpuNodeLabels: any one of
# them "true" makes a GPU node; internal/nodeinfo: the OS and kernel pick the driver image)
OPERATOR_GPU_NODE_LABELS = ["feature.node.kubernetes.io/pci-10de.present",
                            "feature.node.kubernetes.io/pci-0302_10de.present",
                            "feature.node.kubernetes.io/pci-0300_10de.present"]
OPERATOR_NODE_INFO_LABELS = ["feature.node.kubernetes.io/kernel-version.full",
                             "feature.node.kubernetes.io/system-os_release.ID",
                             "feature.node.kubernetes.io/system-os_release.VERSION_ID",
                             "feature.node.kubernetes.io/system-os_release.VERSION_ID.major"]


def _configs(objs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(worker config, master config) from the rendered ConfigMaps."""
    data: dict[str, str] = {}
    for o in objs:
        if o["kind"] == "ConfigMap":
            data.update(o.get("data") or {})
    return yaml.safe_load(data["nfd-worker.conf"]) or {}, yaml.safe_load(data["nfd-master.conf"]) or {}


def _pod_spec(objs: list[dict[str, Any]], kind: str, suffix: str) -> dict[str, Any]:
    (o,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"].endswith(suffix)]
    spec: dict[str, Any] = o["spec"]["template"]["spec"]
    return spec


def _renders(helm: Path, kustomize: Path, tmp: Path) -> dict[str, list[dict[str, Any]]]:
    assert VALUES_FILE.is_file(), f"{VALUES_FILE.relative_to(REPO_ROOT)}: no GPU Operator preset"
    assert (OVERLAY / "kustomization.yaml").is_file(), f"{OVERLAY.relative_to(REPO_ROOT)}: no overlay"
    return {"helm": helm_template(helm, values=yaml.safe_load(VALUES_FILE.read_text()), tmpdir=tmp),
            "kustomize": kustomize_build(kustomize, OVERLAY)}


def test_preset_renders_the_operators_nfd_settings(helm_bin: Path, kustomize_bin: Path, tmp_path: Path) -> None:
    for how, objs in _renders(helm_bin, kustomize_bin, tmp_path).items():
        worker_conf, master_conf = _configs(objs)
        assert worker_conf == OPERATOR_WORKER_CONFIG, how
        assert master_conf == OPERATOR_MASTER_CONFIG, how
        worker = _pod_spec(objs, "DaemonSet", "worker")
        assert all(t in worker.get("tolerations", []) for t in OPERATOR_WORKER_TOLERATIONS), (how, worker)
        for kind, suffix in (("DaemonSet", "worker"), ("Deployment", "master"), ("Deployment", "gc")):
            assert _pod_spec(objs, kind, suffix).get("priorityClassName") == OPERATOR_PRIORITY_CLASS, (how, suffix)


def test_rendered_worker_config_gives_the_labels_the_operator_reads(helm_bin: Path, kustomize_bin: Path,
                                                                    tmp_path: Path) -> None:
    for how, objs in _renders(helm_bin, kustomize_bin, tmp_path).items():
        conf = tmp_path / f"{how}-nfd-worker.conf"
        conf.write_text(yaml.safe_dump(_configs(objs)[0]))
        out = tmp_path / f"{how}-labels.txt"
        assert export_main(["labels", "--host-root", str(GPU_HOST), "--config", str(conf), "-p", str(out)]) == 0
        labels = dict(line.split("=", 1) for line in out.read_text().splitlines() if line)
        assert labels.get("feature.node.kubernetes.io/pci-10de.present") == "true", how  # the GPU (class 0302)
        assert labels.get("feature.node.kubernetes.io/pci-15b3.present") == "true", how  # the NICs (class 0200)
        assert any(labels.get(k) == "true" for k in OPERATOR_GPU_NODE_LABELS), how
        assert all(labels.get(k) for k in OPERATOR_NODE_INFO_LABELS), how
        # vendor only, as the operator's deviceLabelFields: no class in the PCI label names
        assert not [k for k in labels if k.startswith("feature.node.kubernetes.io/pci-0")], how


def test_recorded_settings_are_the_operators() -> None:
    """The settings above are those of the operator checkout given (its chart's values.yaml)."""
    given = os.environ.get("NFD_GPU_OPERATOR_VALUES")
    if not given:
        pytest.skip("NFD_GPU_OPERATOR_VALUES not set (the GPU Operator's deployments/gpu-operator/values.yaml "
                    "to compare the recorded settings with)")
    sub = yaml.safe_load(Path(given).read_text())["node-feature-discovery"]
    assert sub["worker"]["config"] == OPERATOR_WORKER_CONFIG
    assert sub["master"]["config"] == OPERATOR_MASTER_CONFIG
    assert sub["worker"]["tolerations"] == OPERATOR_WORKER_TOLERATIONS
    assert sub["priorityClassName"] == OPERATOR_PRIORITY_CLASS
