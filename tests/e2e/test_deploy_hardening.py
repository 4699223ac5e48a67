"""Every install method hardens every pod alike: each kustomize overlay and the Helm chart
(defaults, and every component on) give each workload's pod seccomp `RuntimeDefault`, and each
container no privilege escalation, a read-only root filesystem, no capabilities, resource
requests and a memory limit, and a non-root user. The one deliberate exception is the topology
updater, which runs as root (user 0, as upstream's DaemonSet and chart) to connect to the
kubelet's root-owned podresources socket; it still drops every capability. Differences from
upstream's manifests: docs/compatibility.md (Manifests and chart).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.tools import DEPLOY_DIR, helm_bin, helm_template, kustomize_bin, kustomize_build

__all__ = ["helm_bin", "kustomize_bin"]  # fixtures

pytestmark = pytest.mark.e2e

OVERLAYS = sorted(str(p.parent.relative_to(DEPLOY_DIR / "overlays"))
                  for p in (DEPLOY_DIR / "overlays").rglob("kustomization.yaml"))
HELM_VALUES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "every-component": {"topologyUpdater": {"enable": True, "createCRDs": True}, "prometheus": {"enable": True},
                        "master": {"replicaCount": 2}, "postDeleteCleanup": True},
}
WORKLOAD_KINDS = ("Deployment", "DaemonSet", "Job")
ROOT_BY_DESIGN = "topology-updater"  # the kubelet's podresources socket is root's (as upstream)


def pod_problems(name: str, spec: dict[str, Any]) -> list[str]:
    """What a workload's pod spec lacks of the hardening every install method promises."""
    problems = []
    pod_sc = spec.get("securityContext") or {}
    containers = spec.get("containers") or []
    for c in containers:
        where = f"{name} container {c['name']}"
        sc = c.get("securityContext") or {}
        seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
        if seccomp != "RuntimeDefault":
            problems.append(f"{where}: seccompProfile {seccomp!r}, not RuntimeDefault")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{where}: allowPrivilegeEscalation not false")
        if sc.get("readOnlyRootFilesystem") is not True:
            problems.append(f"{where}: readOnlyRootFilesystem not true")
        if (sc.get("capabilities") or {}).get("drop") != ["ALL"]:
            problems.append(f"{where}: capabilities not drop [ALL]")
        if sc.get("privileged"):
            problems.append(f"{where}: privileged")
        res = c.get("resources") or {}
        if not {"cpu", "memory"} <= set(res.get("requests") or {}) or "memory" not in (res.get("limits") or {}):
            problems.append(f"{where}: resources {res!r} lack cpu/memory requests or a memory limit")
        non_root = sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot"))
        user = sc.get("runAsUser", pod_sc.get("runAsUser"))
        if ROOT_BY_DESIGN in name:
            if user != 0:
                problems.append(f"{where}: runAsUser {user!r}, expected 0 (the kubelet socket)")
        elif non_root is not True or user == 0:
            problems.append(f"{where}: runAsNonRoot {non_root!r}, runAsUser {user!r}")
    if not containers:
        problems.append(f"{name}: no containers")
    return problems


def _workloads(objs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(f"{o['kind']}/{o['metadata']['name']}", o["spec"]["template"]["spec"])
            for o in objs if o["kind"] in WORKLOAD_KINDS]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_kustomize_overlay_hardens_every_pod(overlay: str, kustomize_bin: Path) -> None:
    objs = kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / overlay, num_nodes=3)
    problems = [p for name, spec in _workloads(objs) for p in pod_problems(name, spec)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("values", sorted(HELM_VALUES))
def test_helm_chart_hardens_every_pod(values: str, helm_bin: Path, tmp_path: Path) -> None:
    objs = helm_template(helm_bin, values=HELM_VALUES[values], tmpdir=tmp_path)
    workloads = _workloads(objs)
    if values == "every-component":
        names = {n.split("/")[1] for n, _ in workloads}
        assert {"nfd-node-feature-discovery-master", "nfd-node-feature-discovery-worker",
                "nfd-node-feature-discovery-gc", "nfd-node-feature-discovery-topology-updater",
                "nfd-node-feature-discovery-prune"} <= names, names
    problems = [p for name, spec in workloads for p in pod_problems(name, spec)]
    assert not problems, "\n".join(problems)


def test_the_worker_job_is_hardened_as_the_daemonset(kustomize_bin: Path) -> None:
    """The one-shot Job's pod carries the DaemonSet's security settings and resources."""
    ds = dict(_workloads(kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / "default")))["DaemonSet/nfd-worker"]
    job = dict(_workloads(kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / "default-job",
                                          num_nodes=3)))["Job/nfd-worker"]
    assert job.get("securityContext") == ds.get("securityContext")
    for key in ("securityContext", "resources"):
        assert job["containers"][0].get(key) == ds["containers"][0].get(key), key


def test_a_user_pod_security_context_keeps_seccomp(helm_bin: Path, tmp_path: Path) -> None:
    """Helm merges a user's podSecurityContext with the default: fsGroup added, seccomp kept;
    `seccompProfile: null` removes it (a user's explicit choice)."""
    objs = helm_template(helm_bin, values={"worker": {"podSecurityContext": {"fsGroup": 2000}}}, tmpdir=tmp_path)
    worker = dict(_workloads(objs))["DaemonSet/nfd-node-feature-discovery-worker"]
    assert worker["securityContext"] == {"fsGroup": 2000, "seccompProfile": {"type": "RuntimeDefault"}}
    objs = helm_template(helm_bin, values={"worker": {"podSecurityContext": {"seccompProfile": None}}},
                         tmpdir=tmp_path)
    worker = dict(_workloads(objs))["DaemonSet/nfd-node-feature-discovery-worker"]
    assert "seccompProfile" not in (worker.get("securityContext") or {})
