"""Upstream's own e2e suite (kubernetes-sigs/node-feature-discovery `test/e2e`), unchanged, run
against this project's image on the real node (tests/e2e/node.py).

The test binary is built with `go test -c` from the Go module proxy: tests/tools/upstream-e2e
names the release (the newest the proxy serves) and nothing of upstream is in the repository.
It is cached like the other test builds, keyed by that module's files and the Go version.

The cluster gives the suite what upstream's CI (kind) gives it: a node labelled
`node-role.kubernetes.io/worker`, pods on a pod network reaching the API through the
`kubernetes` Service, the kubelet's /configz through the apiserver's node proxy (`kubectl proxy`,
built with the kubelet), PodSecurity
admission on the namespaces it makes, and the image under the name it asks for
(`-nfd.repo`/`-nfd.tag`, `-nfd.pull-if-not-present=true`: containerd holds it, nothing is
pulled). It also runs what upstream's CI skips: the e2e config's `defaultFeatures` are written
for this machine (expectations read from the kernel, /proc/cpuinfo and /etc/os-release, and the
whitelisted labels `nfd export labels` prints on the host).

`python -m tests.e2e.upstream` prints one line, `upstream e2e vX.Y.Z: N passed, M failed, K
skipped`, and exits non-zero when a spec fails that docs/compatibility.md does not list with
its reason (section "Upstream's e2e suite").  `--binary` runs another build of the suite (e.g.
upstream's HEAD, built outside the repository) and `--label` names it in the line.

`--upstream-image` runs the same suite, on the same cluster with the same flags, against an image
of upstream's own binaries (tests/e2e/upstream_image.py: the proxy's release, or with
`--upstream-bin-dir` a build made elsewhere) and names it "(upstream's image)" in the line; it
exits 0 whenever a spec passed (upstream's failures are the machine's, the comparison is the
point).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.build import BuildError, cache_dir, find_go, go_version

REPO_ROOT = Path(__file__).resolve().parents[2]
MODULE_DIR = REPO_ROOT / "tests" / "tools" / "upstream-e2e"
UPSTREAM_MODULE = "sigs.k8s.io/node-feature-discovery"
E2E_PACKAGE = f"{UPSTREAM_MODULE}/test/e2e"
COMPATIBILITY_DOC = REPO_ROOT / "docs" / "compatibility.md"
SECTION = "## Upstream's e2e suite"
#: the project's image as containerd holds it (tests/e2e/node.py imports it)
IMAGE_REPO = "docker.io/library/nfd"
IMAGE_TAG = "e2e"
WORKER_ROLE = "node-role.kubernetes.io/worker"


def upstream_version() -> str:
    """The release tests/tools/upstream-e2e/go.mod requires."""
    m = re.search(rf"^\s*{re.escape(UPSTREAM_MODULE)}\s+(v\S+)", (MODULE_DIR / "go.mod").read_text(), re.MULTILINE)
    if not m:
        raise BuildError(f"{MODULE_DIR / 'go.mod'}: no {UPSTREAM_MODULE} requirement")
    return m.group(1)


def build_key(go: str) -> str:
    h = hashlib.sha256()
    for name in ("go.mod", "go.sum", "tools.go"):
        h.update(name.encode() + b"\0" + (MODULE_DIR / name).read_bytes() + b"\0")
    h.update(go_version(go).encode())
    return h.hexdigest()[:16]


def ensure_suite(*, log: Callable[[str], None] = print) -> Path:
    """The e2e test binary of the proxy's release, built if missing (BuildError on failure)."""
    go = find_go()
    if go is None:
        raise BuildError("Go is not installed (no `go` on PATH)")
    out = cache_dir("nfd-test-upstream-e2e", "NFD_TEST_UPSTREAM_E2E_CACHE") / build_key(go)
    target = out / "e2e.test"
    if target.exists():
        return target
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():
            return target
        log(f"building upstream's e2e suite {upstream_version()} (go test -c {E2E_PACKAGE}) into {out}")
        env = dict(os.environ)
        env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -buildvcs=false -mod=readonly").strip()
        tmp = out / f".e2e.test.{os.getpid()}"
        began = time.monotonic()
        proc = subprocess.run([go, "test", "-c", "-o", str(tmp), E2E_PACKAGE], cwd=MODULE_DIR, env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-40:])
            raise BuildError(f"go test -c failed (exit {proc.returncode}) in {MODULE_DIR}:\n{tail}")
        os.replace(tmp, target)
        log(f"built upstream's e2e suite in {time.monotonic() - began:.1f}s")
    return target


def release_worker_conf() -> Path | None:
    """The release's nfd-worker.conf.example (what upstream's image holds as nfd-worker.conf), from
    the Go module cache; None when absent."""
    go = find_go()
    if go is None:
        return None
    proc = subprocess.run([go, "list", "-m", "-f", "{{.Dir}}", UPSTREAM_MODULE], cwd=MODULE_DIR,
                          capture_output=True, text=True, check=False)
    path = Path(proc.stdout.strip()) / "deployment" / "components" / "worker-config" / "nfd-worker.conf.example"
    return path if proc.returncode == 0 and path.is_file() else None


# ---- the e2e config (defaultFeatures) ---------------------------------------------------------


def _example_config(binary: Path) -> dict[str, Any]:
    """Upstream's e2e-test-config.example.yaml of the release the binary was built from (its
    whitelists), read from the Go module cache; {} when absent."""
    go = find_go()
    if go is None:
        return {}
    proc = subprocess.run([go, "list", "-m", "-f", "{{.Dir}}", UPSTREAM_MODULE], cwd=MODULE_DIR,
                          capture_output=True, text=True, check=False)
    path = Path(proc.stdout.strip()) / "test" / "e2e" / "e2e-test-config.example.yaml"
    if proc.returncode != 0 or not path.exists():
        return {}
    loaded: dict[str, Any] = yaml.safe_load(path.read_text()) or {}
    return loaded


def _cpu_vendor() -> str | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("vendor_id"):
                raw = line.split(":", 1)[1].strip()
                return {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}.get(raw, raw)
    return None


def _os_release_id() -> str | None:
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("ID="):
                return line.split("=", 1)[1].strip().strip('"')
    return None


def host_labels() -> dict[str, str]:
    """`nfd export labels` on this machine (the host's view, outside any container)."""
    proc = subprocess.run([sys.executable, "-m", "nfd.cli", "export", "labels", "-o", "json"],
                          capture_output=True, text=True, timeout=120, check=True)
    labels: dict[str, str] = json.loads(proc.stdout)
    return labels


def e2e_config(node_name: str, whitelist: list[str], annotation_whitelist: list[str],
               host: dict[str, str]) -> dict[str, Any]:
    """The suite's e2e config for this node: values read from the machine itself where they are
    one read away (kernel major, CPU vendor, OS ID), and every other whitelisted label the host
    shows expected as a key."""
    values: dict[str, str] = {"feature.node.kubernetes.io/kernel-version.major": platform.release().split(".")[0]}
    vendor, os_id = _cpu_vendor(), _os_release_id()
    if vendor:
        values["feature.node.kubernetes.io/cpu-model.vendor_id"] = vendor
    if os_id:
        values["feature.node.kubernetes.io/system-os_release.ID"] = os_id
    keys = sorted(k for k in host if k in set(whitelist) and k not in values)
    return {"defaultFeatures": {
        "labelWhitelist": whitelist, "annotationWhitelist": annotation_whitelist,
        "nodes": [{"name": "the real node", "nodeNameRegexp": f"^{re.escape(node_name)}$",
                   "expectedLabelValues": values,
                   "expectedLabelKeys": [*keys, "feature.node.kubernetes.io/kernel-version.full"],
                   "expectedAnnotationKeys": ["nfd.node.kubernetes.io/feature-labels"]}]}}


# ---- results -----------------------------------------------------------------------------------


@dataclass
class Results:
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def line(self, label: str) -> str:
        return (f"upstream e2e {label}: {len(self.passed)} passed, {len(self.failed)} failed, "
                f"{len(self.skipped)} skipped")


def parse_junit(path: Path) -> Results:
    """Ginkgo's JUnit report: one testcase per spec (the suite's setup nodes left out)."""
    res = Results()
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        if not name.startswith("[It]"):
            continue
        name = name[len("[It]"):].strip()
        if case.find("failure") is not None or case.find("error") is not None:
            res.failed.append(name)
        elif case.find("skipped") is not None or case.get("status") in ("skipped", "pending"):
            res.skipped.append(name)
        else:
            res.passed.append(name)
    return res


def listed_failures(doc: Path = COMPATIBILITY_DOC) -> list[str]:
    """The spec fragments docs/compatibility.md lists as failing with their reason: the first
    backticked text of each table row in the section SECTION."""
    text = doc.read_text()
    start = text.find(SECTION)
    if start < 0:
        return []
    end = text.find("\n## ", start + len(SECTION))
    out = []
    for line in text[start:end if end >= 0 else len(text)].splitlines():
        m = re.match(r"\|\s*`([^`]+)`\s*\|", line)
        if m:
            out.append(m.group(1))
    return out


def unlisted(failed: list[str], fragments: list[str]) -> list[str]:
    return [name for name in failed if not any(f in name for f in fragments)]


# ---- running -----------------------------------------------------------------------------------


def run_suite(node: Any, binary: Path, workdir: Path, *, log: Callable[[str], None] = print,
              timeout: float = 3600, extra_args: list[str] | None = None,
              image: tuple[str, str] = (IMAGE_REPO, IMAGE_TAG)) -> Results:
    """Run the suite on the real node (a RealNode) against the project's image (or ``image``,
    repository and tag, which containerd holds)."""
    kube = node.kube
    kube.request("PATCH", f"/api/v1/nodes/{node.name}", content_type="application/merge-patch+json",
                 body={"metadata": {"labels": {WORKER_ROLE: ""}}})
    example = _example_config(binary).get("defaultFeatures") or {}
    config = e2e_config(node.name, list(example.get("labelWhitelist") or []),
                        list(example.get("annotationWhitelist") or []), host_labels())
    config["kubelet"] = {"configPath": str(node.tmp / "kubelet.yaml"),
                         "podResourcesSocketPath": str(node.root_dir / "pod-resources" / "kubelet.sock")}
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "e2e-config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    report = workdir / "junit.xml"
    # -kubectl-path: the topology-updater specs read /configz through `kubectl proxy`
    argv = [str(binary), f"-kubeconfig={kube.kubeconfig}", f"-kubectl-path={node.bins['kubectl']}",
            f"-nfd.repo={image[0]}", f"-nfd.tag={image[1]}",
            "-nfd.pull-if-not-present=true", f"-nfd.e2e-config={workdir / 'e2e-config.yaml'}",
            r"-ginkgo.focus=\[k8s-sigs/node-feature-discovery\]", "-ginkgo.v", "-ginkgo.no-color",
            f"-ginkgo.junit-report={report}", f"-ginkgo.timeout={int(timeout)}s", *(extra_args or [])]
    proc = kube.start_process(argv, kubeconfig=kube.kubeconfig, name="upstream-e2e")
    log(f"upstream e2e: running {binary} (log {proc.log_path})")
    began = time.monotonic()
    try:
        proc.wait(timeout=timeout + 120)
    except subprocess.TimeoutExpired:
        proc.kill()
    log(f"upstream e2e: done in {time.monotonic() - began:.0f}s (exit {proc.returncode})")
    with contextlib.suppress(OSError):
        shutil.copy(proc.log_path, workdir / "upstream-e2e.log")
    if not report.exists():
        raise RuntimeError(f"the suite wrote no report (exit {proc.returncode}); log tail:\n{proc.logs()[-4000:]}")
    return parse_junit(report)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.e2e.upstream", description=__doc__.splitlines()[0])
    ap.add_argument("--binary", type=Path, help="a prebuilt e2e.test (default: the proxy's release, built)")
    ap.add_argument("--label", help="how the line names the suite (default: the proxy's release)")
    ap.add_argument("--workdir", type=Path, help="where the config, report and log go (default: a temporary directory)")
    ap.add_argument("--build-only", action="store_true", help="build (or reuse) the suite and exit")
    ap.add_argument("--if-go", action="store_true", help="exit 0 with a note when Go is not installed")
    ap.add_argument("--upstream-image", action="store_true",
                    help="run against an image of upstream's own binaries (the proxy's release, built; "
                         "tests/e2e/upstream_image.py) instead of the project's")
    ap.add_argument("--upstream-bin-dir", type=Path,
                    help="with --upstream-image: upstream's binaries built elsewhere (e.g. its HEAD), by name in "
                         "this directory; its nfd-worker.conf, if present, goes in as the image's worker config")
    ap.add_argument("ginkgo_args", nargs="*", help="more arguments for the suite (after --)")
    args = ap.parse_args(argv)
    from tests.e2e import hostpkgs
    from tests.e2e.image import ImageError
    from tests.e2e.node import NodeError, cannot_run_containers, machine_lock, start_node, stop_node

    def log(m: str) -> None:
        print(m, file=sys.stderr, flush=True)

    if find_go() is None:
        log("Go is not installed: upstream's e2e suite is not run")
        return 0 if args.if_go else 1
    try:
        began = time.monotonic()
        binary = args.binary or ensure_suite(log=log)
        log(f"upstream e2e suite ready in {time.monotonic() - began:.1f}s: {binary}")
        if args.build_only:
            return 0
        reason = cannot_run_containers()
        if reason:
            log(f"no real node here, upstream's e2e suite is not run: {reason}")
            return 0
        label = args.label or upstream_version()
        image_tar: Path | None = None
        image_ref = (IMAGE_REPO, IMAGE_TAG)
        if args.upstream_bin_dir and not args.upstream_image:
            log("--upstream-bin-dir is refused without --upstream-image")
            return 2
        if args.upstream_image:
            from tests.e2e import upstream_image

            t = time.monotonic()
            if args.upstream_bin_dir:
                bins = upstream_image.binaries_in(args.upstream_bin_dir)
                conf: Path | None = args.upstream_bin_dir / "nfd-worker.conf"
            else:
                bins = upstream_image.release_binaries(log=log)
                conf = release_worker_conf()
            tag = re.sub(r"[^A-Za-z0-9_.-]", "-", label)
            image_tar = upstream_image.ensure_upstream_image(
                bins, tag, worker_conf=conf if conf is not None and conf.is_file() else None, log=log)
            image_ref = (upstream_image.REPO, tag)
            log(f"upstream's image {image_ref[0]}:{tag} ready in {time.monotonic() - t:.1f}s: {image_tar}")
            label = f"{label} (upstream's image)"
        import tempfile

        workdir = args.workdir or Path(tempfile.mkdtemp(prefix="nfd-upstream-e2e-"))
        with machine_lock(log=log):
            node = start_node(log=log, image=image_tar)
            try:
                results = run_suite(node, binary, workdir, log=log, extra_args=args.ginkgo_args, image=image_ref)
            finally:
                stop_node(node)
    except (BuildError, ImageError, hostpkgs.PackageError, NodeError, RuntimeError) as e:
        log(f"error: {e}")
        return 1
    for name in results.failed:
        log(f"  failed: {name}")
    print(results.line(label), flush=True)
    if args.upstream_image:
        return 0 if results.passed else 1  # upstream's own failures are this machine's: nothing to list
    bad = unlisted(results.failed, listed_failures())
    for name in bad:
        log(f"failing spec not listed in docs/compatibility.md ({SECTION[3:]}): {name}")
    if not results.passed:
        log("no spec passed: the suite did not run")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
