#!/usr/bin/env python3
"""nfd-worker cost on this machine: prints figures, asserts nothing.

    python3 benchmarks/bench_worker.py [--cycles 20] [--seconds 20] [--no-apiserver]

1. Full discovery of all default sources, in process: wall and CPU time per cycle (first pass,
   which pays for imports, and steady passes), plus labels computation.
2. ``nfd export labels`` end to end (a fresh interpreter each run).
3. The worker daemon at ``sleepInterval: 1s``: CPU per second (= per cycle) and steady RSS,
   publishing to a real kube-apiserver (tests/e2e harness, if its binary is built or Go is
   available) or with ``-no-publish`` otherwise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CLK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def proc_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def bench_in_process(cycles: int) -> None:
    from nfd.sources import registry
    from nfd.sources.base import DiscoveryContext
    from nfd.sources.discovery import compute_labels, discover

    ctx = DiscoveryContext(node_name="bench")
    fnames = registry.resolve(["all"], kind="feature")
    lnames = registry.resolve(["all"], kind="label")
    walls, cpus, label_walls, per_source = [], [], [], {}
    last = None
    for i in range(cycles + 1):
        w0, c0 = time.perf_counter(), time.process_time()
        res = discover(ctx, fnames, {}, last_good=last)
        feats = res.merged()
        w1 = time.perf_counter()
        labels = compute_labels(feats, lnames, {}, ctx)
        w2, c2 = time.perf_counter(), time.process_time()
        last = res.by_source
        if i == 0:
            print(f"first pass (includes imports): wall {1000 * (w2 - w0):.1f} ms, cpu {1000 * (c2 - c0):.1f} ms")
            continue
        walls.append(w2 - w0)
        cpus.append(c2 - c0)
        label_walls.append(w2 - w1)
        for k, v in res.durations.items():
            per_source.setdefault(k, []).append(v)
    print(f"sources: {', '.join(fnames)}; {len(labels)} labels")
    print(f"steady discovery+labels, {cycles} passes: wall median {1000 * statistics.median(walls):.1f} ms "
          f"(p90 {1000 * sorted(walls)[int(0.9 * len(walls)) - 1]:.1f}), cpu median {1000 * statistics.median(cpus):.1f} ms; "
          f"labels alone {1000 * statistics.median(label_walls):.2f} ms")
    print("per source (median ms): " + ", ".join(
        f"{k} {1000 * statistics.median(v):.1f}" for k, v in sorted(per_source.items())))


def bench_export(runs: int) -> None:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "nfd.cli", "export", "labels"], check=True,
                       capture_output=True, cwd=REPO)
        times.append(time.perf_counter() - t0)
    print(f"nfd export labels end to end, {runs} runs: median {1000 * statistics.median(times):.0f} ms, "
          f"min {1000 * min(times):.0f} ms")


def bench_daemon(seconds: float, use_apiserver: bool) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="nfd-bench-"))
    conf = tmp / "nfd-worker.conf"
    conf.write_text("core:\n  sleepInterval: 1s\n")
    env = dict(os.environ, NODE_NAME="bench-node", KUBERNETES_NAMESPACE="node-feature-discovery",
               PYTHONUNBUFFERED="1")
    cluster = None
    args = ["-config", str(conf), "-port", str(_free_port())]
    mode = "-no-publish"
    if use_apiserver:
        try:
            from tests.e2e.build import ensure_built, find_go
            from tests.e2e.harness import KubeCluster

            if find_go() is None:
                raise RuntimeError("no Go")
            cluster = KubeCluster.start(binary=ensure_built(log=lambda m: None), tmpdir=tmp / "kube")
            cluster.create_namespace("node-feature-discovery", exist_ok=True)
            cluster.create_node("bench-node")
            env["KUBECONFIG"] = str(cluster.kubeconfig)
            args += ["-owner-refs", "node"]
            mode = "publishing to a real kube-apiserver"
        except Exception as e:  # fall back to no-publish
            print(f"(no apiserver: {type(e).__name__}: {e}; measuring with -no-publish)")
            cluster = None
    if cluster is None:
        args.append("-no-publish")
    proc = subprocess.Popen([sys.executable, "-m", "nfd.worker", *args], env=env, cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(5)  # startup and first passes
        cpu0, t0 = proc_cpu_s(proc.pid), time.monotonic()
        rss = []
        while time.monotonic() - t0 < seconds:
            time.sleep(1)
            rss.append(proc_rss_mib(proc.pid))
        cpu1, t1 = proc_cpu_s(proc.pid), time.monotonic()
        per_cycle = (cpu1 - cpu0) / (t1 - t0)
        print(f"daemon ({mode}), sleepInterval 1s, {t1 - t0:.0f} s window: cpu {1000 * per_cycle:.0f} ms per "
              f"cycle ({100 * per_cycle:.1f}% of one core); RSS steady {statistics.median(rss):.1f} MiB, "
              f"max {max(rss):.1f} MiB")
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        if cluster is not None:
            cluster.close()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cycles", type=int, default=20)
    p.add_argument("--export-runs", type=int, default=5)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--no-apiserver", action="store_true")
    args = p.parse_args()
    print(f"host: {os.cpu_count()} CPUs, python {sys.version.split()[0]}")
    bench_in_process(args.cycles)
    bench_export(args.export_runs)
    bench_daemon(args.seconds, not args.no_apiserver)
    return 0


if __name__ == "__main__":
    sys.exit(main())
