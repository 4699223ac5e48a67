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
        cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]
        start = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:  # a fresh machine's package lists may be empty or stale
            subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env, check=False)
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise PackageError(f"apt-get install {' '.join(missing)} failed (exit {proc.returncode}):\n{tail}")
        log(f"installed {' '.join(missing)} in {time.monotonic() - start:.1f}s")
