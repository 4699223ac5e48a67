"""arm64 (aarch64) programs on this x86-64 machine, under qemu's user-mode emulation.

Debian's qemu-user-static is registered with the kernel's binfmt_misc, so an aarch64 ELF runs
like a native one, also inside a chroot (the registration's F flag: the kernel opened qemu when it
was registered). Where binfmt_misc is not mounted (a machine without systemd's automount) it is
mounted here first; `update-binfmts` (binfmt-support) registers Debian's entry.

qemu-user translates the instructions and passes system calls to this kernel: the program sees
this machine's /proc and /sys, while the CPU it runs on is qemu's (`-cpu max` unless QEMU_CPU
names another): qemu puts that CPU's AT_HWCAP/AT_HWCAP2 on the stack (getauxval(3)), answers
/proc/self/auxv with them, and answers `mrs` of MIDR_EL1 with that CPU's MIDR.

`run_in_root()` runs a command in an arm64 root filesystem (the image's, unpacked) as the
DaemonSet runs the worker: chrooted, the host's (or a fixture tree's) directories at /host-*,
in private mount and network namespaces, on an overlay so the cached root is never written.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.e2e import hostpkgs

PACKAGES = hostpkgs.EMULATION
BINFMT = Path("/proc/sys/fs/binfmt_misc")
ENTRY = BINFMT / "qemu-aarch64"


class EmulationError(RuntimeError):
    pass


def qemu_version() -> str:
    """The emulator's version, installing it first: the arm64 image's key hashes it."""
    qemu = hostpkgs.program("qemu-aarch64-static", log=lambda m: print(m, file=sys.stderr, flush=True))
    proc = subprocess.run([qemu, "--version"], capture_output=True, text=True, check=False)
    return proc.stdout.splitlines()[0] if proc.stdout else "unknown"


def _registered() -> str | None:
    """Why the aarch64 entry is not usable, or None when it is enabled with the F flag."""
    try:
        text = ENTRY.read_text()
    except OSError as e:
        return f"{ENTRY}: {e.strerror}"
    flags = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("flags:")), "")
    if "enabled" not in text.splitlines()[:1]:
        return f"{ENTRY}: disabled"
    if "F" not in flags:
        return f"{ENTRY}: flags {flags!r} lack F (qemu is not opened at registration: no chroot)"
    return None


def ensure_binfmt(*, log: Callable[[str], None] = print) -> None:
    """qemu-user-static installed and registered for aarch64 (EmulationError saying exactly why not)."""
    hostpkgs.ensure(PACKAGES, log=log)
    if _registered() is None:
        return
    if not (BINFMT / "register").exists():
        proc = subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise EmulationError(f"mount -t binfmt_misc binfmt_misc {BINFMT}: exit {proc.returncode}: "
                                 f"{proc.stderr.strip()}")
        log(f"mounted binfmt_misc at {BINFMT}")
    for argv in (["update-binfmts", "--enable", "qemu-aarch64"], ["update-binfmts", "--import", "qemu-aarch64"]):
        if _registered() is None:
            break
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        log(f"{' '.join(argv)}: exit {proc.returncode} {proc.stderr.strip()}".strip())
    why = _registered()
    if why:
        raise EmulationError(f"qemu-aarch64 is not registered with binfmt_misc: {why}")


#: where the DaemonSet mounts the host's directories (deploy/base/worker-daemonset), as
#: (source relative to the host's root, target in the container)
DAEMONSET_MOUNTS = (
    ("boot", "/host-boot"),
    ("etc/os-release", "/host-etc/os-release"),
    ("sys", "/host-sys"),
    ("usr/lib", "/host-usr/lib"),
    ("lib", "/host-lib"),
    ("proc/swaps", "/host-proc/swaps"),
)


def daemonset_binds(host_root: Path) -> list[tuple[str, str]]:
    """The DaemonSet's host mounts of ``host_root`` (``/`` for this machine, or a fixture tree),
    those that exist there; a fixture tree's proc/sys/kernel/osrelease also stands over the
    container's own, which both workers read for the kernel version."""
    out = [(str(host_root / src), dst) for src, dst in DAEMONSET_MOUNTS if (host_root / src).exists()]
    if host_root != Path("/") and (host_root / "proc/sys/kernel/osrelease").is_file():
        out.append((str(host_root / "proc/sys/kernel/osrelease"), "/proc/sys/kernel/osrelease"))
    return out


def run_in_root(root: Path, argv: Sequence[str], *, binds: Sequence[tuple[str, str]] = (),
                env: dict[str, str] | None = None, timeout: float = 300,
                host_network: bool = False) -> subprocess.CompletedProcess[str]:
    """``argv`` chrooted into ``root`` (an arm64 root: run by qemu-user through binfmt_misc) with
    the environment ``env`` only, in a new mount namespace and (unless ``host_network``: to reach
    a test apiserver on loopback) a new network namespace: the root overlaid with a scratch
    layer, this machine's /proc, /sys and /dev at their places, then each (source on this
    machine, target in the root) of ``binds`` bound read-only."""
    with tempfile.TemporaryDirectory(prefix="nfd-arm64-") as tmp:
        t = Path(tmp)
        for d in ("upper", "work", "merged"):
            (t / d).mkdir()
        m = t / "merged"
        lines = [
            "set -e",
            f"mount -t overlay overlay -o lowerdir={shlex.quote(str(root))},upperdir={t / 'upper'},"
            f"workdir={t / 'work'} {m}",
        ]
        for d in ("proc", "sys", "dev"):
            lines += [f"mkdir -p {m}/{d}", f"mount --rbind /{d} {m}/{d}"]
        for src, dst in binds:
            target = shlex.quote(f"{m}{dst}")
            make = f"mkdir -p {target}" if os.path.isdir(src) else f"mkdir -p $(dirname {target}) && touch {target}"
            if not dst.startswith("/proc/"):
                lines.append(make)
            lines.append(f"mount --bind {shlex.quote(src)} {target}")
            lines.append(f"mount -o remount,bind,ro {target}")
        envs = [f"{k}={v}" for k, v in (env or {}).items()]
        lines.append(f"exec chroot {m} /usr/bin/env -i {shlex.join([*envs, *argv])}")
        ns = ["--mount"] if host_network else ["--mount", "--net"]
        return subprocess.run(["unshare", *ns, "--propagation", "private", "sh", "-c", "\n".join(lines)],
                              capture_output=True, text=True, check=False, timeout=timeout)
