"""Debian packages the node tests need on the machine that runs them (buildah, containerd, ...).

Installed with apt-get the first time they are missing, under a lock, so concurrent pytest
sessions install once; later calls only check `dpkg-query`. Only root on a Debian/Ubuntu host
can install: anywhere else `missing_reason()` says what is missing and the tests skip with it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path

LOCK = Path(os.environ.get("TMPDIR", "/tmp")) / "nfd-test-apt.lock"

# Every Debian package the suite installs, in its groups: `ensure()` installs a group before its
# first use, scripts/rehearse_fresh_machine.py purges them all, and
# tests/unit/repo/test_suite_programs.py holds every program a test or script runs against
# PROVIDERS and BASE_PROGRAMS below.
#: the image build (tests/e2e/image.py): the Debian root and buildah
IMAGE = ("buildah", "mmdebstrap", "ca-certificates")
#: the real node (tests/e2e/node.py): the container runtime, the pod network, the netns firewall
NODE = ("containerd", "runc", "containernetworking-plugins", "nftables")
#: arm64 under user-mode emulation (tests/e2e/emulation.py): qemu-user registered with
#: binfmt_misc; arch-test, with which mmdebstrap checks that the foreign architecture runs
EMULATION = ("qemu-user-static", "binfmt-support", "arch-test")
#: upstream's arm64 worker cross-built with cgo (tests/e2e/tools.py's CROSS_CC)
CROSS_ARM64 = ("gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross")
GROUPS: dict[str, tuple[str, ...]] = {"image": IMAGE, "node": NODE, "emulation": EMULATION,
                                      "cross-arm64": CROSS_ARM64}
#: packages a group names that the fresh machine already has (a minimal Debian may not): ensured
#: like the rest, never purged by the rehearsal
BASE_PACKAGES = ("ca-certificates",)
#: the programs of those packages that tests and scripts run, by name: `program()` installs the
#: package before it returns the path
PROVIDERS: dict[str, str] = {
    "buildah": "buildah",
    "mmdebstrap": "mmdebstrap",
    "containerd": "containerd",
    "ctr": "containerd",
    "runc": "runc",
    "nft": "nftables",
    "qemu-aarch64-static": "qemu-user-static",
    "update-binfmts": "binfmt-support",
    "aarch64-linux-gnu-gcc": "gcc-aarch64-linux-gnu",
}
#: programs a test or script runs that a fresh machine of this project's kind already has (its
#: Debian base, Go at /usr/local/go), by the package that brings them: never installed by the suite
BASE_PROGRAMS: dict[str, str] = {
    "apt-get": "apt",
    "dpkg-query": "dpkg",
    "cc": "gcc",  # the mock libnvidia-ml.so (tests/support/mocknvml.py)
    "gcc": "gcc",
    "git": "git",
    "go": "the Go toolchain (/usr/local/go)",
    "ip": "iproute2",
    "mount": "mount",
    "umount": "mount",
    "unshare": "util-linux",
    # benchmarks/ only, and only where present (they say so and go on without)
    "valgrind": "valgrind",
    "callgrind_control": "valgrind",
    "time": "time",
}


def all_packages() -> tuple[str, ...]:
    """Every package of every group, once, in order."""
    return tuple(dict.fromkeys(p for group in GROUPS.values() for p in group))


class PackageError(RuntimeError):
    pass


def installed(packages: Iterable[str]) -> list[str]:
    """The packages of `packages` dpkg reports installed."""
    names = list(packages)
    if not names or shutil.which("dpkg-query") is None:
        return []
    proc = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${db:Status-Abbrev}\\n", *names],
                          capture_output=True, text=True, check=False)
    return [line.split()[0] for line in proc.stdout.splitlines() if line.split()[1:2] == ["ii"]]


def missing_reason(packages: Iterable[str]) -> str | None:
    """Why `ensure()` cannot install the missing packages here, or None when it can (or need not)."""
    names = list(packages)
    missing = sorted(set(names) - set(installed(names)))
    if not missing:
        return None
    if shutil.which("apt-get") is None:
        return f"no apt-get on this machine to install {', '.join(missing)}"
    if os.geteuid() != 0:
        return f"not root: cannot apt-get install {', '.join(missing)}"
    return None


def ensure(packages: Iterable[str], *, log: Callable[[str], None] = print) -> None:
    """Install the missing packages (apt-get, no recommends); PackageError naming them on failure."""
    names = list(packages)
    if not set(names) - set(installed(names)):
        return
    reason = missing_reason(names)
    if reason:
        raise PackageError(reason)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = sorted(set(names) - set(installed(names)))
        if not missing:
            return
        log(f"apt-get install {' '.join(missing)} (first run)")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        # another apt run (a person's, unattended-upgrades) holds dpkg's lock: wait for it, not fail
        cmd = ["apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "-q", "--no-install-recommends", *missing]
        start = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:  # a fresh machine's package lists may be empty or stale
            subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env, check=False)
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise PackageError(f"apt-get install {' '.join(missing)} failed (exit {proc.returncode}):\n{tail}")
        log(f"installed {' '.join(missing)} in {time.monotonic() - start:.1f}s")


def program(name: str, *, log: Callable[[str], None] = print) -> str:
    """The path of ``name``, a program of PROVIDERS, installing its package first when missing.

    Every use of a program the suite installs goes through here (or after an `ensure()` of its
    group): a version probe that ran before the install broke the first run on a fresh machine."""
    ensure((PROVIDERS[name],), log=log)
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")
    if path is None:
        raise PackageError(f"{name}: not on PATH after installing {PROVIDERS[name]}")
    return path
