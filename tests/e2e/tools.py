"""Build and run the CLIs the deploy tests use: helm, kustomize and kube-scheduler.

They are built from the Go modules under tests/tools/ (go.mod/go.sum pinned), the same way
tests/e2e/build.py builds the control plane, and cached outside the repository keyed by a
hash of the module's files and the Go version:

    ${NFD_TEST_TOOLS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/nfd-test-tools}/<module>-<key>/<tool>

- tests/tools/helm: helm and kustomize (helm v3.22 needs k8s.io/* v0.37);
- tests/tools/scheduler: kube-scheduler from the k8s.io/kubernetes version and replace
  lines of tests/apiserver/go.mod, so the build cache is shared with the control plane.

`python -m tests.e2e.tools [--if-go]` builds everything missing and prints the paths and build
times. Tests get the binaries from the fixtures below; they skip only when Go is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
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

from tests.e2e.build import BuildError, _ldflags, ensure_built, find_go, go_version, kubernetes_version
from tests.e2e.harness import KubeCluster

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS_DIR = REPO_ROOT / "tests" / "tools"
DEPLOY_DIR = REPO_ROOT / "deploy"
CHART_DIR = DEPLOY_DIR / "helm" / "node-feature-discovery"


@dataclass(frozen=True)
class Module:
    name: str
    #: tool name -> Go package path built into it
    packages: dict[str, str]

    @property
    def dir(self) -> Path:
        return TOOLS_DIR / self.name

    def ldflags(self) -> str:
        if self.name == "scheduler":
            return _ldflags(kubernetes_version())  # version stamped like the apiserver's
        return "-s -w"


MODULES = (
    Module("helm", {"helm": "helm.sh/helm/v3/cmd/helm", "kustomize": "sigs.k8s.io/kustomize/kustomize/v5"}),
    Module("scheduler", {"kube-scheduler": "."}),
)
TOOL_MODULE = {tool: m for m in MODULES for tool in m.packages}


def cache_root() -> Path:
    env = os.environ.get("NFD_TEST_TOOLS_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "nfd-test-tools"


def build_key(go: str, module: Module) -> str:
    h = hashlib.sha256()
    for name in ["go.mod", "go.sum", *sorted(p.name for p in module.dir.glob("*.go"))]:
        h.update(name.encode() + b"\0" + (module.dir / name).read_bytes() + b"\0")
    h.update(go_version(go).encode())
    return h.hexdigest()[:16]


def build_module(module: Module, *, log: Callable[[str], None] = print) -> dict[str, Path]:
    """Paths of the module's tools, building them first if any is missing (BuildError on failure)."""
    go = find_go()
    if go is None:
        raise BuildError("Go is not installed (no `go` on PATH)")
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
        for tool, pkg in module.packages.items():
            if paths[tool].exists():
                continue
            log(f"building {tool} from tests/tools/{module.name} into {out_dir} (first run)")
            tmp = out_dir / f".{tool}.{os.getpid()}.tmp"
            start = time.monotonic()
            proc = subprocess.run([go, "build", f"-ldflags={module.ldflags()}", "-o", str(tmp), pkg],
                                  cwd=module.dir, env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                tmp.unlink(missing_ok=True)
                tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-40:])
                raise BuildError(f"go build {pkg} failed (exit {proc.returncode}) in {module.dir}:\n{tail}")
            os.replace(tmp, paths[tool])
            log(f"built {tool} in {time.monotonic() - start:.1f}s")
    _prune_old(module, keep=out_dir)
    return paths


def _prune_old(module: Module, *, keep: Path, count: int = 2) -> None:
    dirs = sorted((d for d in cache_root().glob(f"{module.name}-*") if d.is_dir() and d != keep),
                  key=lambda d: d.stat().st_mtime, reverse=True)
    for d in dirs[count - 1:]:
        shutil.rmtree(d, ignore_errors=True)


def ensure_tool(tool: str, *, log: Callable[[str], None] = print) -> Path:
    return build_module(TOOL_MODULE[tool], log=log)[tool]


# ---- rendering --------------------------------------------------------------------------------


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind")]


def _run(argv: list[str], *, what: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(f"{what} failed (exit {proc.returncode}):\n{proc.stderr.strip()}")
    return proc.stdout


def kustomize_build(kustomize: Path, path: Path) -> list[dict[str, Any]]:
    """`kustomize build` of a directory under deploy/, as `kubectl apply -k` renders it."""
    return _docs(_run([str(kustomize), "build", str(path)], what=f"kustomize build {path}"))


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

    def audit_events(self) -> list[dict[str, Any]]:
        if not self.audit_log.exists():
            return []
        out = []
        for line in self.audit_log.read_text().splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out


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
            binary = ensure_built()
        except BuildError as e:
            pytest.fail(f"cannot build the test kube-apiserver: {e}", pytrace=False)
        cluster = AuditedCluster.start(binary=binary)
        _cluster = cluster

        def close() -> None:
            global _cluster
            cluster.close()
            _cluster = None

        request.addfinalizer(close)
    return _cluster


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
            for tool, path in build_module(m, log=lambda s: print(s, file=sys.stderr, flush=True)).items():
                print(f"{tool}: {path}")
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"tools ready in {time.monotonic() - start:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
