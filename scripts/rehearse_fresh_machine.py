"""The fresh-machine rehearsal: `.ci/run` as a new machine runs it, on this one.

A green CI on a machine that earlier sessions used proves little: a package they installed by
hand, a warm Go module cache or a built tool hides a missing install step. This script takes all
of that away, then runs the README's test command:

1. purges every Debian package the suite installs (tests/e2e/hostpkgs.py's groups, less those the
   fresh machine has anyway), with the dependencies that came with them (apt's auto-remove);
2. points every cache at an empty directory under one work folder: Go's module and build caches
   (GOMODCACHE, GOCACHE, GOPATH), pip's and uv's, and ``XDG_CACHE_HOME``, under which the suite
   keeps its own builds (kube-apiserver, the tools, the image and buildah's store, ...); unsets the
   suite's ``NFD_TEST_*_CACHE`` overrides;
3. clones the repository's committed HEAD there (nothing uncommitted travels) with ``shared/``
   beside it, as CI lays it (a link to the checkout's ``../shared``), makes a new
   virtualenv from the machine's python3 (so no package installed earlier is importable) and runs
   ``bash .ci/run`` in the clone with ``CI=true`` and no standard input, as CI does;
4. prints the run's wall time, exit status and each step's time line from its log.

Needs root (apt-get purge). Takes about as long as a cold CI run; the log stays in the work folder.

    python3 scripts/rehearse_fresh_machine.py [--workdir DIR] [--keep-packages]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.e2e import hostpkgs  # noqa: E402

#: the lines of the suite's log that report a step's time (each step prints its own)
STEP_LINE = re.compile(
    r"(\bin \d+(\.\d+)?\s?s\b|ready in|built .* in|took|passed|failed|upstream e2e|exit|elapsed|\bs\)$)", re.I)


def purge_suite_packages() -> list[str]:
    """Purge what the suite installs and its auto-installed dependencies; the packages purged."""
    names = [p for p in hostpkgs.all_packages() if p not in hostpkgs.BASE_PACKAGES]
    present = hostpkgs.installed(names)
    if present:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        with open(hostpkgs.LOCK, "w") as lock:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
            subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=600", "purge", "-y", "-q", "--auto-remove",
                            *present], check=True, env=env, stdout=subprocess.DEVNULL)
    left = hostpkgs.installed(names)
    if left:
        raise SystemExit(f"still installed after the purge: {', '.join(left)}")
    return present


def fresh_env(work: Path, venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not (k.startswith("NFD_TEST_") and k.endswith("_CACHE"))}
    for var, sub in (("XDG_CACHE_HOME", "cache"), ("GOPATH", "gopath"), ("GOMODCACHE", "gomodcache"),
                     ("GOCACHE", "gocache"), ("PIP_CACHE_DIR", "pip-cache"), ("UV_CACHE_DIR", "uv-cache")):
        d = work / sub
        d.mkdir(parents=True, exist_ok=True)
        env[var] = str(d)
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["CI"] = "true"
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 scripts/rehearse_fresh_machine.py",
                                 description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--workdir", type=Path, help="where the clone, caches and log go (default: a new temp dir)")
    ap.add_argument("--keep-packages", action="store_true",
                    help="do not purge the Debian packages (caches and clone are still fresh)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("error: the rehearsal purges Debian packages: run it as root", file=sys.stderr)
        return 2
    work = args.workdir or Path(tempfile.mkdtemp(prefix="nfd-rehearsal-"))
    work.mkdir(parents=True, exist_ok=True)
    if not args.keep_packages:
        purged = purge_suite_packages()
        print(f"purged: {' '.join(purged) or '(none were installed)'}", flush=True)
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    clone = work / "checkout"
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", "--no-local", str(REPO), str(clone)], check=True)
    # CI lays a copy of shared/ beside its clone; the tests read ../shared (the corpora)
    shared = work / "shared"
    if (REPO.parent / "shared").is_dir() and not shared.exists():
        shared.symlink_to((REPO.parent / "shared").resolve(), target_is_directory=True)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    env = fresh_env(work, venv)
    log = work / "ci.log"
    print(f"rehearsal of {head}: bash .ci/run in {clone}, log {log}", flush=True)
    start = time.monotonic()
    with open(log, "wb") as out:
        rc = subprocess.run(["bash", ".ci/run"], cwd=clone, env=env, stdin=subprocess.DEVNULL, stdout=out,
                            stderr=subprocess.STDOUT).returncode
    wall = time.monotonic() - start
    print("step lines:")
    for line in log.read_text(errors="replace").splitlines():
        if STEP_LINE.search(line) and len(line) < 300:
            print(f"  {line}")
    print(f"rehearsal of {head}: exit {rc} after {wall:.0f} s ({wall / 60:.1f} min)")
    return rc


if __name__ == "__main__":
    sys.exit(main())
