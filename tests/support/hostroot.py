"""Run an upstream (Go) binary on a fixture host tree.

Ours reads the host through ``NFD_HOST_ROOT``; upstream's binaries read ``/sys``, ``/proc``,
``/etc``... at fixed paths (their ``hostpath`` prefix is set at build time). To give both the
same inputs, the upstream command runs in a private mount namespace (``unshare --mount``, root
only) where the fixture's directories and files are bind-mounted over the host's: the host and
every other process keep their own view.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

# what is bound, relative to the host root: whole directories, and single files of /proc (the
# rest of /proc stays the live one: a Go binary needs /proc/self)
DIRS = ("sys", "etc", "boot", "usr/lib/os-release", "lib/modules")
PROC_FILES = ("meminfo", "cmdline", "swaps", "modules", "sys/kernel/osrelease")


def why_not() -> str | None:
    """None when this machine can run a command in a private mount namespace, else why not."""
    if os.geteuid() != 0:
        return "needs root (unshare --mount and bind mounts)"
    if shutil.which("unshare") is None:
        return "no unshare(1) on PATH"
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"unshare --mount failed: {r.stderr.strip()[:200]}"
    return None


def in_host_root(argv: list[str], root: str | Path) -> list[str]:
    """``argv`` wrapped so that it sees ``root``'s sys/, etc/, boot/ ... and /proc files as the
    host's (those present in ``root``; missing ones stay the host's)."""
    root = Path(root)
    binds = []
    for rel in DIRS:
        if (root / rel).exists():
            binds.append((root / rel, Path("/") / rel))
    for rel in PROC_FILES:
        if (root / "proc" / rel).is_file():
            binds.append((root / "proc" / rel, Path("/proc") / rel))
    script = " && ".join(f"mount --bind {shlex.quote(str(src))} {shlex.quote(str(dst))}"
                         for src, dst in binds if dst.exists())
    script = (script + " && " if script else "") + "exec " + shlex.join(argv)
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
