"""The GPU Operator preset (docs/gpu-operator.md): deploy/helm/gpu-operator-values.yaml and
deploy/overlays/gpu-operator render the NFD settings the operator's chart gives its
node-feature-discovery subchart, and `nfd export labels` with the rendered worker config gives
the labels the operator reads.

The operator's settings and the labels it reads are recorded below and checked against the
operator itself: its repository at the version tests/e2e/tools.py pins (GPU_OPERATOR_VERSION,
downloaded from the Go module proxy into Go's module cache): the chart's
deployments/gpu-operator/values.yaml (`node-feature-discovery:`, the subchart being upstream's
chart v0.17.3) and every `feature.node.kubernetes.io/` name in its Go source. The overlay's and the
chart's objects are also dry-run against the API server with the others (tests/e2e/test_deploy.py);
the migration from the operator's own NFD to nfd runs on the real node
(tests/e2e/test_node_gpu_operator.py).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfd.cli.export import main as export_main
from tests.e2e.tools import (
    DEPLOY_DIR,
    REPO_ROOT,
    gpu_operator_chart_fixture,
    helm_bin,
    helm_template,
    kustomize_bin,
    kustomize_build,
)

__all__ = ["gpu_operator_chart_fixture", "helm_bin", "kustomize_bin"]  # fixtures

pytestmark = pytest.mark.e2e

VALUES_FILE = DEPLOY_DIR / "helm" / "gpu-operator-values.yaml"
OVERLAY = DEPLOY_DIR / "overlays" / "gpu-operator"
GPU_HOST = REPO_ROOT / "tests" / "fixtures" / "sysfs" / "gpu-server" / "root"

# The operator chart's subchart values (what nfd must reproduce), deployments/gpu-operator/values.yaml
OPERATOR_WORKER_CONFIG = {"sources": {"pci": {"deviceClassWhitelist": ["02", "0200", "0207", "0300", "0302"],
                                              "deviceLabelFields": ["vendor"]}}}
OPERATOR_MASTER_CONFIG = {"extraLabelNs": ["nvidia.com"]}
OPERATOR_WORKER_TOLERATIONS = [
    # the control-plane taint's name before Kubernetes 1.25; kept by the operator's chart
    {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
]
OPERATOR_PRIORITY_CLASS = "system-node-critical"
#: the whole `node-feature-discovery:` section: the above, gc as the operator runs it, and one
#: ServiceAccount `node-feature-discovery` shared by master, worker and gc (the preset keeps one
#: account per component: docs/gpu-operator.md)
OPERATOR_SUBCHART_VALUES = {
    "priorityClassName": OPERATOR_PRIORITY_CLASS,
    "gc": {"enable": True, "replicaCount": 1, "serviceAccount": {"name": "node-feature-discovery", "create": False}},
    "worker": {"serviceAccount": {"name": "node-feature-discovery", "create": False},
               "tolerations": OPERATOR_WORKER_TOLERATIONS, "config": OPERATOR_WORKER_CONFIG},
    "master": {"serviceAccount": {"name": "node-feature-discovery", "create": True}, "config": OPERATOR_MASTER_CONFIG},
}
# The node labels the operator reads: controllers/state_manager.go gpuNodeLabels (any one of them
# "true" makes a GPU node), internal/nodeinfo and validator/main.go (a Mellanox NIC: the
# validator, GPUDirect RDMA), internal/state (the OS and kernel pick the driver image), and on
# OpenShift the RHCOS version, which no NFD labels by default (OSTREE_VERSION is a feature of
# the system source, not a label, in upstream's worker as in ours)
OPERATOR_GPU_NODE_LABELS = ["feature.node.kubernetes.io/pci-10de.present",
                            "feature.node.kubernetes.io/pci-0302_10de.present",
                            "feature.node.kubernetes.io/pci-0300_10de.present"]
OPERATOR_MELLANOX_LABEL = "feature.node.kubernetes.io/pci-15b3.present"
OPERATOR_NODE_INFO_LABELS = ["feature.node.kubernetes.io/kernel-version.full",
                             "feature.node.kubernetes.io/system-os_release.ID",
                             "feature.node.kubernetes.io/system-os_release.VERSION_ID"]
OPERATOR_OSTREE_LABEL = "feature.node.kubernetes.io/system-os_release.OSTREE_VERSION"
#: every feature.node.kubernetes.io/ label the operator's code names
OPERATOR_READS = [*OPERATOR_GPU_NODE_LABELS, OPERATOR_MELLANOX_LABEL, *OPERATOR_NODE_INFO_LABELS,
                  OPERATOR_OSTREE_LABEL]


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


def test_recorded_settings_are_the_operators(gpu_operator_chart: Path) -> None:
    """The settings above are the operator chart's `node-feature-discovery:` values, and that
    subchart is upstream's chart v0.17.3, the release tests/tools/upstream-nfd builds."""
    values = yaml.safe_load((gpu_operator_chart / "values.yaml").read_text())
    assert values["node-feature-discovery"] == OPERATOR_SUBCHART_VALUES
    assert values["nfd"] == {"enabled": True, "nodefeaturerules": False}  # the switches docs/gpu-operator.md names
    chart = yaml.safe_load((gpu_operator_chart / "Chart.yaml").read_text())
    (dep,) = [d for d in chart["dependencies"] if d["name"] == "node-feature-discovery"]
    assert dep["condition"] == "nfd.enabled", dep
    sub = yaml.safe_load((gpu_operator_chart / "charts" / "node-feature-discovery" / "Chart.yaml").read_text())
    assert sub["appVersion"] == "v0.17.3" and dep["version"] == "v0.17.3", (sub, dep)


def test_recorded_labels_are_those_the_operators_code_names(gpu_operator_chart: Path) -> None:
    """Every feature.node.kubernetes.io/ label name in the operator's Go code (tests aside) is
    one of OPERATOR_READS, and each of those is named there."""
    module = gpu_operator_chart.parents[1]
    named: dict[str, list[str]] = {}
    for path in module.rglob("*.go"):
        if path.name.endswith("_test.go") or "vendor" in path.relative_to(module).parts:
            continue
        for m in re.finditer(r'"(feature\.node\.kubernetes\.io/[^"]+)"', path.read_text(errors="replace")):
            named.setdefault(m.group(1), []).append(str(path.relative_to(module)))
    assert sorted(named) == sorted(OPERATOR_READS), named


def test_ostree_version_is_a_feature_not_a_label(tmp_path: Path) -> None:
    """The operator reads system-os_release.OSTREE_VERSION on OpenShift (RHCOS). Upstream's
    system source labels ID, VERSION_ID and its major/minor only; nfd does the same, and keeps
    OSTREE_VERSION as an element of the system.osrelease feature (for rules)."""
    root = tmp_path / "rhcos"
    shutil.copytree(GPU_HOST, root)
    (root / "etc" / "os-release").write_text(
        'NAME="Red Hat Enterprise Linux CoreOS"\nID="rhcos"\nID_LIKE="rhel fedora"\nVERSION_ID="4.16"\n'
        'OPENSHIFT_VERSION="4.16"\nRHEL_VERSION="9.4"\nOSTREE_VERSION="416.94.202410211619-0"\n')
    labels_out, features_out = tmp_path / "labels.txt", tmp_path / "features.json"
    assert export_main(["labels", "--host-root", str(root), "--sources", "system", "-p", str(labels_out)]) == 0
    labels = dict(line.split("=", 1) for line in labels_out.read_text().splitlines() if line)
    assert labels == {"feature.node.kubernetes.io/system-os_release.ID": "rhcos",
                      "feature.node.kubernetes.io/system-os_release.VERSION_ID": "4.16",
                      "feature.node.kubernetes.io/system-os_release.VERSION_ID.major": "4",
                      "feature.node.kubernetes.io/system-os_release.VERSION_ID.minor": "16"}, labels
    assert OPERATOR_OSTREE_LABEL not in labels
    assert export_main(["features", "--host-root", str(root), "--sources", "system", "-p", str(features_out)]) == 0
    osrelease = yaml.safe_load(features_out.read_text())["attributes"]["system.osrelease"]["elements"]
    assert osrelease["OSTREE_VERSION"] == "416.94.202410211619-0", osrelease
