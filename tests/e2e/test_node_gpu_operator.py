"""docs/gpu-operator.md on the real node: the GPU Operator's own NFD replaced by nfd, and the
order a fresh install needs.

The operator's Helm chart is NVIDIA/gpu-operator's `deployments/gpu-operator` at the version
tests/e2e/tools.py pins (downloaded from the Go module proxy); its `node-feature-discovery`
subchart is upstream's chart v0.17.3, and its image is upstream's v0.17.3 built from the release's
sources as upstream's image ships it (tests/e2e/upstream_image.py, imported into the node's
containerd). nfd is deploy/helm/node-feature-discovery with deploy/helm/gpu-operator-values.yaml
and the image the suite builds from the Dockerfile.

What of the operator's chart runs here and what does not:

- runs: `helm install` of the chart as its users do, its NFD on (`nfd.enabled=true`, the
  default): the chart's CRDs (ClusterPolicy, NVIDIADriver and the subchart's NFD CRDs), its RBAC,
  the ClusterPolicy object, and the whole NFD subchart with the operator's settings: upstream's
  nfd-master, nfd-worker (DaemonSet) and nfd-gc pods on the node.
- does not run: the operator itself. Its image (nvcr.io/nvidia/gpu-operator) cannot be pulled
  here, so `operator.nodeSelector` matches no node and its Deployment's pod stays Pending: the
  ClusterPolicy is never reconciled and no operand (driver, toolkit, device plugin, GFD, DCGM,
  validator, MIG manager) is deployed. The `helm upgrade` runs with `--no-hooks`: the chart's
  pre-upgrade hook (`operator.upgradeCRD`) is a Job in the operator's image that applies the
  operator's CRDs (and NFD's own, but only while `nfd.enabled` is true); it cannot run here.
- values changed from the defaults: those two (the operator's nodeSelector, the subchart's image
  repository and tag), and, for the order check, `nfd.enabled=false` and `nfd.nodefeaturerules=true`.
- the GPU server: both charts are installed with a Helm post-renderer (tests/e2e/helm_host_sys.py)
  that points the workers' `/sys` hostPath at a copy of the gpu-server fixture's sysfs (an H100
  in class 0302, ConnectX NICs in 0200, an ASPEED VGA); the kernel, /etc/os-release, /boot and
  /lib are this machine's. Nothing else of either chart changes.

The migration follows docs/gpu-operator.md literally: our CRDs applied server-side first
(`kubectl apply --server-side --force-conflicts -k crds/`), the operator's NFD turned off (`helm
upgrade ... --reuse-values --set nfd.enabled=false`), its pods and NodeFeatures waited out
(`kubectl wait --for=delete`), nfd installed with the preset. From before the CRDs until nfd has
reconciled, the Node is read every 0.5 s and watched (every version the API server sends): the
labels the operator reads (tests/e2e/test_deploy_gpu_operator.py OPERATOR_READS, checked there
against the operator's code) never disappear or change. At the end every label of upstream's
is ours with its value (ours adds only what v0.17.3 lacks: cpu-cpuid.X86_64_V*,
cpu-model.hypervisor), nfd's master owns the labels (a label upstream's master added from a
NodeFeatureRule, listed in its bookkeeping annotation, is removed by ours when the rule goes) and
none of the operator's NFD objects is left.

The order check: with NFD's CRDs absent, `helm install` of the operator with its NFD off and
its NodeFeatureRule on fails (the chart renders a NodeFeatureRule, nothing installs its CRD);
with our CRDs applied first, the same install succeeds.

The session's cluster has NFD's CRDs from its start (tests/e2e/harness.py installs crds/): each
test deletes them first, as on a cluster that never had NFD. The node is left as found, also
when a test fails (checked after each test): both releases uninstalled without hooks,
their namespaces and the operator's CRDs deleted, NFD's CRDs (and any NFD object there was)
as the session's cluster had them, the node's nfd labels and annotations as before.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfd.sources.system import parse_os_release
from tests.e2e.build import BuildError
from tests.e2e.harness import HttpError, RestClient
from tests.e2e.image import ImageError
from tests.e2e.node import RealNode, real_node
from tests.e2e.test_deploy_gpu_operator import (
    OPERATOR_GPU_NODE_LABELS,
    OPERATOR_MELLANOX_LABEL,
    OPERATOR_NODE_INFO_LABELS,
    OPERATOR_OSTREE_LABEL,
    OPERATOR_READS,
)
from tests.e2e.test_real_node import NodeWatch, component, pod_state, pods, ready
from tests.e2e.tools import (
    CHART_DIR,
    DEPLOY_DIR,
    REPO_ROOT,
    TOOLS_DIR,
    gpu_operator_chart_fixture,
    helm_bin,
    module_requirement,
)

pytestmark = [pytest.mark.node, pytest.mark.slow]
__all__ = ["gpu_operator_chart_fixture", "helm_bin", "real_node"]  # fixtures

OPERATOR_NS, OPERATOR_RELEASE = "gpu-operator", "gpu-operator"
NFD_NS, NFD_RELEASE = "node-feature-discovery", "nfd"
NFD_API = "/apis/nfd.k8s-sigs.io/v1alpha1"
CRD_API = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
NFD_CRDS = ("nodefeatures.nfd.k8s-sigs.io", "nodefeaturerules.nfd.k8s-sigs.io", "nodefeaturegroups.nfd.k8s-sigs.io")
OPERATOR_CRDS = ("clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com")
#: NFD's kinds, cluster-wide lists (namespaced or not)
NFD_KINDS = ("nodefeatures", "nodefeaturerules", "nodefeaturegroups")
GPU_SYS = REPO_ROOT / "tests" / "fixtures" / "sysfs" / "gpu-server" / "root" / "sys"
POST_RENDERER = Path(__file__).resolve().parent / "helm_host_sys.py"
UPSTREAM_REPO = "docker.io/library/nfd-upstream"
#: keeps the operator's Deployment off every node (its image is not available here)
NO_NODE = "nfd-e2e/run-the-gpu-operator"
#: a label upstream's master adds from a rule and ours must remove when the rule goes
RULE_LABEL = "feature.node.kubernetes.io/e2e-migration"
RULE_NAME = "e2e-migration"
RULE: dict[str, Any] = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": RULE_NAME},
        "spec": {"rules": [{"name": "e2e migration", "labels": {RULE_LABEL: "true"},
                            "matchFeatures": [{"feature": "pci.device",
                                               "matchExpressions": {"vendor": {"op": "In", "value": ["10de"]}}}]}]}}
FEATURE_LABELS_ANNOTATION = "nfd.node.kubernetes.io/feature-labels"
#: what on the Node is nfd's (and so restored to how the test found it)
NFD_LABEL_PREFIXES = ("feature.node.kubernetes.io/", "profile.node.kubernetes.io/", "nvidia.com/")
NFD_ANNOTATION_PREFIX = "nfd.node.kubernetes.io/"
POLL_S = 0.5
#: labels nfd gives that upstream's v0.17.3 does not (later upstream releases do): the x86-64
#: micro-architecture levels and the hypervisor
NEWER_CPUID = re.compile(r"feature\.node\.kubernetes\.io/cpu-cpuid\.X86_64_V[1-4]")
NEWER_LABELS = {"feature.node.kubernetes.io/cpu-model.hypervisor"}


_capture: Any = None  # pytest's capture manager: the step times are shown as they happen


@pytest.fixture(scope="module", autouse=True)
def _show_log(pytestconfig: pytest.Config) -> Iterator[None]:
    global _capture
    _capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    yield
    _capture = None


def _log(msg: str) -> None:
    ctx = _capture.global_and_fixture_disabled() if _capture is not None else contextlib.nullcontext()
    with ctx:
        print(f"nfd e2e: {msg}", file=sys.stderr, flush=True)


def expected_operator_labels() -> dict[str, str | None]:
    """The labels the operator reads as both NFDs must give them here: the fixture's GPU (class
    0302, vendor label field only) and Mellanox NICs, this machine's kernel and os-release."""
    osr = parse_os_release(Path("/etc/os-release").read_text())
    want: dict[str, str | None] = dict.fromkeys(OPERATOR_READS)
    want[OPERATOR_GPU_NODE_LABELS[0]] = "true"  # pci-10de.present
    want[OPERATOR_MELLANOX_LABEL] = "true"
    kernel, os_id, os_version = OPERATOR_NODE_INFO_LABELS
    want[kernel] = os.uname().release
    want[os_id] = osr.get("ID")
    want[os_version] = osr.get("VERSION_ID")
    want[OPERATOR_OSTREE_LABEL] = None  # a feature, not a label, in both NFDs
    return want


def operator_view(labels: dict[str, str]) -> dict[str, str | None]:
    return {k: labels.get(k) for k in OPERATOR_READS}


def nfd_labels(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k.startswith(NFD_LABEL_PREFIXES)}


@dataclass
class Stage:
    """The node, its cluster and the commands a user runs against it (helm, kubectl)."""

    node: RealNode
    helm_bin: Path
    chart: Path
    tmp: Path
    host_sys: Path
    steps: list[tuple[str, float]] = field(default_factory=list)
    _t0: float = field(default_factory=time.monotonic)

    @property
    def kube(self) -> Any:
        return self.node.kube

    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": self.kube.kubeconfig, "KUBECACHEDIR": str(self.tmp / "kube-cache"),
                "HELM_CACHE_HOME": str(self.tmp / "helm-cache"), "HELM_CONFIG_HOME": str(self.tmp / "helm-config"),
                "HELM_DATA_HOME": str(self.tmp / "helm-data")}

    def run(self, argv: list[str], *, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, env=self.env(),
                              cwd=REPO_ROOT)
        if check:
            assert proc.returncode == 0, f"{' '.join(argv[:3])} ... exit {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        return proc

    def helm(self, *args: str, check: bool = True, host_sys: bool = False) -> subprocess.CompletedProcess[str]:
        post = (["--post-renderer", sys.executable, "--post-renderer-args", str(POST_RENDERER),
                 "--post-renderer-args", str(self.host_sys)] if host_sys else [])
        return self.run([str(self.helm_bin), *args, *post], check=check)

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run([str(self.node.bins["kubectl"]), *args], check=check)

    def install_operator(self, *values: str, host_sys: bool = False,
                         check: bool = True) -> subprocess.CompletedProcess[str]:
        """`helm install` of the operator's chart, its own Deployment kept off the node."""
        return self.helm("install", OPERATOR_RELEASE, str(self.chart), "-n", OPERATOR_NS, "--create-namespace",
                         "--set-string", f"operator.nodeSelector.{NO_NODE}=no",
                         *values, host_sys=host_sys, check=check)

    def step(self, name: str) -> None:
        self.steps.append((name, time.monotonic() - self._t0))
        _log(f"gpu-operator migration: {name} at {self.steps[-1][1]:.1f}s")

    def wait(self, fn: Any, *, timeout: float, message: str, why: Any = None) -> Any:
        try:
            return self.kube.wait_until(fn, timeout=timeout, interval=0.5, message=message)
        except TimeoutError:
            detail = why() if why is not None else ""
            raise AssertionError(f"{message}: not within {timeout:.0f}s\n{detail}") from None

    def crds_present(self) -> list[str]:
        return [n for n in (*NFD_CRDS, *OPERATOR_CRDS) if self.kube.get_or_none(f"{CRD_API}/{n}") is not None]

    def delete_crds(self, names: tuple[str, ...]) -> None:
        for n in names:
            with contextlib.suppress(HttpError):
                self.kube.request("DELETE", f"{CRD_API}/{n}")
        self.wait(lambda: not [n for n in names if self.kube.get_or_none(f"{CRD_API}/{n}") is not None],
                  timeout=120, message=f"CRDs {', '.join(names)} deleted")

    def labels(self) -> dict[str, str]:
        labels: dict[str, str] = self.node.node()["metadata"].get("labels") or {}
        return labels

    def logs(self, namespace: str) -> str:
        return "\n".join(f"--- {p['metadata']['name']}:\n{self.node.pod_log(namespace, p['metadata']['name'])[-2500:]}"
                         for p in pods(self.node, namespace))


@dataclass
class Found:
    """What the session's cluster had before this module: restored after each test."""

    labels: dict[str, str]
    annotations: dict[str, str]
    taints: list[dict[str, Any]] | None
    crds: set[str]
    objects: dict[str, list[dict[str, Any]]]
    namespaces: set[str]


def _snapshot(node: RealNode) -> Found:
    kube = node.kube
    meta = node.node()["metadata"]
    crds = {c["metadata"]["name"] for c in kube.get(CRD_API)["items"]}
    objects: dict[str, list[dict[str, Any]]] = {}
    for kind in NFD_KINDS:
        with contextlib.suppress(HttpError):
            objects[kind] = kube.get(f"{NFD_API}/{kind}")["items"]
    return Found(labels=nfd_labels(meta.get("labels") or {}),
                 annotations={k: v for k, v in (meta.get("annotations") or {}).items()
                              if k.startswith(NFD_ANNOTATION_PREFIX)},
                 taints=node.node()["spec"].get("taints"), crds=crds, objects=objects,
                 namespaces={n["metadata"]["name"] for n in kube.get("/api/v1/namespaces")["items"]})


def _restore(stage: Stage, found: Found) -> None:
    """Everything this module may have changed, back as `found` had it; each step tried whatever
    an earlier one did."""
    kube = stage.kube
    errors: list[str] = []

    def attempt(what: str, fn: Any) -> None:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - go on restoring; reported at the end
            errors.append(f"{what}: {e}")

    for release, ns in ((NFD_RELEASE, NFD_NS), (OPERATOR_RELEASE, OPERATOR_NS)):
        # no hooks: neither chart's prune Job (the labels are restored below), nor the operator's
        attempt(f"helm uninstall {release}", lambda r=release, n=ns: stage.helm(
            "uninstall", r, "-n", n, "--no-hooks", "--ignore-not-found", check=False))
    for ns in (OPERATOR_NS, NFD_NS):
        if ns not in found.namespaces and kube.get_or_none(f"/api/v1/namespaces/{ns}") is not None:
            attempt(f"delete namespace {ns}", lambda n=ns: kube.request("DELETE", f"/api/v1/namespaces/{n}"))

    def no_nfd_pods() -> bool:
        return not [p for ns in (OPERATOR_NS, NFD_NS) for p in pods(stage.node, ns)
                    if component(p).startswith("nfd-")]

    attempt("nfd pods gone", lambda: stage.wait(no_nfd_pods, timeout=180, message="nfd pods gone"))
    for ns in (OPERATOR_NS, NFD_NS):
        if ns not in found.namespaces:
            attempt(f"namespace {ns} gone", lambda n=ns: stage.wait(
                lambda: kube.get_or_none(f"/api/v1/namespaces/{n}") is None, timeout=180,
                message=f"namespace {n} deleted"))
    # CRDs: none of the operator's; NFD's as the cluster had them (re-created from crds/ as
    # tests/e2e/harness.py installs them, with the objects there were)
    attempt("delete CRDs", lambda: stage.delete_crds(tuple(n for n in (*NFD_CRDS, *OPERATOR_CRDS)
                                                            if kube.get_or_none(f"{CRD_API}/{n}") is not None)))
    if set(NFD_CRDS) & found.crds:
        attempt("install crds/", kube.install_crds)
        for kind, items in found.objects.items():
            for obj in items:
                meta = {k: v for k, v in obj["metadata"].items()
                        if k in ("name", "namespace", "labels", "annotations", "ownerReferences")}
                body = {**{k: v for k, v in obj.items() if k != "status"}, "metadata": meta}
                ns_path = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
                attempt(f"re-create {kind}/{meta['name']}",
                        lambda b=body, p=f"{NFD_API}{ns_path}/{kind}": kube.request("POST", p, body=b))
    # the Node's nfd labels, annotations and taints
    meta = stage.node.node()["metadata"]
    now_labels = nfd_labels(meta.get("labels") or {})
    now_ann = {k: v for k, v in (meta.get("annotations") or {}).items() if k.startswith(NFD_ANNOTATION_PREFIX)}
    patch: dict[str, Any] = {"metadata": {
        "labels": {**{k: None for k in now_labels if k not in found.labels}, **found.labels},
        "annotations": {**{k: None for k in now_ann if k not in found.annotations}, **found.annotations}}}
    if stage.node.node()["spec"].get("taints") != found.taints:
        patch["spec"] = {"taints": found.taints}
    attempt("restore the Node", lambda: kube.request("PATCH", f"/api/v1/nodes/{stage.node.name}",
                                                      content_type="application/merge-patch+json", body=patch))
    assert not errors, "the node could not be restored:\n" + "\n".join(errors)
    now = _snapshot(stage.node)
    names = {kind: sorted((o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in items)
             for kind, items in found.objects.items()}
    now_names = {kind: sorted((o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in items)
                 for kind, items in now.objects.items()}
    assert (now.labels, now.annotations, now.taints, now.crds, now.namespaces, now_names) == \
        (found.labels, found.annotations, found.taints, found.crds, found.namespaces, names), "the node not as found"


@pytest.fixture(scope="module")
def found(real_node: RealNode) -> Found:
    return _snapshot(real_node)


@pytest.fixture
def stage(real_node: RealNode, helm_bin: Path, gpu_operator_chart: Path, found: Found) -> Iterator[Stage]:
    """A cluster without NFD's CRDs (as before any NFD was installed), restored afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="nfd-gpu-operator-"))
    tmp.chmod(0o755)
    host_sys = tmp / "sys"  # read by the workers (user 65534): world-readable, as the fixture is
    shutil.copytree(GPU_SYS, host_sys, symlinks=True)
    s = Stage(node=real_node, helm_bin=helm_bin, chart=gpu_operator_chart, tmp=tmp, host_sys=host_sys)
    try:
        for ns in (OPERATOR_NS, NFD_NS):
            assert not [p for p in pods(real_node, ns) if component(p).startswith("nfd-")], \
                f"nfd pods already run in {ns}: {pod_state(real_node, ns)}"
        s.delete_crds(tuple(n for n in (*NFD_CRDS, *OPERATOR_CRDS) if n in s.crds_present()))
        yield s
    finally:
        try:
            _restore(s, found)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def upstream_image(real_node: RealNode) -> Iterator[str]:
    """Upstream's v0.17.3 image (tests/e2e/upstream_image.py) in the node's containerd: its tag."""
    from tests.e2e import upstream_image as ui
    from tests.e2e.upstream import release_worker_conf

    version = module_requirement(TOOLS_DIR / "upstream-nfd", "sigs.k8s.io/node-feature-discovery")
    began = time.monotonic()
    try:
        bins = ui.release_binaries(log=_log)
        conf = release_worker_conf()
        tar = ui.ensure_upstream_image(bins, version, worker_conf=conf if conf is not None and conf.is_file() else None,
                                       log=_log)
    except (BuildError, ImageError) as e:
        pytest.fail(f"cannot build upstream's image: {e}", pytrace=False)
    real_node.ctr("images", "import", str(tar))
    _log(f"upstream's image {UPSTREAM_REPO}:{version} in the node's containerd in {time.monotonic() - began:.1f}s")
    try:
        yield version
    finally:
        with contextlib.suppress(Exception):
            real_node.ctr("images", "rm", f"{UPSTREAM_REPO}:{version}")


class NodePoller:
    """The Node read every POLL_S seconds in a thread (its own client): (time, labels) each time."""

    def __init__(self, stage: Stage) -> None:
        kube = stage.kube
        self.client = RestClient(server=kube.server, ca_file=kube.ca_file, token=kube.admin_token)
        self.path = f"/api/v1/nodes/{stage.node.name}"
        self.reads: list[tuple[float, dict[str, str]]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                node = self.client.request("GET", self.path, timeout=10)
                self.reads.append((time.monotonic(), node["metadata"].get("labels") or {}))
            except Exception as e:  # noqa: BLE001 - a missed read is reported, not fatal
                self.errors.append(str(e))
            self._stop.wait(POLL_S)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=15)


def test_the_operators_nodefeaturerule_needs_nfds_crds_first(stage: Stage) -> None:
    """docs/gpu-operator.md's install order: NFD's CRDs first. Without them the operator's chart
    with its NFD off and its NodeFeatureRule on (`nfd.nodefeaturerules=true`) does not install;
    after `kubectl apply --server-side -k crds/` the same command does."""
    rules = ("--set", "nfd.enabled=false", "--set", "nfd.nodefeaturerules=true")
    proc = stage.install_operator(*rules, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert 'no matches for kind "NodeFeatureRule"' in out and "ensure CRDs are installed first" in out, out
    assert stage.kube.get_or_none(f"/apis/apps/v1/namespaces/{OPERATOR_NS}/deployments/gpu-operator") is None
    assert stage.helm("status", OPERATOR_RELEASE, "-n", OPERATOR_NS, check=False).returncode != 0  # no release
    stage.kubectl("apply", "--server-side", "-k", "crds/")
    stage.install_operator(*rules)
    rule = stage.kube.get(f"{NFD_API}/nodefeaturerules/nvidia-nfd-nodefeaturerules")
    assert rule["metadata"]["annotations"]["meta.helm.sh/release-name"] == OPERATOR_RELEASE
    # the operator's NFD is off: nothing of the subchart, no NFD pod
    assert not [p for p in pods(stage.node, OPERATOR_NS) if component(p).startswith("nfd-")]


def test_migration_from_the_operators_nfd_keeps_the_labels_it_reads(stage: Stage, upstream_image: str) -> None:
    kube, node = stage.kube, stage.node
    want = expected_operator_labels()
    sub = yaml.safe_load((stage.chart / "charts" / "node-feature-discovery" / "Chart.yaml").read_text())
    assert sub["appVersion"] == upstream_image, (sub["appVersion"], upstream_image)  # the subchart's NFD release

    # 1. the operator as its users install it, its own NFD on (the default)
    stage.install_operator("--set", f"node-feature-discovery.image.repository={UPSTREAM_REPO}",
                           "--set", f"node-feature-discovery.image.tag={upstream_image}", host_sys=True)
    stage.step("operator's chart installed (nfd.enabled=true)")
    upstream = {"nfd-master", "nfd-worker", "nfd-gc"}
    stage.wait(lambda: {component(p) for p in pods(node, OPERATOR_NS) if ready(p)} >= upstream, timeout=300,
               message="the operator's NFD pods Ready", why=lambda: pod_state(node, OPERATOR_NS))
    (op_pod,) = [p for p in pods(node, OPERATOR_NS) if component(p) == "gpu-operator"]
    assert op_pod["status"]["phase"] == "Pending" and not op_pod["spec"].get("nodeName"), op_pod["status"]
    assert all(p["spec"]["containers"][0]["image"] == f"{UPSTREAM_REPO}:{upstream_image}"
               for p in pods(node, OPERATOR_NS) if component(p).startswith("nfd-"))
    stage.wait(lambda: operator_view(stage.labels()) == want, timeout=180,
               message="the labels the operator reads, from upstream's NFD",
               why=lambda: f"{operator_view(stage.labels())} != {want}\n{stage.logs(OPERATOR_NS)}")
    kube.request("POST", f"{NFD_API}/nodefeaturerules", body=RULE)
    stage.wait(lambda: stage.labels().get(RULE_LABEL) == "true", timeout=120,
               message="upstream's master applied the rule", why=lambda: stage.logs(OPERATOR_NS))
    stage.step("upstream's NFD labelled the node")
    before = node.node()["metadata"]
    owned_by_upstream = set(before["annotations"][FEATURE_LABELS_ANNOTATION].split(","))
    assert {"pci-10de.present", "pci-15b3.present", "e2e-migration"} <= owned_by_upstream, owned_by_upstream
    baseline = nfd_labels(before["labels"])
    rule_crd = kube.get(f"{CRD_API}/nodefeaturerules.nfd.k8s-sigs.io")
    assert "matchCEL" not in yaml.safe_dump(rule_crd["spec"]), "the subchart's CRDs are v0.17.3's, without matchCEL"

    poller, watch = NodePoller(stage), NodeWatch(node)
    rule_deleted_at = float("inf")
    try:
        # 2. our CRDs, server-side, first
        stage.kubectl("apply", "--server-side", "--force-conflicts", "-k", "crds/")
        rule_crd = kube.get(f"{CRD_API}/nodefeaturerules.nfd.k8s-sigs.io")
        assert "matchCEL" in yaml.safe_dump(rule_crd["spec"]), "our CRDs took over"
        assert kube.get_or_none(f"{NFD_API}/nodefeaturerules/{RULE_NAME}") is not None
        stage.step("our CRDs applied server-side")
        # 3. the operator's NFD off (same chart, its values kept)
        stage.helm("upgrade", OPERATOR_RELEASE, str(stage.chart), "-n", OPERATOR_NS, "--reuse-values",
                   "--set", "nfd.enabled=false", "--no-hooks")
        stage.kubectl("-n", OPERATOR_NS, "wait", "--for=delete", "pod", "-l",
                      "app.kubernetes.io/name=node-feature-discovery", "--timeout=5m")
        stage.kubectl("-n", OPERATOR_NS, "wait", "--for=delete", "nodefeatures.nfd.k8s-sigs.io", "--all",
                      "--timeout=5m")
        stage.step("operator's NFD off, its pods and NodeFeatures gone")
        hooks = stage.helm("get", "hooks", OPERATOR_RELEASE, "-n", OPERATOR_NS).stdout
        assert "node-feature-discovery-prune" not in hooks, "an uninstall of the operator would still prune"
        # 4. nfd with the preset
        stage.helm("install", NFD_RELEASE, str(CHART_DIR), "-n", NFD_NS, "--create-namespace",
                   "-f", str(DEPLOY_DIR / "helm" / "gpu-operator-values.yaml"),
                   "--set", "image.repository=docker.io/library/nfd", "--set", "image.tag=e2e", host_sys=True)
        stage.step("nfd installed")
        ours = {"nfd-master", "nfd-worker", "nfd-gc"}
        stage.wait(lambda: {component(p) for p in pods(node, NFD_NS) if ready(p)} >= ours, timeout=300,
                   message="nfd's pods Ready", why=lambda: pod_state(node, NFD_NS))
        stage.wait(lambda: kube.get_or_none(f"{NFD_API}/namespaces/{NFD_NS}/nodefeatures/{node.name}"), timeout=120,
                   message="nfd-worker's NodeFeature", why=lambda: stage.logs(NFD_NS))
        stage.step("nfd's pods Ready, its NodeFeature published")
        # 5. our master owns what upstream's owned: the rule's label goes with the rule
        kube.request("DELETE", f"{NFD_API}/nodefeaturerules/{RULE_NAME}")
        rule_deleted_at = time.monotonic()

        def unlabelled() -> bool:
            meta = node.node()["metadata"]
            return (RULE_LABEL not in meta["labels"]
                    and "e2e-migration" not in meta["annotations"].get(FEATURE_LABELS_ANNOTATION, "").split(","))

        stage.wait(unlabelled, timeout=120, message="our master removed the rule's label", why=lambda: stage.logs(NFD_NS))
        stage.step("our master removed the label upstream's had added")
        time.sleep(5)  # reads after the last write
    finally:
        poller.stop()
        watch.close()

    # the labels the operator reads never changed: every read, every version of the Node
    versions = [(t, labels) for t, labels in poller.reads] + [
        (float("-inf"), ev["object"]["metadata"].get("labels") or {}) for ev in watch.events if ev.get("type") != "ERROR"]
    bad = [(t, operator_view(labels)) for t, labels in versions if operator_view(labels) != want]
    assert not bad, f"{len(bad)} of {len(versions)} versions of the Node differ for the operator: {bad[:3]}"
    lost = [t for t, labels in poller.reads if t < rule_deleted_at and labels.get(RULE_LABEL) != "true"]
    assert not lost, f"the rule's label was missing in {len(lost)} reads before the rule was deleted"
    assert len(poller.reads) >= 10 and not poller.errors, (len(poller.reads), poller.errors[:3])
    assert watch.events, "no Node version seen by the watch"
    # ours owns the labels: its bookkeeping lists every nfd label on the node
    after = node.node()["metadata"]
    final = nfd_labels(after["labels"])
    owned = set(after["annotations"][FEATURE_LABELS_ANNOTATION].split(","))
    assert owned == {k.removeprefix("feature.node.kubernetes.io/") for k in final}, (owned, sorted(final))
    # every label of upstream's is ours, with its value; ours adds only what v0.17.3 lacks and the
    # upstream release nfd follows has (docs/compatibility.md)
    changed = {k: (v, final.get(k)) for k, v in baseline.items() if k != RULE_LABEL and final.get(k) != v}
    assert not changed, f"labels of upstream's NFD changed (upstream's, ours): {changed}"
    added = {k: v for k, v in final.items() if k not in baseline}
    assert all(k in NEWER_LABELS or NEWER_CPUID.fullmatch(k) for k in added), added
    # the operator's NFD objects are gone (its subchart's names: <release>-node-feature-discovery...,
    # the shared ServiceAccount node-feature-discovery); the operator's own remain
    left = []
    for path in (f"/apis/apps/v1/namespaces/{OPERATOR_NS}/deployments", f"/apis/apps/v1/namespaces/{OPERATOR_NS}/daemonsets",
                 f"/api/v1/namespaces/{OPERATOR_NS}/configmaps", f"/api/v1/namespaces/{OPERATOR_NS}/serviceaccounts",
                 f"/apis/rbac.authorization.k8s.io/v1/namespaces/{OPERATOR_NS}/roles",
                 f"/apis/rbac.authorization.k8s.io/v1/namespaces/{OPERATOR_NS}/rolebindings",
                 "/apis/rbac.authorization.k8s.io/v1/clusterroles", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"):
        left += [f"{path.rsplit('/', 1)[1]}/{o['metadata']['name']}" for o in kube.get(path)["items"]
                 if o["metadata"]["name"].startswith((f"{OPERATOR_RELEASE}-node-feature-discovery",
                                                      "node-feature-discovery"))]
    left += [f"nodefeatures/{o['metadata']['name']}"
             for o in kube.get(f"{NFD_API}/namespaces/{OPERATOR_NS}/nodefeatures")["items"]]
    assert not left, f"the operator's NFD left {left}"
    assert kube.get_or_none(f"/apis/apps/v1/namespaces/{OPERATOR_NS}/deployments/gpu-operator") is not None
    assert kube.get_or_none("/apis/nvidia.com/v1/clusterpolicies/cluster-policy") is not None
    _log("gpu-operator migration: " + ", ".join(f"{name} {t:.1f}s" for name, t in stage.steps)
         + f"; {len(poller.reads)} reads, {len(watch.events)} watched versions of the Node; nfd added {sorted(added)}")
