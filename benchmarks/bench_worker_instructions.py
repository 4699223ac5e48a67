#!/usr/bin/env python3
"""nfd-worker's instruction counts under callgrind (valgrind), steadier than wall time on a shared
machine: prints figures, asserts nothing. Upstream's Go binary cannot be counted (valgrind stops
on it); compare commits instead.

    python3 benchmarks/bench_worker_instructions.py [--only oneshot,steps,daemon] [--window 50] [--warmup 40]

- ``oneshot``: ``nfd-worker -oneshot -no-publish`` (the console script), with and without this
  host's ``.pth`` files, and ``python -c pass`` / ``python -S -c pass``.
- ``steps``: the one-shot run's steps in order, each line the instructions it adds.
- ``daemon``: the daemon publishing to the test kube-apiserver (``sleepInterval: 5s``):
  instructions per 5 s cycle over ``--window`` seconds after ``--warmup`` seconds
  (``callgrind_control -z``, then ``-d``).
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_worker as bw  # noqa: E402

ONESHOT = ["-oneshot", "-no-publish", "-config", "/nonexistent"]

STEPS = r"""
import sys
n = int(sys.argv[1])
argv = ["-oneshot", "-no-publish", "-config", "/nonexistent"]
if n >= 1:
    import logging
if n >= 2:
    from nfd.worker.flags import parse_flags
    flags = parse_flags(argv)
if n >= 3:
    from nfd.common.goflags import klog_header_options
    from nfd.common.logsetup import setup_logging
    setup_logging(flags.verbosity or 0, debug_from=3, **klog_header_options(flags))
if n >= 4:
    import json
if n >= 5:
    from nfd.worker.daemon import Worker
if n >= 6:
    w = Worker(flags)
if n >= 7:
    from nfd.sources import registry
    registry.resolve(["all"], kind="feature")
if n >= 8:
    w.run_offline_once()
"""
STEP_NAMES = ["interpreter and site", "logging", "flag parsing (goflags, worker.flags, worker.config)",
              "setup_logging", "json", "nfd.worker.daemon and what it imports", "Worker()",
              "the sources' modules", "first discovery pass and labels"]


def count(argv: list[str], env: dict[str, str]) -> int:
    """Instructions of one process, all threads (callgrind's total)."""
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/cg.out", *argv], env=env,
                             cwd="/", capture_output=True, text=True, timeout=600)
    m = re.search(r"Collected : (\d+)", out.stderr)
    if not m:
        raise RuntimeError(f"no count: {out.stderr[-500:]}")
    return int(m.group(1))


def bench_oneshot() -> None:
    worker = bw.script("nfd-worker")
    cases = {
        "python -S -c pass": ([sys.executable, "-S", "-c", "pass"], bw.ENV),
        "python -c pass": ([sys.executable, "-c", "pass"], bw.ENV),
        "nfd-worker -oneshot -no-publish": ([*worker, *ONESHOT], bw.ENV),
        "  same, without this host's .pth files": bw.no_pth([*worker, *ONESHOT], bw.ENV),
    }
    print(f"instructions (callgrind), commit {bw.commit()}:")
    for name, (argv, env) in cases.items():
        print(f"  {name:<42} {count(argv, env) / 1e6:8.1f}M")


def bench_steps() -> None:
    print(f"one-shot run step by step (instructions each step adds), commit {bw.commit()}:")
    prev = 0
    for n, name in enumerate(STEP_NAMES):
        total = count([sys.executable, "-c", STEPS, str(n)], bw.ENV)
        print(f"  {name:<55} {(total - prev) / 1e6:8.1f}M  (total {total / 1e6:.1f}M)")
        prev = total


def bench_daemon(window: float, warmup: float) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="nfd-bench-ir-"))
    try:
        cluster = bw.start_cluster(tmp)
    except Exception as e:  # noqa: BLE001
        print(f"daemon: no kube-apiserver ({type(e).__name__}: {e}); skipped")
        return
    try:
        cluster.create_node("bench-node")
        conf = tmp / "nfd-worker.conf"
        conf.write_text(f"core:\n  sleepInterval: {bw.INTERVAL_S:g}s\n")
        out = tmp / "cg.out"
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *bw.script("nfd-worker"),
                "-config", str(conf), "-kubeconfig", cluster.kubeconfig, "-port", "0", "-owner-refs", "node"]
        proc = subprocess.Popen(argv, env=bw.ENV, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(warmup)
            subprocess.run(["callgrind_control", "-z", str(proc.pid)], capture_output=True, timeout=60)
            t0 = time.monotonic()
            time.sleep(window)
            subprocess.run(["callgrind_control", "-d", str(proc.pid)], capture_output=True, timeout=60)
            t1 = time.monotonic()
            time.sleep(2)
            dump = max(glob.glob(f"{out}*"), key=os.path.getmtime)
            with open(dump) as f:
                total = next(int(line.split()[1]) for line in f if line.startswith(("summary:", "totals:")))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        cycles = (t1 - t0) / bw.INTERVAL_S
        print(f"daemon publishing to a real kube-apiserver, sleepInterval {bw.INTERVAL_S:g}s, {t1 - t0:.0f} s window "
              f"after {warmup:.0f} s, commit {bw.commit()}: {total / 1e6 / cycles:.2f}M instructions per cycle")
    finally:
        cluster.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--only", default="oneshot,steps,daemon")
    p.add_argument("--window", type=float, default=50.0, help="daemon: seconds counted")
    p.add_argument("--warmup", type=float, default=40.0, help="daemon: seconds before counting (valgrind is slow)")
    args = p.parse_args()
    if shutil.which("valgrind") is None:
        print("no valgrind on PATH: nothing to count")
        return 0
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "nfd")], check=True)
    only = set(args.only.split(","))
    if "oneshot" in only:
        bench_oneshot()
    if "steps" in only:
        bench_steps()
    if "daemon" in only:
        bench_daemon(args.window, args.warmup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
