"""NVIDIA's gpu-feature-discovery beside nfd's nvml source, both over the mock NVML library.

The runners test_nvml_gfd_mock.py asserts with, and the table docs/compatibility.md shows:

    python3 -m tests.support.gfd     # root (GFD reads /sys at fixed paths), Go (builds GFD once)

prints, for every shipped profile and MIG strategy, GFD v0.17.4's label count, nfd's, and the
labels where they differ (``gfd.timestamp`` left out of both).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.support import hostroot, mocknvml

STRATEGIES = mocknvml.STRATEGIES


def run_gfd(gfd: Path, env: dict[str, str], root: Path, out_dir: Path, strategy: str) -> dict[str, str] | str:
    """GFD's labels (without gfd.timestamp), or its last log line when it exits with an error."""
    out = out_dir / f"gfd.{strategy}"
    argv = hostroot.in_host_root([str(gfd), "--oneshot", "--no-timestamp", "--output-file", str(out),
                                  "--mig-strategy", strategy], root)
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
    return dict(line.split("=", 1) for line in out.read_text().splitlines() if line)


def both(gfd: Path, lib_dir: Path, tmp_path: Path, profile: str | dict[str, Any], faults: str = "",
         strategies: tuple[str, ...] = STRATEGIES) -> tuple[dict[str, Any], dict[str, dict[str, str] | str]]:
    """(nfd's labels, GFD's labels or error line), by strategy, for one profile on the mock."""
    env = mocknvml.prepare(profile, tmp_path, faults=faults, lib_dir=lib_dir)
    ours = mocknvml.mock_view(env)["labels"]
    ours = {s: {k: v for k, v in ours[s].items() if k != "nvidia.com/gfd.timestamp"} for s in strategies}
    theirs = {s: run_gfd(gfd, env, tmp_path / "host", tmp_path, s) for s in strategies}
    return ours, theirs


def differences(ours: dict[str, str], theirs: dict[str, str]) -> list[str]:
    """The label names whose value differs, or that one side lacks, marked ``+`` (nfd only),
    ``-`` (GFD only) or ``~`` (both, other values)."""
    out = [f"+{k}" for k in sorted(set(ours) - set(theirs))] + [f"-{k}" for k in sorted(set(theirs) - set(ours))]
    return out + [f"~{k}" for k in sorted(set(ours) & set(theirs)) if ours[k] != theirs[k]]


def main() -> int:
    from nfd.nvml_fake import available_profiles
    from tests.e2e.tools import ensure_tool

    why = hostroot.why_not()
    if why:
        print(f"cannot run gpu-feature-discovery here: {why}", file=sys.stderr)
        return 2
    gfd = ensure_tool("gpu-feature-discovery", log=lambda m: print(m, file=sys.stderr, flush=True))
    lib_dir = mocknvml.build()
    print("| profile | strategy | GFD v0.17.4 | nfd | differing labels |")
    print("|---|---|---|---|---|")
    for profile in available_profiles():
        with tempfile.TemporaryDirectory(prefix="nfd-gfd-") as tmp:
            ours, theirs = both(gfd, lib_dir, Path(tmp), profile)
        for s in STRATEGIES:
            gfds = theirs[s]
            if isinstance(gfds, str):
                print(f"| {profile} | {s} | exits: {gfds[-80:]} | {len(ours[s])} | |")
                continue
            diff = differences(ours[s], gfds)
            print(f"| {profile} | {s} | {len(gfds)} | {len(ours[s])} | {', '.join(diff) or 'none'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
