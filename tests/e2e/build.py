"""Build the e2e control plane (kube-apiserver + embedded etcd) from tests/apiserver.

The binary is cached outside the repository, keyed by a hash of the Go module's
files and the Go version, so it is built once per change:

    ${NFD_TEST_APISERVER_CACHE:-${XDG_CACHE_HOME:-~/.cache}/nfd-test-apiserver}/<key>/testapiserver

`python -m tests.e2e.build` builds if needed and prints the path (and the build
time when it built). Concurrent builders (several pytest sessions) serialize on
a lock file; the binary is published by an atomic rename.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
MODULE_DIR = REPO_ROOT / "tests" / "apiserver"
BINARY_NAME = "testapiserver"


class BuildError(RuntimeError):
    pass


def find_go() -> str | None:
    """The go command, or None when Go is not installed."""
    found = shutil.which("go")
    if found:
        return found
    for candidate in ("/usr/local/go/bin/go", "/usr/lib/go/bin/go"):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def go_version(go: str) -> str:
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or "unknown"


def kubernetes_version() -> str:
    """The k8s.io/kubernetes version required by tests/apiserver/go.mod."""
    text = (MODULE_DIR / "go.mod").read_text()
    m = re.search(r"^\s*k8s\.io/kubernetes\s+(v\d+\.\d+\.\d+\S*)", text, re.MULTILINE)
    if not m:
        raise BuildError(f"{MODULE_DIR / 'go.mod'}: no k8s.io/kubernetes requirement")
    return m.group(1)


def cache_dir(name: str, env: str) -> Path:
    """``$env``, else ``${XDG_CACHE_HOME:-~/.cache}/name``: where a test build is cached."""
    given = os.environ.get(env)
    if given:
        return Path(given)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / name


def cache_root() -> Path:
    return cache_dir("nfd-test-apiserver", "NFD_TEST_APISERVER_CACHE")


def build_key(go: str) -> str:
    """Hash of go.mod, go.sum, the Go sources and the Go version."""
    h = hashlib.sha256()
    files = ["go.mod", "go.sum", *sorted(p.name for p in MODULE_DIR.glob("*.go"))]
    for name in files:
        h.update(name.encode() + b"\0" + (MODULE_DIR / name).read_bytes() + b"\0")
    h.update(go_version(go).encode())
    return h.hexdigest()[:16]


def binary_path(go: str) -> Path:
    return cache_root() / build_key(go) / BINARY_NAME


def _ldflags(k8s_version: str) -> str:
    # Stamp the version the apiserver reports (/version, emulation version);
    # without it a source build calls itself v0.0.0-master.
    m = re.match(r"v(\d+)\.(\d+)", k8s_version)
    major, minor = (m.group(1), m.group(2)) if m else ("1", "0")
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitVersion={k8s_version}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
        ]
    return " ".join(flags)


def ensure_built(*, log: Callable[[str], None] = print) -> Path:
    """Return the cached binary, building it first if needed (BuildError on failure)."""
    go = find_go()
    if go is None:
        raise BuildError("Go is not installed (no `go` on PATH)")
    target = binary_path(go)
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():  # another session built it while we waited
            return target
        k8s = kubernetes_version()
        log(f"building kube-apiserver {k8s} + etcd into {target} (first run; this takes a while)")
        env = dict(os.environ)
        env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -buildvcs=false -mod=readonly").strip()
        tmp = target.with_name(f".{BINARY_NAME}.{os.getpid()}.tmp")
        cmd = [go, "build", f"-ldflags={_ldflags(k8s)}", "-o", str(tmp), "."]
        start = time.monotonic()
        proc = subprocess.run(cmd, cwd=MODULE_DIR, env=env, capture_output=True, text=True, check=False)
        elapsed = time.monotonic() - start
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-40:])
            raise BuildError(f"go build failed (exit {proc.returncode}) in {MODULE_DIR}:\n{tail}")
        os.replace(tmp, target)
        log(f"built {target} in {elapsed:.1f}s")
    _prune_old_builds(keep=target.parent)
    return target


def _prune_old_builds(*, keep: Path, count: int = 3) -> None:
    """Keep the `count` most recent builds (each ~100 MB); other keys are stale sources."""
    dirs = sorted((d for d in cache_root().iterdir() if d.is_dir() and d != keep),
                  key=lambda d: d.stat().st_mtime, reverse=True)
    for d in dirs[count - 1:]:
        shutil.rmtree(d, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.e2e.build", description=__doc__.splitlines()[0])
    ap.add_argument("--if-go", action="store_true",
                    help="exit 0 with a note instead of failing when Go is not installed")
    args = ap.parse_args(argv)
    if find_go() is None:
        print("Go is not installed: e2e tests will be skipped", file=sys.stderr)
        return 0 if args.if_go else 1
    start = time.monotonic()
    try:
        path = ensure_built(log=lambda m: print(m, file=sys.stderr, flush=True))
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{path} (ready in {time.monotonic() - start:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
