"""deploy/ as users install it: `kustomize build` of every overlay and `helm template` of the
chart with several value sets, each object accepted by the real apiserver (server-side dry
run), and every container's command line accepted by the nfd process it starts.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.harness import HttpError
from tests.e2e.tools import (
    CHART_DIR,
    DEPLOY_DIR,
    REPO_ROOT,
    AuditedCluster,
    helm_bin,
    helm_template,
    install_kube,
    kustomize_bin,
    kustomize_build,
)

__all__ = ["helm_bin", "install_kube", "kustomize_bin"]  # fixtures

pytestmark = pytest.mark.e2e

NS = "node-feature-discovery"
OVERLAYS = sorted(str(p.parent.relative_to(DEPLOY_DIR / "overlays"))
                  for p in (DEPLOY_DIR / "overlays").rglob("kustomization.yaml"))
WORKLOAD_KINDS = {"Deployment", "DaemonSet", "Job"}
# every *.podSecurityContext default, merged by Helm with what a user sets (test_deploy_hardening.py)
RUNTIME_DEFAULT = {"seccompProfile": {"type": "RuntimeDefault"}}

# Value sets a user would write: defaults, everything on, and a minimal one.
HELM_VALUES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "everything": {
        "priorityClassName": "system-node-critical",
        "featureGates": {"NodeFeatureGroupAPI": True},
        "imagePullSecrets": [{"name": "regcred"}],
        "master": {"replicaCount": 2, "instance": "blue", "extraLabelNs": ["vendor.example.com"],
                   "denyLabelNs": ["denied.example.com"], "enableTaints": True, "resyncPeriod": "2h",
                   "nfdApiParallelism": 5, "config": {"restrictions": {"allowOverwrite": False}},
                   "extraArgs": ["-v=2"], "extraEnvs": [{"name": "EXTRA", "value": "1"}],
                   "podDisruptionBudget": {"enable": True},
                   "nodeSelector": {"kubernetes.io/os": "linux"}},
        "worker": {"ownerRefs": ["node", "pod"], "mountUsrSrc": True,
                   "config": {"core": {"sleepInterval": "30s"}},
                   "tolerations": [{"operator": "Exists"}], "nodeSelector": {"kubernetes.io/os": "linux"}},
        "topologyUpdater": {"enable": True, "updateInterval": "30s", "podSetFingerprint": False,
                            "config": {"excludeList": {"*": ["hugepages-1Gi"]}}, "watchNamespace": "team-a",
                            "kubeletConfigPath": "/var/lib/kubelet/config.yaml"},
        "gc": {"interval": "30m", "podDisruptionBudget": {"enable": True}},
        "nodeFeatureRules": {"nvidiaGpuLabelsFromDRA": True},
    },
    "master-only": {"worker": {"enable": False}, "gc": {"enable": False}, "postDeleteCleanup": False},
    # the GPU Operator preset as shipped (docs/gpu-operator.md)
    "gpu-operator-preset": yaml.safe_load((DEPLOY_DIR / "helm" / "gpu-operator-values.yaml").read_text()),
}


def _pod_specs(objs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(f"{o['kind']}/{o['metadata']['name']}", o["spec"]["template"]["spec"])
            for o in objs if o["kind"] in WORKLOAD_KINDS]


def _dry_run(kube: AuditedCluster, objs: list[dict[str, Any]], *, skip_kinds: frozenset[str] = frozenset()) -> int:
    """Server-side dry-run apply of every object; failures name the object."""
    errors = []
    count = 0
    for obj in objs:
        if obj["kind"] in skip_kinds:
            continue
        ns = (obj.get("metadata") or {}).get("namespace")
        if ns:
            kube.create_namespace(ns, exist_ok=True)
        try:
            kube.apply_objects([obj], dry_run=True)
            count += 1
        except (HttpError, KeyError) as e:
            errors.append(f"{obj['kind']}/{obj['metadata'].get('name')}: {e}")
    assert not errors, "rejected by the apiserver:\n" + "\n".join(errors)
    return count


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_kustomize_overlay_accepted_by_apiserver(overlay: str, kustomize_bin: Path,
                                                 install_kube: AuditedCluster) -> None:
    objs = kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / overlay, num_nodes=3)
    assert objs, f"overlay {overlay} renders nothing"
    # The Prometheus operator's PodMonitor is not served without the operator's CRDs.
    applied = _dry_run(install_kube, objs, skip_kinds=frozenset({"PodMonitor"}))
    namespaced = [o for o in objs if o["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding",
                                                        "CustomResourceDefinition", "ValidatingAdmissionPolicy",
                                                        "ValidatingAdmissionPolicyBinding")]
    assert all(o["metadata"].get("namespace") == NS for o in namespaced), \
        [f"{o['kind']}/{o['metadata']['name']}" for o in namespaced if o["metadata"].get("namespace") != NS]
    assert applied == len([o for o in objs if o["kind"] != "PodMonitor"])


@pytest.mark.parametrize("values", sorted(HELM_VALUES))
def test_helm_rendering_accepted_by_apiserver(values: str, helm_bin: Path, install_kube: AuditedCluster,
                                              tmp_path: Path) -> None:
    objs = helm_template(helm_bin, namespace="nfd-helm", values=HELM_VALUES[values], include_crds=True,
                         tmpdir=tmp_path)
    _dry_run(install_kube, objs)
    for o in objs:
        if o["kind"] not in ("ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                             "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "NodeFeatureRule"):
            assert o["metadata"].get("namespace") == "nfd-helm", f"{o['kind']}/{o['metadata']['name']}"


def test_helm_values_reach_the_objects(helm_bin: Path, tmp_path: Path) -> None:
    objs = helm_template(helm_bin, values=HELM_VALUES["everything"], tmpdir=tmp_path)
    by = {(o["kind"], o["metadata"]["name"]): o for o in objs}
    master = by[("Deployment", "nfd-node-feature-discovery-master")]
    args = master["spec"]["template"]["spec"]["containers"][0]["args"]
    for expected in ("-enable-leader-election", "-instance=blue", "-extra-label-ns=vendor.example.com",
                     "-deny-label-ns=denied.example.com", "-enable-taints", "-resync-period=2h",
                     "-nfd-api-parallelism=5", "-feature-gates=NodeFeatureGroupAPI=true", "-v=2"):
        assert expected in args
    assert master["spec"]["replicas"] == 2
    worker = by[("DaemonSet", "nfd-node-feature-discovery-worker")]
    wspec = worker["spec"]["template"]["spec"]
    assert "-owner-refs=node,pod" in wspec["containers"][0]["args"]
    assert wspec["tolerations"] == [{"operator": "Exists"}]
    assert {m["mountPath"] for m in wspec["containers"][0]["volumeMounts"]} >= {"/host-usr/src", "/host-sys"}
    # ownerRefs=node needs (and only then gets) read access to Nodes
    assert ("ClusterRole", "nfd-node-feature-discovery-worker-node") in by
    tu = by[("DaemonSet", "nfd-node-feature-discovery-topology-updater")]["spec"]["template"]["spec"]
    assert {"-watch-namespace=team-a", "-kubelet-config-uri=file:///host-var/kubelet-config"} <= \
        set(tu["containers"][0]["args"])
    for component in ("master", "gc"):
        pdb = by[("PodDisruptionBudget", f"nfd-node-feature-discovery-{component}")]
        pods = next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"].endswith(component))
        assert pdb["spec"]["selector"]["matchLabels"].items() <= pods["spec"]["template"]["metadata"]["labels"].items()
    assert yaml.safe_load(by[("ConfigMap", "nfd-node-feature-discovery-master-conf")]["data"]["nfd-master.conf"]) \
        == {"restrictions": {"allowOverwrite": False}}
    for name, spec in _pod_specs(objs):
        if "prune" not in name:
            assert spec.get("priorityClassName") == "system-node-critical", name

    default = helm_template(helm_bin, tmpdir=tmp_path)
    names = {(o["kind"], o["metadata"]["name"]) for o in default}
    assert ("ClusterRole", "nfd-node-feature-discovery-worker-node") not in names
    assert ("DaemonSet", "nfd-node-feature-discovery-topology-updater") not in names

    minimal = helm_template(helm_bin, values=HELM_VALUES["master-only"], tmpdir=tmp_path)
    kinds = {(o["kind"], o["metadata"]["name"]) for o in minimal}
    assert not [k for k in kinds if "worker" in k[1] or "-gc" in k[1] or "prune" in k[1]], kinds


def test_service_account_names_as_upstream(helm_bin: Path, tmp_path: Path) -> None:
    """<fullname>, <fullname>-worker, -topology-updater, -gc: two releases in one namespace do
    not share ServiceAccounts (they collided on fixed nfd-master/nfd-worker/... names)."""
    values = {"topologyUpdater": {"enable": True}}
    names = {}
    for release in ("a", "b"):
        objs = helm_template(helm_bin, release=release, values=values, tmpdir=tmp_path)
        names[release] = {o["metadata"]["name"] for o in objs if o["kind"] == "ServiceAccount"}
        full = f"{release}-node-feature-discovery"
        assert {full, f"{full}-worker", f"{full}-topology-updater", f"{full}-gc"} <= names[release]
        pods = dict(_pod_specs(objs))
        assert pods[f"Deployment/{full}-master"]["serviceAccountName"] == full
        assert pods[f"DaemonSet/{full}-worker"]["serviceAccountName"] == f"{full}-worker"
    assert not names["a"] & names["b"]


def test_chart_crds_are_the_repository_crds(helm_bin: Path, tmp_path: Path) -> None:
    """crds/ holds the NFD CRDs; the NodeResourceTopology CRD is templated behind
    topologyUpdater.createCRDs, as upstream's (an upstream release that templated it keeps it
    on upgrade)."""
    values = {"topologyUpdater": {"enable": True, "createCRDs": True}}
    rendered = [o for o in helm_template(helm_bin, include_crds=True, values=values, tmpdir=tmp_path)
                if o["kind"] == "CustomResourceDefinition"]
    plain = [o for o in helm_template(helm_bin, include_crds=True, values={"topologyUpdater": {"enable": True}},
                                      tmpdir=tmp_path) if o["kind"] == "CustomResourceDefinition"]
    assert len(plain) == 3 and "noderesourcetopologies.topology.node.k8s.io" not in \
        {o["metadata"]["name"] for o in plain}
    repo: list[dict[str, Any]] = []
    for f in sorted((REPO_ROOT / "crds").glob("*.yaml")):
        repo += [d for d in yaml.safe_load_all(f.read_text())
                 if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]
    key = lambda o: o["metadata"]["name"]  # noqa: E731
    assert sorted(rendered, key=key) == sorted(repo, key=key)
    assert len(rendered) == 4
    assert {p.name for p in (CHART_DIR / "crds").iterdir()} == {"nfd-api-crds.yaml"}


def _console_scripts() -> set[str]:
    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    return set(data["project"]["scripts"])


def test_every_container_command_line_is_accepted(kustomize_bin: Path, helm_bin: Path, tmp_path: Path) -> None:
    """Flags in the manifests are flags the processes accept (parse, print -version, exit 0)."""
    rendered: list[dict[str, Any]] = []
    for overlay in OVERLAYS:
        rendered += kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / overlay)
    for values in HELM_VALUES.values():
        rendered += helm_template(helm_bin, values=values, tmpdir=tmp_path)
    scripts = _console_scripts()
    seen: set[tuple[str, ...]] = set()
    for name, spec in _pod_specs(rendered):
        for c in spec["containers"]:
            argv = tuple(c["command"] + c.get("args", []))
            assert argv[0] in scripts, f"{name}: {argv[0]} is not an nfd entry point"
            seen.add(argv)
    assert {a[0] for a in seen} >= {"nfd-master", "nfd-worker", "nfd-gc", "nfd-topology-updater"}
    bindir = Path(sys.executable).parent
    for argv in sorted(seen):
        proc = subprocess.run([str(bindir / argv[0]), *argv[1:], "-version"], capture_output=True, text=True,
                              timeout=60, check=False)
        assert proc.returncode == 0, f"{' '.join(argv)}: {proc.stderr.strip()[-500:]}"


def test_pods_run_as_upstream_and_least_privileged(kustomize_bin: Path) -> None:
    objs = kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / "master-worker-topologyupdater")
    for name, spec in _pod_specs(objs):
        for c in spec["containers"]:
            sc = c.get("securityContext") or {}
            assert sc.get("allowPrivilegeEscalation") is False, name
            assert sc.get("readOnlyRootFilesystem") is True, name
            assert (sc.get("capabilities") or {}).get("drop") == ["ALL"], name
            for m in c.get("volumeMounts") or []:
                vol = next(v for v in spec.get("volumes") or [] if v["name"] == m["name"])
                if "hostPath" in vol and vol["hostPath"].get("type") != "Socket":
                    assert m.get("readOnly") is True, f"{name}: host path {vol['hostPath']['path']} writable"
        user = (spec.get("securityContext") or {}).get("runAsUser")
        cuser = {(c.get("securityContext") or {}).get("runAsUser") for c in spec["containers"]}
        if "topology-updater" not in name:  # needs the kubelet's socket, as upstream
            assert 0 not in cuser and (user in (None, 65534)), name
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    assert "USER 65534" in dockerfile
    for src in ("pyproject.toml", "nfd", "crds"):
        assert (REPO_ROOT / src).exists()


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        if e["operator"] == "In" and labels.get(e["key"]) not in e["values"]:
            return False
        if e["operator"] == "Exists" and e["key"] not in labels:
            return False
    return True


def test_podmonitors_select_every_component(kustomize_bin: Path, helm_bin: Path, tmp_path: Path) -> None:
    """The metrics endpoint is scraped on every component, on the port the containers name."""
    kust = kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / "master-worker-topologyupdater")
    (pm,) = kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / "prometheus")
    values = {"prometheus": {"enable": True}, "topologyUpdater": {"enable": True}}
    helm = helm_template(helm_bin, values=values, tmpdir=tmp_path)
    helm_pm = next(o for o in helm if o["kind"] == "PodMonitor")
    for monitor, objs in ((pm, kust), (helm_pm, helm)):
        port = monitor["spec"]["podMetricsEndpoints"][0]["port"]
        workloads = [o for o in objs if o["kind"] in ("Deployment", "DaemonSet")]
        assert len(workloads) == 4
        for o in workloads:
            tmpl = o["spec"]["template"]
            assert _selects(monitor["spec"]["selector"], tmpl["metadata"]["labels"]), o["metadata"]["name"]
            assert port in [p["name"] for c in tmpl["spec"]["containers"] for p in c.get("ports", [])]


@pytest.mark.parametrize("values", sorted(HELM_VALUES))
def test_helm_lint_strict(values: str, helm_bin: Path, tmp_path: Path) -> None:
    vf = tmp_path / "values.yaml"
    vf.write_text(yaml.safe_dump(HELM_VALUES[values]))
    proc = subprocess.run([str(helm_bin), "lint", "--strict", str(CHART_DIR), "-f", str(vf)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_packaged_chart_carries_the_crds(helm_bin: Path, tmp_path: Path) -> None:
    """`helm package` (what users download) resolves the crds/ symlinks into files."""
    subprocess.run([str(helm_bin), "package", str(CHART_DIR), "-d", str(tmp_path)], capture_output=True,
                   timeout=120, check=True)
    (pkg,) = tmp_path.glob("node-feature-discovery-*.tgz")
    with tarfile.open(pkg) as tar:
        members = {m.name: m for m in tar.getmembers() if "/crds/" in m.name}
        assert set(members) == {"node-feature-discovery/crds/nfd-api-crds.yaml"}
        for name, m in members.items():
            assert m.isfile()
            f = tar.extractfile(m)
            assert f is not None
            assert f.read() == (REPO_ROOT / "crds" / Path(name).name).read_bytes()


def _uncommented(text: str) -> str:
    """A commented sample config with its comment markers removed (header line dropped)."""
    return "\n".join(re.sub(r"^# ?", "", line) for line in text.splitlines()[1:]) + "\n"


def _load(component: str, text: str, tmp: Path) -> Any:
    from nfd.master.config import load_config as master_load
    from nfd.topology_updater.config import load_config as tu_load
    from nfd.worker.config import load_config_file as worker_load

    path = tmp / f"{component}.conf"
    path.write_text(text)
    if component == "master":
        return master_load(file_text=text)[0]
    if component == "worker":
        return worker_load(str(path))
    return tu_load(str(path))


def test_rendered_configs_and_samples_load(kustomize_bin: Path, helm_bin: Path, tmp_path: Path) -> None:
    """Each rendered ConfigMap is a config its process loads; the commented samples in the
    kustomize bases are valid configs once uncommented."""
    kinds = {"nfd-master.conf": "master", "nfd-worker.conf": "worker", "nfd-topology-updater.conf": "topology-updater"}
    rendered = kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / "master-worker-topologyupdater")
    rendered += helm_template(helm_bin, values=HELM_VALUES["everything"], tmpdir=tmp_path)
    seen: dict[str, list[Any]] = {}
    for cm in (o for o in rendered if o["kind"] == "ConfigMap"):
        for key, text in cm["data"].items():
            seen.setdefault(kinds[key], []).append(_load(kinds[key], text, tmp_path))
            if cm["metadata"]["name"].startswith("nfd-") and text.lstrip().startswith("#"):
                sample = _load(kinds[key], _uncommented(text), tmp_path)
                assert sample != _load(kinds[key], "", tmp_path), f"{key}: the sample sets nothing"
    assert {k: len(v) for k, v in seen.items()} == {"master": 2, "worker": 2, "topology-updater": 2}
    master_helm = seen["master"][1]
    assert master_helm.restrictions.allow_overwrite is False
    assert seen["topology-updater"][1].exclude_list == {"*": ["hugepages-1Gi"]}


def test_upstream_documented_kustomize_commands(kustomize_bin: Path, install_kube: AuditedCluster) -> None:
    """Upstream's docs, as written: the one-shot Job through `sed s"/NUM_NODES/$NUM_NODES/"`,
    `wait job.batch/nfd-master` after the prune overlay, the `nfd-metrics` PodMonitor."""
    job_objs = kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / "default-job", num_nodes=4)
    (job,) = [o for o in job_objs if o["kind"] == "Job"]
    assert job["spec"]["completions"] == 4 and job["spec"]["parallelism"] == 4
    pod = job["spec"]["template"]["spec"]
    mounts = {m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert {"/etc/kubernetes/node-feature-discovery", "/etc/kubernetes/node-feature-discovery/features.d/"} <= mounts
    assert any(o["kind"] == "ConfigMap" and o["metadata"]["name"] == "nfd-worker-conf" for o in job_objs)
    assert _dry_run(install_kube, job_objs) > 0
    prune = kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / "prune")
    assert [o["metadata"]["name"] for o in prune if o["kind"] == "Job"] == ["nfd-master"]
    (pm,) = kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / "prometheus")
    assert pm["metadata"]["name"] == "nfd-metrics"
    assert all(ep.get("honorLabels") is True for ep in pm["spec"]["podMetricsEndpoints"])
    # the one-shot Job's config is the DaemonSet's (both from components/worker-config)
    (job_cm,) = [o for o in job_objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "nfd-worker-conf"]
    ds_objs = kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / "default")
    (ds_cm,) = [o for o in ds_objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "nfd-worker-conf"]
    assert job_cm["data"] == ds_cm["data"]


def test_per_component_helm_values_take_effect(helm_bin: Path, tmp_path: Path, install_kube: AuditedCluster) -> None:
    """Upstream's per-component keys (they rendered as if absent before): probe tuning, host
    network and DNS policy, pod and workload annotations, revisionHistoryLimit, pod security
    contexts, priorityClassName, gc's extraArgs/extraEnvs and the topology updater's extraEnvs."""
    env = [{"name": "EXTRA", "value": "1"}]
    values: dict[str, Any] = {
        "priorityClassName": "global-pc",
        "imagePullSecrets": [{"name": "top"}], "global": {"imagePullSecrets": [{"name": "glob"}]},
        "master": {"startupProbe": {"failureThreshold": 60}, "livenessProbe": {"periodSeconds": 7},
                   "labels": {"team": "infra"}, "initContainers": [{"name": "i", "image": "busybox"}],
                   "hostNetwork": True, "dnsPolicy": "Default", "annotations": {"pod/a": "m"},
                   "deploymentAnnotations": {"dep/a": "m"}, "revisionHistoryLimit": 3,
                   "podSecurityContext": {"fsGroup": 2000}},
        "worker": {"priorityClassName": "worker-pc", "readinessProbe": {"failureThreshold": 20},
                   "daemonsetAnnotations": {"ds/a": "w"}, "annotations": {"pod/a": "w"},
                   "podSecurityContext": {"fsGroup": 3000}, "revisionHistoryLimit": 4},
        "gc": {"extraArgs": ["-list-size=100"], "extraEnvs": env, "podSecurityContext": {"runAsUser": 1234},
               "hostUsers": False, "networkPolicy": {"enabled": True, "egress": [{"ports": [{"port": 6443}]}]},
               "deploymentAnnotations": {"dep/a": "g"}},
        "topologyUpdater": {"enable": True, "extraEnvs": env, "livenessProbe": {"timeoutSeconds": 9}},
    }
    objs = helm_template(helm_bin, values=values, tmpdir=tmp_path)
    by = {(o["kind"], o["metadata"]["name"]): o for o in objs}
    full = "nfd-node-feature-discovery"
    master, worker = by[("Deployment", f"{full}-master")], by[("DaemonSet", f"{full}-worker")]
    gc, topo = by[("Deployment", f"{full}-gc")], by[("DaemonSet", f"{full}-topology-updater")]
    mp, wp, gp, tp = (o["spec"]["template"]["spec"] for o in (master, worker, gc, topo))
    assert mp["containers"][0]["startupProbe"]["failureThreshold"] == 60
    assert master["spec"]["template"]["metadata"]["labels"]["team"] == "infra"
    assert gp["hostUsers"] is False and mp["initContainers"] == [{"name": "i", "image": "busybox"}]
    # imagePullSecrets wins over global.imagePullSecrets, as upstream
    assert mp["imagePullSecrets"] == [{"name": "top"}] == gp["imagePullSecrets"]
    assert mp["containers"][0]["livenessProbe"] == {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 7}
    assert mp["hostNetwork"] is True and mp["dnsPolicy"] == "Default" and mp["securityContext"]["fsGroup"] == 2000
    assert mp["priorityClassName"] == "global-pc" and wp["priorityClassName"] == "worker-pc"
    assert master["spec"]["template"]["metadata"]["annotations"]["pod/a"] == "m"
    assert master["metadata"]["annotations"] == {"dep/a": "m"} and master["spec"]["revisionHistoryLimit"] == 3
    assert worker["metadata"]["annotations"] == {"ds/a": "w"} and worker["spec"]["revisionHistoryLimit"] == 4
    assert worker["spec"]["template"]["metadata"]["annotations"]["pod/a"] == "w"
    assert wp["containers"][0]["readinessProbe"]["failureThreshold"] == 20 and wp["securityContext"] == {"fsGroup": 3000, **RUNTIME_DEFAULT}
    assert "-list-size=100" in gp["containers"][0]["args"] and gp["containers"][0]["env"][1:] == env
    assert gp["securityContext"] == {"runAsUser": 1234, **RUNTIME_DEFAULT} and gc["metadata"]["annotations"] == {"dep/a": "g"}
    assert gp["containers"][0]["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert {"name": "EXTRA", "value": "1"} in tp["containers"][0]["env"]
    assert tp["containers"][0]["livenessProbe"]["timeoutSeconds"] == 9
    (np,) = [o for o in objs if o["kind"] == "NetworkPolicy"]
    assert np["metadata"]["name"] == f"{full}-gc-network-policy" and np["spec"]["podSelector"]["matchLabels"]["role"] == "gc"
    assert np["spec"]["egress"] == [{"ports": [{"port": 6443}]}]
    assert _dry_run(install_kube, objs, skip_kinds=frozenset({"PodMonitor"})) > 0


@pytest.mark.parametrize("bad", [{"image": {"pullPolicy": "Sometimes"}}, {"master": {"replicaCount": "two"}},
                                 {"worker": {"dnsPolicy": "Sideways"}}, {"gc": {"interval": "soon"}},
                                 {"featureGates": {"NodeFeatureGroupAPI": "yes"}}])
def test_values_schema_refuses_wrong_types_and_enums(bad: dict[str, Any], helm_bin: Path, tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="values don't meet the specifications of the schema"):
        helm_template(helm_bin, values=bad, tmpdir=tmp_path)


def test_values_schema_takes_upstream_style_values_files(helm_bin: Path, tmp_path: Path) -> None:
    gap = REPO_ROOT.parent / "shared" / "reference" / "gap-audit"
    files = [gap / "values-gpu-operator-nfd.yaml", gap / "values-user-override.yaml"]
    if not all(f.exists() for f in files):
        pytest.skip(f"{gap} is not there (../shared is read at test time)")
    for f in files:
        assert helm_template(helm_bin, values=yaml.safe_load(f.read_text()), tmpdir=tmp_path)


def test_values_schema_is_generated() -> None:
    import subprocess
    import sys as _sys

    gen = REPO_ROOT / "deploy" / "helm" / "gen_values_schema.py"
    assert subprocess.run([_sys.executable, str(gen), "--check"], capture_output=True).returncode == 0


def test_checksum_values_only(helm_bin: Path, tmp_path: Path) -> None:
    """checksumValuesOnly: pods roll only when config values change, not when the rendered
    ConfigMap changes otherwise (its labels carry the release's names)."""
    def checksum(values: dict[str, Any]) -> str:
        objs = helm_template(helm_bin, values=values, tmpdir=tmp_path)
        (master,) = [o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-master")]
        return str(master["spec"]["template"]["metadata"]["annotations"]["checksum/config"])

    only = {"checksumValuesOnly": True}
    assert checksum({**only, "nameOverride": "other"}) == checksum(only)
    assert checksum({"nameOverride": "other"}) != checksum({})
    assert checksum({**only, "master": {"config": {"enableTaints": True}}}) != checksum(only)


def test_samples_custom_rules_overlay(kustomize_bin: Path) -> None:
    """Upstream's samples/custom-rules: a ConfigMap of custom rules mounted into custom.d."""
    from nfd.sources.custom import compile_custom_rules

    objs = kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / "samples" / "custom-rules")
    (ds,) = [o for o in objs if o["kind"] == "DaemonSet" and o["metadata"]["name"] == "nfd-worker"]
    mounts = {m["mountPath"] for m in ds["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]}
    assert "/etc/kubernetes/node-feature-discovery/custom.d/extra-rules-1" in mounts
    (cm,) = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("custom-source-extra-rules-1")]
    rules = compile_custom_rules(yaml.safe_load(cm["data"]["custom.conf"]), path="custom.conf")
    assert [r.name for r in rules] == ["rdma capable", "nvidia gpu present"]


GPU_LABELS_RULE = DEPLOY_DIR / "nodefeaturerule" / "nvidia-gpu-labels-from-dra" / "nvidia-gpu-labels-from-dra.yaml"


def test_shipped_nodefeaturerule_from_helm_and_kustomize(helm_bin: Path, kustomize_bin: Path, tmp_path: Path,
                                                         install_kube: AuditedCluster) -> None:
    """nvidia-gpu-labels-from-dra (docs/gpu.md): off by default in the chart, the file's object
    with `nodeFeatureRules.nvidiaGpuLabelsFromDRA` (its Go template left to nfd-master, not
    rendered by Helm), the same object from the kustomize component in a user's overlay, and
    accepted by the API server."""
    rule = yaml.safe_load(GPU_LABELS_RULE.read_text())
    assert not [o for o in helm_template(helm_bin, tmpdir=tmp_path) if o["kind"] == "NodeFeatureRule"]
    (helm,) = [o for o in helm_template(helm_bin, values={"nodeFeatureRules": {"nvidiaGpuLabelsFromDRA": True}},
                                        tmpdir=tmp_path) if o["kind"] == "NodeFeatureRule"]
    assert helm == rule
    mine = tmp_path / "my-overlay"
    mine.mkdir()
    rel = os.path.relpath(DEPLOY_DIR, mine)
    (mine / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": NS,
        "resources": [f"{rel}/overlays/default"], "components": [f"{rel}/components/nvidia-gpu-labels-from-dra"]}))
    objs = kustomize_build(kustomize_bin, mine)
    (kust,) = [o for o in objs if o["kind"] == "NodeFeatureRule"]
    # kustomize puts the overlay's namespace on kinds it does not know; the API server drops it
    # from a cluster-scoped object
    kust["metadata"].pop("namespace", None)
    assert kust == rule
    assert len(objs) == len(kustomize_build(kustomize_bin, DEPLOY_DIR / "overlays" / "default")) + 1
    _dry_run(install_kube, [kust])
