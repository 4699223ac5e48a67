"""What tests/e2e/test_arm64.py runs: nfd-worker and `nfd export labels` of the project's image
built for linux/arm64, and upstream's nfd-worker built for linux/arm64, both under qemu-user.

- the image: tests/e2e/image.py `ensure_image(arch="arm64")` (mmdebstrap's arm64 Debian root,
  `buildah bud --platform linux/arm64` of the Dockerfile: pip installs PyPI's aarch64 wheels
  under emulation), unpacked by `image.rootfs()`;
- upstream's worker: tests/e2e/tools.py module "upstream-nfd-image-arm64" (v0.17.3 from the Go
  module proxy, GOARCH=arm64, cgo with gcc-aarch64-linux-gnu, static, /host- prefix, probed
  for the cgo arm64 cpu source);
- emulation: tests/e2e/emulation.py (qemu-user-static through binfmt_misc).

All cached outside the repository, keyed by their inputs. `python -m tests.e2e.arm64 [--if-go]`
makes what is missing and prints each step's time (scripts/test.sh runs it before pytest, so a
cold build is not cut short by a test's timeout).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from tests.e2e import emulation, hostpkgs
from tests.e2e.build import BuildError, find_go
from tests.e2e.image import ImageError, ensure_image, rootfs
from tests.e2e.tools import CROSS_CC, MODULES, build_module

#: where upstream's binary is bound into the image's root for a run
UPSTREAM_IN_ROOT = "/usr/local/bin/upstream-nfd-worker"
KUBECONFIG_IN_ROOT = "/etc/nfd-test/nowhere.kubeconfig"
#: upstream's `-oneshot -no-publish` still builds its API client: a kubeconfig that points nowhere
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""
#: the image's environment (Dockerfile ENV), which `env -i` in the chroot would otherwise drop
IMAGE_ENV = {"PATH": "/opt/nfd/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "NFD_HOST_PREFIX": "/host-",
             "NFD_CRDS_DIR": "/opt/nfd/crds"}


def missing_reason() -> str | None:
    """Why the arm64 runs cannot be set up here, or None."""
    if find_go() is None:
        return "Go is not installed: cannot build upstream's arm64 nfd-worker"
    from tests.e2e import image

    return hostpkgs.missing_reason((*emulation.PACKAGES, *image.PACKAGES, *CROSS_CC["arm64"][1]))


def ensure_root(*, log: Callable[[str], None] = print) -> Path:
    """The arm64 image's root filesystem, unpacked (built first if needed)."""
    return rootfs(ensure_image(arch="arm64", log=log), log=log)


def ensure_upstream(*, log: Callable[[str], None] = print) -> Path:
    module = next(m for m in MODULES if m.name == "upstream-nfd-image-arm64")
    return build_module(module, log=log)["nfd-worker"]


def parse_klog_labels(output: str) -> dict[str, str]:
    """The labels of the worker's `"feature discovery completed" labels=<...>` line (-v 1): klog
    writes the YAML dump as an indented block between `<` and ` >`."""
    m = re.search(r'"feature discovery completed" labels=<\n((?:\t.*\n)*) >', output)
    if not m:
        raise AssertionError(f"no labels in the worker's log:\n{output[-3000:]}")
    block = "".join(line[1:] + "\n" for line in m.group(1).splitlines())
    data = yaml.safe_load(block) or {}
    return {str(k): str(v) for k, v in data.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.e2e.arm64", description=__doc__.splitlines()[0])
    ap.add_argument("--if-go", action="store_true", help="exit 0 with a note when Go is not installed")
    args = ap.parse_args(argv)
    reason = missing_reason()
    if reason:
        print(f"arm64 emulation tests cannot run here: {reason}", file=sys.stderr)
        return 0 if args.if_go else 1

    def log(m: str) -> None:
        print(m, file=sys.stderr, flush=True)

    def timed(what: str, make: Callable[[], Path]) -> Callable[[], str]:
        def run() -> str:
            t = time.monotonic()
            return f"{what}: {make()} (ready in {time.monotonic() - t:.1f}s)"
        return run

    start = time.monotonic()
    try:
        emulation.ensure_binfmt(log=log)
        print(f"qemu-user for aarch64 ({emulation.qemu_version()}) ready in {time.monotonic() - start:.1f}s")
        hostpkgs.ensure(CROSS_CC["arm64"][1], log=log)
        # side by side: the image's emulated dpkg and pip steps leave a core to the Go build
        with ThreadPoolExecutor(2) as pool:
            jobs = [pool.submit(timed("upstream's arm64 nfd-worker", lambda: ensure_upstream(log=log))),
                    pool.submit(timed("arm64 image root", lambda: ensure_root(log=log)))]
            for job in jobs:
                print(job.result(), flush=True)
    except (BuildError, ImageError, hostpkgs.PackageError, emulation.EmulationError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"arm64 parts ready in {time.monotonic() - start:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
