"""Build and run the CLIs the deploy tests use: helm, kustomize and kube-scheduler.

They are built from the Go modules under tests/tools/ (go.mod/go.sum pinned), the same way
tests/e2e/build.py builds the control plane, and cached outside the repository keyed by a
hash of the module's files and the Go version:

    ${NFD_TEST_TOOLS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/nfd-test-tools}/<module>-<key>/<tool>

- tests/tools/helm: helm and kustomize (helm v3.22 needs k8s.io/* v0.37);
- tests/tools/scheduler: kube-scheduler from the k8s.io/kubernetes version and replace
  lines of tests/apiserver/go.mod, so the build cache is shared with the control plane;
- tests/tools/registry: CNCF distribution's OCI registry (image compatibility tests);
- tests/tools/celk8s: Kubernetes' CEL environment as an expression evaluator (CEL library tests);
- tests/tools/schedplugins: kube-scheduler with kubernetes-sigs/scheduler-plugins'
  NodeResourceTopologyMatch (v0.34.7, on Kubernetes 1.34 modules): the topology-aware
  scheduler that reads nfd-topology-updater's NodeResourceTopology (test_topology_scheduler).
- tests/tools/upstream-nfd: upstream's nfd-topology-updater and nfd-worker (the release the proxy
  serves, v0.17.3), so that test_topology_scheduler and the benchmarks set ours beside upstream's
  on a fresh machine (UPSTREAM_NFD_TOPOLOGY_UPDATER / UPSTREAM_NFD_WORKER still name others);
  and, as module "upstream-nfd-image", the same release's nfd-master, nfd-worker,
  nfd-topology-updater, nfd-gc and kubectl-nfd built as upstream's image ships them (static,
  /host- prefix), for tests/e2e/upstream_image.py.
- tests/tools/gfd: NVIDIA's gpu-feature-discovery (k8s-device-plugin v0.17.4, with a stand-in for
  the NFD v0.15.7 packages it names, which the proxy does not serve), run over the mock NVML
  library by tests/unit/sources/nvml/test_nvml_gfd_mock.py.
  /host- prefix), for tests/e2e/upstream_image.py; as "upstream-nfd-image-arm64", that release's
  nfd-worker for linux/arm64 as upstream's arm64 image has it (cgo with Debian's
  gcc-aarch64-linux-gnu, static, /host- prefix; the build is probed for the cgo arm64 cpu source),
  for tests/e2e/test_arm64.py.
- tests/tools/nvdp: NVIDIA's nvidia-device-plugin of the same release, the real node's device
  plugin over the mock NVML library in tests/e2e/test_node_nvidia_device_plugin.py.

Not built, downloaded: the NVIDIA GPU Operator's repository, which the Go module proxy serves as
a module at a pseudo-version (GPU_OPERATOR_VERSION, its go.sum hash checked), into Go's module
cache with `go mod download`: its `deployments/gpu-operator` is the operator's Helm chart, with
upstream NFD's chart vendored as its `node-feature-discovery` subchart (tests/e2e/test_deploy_gpu_operator.py
reads its values, tests/e2e/test_node_gpu_operator.py installs it on the real node).

`python -m tests.e2e.tools [--if-go]` builds everything missing (but "upstream-nfd-image-arm64",
built when tests/e2e/test_arm64.py or `python -m tests.e2e.arm64` first asks for it), downloads the
operator's chart and prints the paths and times. Tests get the binaries from the fixtures below;
they skip only when Go is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e import hostpkgs
from tests.e2e.build import BuildError, _ldflags, ensure_built, find_go, go_version, kubernetes_version
from tests.e2e.harness import KubeCluster, ManagedProcess, free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS_DIR = REPO_ROOT / "tests" / "tools"
DEPLOY_DIR = REPO_ROOT / "deploy"
CHART_DIR = DEPLOY_DIR / "helm" / "node-feature-discovery"


#: the binaries of upstream's image that tests/tools/upstream-nfd builds (its /usr/bin)
UPSTREAM_IMAGE_BINARIES = ("nfd-master", "nfd-worker", "nfd-topology-updater", "nfd-gc", "kubectl-nfd")


@dataclass(frozen=True)
class Module:
    name: str
    #: tool name -> Go package path built into it
    packages: dict[str, str]
    #: the directory under tests/tools holding go.mod (default: the name)
    src: str | None = None
    #: static binaries (CGO_ENABLED=0, osusergo,netgo), as upstream builds its image's
    static: bool = False
    #: built when first asked for (build_module), not by `python -m tests.e2e.tools`: no test of
    #: the default run uses it, and a cold build costs minutes of CI
    on_demand: bool = False
    #: the build key covers every file under the module's directory (a local replace module in
    #: a subdirectory), not only its top-level go.mod, go.sum and *.go
    tree: bool = False
    #: needs cgo (a C compiler): CGO_ENABLED=1 whatever the environment says
    cgo: bool = False
    #: cross-build for this GOARCH with cgo and Debian's cross compiler for it (CROSS_CC), linked
    #: static, as upstream's Makefile builds its image (`-extldflags=-static`, cgo on: the arm64
    #: cpu source reads getauxval(3) through cgo)
    goarch: str = ""

    @property
    def cross_cc(self) -> str:
        return CROSS_CC[self.goarch][0] if self.goarch else ""

    @property
    def dir(self) -> Path:
        return TOOLS_DIR / (self.src or self.name)

    def ldflags(self) -> str:
        if self.name.startswith("upstream-nfd-image"):
            # as upstream's Makefile builds the image's binaries: the release's version, and the
            # host's /proc, /sys, /etc... read under /host-* (the mounts its manifests make)
            pkg = "sigs.k8s.io/node-feature-discovery/pkg"
            version = module_requirement(self.dir, "sigs.k8s.io/node-feature-discovery")
            static = " -extldflags=-static" if self.goarch else ""
            return f"-s -w{static} -X {pkg}/version.version={version} -X {pkg}/utils/hostpath.pathPrefix=/host-"
        if self.name == "scheduler":
            return _ldflags(kubernetes_version())  # version stamped like the apiserver's
        if self.name == "schedplugins":
            return _ldflags(module_requirement(self.dir, "k8s.io/kubernetes"))
        return "-s -w"


MODULES = (
    Module("helm", {"helm": "helm.sh/helm/v3/cmd/helm", "kustomize": "sigs.k8s.io/kustomize/kustomize/v5"}),
    Module("scheduler", {"kube-scheduler": "."}),
    Module("registry", {"registry": "github.com/distribution/distribution/v3/cmd/registry"}),
    Module("celk8s", {"celk8s": "."}),
    Module("gostd", {"gostd-oracle": "."}),  # Go's strconv/netip/url/time for tests/unit/lang/gostd
    Module("schedplugins", {"kube-scheduler-nrt": "."}),
    # upstream's agents from the Go module proxy, for the tests and benchmarks that run ours beside them
    Module("upstream-nfd", {"upstream-nfd-topology-updater": "sigs.k8s.io/node-feature-discovery/cmd/nfd-topology-updater",
                            "upstream-nfd-worker": "sigs.k8s.io/node-feature-discovery/cmd/nfd-worker"}),
    # the same release built as upstream's image ships it (tests/e2e/upstream_image.py): the
    # binaries the e2e suite's pods run, and kubectl-nfd (`nfd` is left out: its compat client
    # needs modules the pinned go.sum does not hold). Built with the rest: the GPU Operator's
    # NFD runs it on the real node (tests/e2e/test_node_gpu_operator.py)
    Module("upstream-nfd-image", {f"{b}": f"sigs.k8s.io/node-feature-discovery/cmd/{b}" for b in UPSTREAM_IMAGE_BINARIES},
           src="upstream-nfd", static=True),
    # NVIDIA's gpu-feature-discovery (k8s-device-plugin v0.17.4, cgo: go-nvml dlopens
    # libnvidia-ml.so.1), run over tests/tools/mocknvml by tests/unit/sources/nvml/test_nvml_gfd_mock.py
    Module("gfd", {"gpu-feature-discovery": "github.com/NVIDIA/k8s-device-plugin/cmd/gpu-feature-discovery"},
           tree=True, cgo=True),
    # the same release's nfd-worker for linux/arm64 as upstream's arm64 image has it (cgo, static,
    # /host- prefix), run under qemu-user by tests/e2e/test_arm64.py beside ours
    Module("upstream-nfd-image-arm64", {"nfd-worker": "sigs.k8s.io/node-feature-discovery/cmd/nfd-worker"},
           src="upstream-nfd", on_demand=True, goarch="arm64"),
    # NVIDIA's device plugin (the same release, cgo as above), the real node's device plugin over
    # tests/tools/mocknvml in tests/e2e/test_node_nvidia_device_plugin.py
    Module("nvdp", {"nvidia-device-plugin": "github.com/NVIDIA/k8s-device-plugin/cmd/nvidia-device-plugin"},
           cgo=True),
)
#: GOARCH -> (Debian's cross C compiler, the packages that bring it and the target's static libc)
CROSS_CC = {"arm64": ("aarch64-linux-gnu-gcc", hostpkgs.CROSS_ARM64)}
#: a symbol that only the cgo arm64 cpu source (source/cpu/cpuid_linux_arm64.go) puts in the
#: binary: its HWCAP reader. Without cgo that file is left out (v0.17.3 then fails to build; a
#: release with a stub would build without CPU flags), so the build is probed for it.
ARM64_CPUID_PROBE = b"source/cpu._Cfunc_gethwcap"
TOOL_MODULE = {tool: m for m in MODULES for tool in m.packages}


def module_requirement(module_dir: Path, path: str) -> str:
    """The version of `path` that the module's go.mod replaces it with (else requires)."""
    text = (module_dir / "go.mod").read_text()
    for pattern in (rf"^\s*{re.escape(path)}\s*=>\s*\S+\s+(v\S+)", rf"^\s*(?:require\s+)?{re.escape(path)}\s+(v\S+)"):
        m = re.search(pattern, text, re.MULTILINE)
        if m:
            return m.group(1)
    raise BuildError(f"{module_dir / 'go.mod'}: no {path} requirement")


def cache_root() -> Path:
    env = os.environ.get("NFD_TEST_TOOLS_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "nfd-test-tools"


def build_key(go: str, module: Module) -> str:
    h = hashlib.sha256()
    if module.tree:
        names = sorted(str(p.relative_to(module.dir)) for p in module.dir.rglob("*") if p.is_file())
    else:
        names = ["go.mod", "go.sum", *sorted(p.name for p in module.dir.glob("*.go"))]
    for name in names:
        h.update(name.encode() + b"\0" + (module.dir / name).read_bytes() + b"\0")
    h.update(go_version(go).encode())
    if module.goarch:  # the cross compiler and the target libc linked in
        h.update(f"\0{module.goarch}\0{module.ldflags()}\0{_deb_versions(CROSS_CC[module.goarch][1])}".encode())
    return h.hexdigest()[:16]


def _deb_versions(packages: tuple[str, ...]) -> str:
    proc = subprocess.run(["dpkg-query", "-W", "-f=${Package}=${Version} ", *packages],
                          capture_output=True, text=True, check=False)
    return proc.stdout.strip()


def probe_cross_build(module: Module, binary: Path) -> None:
    """As a cross build can silently lose cgo: the binary is for GOARCH with cgo on (`go version
    -m`), and, for arm64, holds the cgo cpu source's HWCAP reader (BuildError otherwise)."""
    go = find_go() or "go"
    info = subprocess.run([go, "version", "-m", str(binary)], capture_output=True, text=True, check=False).stdout
    want = [f"GOARCH={module.goarch}", "CGO_ENABLED=1"]
    missing = [w for w in want if not re.search(rf"^\s*build\s+{re.escape(w)}$", info, re.MULTILINE)]
    if module.goarch == "arm64" and ARM64_CPUID_PROBE not in binary.read_bytes():
        missing.append(f"the arm64 cpu source ({ARM64_CPUID_PROBE.decode()})")
    if missing:
        raise BuildError(f"{binary}: built without {', '.join(missing)}")


def build_module(module: Module, *, log: Callable[[str], None] = print) -> dict[str, Path]:
    """Paths of the module's tools, building them first if any is missing (BuildError on failure)."""
    go = find_go()
    if go is None:
        raise BuildError("Go is not installed (no `go` on PATH)")
    if module.goarch:
        try:
            hostpkgs.ensure(CROSS_CC[module.goarch][1], log=log)
        except hostpkgs.PackageError as e:
            raise BuildError(f"cross compiler for {module.goarch}: {e}") from e
    out_dir = cache_root() / f"{module.name}-{build_key(go, module)}"
    paths = {tool: out_dir / tool for tool in module.packages}
    if all(p.exists() for p in paths.values()):
        return paths
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if all(p.exists() for p in paths.values()):  # built by another session meanwhile
            return paths
        env = dict(os.environ)
        env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -buildvcs=false -mod=readonly").strip()
        tags: list[str] = []
        if module.cgo:
            env["CGO_ENABLED"] = "1"
        if module.static:
            env["CGO_ENABLED"] = "0"
            tags = ["-tags", "osusergo,netgo"]
        if module.goarch:
            env.update(GOOS="linux", GOARCH=module.goarch, CGO_ENABLED="1", CC=module.cross_cc)
            tags = ["-tags", "osusergo,netgo"]
        for tool, pkg in module.packages.items():
            if paths[tool].exists():
                continue
            log(f"building {tool} from {module.dir.relative_to(REPO_ROOT)} into {out_dir} (first run)")
            tmp = out_dir / f".{tool}.{os.getpid()}.tmp"
            start = time.monotonic()
            proc = subprocess.run([go, "build", *tags, f"-ldflags={module.ldflags()}", "-o", str(tmp), pkg],
                                  cwd=module.dir, env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                tmp.unlink(missing_ok=True)
                tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-40:])
                raise BuildError(f"go build {pkg} failed (exit {proc.returncode}) in {module.dir}:\n{tail}")
            if module.goarch:
                try:
                    probe_cross_build(module, tmp)
                except BuildError:
                    tmp.unlink(missing_ok=True)
                    raise
            os.replace(tmp, paths[tool])
            log(f"built {tool} in {time.monotonic() - start:.1f}s")
    _prune_old(module, keep=out_dir)
    return paths


def _prune_old(module: Module, *, keep: Path, count: int = 2) -> None:
    # the name and a 16-digit key: "upstream-nfd-" + key, not "upstream-nfd-image-..." of another module
    dirs = sorted((d for d in cache_root().glob(f"{module.name}-{'[0-9a-f]' * 16}") if d.is_dir() and d != keep),
                  key=lambda d: d.stat().st_mtime, reverse=True)
    for d in dirs[count - 1:]:
        shutil.rmtree(d, ignore_errors=True)


def ensure_tool(tool: str, *, log: Callable[[str], None] = print) -> Path:
    return build_module(TOOL_MODULE[tool], log=log)[tool]


# ---- the NVIDIA GPU Operator's chart, from the Go module proxy -----------------------------------

#: the GPU Operator's repository as the Go module proxy serves it: its release tags (v25.x) are not
#: Go module versions, so a pseudo-version of a commit (d73a0086a6ba, 2025-09-17), pinned here with
#: the go.sum hash of its zip
GPU_OPERATOR_MODULE = "github.com/NVIDIA/gpu-operator"
GPU_OPERATOR_VERSION = "v0.0.0-20250917190837-d73a0086a6ba"
GPU_OPERATOR_SUM = "h1:LoeqwWjR0h2WRyHXmyYCPVwM/dAdKKxjE8LzyyeuqHI="
#: the operator's Helm chart in that module (its NFD subchart under charts/node-feature-discovery)
GPU_OPERATOR_CHART = "deployments/gpu-operator"


def gpu_operator_module() -> Path:
    """The operator's module directory in Go's module cache (read-only), downloaded by
    `go mod download` when missing; BuildError when Go is missing, the download fails or its
    hash is not the pinned one."""
    go = find_go()
    if go is None:
        raise BuildError("Go is not installed (no `go` on PATH)")
    work = cache_root()  # outside any module: `go mod download path@version` needs no go.mod
    work.mkdir(parents=True, exist_ok=True)
    flags = [f for f in os.environ.get("GOFLAGS", "").split() if not f.startswith("-mod=")]
    env = {**os.environ, "GOFLAGS": " ".join(flags), "GO111MODULE": "on", "GOWORK": "off"}
    ref = f"{GPU_OPERATOR_MODULE}@{GPU_OPERATOR_VERSION}"
    proc = subprocess.run([go, "mod", "download", "-json", ref], cwd=work, env=env, capture_output=True,
                          text=True, check=False, timeout=600)
    try:
        info = json.loads(proc.stdout)
    except ValueError:
        info = {}
    if proc.returncode != 0 or not info.get("Dir"):
        raise BuildError(f"go mod download {ref} failed: {(info.get('Error') or proc.stderr).strip()}")
    if info.get("Sum") != GPU_OPERATOR_SUM:
        raise BuildError(f"go mod download {ref}: hash {info.get('Sum')}, pinned {GPU_OPERATOR_SUM}")
    return Path(info["Dir"])


def gpu_operator_chart() -> Path:
    """The GPU Operator's Helm chart (deployments/gpu-operator of the pinned module)."""
    chart = gpu_operator_module() / GPU_OPERATOR_CHART
    if not (chart / "Chart.yaml").is_file():
        raise BuildError(f"{chart}: no Chart.yaml in {GPU_OPERATOR_MODULE}@{GPU_OPERATOR_VERSION}")
    return chart


# ---- rendering --------------------------------------------------------------------------------


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind")]


def _run(argv: list[str], *, what: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(f"{what} failed (exit {proc.returncode}):\n{proc.stderr.strip()}")
    return proc.stdout


def kustomize_build(kustomize: Path, path: Path, *, num_nodes: int | None = None) -> list[dict[str, Any]]:
    """`kustomize build` of a directory under deploy/, as `kubectl apply -k` renders it.

    ``num_nodes``: replace the NUM_NODES placeholder (default-job) as upstream's documented
    ``| sed s"/NUM_NODES/$NUM_NODES/"`` does."""
    text = _run([str(kustomize), "build", str(path)], what=f"kustomize build {path}")
    if num_nodes is not None:
        text = text.replace("NUM_NODES", str(num_nodes))
    return _docs(text)


def helm_template(helm: Path, *, release: str = "nfd", namespace: str = "node-feature-discovery",
                  values: dict[str, Any] | None = None, include_crds: bool = False,
                  tmpdir: Path | None = None) -> list[dict[str, Any]]:
    """`helm template` of the chart with the given values (a values file, like a user's)."""
    argv = [str(helm), "template", release, str(CHART_DIR), "--namespace", namespace]
    if include_crds:
        argv.append("--include-crds")
    if values:
        vf = (tmpdir or Path(os.environ.get("TMPDIR", "/tmp"))) / f"values-{os.getpid()}-{time.monotonic_ns()}.yaml"
        vf.write_text(yaml.safe_dump(values))
        argv += ["-f", str(vf)]
    return _docs(_run(argv, what="helm template"))


# ---- pytest fixtures (import them into a test module) ----------------------------------------


def _tool_fixture(tool: str) -> Callable[[], Path]:
    def fixture() -> Path:
        if find_go() is None:
            pytest.skip(f"Go is not installed: cannot build {tool}")
        try:
            return ensure_tool(tool, log=lambda m: print(f"nfd e2e: {m}", file=sys.__stderr__, flush=True))
        except BuildError as e:
            pytest.fail(f"cannot build {tool}: {e}", pytrace=False)

    fixture.__name__ = tool.replace("-", "_") + "_bin"
    return pytest.fixture(scope="session", name=fixture.__name__)(fixture)


helm_bin = _tool_fixture("helm")
kustomize_bin = _tool_fixture("kustomize")
kube_scheduler_bin = _tool_fixture("kube-scheduler")
kube_scheduler_nrt_bin = _tool_fixture("kube-scheduler-nrt")
upstream_nfd_topology_updater_bin = _tool_fixture("upstream-nfd-topology-updater")


@pytest.fixture(scope="session", name="gpu_operator_chart")
def gpu_operator_chart_fixture() -> Path:
    """The GPU Operator's Helm chart at the pinned version (downloaded on first use)."""
    if find_go() is None:
        pytest.skip("Go is not installed: cannot download the GPU Operator's module")
    try:
        return gpu_operator_chart()
    except BuildError as e:
        pytest.fail(f"cannot get the GPU Operator's chart: {e}", pytrace=False)


@pytest.fixture(scope="session")
def upstream_topology_updater_bin(request: pytest.FixtureRequest) -> Path:
    """Upstream's nfd-topology-updater: UPSTREAM_NFD_TOPOLOGY_UPDATER when set (another build),
    else the release from the Go module proxy (tests/tools/upstream-nfd)."""
    given = os.environ.get("UPSTREAM_NFD_TOPOLOGY_UPDATER")
    if given:
        return Path(given)
    return request.getfixturevalue("upstream_nfd_topology_updater_bin")


# ---- a control plane with an audit log --------------------------------------------------------

# Metadata of every request made by a ServiceAccount, once the response is complete: enough to
# tell which (verb, group, resource, subresource) each nfd identity really used.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [
        {"level": "Metadata", "userGroups": ["system:serviceaccounts"]},
        {"level": "None"},
    ],
}


class AuditedCluster(KubeCluster):
    """KubeCluster whose apiserver writes a JSON audit log of ServiceAccount requests."""

    @property
    def audit_log(self) -> Path:
        return Path(self.tmpdir) / "logs" / "audit.log"

    def _apiserver_argv(self) -> list[str]:
        policy = Path(self.tmpdir) / "audit-policy.yaml"
        policy.write_text(yaml.safe_dump(AUDIT_POLICY))
        return [*super()._apiserver_argv(), f"--audit-policy-file={policy}",
                f"--audit-log-path={self.audit_log}", "--audit-log-format=json",
                "--audit-log-mode=blocking", "--audit-log-maxsize=0"]

    def audit_mark(self) -> int:
        """A position in the audit log: pass it to audit_events(since=...) to see only later requests."""
        return self.audit_log.stat().st_size if self.audit_log.exists() else 0

    def audit_events(self, *, since: int = 0) -> list[dict[str, Any]]:
        if not self.audit_log.exists():
            return []
        out = []
        for line in self.audit_log.read_bytes()[since:].decode().splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out


def start_audited_cluster() -> AuditedCluster:
    """A fresh audited control plane (BuildError if the apiserver cannot be built)."""
    cluster = AuditedCluster.start(binary=ensure_built())
    assert isinstance(cluster, AuditedCluster)
    return cluster


_cluster: AuditedCluster | None = None


@pytest.fixture(scope="session")
def install_kube(request: pytest.FixtureRequest) -> AuditedCluster:
    """One audited control plane for the deploy tests (their cluster-wide admission policy and
    RBAC stay out of the shared `kube` cluster)."""
    global _cluster
    if find_go() is None or os.environ.get("NFD_E2E", "1") == "0":
        pytest.skip("Go is not installed (or NFD_E2E=0): no control plane for the deploy tests")
    if _cluster is None:
        try:
            cluster = start_audited_cluster()
        except BuildError as e:
            pytest.fail(f"cannot build the test kube-apiserver: {e}", pytrace=False)
        _cluster = cluster

        def close() -> None:
            global _cluster
            cluster.close()
            _cluster = None

        request.addfinalizer(close)
        return cluster
    return _cluster


# ---- an nfd installation from a rendering, its components run as processes ------------------

NFD_API = "/apis/nfd.k8s-sigs.io/v1alpha1"
NRT_API = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
SYSFS_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "sysfs"
WORKER_CONF = "core:\n  sleepInterval: 1s\n  featureSources: [all, -nvml]\n  labelSources: [all, -nvml]\n"
RBAC_KINDS = frozenset({"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"})


def make_ready_node(kube: KubeCluster, prefix: str, *, allocatable: dict[str, str] | None = None,
                    labels: dict[str, str] | None = None) -> str:
    """A Node made schedulable as a kubelet (and the node lifecycle controller) would: Ready,
    with capacity and allocatable, without the not-ready taint. Returns its (unique) name."""
    name = kube.unique_name(prefix)
    res = allocatable or {"cpu": "4", "memory": "8Gi", "pods": "110"}
    kube.create_node(name, labels={"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **(labels or {})},
                     capacity=res)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kube.request("PATCH", f"/api/v1/nodes/{name}/status", content_type="application/merge-patch+json",
                 body={"status": {"conditions": [
                     {"type": "Ready", "status": "True", "reason": "KubeletReady",
                      "message": "e2e", "lastHeartbeatTime": now, "lastTransitionTime": now}]}})
    # The apiserver taints new Nodes node.kubernetes.io/not-ready (TaintNodesByCondition);
    # the node lifecycle controller lifts it once the node reports Ready. There is no
    # controller-manager here, so do its part.
    node = kube.get(f"/api/v1/nodes/{name}")
    taints = [t for t in node["spec"].get("taints") or [] if t["key"] != "node.kubernetes.io/not-ready"]
    kube.request("PATCH", f"/api/v1/nodes/{name}", content_type="application/merge-patch+json",
                 body={"spec": {"taints": taints or None}})
    return name


def service_accounts(objs: list[dict[str, Any]]) -> dict[str, str]:
    """Which ServiceAccount each component's workload runs as, read from the rendering:
    master, worker, gc, topology-updater and prune (the Job running ``nfd-master -prune``)."""
    out: dict[str, str] = {}
    for o in objs:
        if o["kind"] not in ("Deployment", "DaemonSet", "Job"):
            continue
        spec = o["spec"]["template"]["spec"]
        cmd = spec["containers"][0]["command"] + spec["containers"][0].get("args", [])
        component = "prune" if "-prune" in cmd else cmd[0].removeprefix("nfd-")
        out.setdefault(component, spec.get("serviceAccountName", "default"))
    return out


class Installed:
    """deploy/ rendered and applied (no controllers run it): the identities and objects a user's
    install has, and helpers that run each component's process as its pod would."""

    def __init__(self, kube: KubeCluster, objs: list[dict[str, Any]], *, namespace: str, tmp: Path) -> None:
        self.kube = kube
        self.objs = objs
        self.namespace = namespace
        self.tmp = tmp
        self.sa = service_accounts(objs)
        kube.create_namespace(namespace, exist_ok=True)
        kube.apply_objects([o for o in objs if o["kind"] != "CustomResourceDefinition"])
        self.nodes: list[str] = []
        self._counter = 0
        self._first_process = len(kube.processes)

    def workload(self, component: str) -> dict[str, Any]:
        for o in self.objs:
            if o["kind"] in ("Deployment", "DaemonSet") and service_accounts([o]).get(component):
                return o
        raise KeyError(component)

    def kubeconfig(self, component: str, *, bound_pod: str | None = None) -> str:
        return self.kube.serviceaccount_kubeconfig(
            self.namespace, self.sa[component], bound_pod=(self.namespace, bound_pod) if bound_pod else None)

    def make_node(self, prefix: str, *, allocatable: dict[str, str] | None = None) -> str:
        name = make_ready_node(self.kube, prefix, allocatable=allocatable)
        self.nodes.append(name)
        return name

    def host_root(self, fixture: str) -> Path:
        self._counter += 1
        root = self.tmp / f"host-{fixture}-{self._counter}"
        shutil.copytree(SYSFS_FIXTURES / fixture / "root", root)
        return root

    def worker_pod(self, node: str, *, daemonset: bool = True) -> dict[str, Any]:
        """The worker's Pod object on `node` (owned by the rendered DaemonSet, as its controller would)."""
        meta: dict[str, Any] = {"name": self.kube.unique_name("nfd-worker"), "namespace": self.namespace}
        if daemonset:
            ds = self.kube.get(f"/apis/apps/v1/namespaces/{self.namespace}/daemonsets/"
                               f"{self.workload('worker')['metadata']['name']}")
            meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": ds["metadata"]["name"],
                                        "uid": ds["metadata"]["uid"], "controller": True}]
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": {"nodeName": node, "serviceAccountName": self.sa["worker"],
                         "containers": [{"name": "worker", "image": "nfd:e2e"}]}}
        pod: dict[str, Any] = self.kube.request("POST", f"/api/v1/namespaces/{self.namespace}/pods", body=body)
        return pod

    def start_worker(self, node: str, root: Path, *args: str, daemonset: bool = True) -> ManagedProcess:
        pod = self.worker_pod(node, daemonset=daemonset)
        conf = self.tmp / f"nfd-worker-{node}.conf"
        conf.write_text(WORKER_CONF)
        return self.kube.start_process(
            ["nfd-worker", "-host-root", str(root), "-config", str(conf), "-port", str(free_port()), *args],
            kubeconfig=self.kubeconfig("worker", bound_pod=pod["metadata"]["name"]),
            env={"NODE_NAME": node, "KUBERNETES_NAMESPACE": self.namespace,
                 "POD_NAME": pod["metadata"]["name"], "POD_UID": pod["metadata"]["uid"]},
            name=f"worker-{node}")

    def start_master(self, *args: str, component: str = "master", node_name: str = "") -> ManagedProcess:
        """The master as its pod runs it; `node_name` is the node its pod is on (env NODE_NAME)."""
        return self.kube.start_process(
            ["nfd-master", f"-port={free_port()}", f"-config={self.tmp / 'no-master.conf'}", *args],
            kubeconfig=self.kubeconfig(component),
            env={"KUBERNETES_NAMESPACE": self.namespace, "NODE_NAME": node_name}, name=f"{component}-{self.namespace}")

    def nodefeature(self, node: str) -> dict[str, Any] | None:
        obj: dict[str, Any] | None = self.kube.get_or_none(f"{NFD_API}/namespaces/{self.namespace}/nodefeatures/{node}")
        return obj

    def node(self, name: str) -> dict[str, Any]:
        node: dict[str, Any] = self.kube.get(f"/api/v1/nodes/{name}")
        return node

    def close(self) -> None:
        """Stop every process started since this install (a master left running would keep
        acting on later tests' nodes) and delete the nodes."""
        for p in self.kube.processes[self._first_process:]:
            p.stop()
        for n in self.nodes:
            self.kube.delete_node(n)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.e2e.tools", description=__doc__.splitlines()[0])
    ap.add_argument("--if-go", action="store_true", help="exit 0 with a note when Go is not installed")
    args = ap.parse_args(argv)
    if find_go() is None:
        print("Go is not installed: deploy e2e tests will be skipped", file=sys.stderr)
        return 0 if args.if_go else 1
    start = time.monotonic()
    try:
        for m in MODULES:
            if m.on_demand:
                continue
            t0 = time.monotonic()
            for tool, path in build_module(m, log=lambda s: print(s, file=sys.stderr, flush=True)).items():
                print(f"{tool}: {path}")
            print(f"tests/tools/{m.name} set up in {time.monotonic() - t0:.1f}s")
        t0 = time.monotonic()
        print(f"gpu-operator chart: {gpu_operator_chart()}")
        print(f"{GPU_OPERATOR_MODULE}@{GPU_OPERATOR_VERSION} downloaded in {time.monotonic() - t0:.1f}s")
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"tools ready in {time.monotonic() - start:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
