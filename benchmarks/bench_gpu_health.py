#!/usr/bin/env python3
"""GPU health's cost per worker cycle, on an 8-GPU node (profile h100x8, or --profile), through the
real pynvml over the mock libnvidia-ml.so.1 (tests/tools/mocknvml; needs a C compiler and Go):

    python3 benchmarks/bench_gpu_health.py [--profile h100x8] [--cycles 200] [--worker-cycles 40] [--rounds 5]

1. NVML health reads per cycle, and the nvml source's CPU per cycle with and without health: both
   configurations in one fresh process, alternately (health off, on, off, on, ...), ``--cycles``
   discover() calls each; CPU is the process's (all threads) per call.
2. The worker's CPU per cycle with and without health: nfd-worker's own cycle (nfd.worker.daemon
   Worker: run_discovery() of every default feature source, the labels, the NodeFeature body
   serialised; no API), ``core.sleepInterval`` aside, health on or off in its config, and off
   with NVML held open by the process (as the XID watcher holds it with health on: without a
   holder every pass initialises NVML from scratch). The sources are process-wide singletons, so
   each configuration runs in a process of its own, ``--rounds`` times in turn (off, off-held,
   on, off, ...), ``--worker-cycles`` cycles each after three warm-up cycles. The other sources
   read this machine's own /sys and /proc; nvml answers from the mock (its driver check passes:
   this machine has no /proc/driver/nvidia). Per cycle: the CPU time of the thread running it
   (time.thread_time), of the nvml source's part of it, and of the whole process (getrusage: the
   XID watcher's thread included); the watcher's thread alone, per second, from its own clock.

Prints figures and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = r"""
import json, sys, time, pynvml
from nfd.hostpaths import HostPaths
from nfd.sources.base import DiscoveryContext
from nfd.sources.nvml.source import NvmlSource

cycles = int(sys.argv[1])

class Counting:
    # pynvml with every nvml* call counted
    def __init__(self):
        self.calls = {}
    def __getattr__(self, name):
        attr = getattr(pynvml, name)
        if not (name.startswith("nvml") and callable(attr)):
            return attr
        def call(*a, **k):
            self.calls[name] = self.calls.get(name, 0) + 1
            return attr(*a, **k)
        return call

ctx = DiscoveryContext(paths=HostPaths.detect())
out = {}
for health in (False, True):
    backend = Counting()
    src = NvmlSource(backend=backend)
    cfg = src.parse_config({"health": {"enabled": health, "xidEvents": health}}, path="sources.nvml")
    src.discover(ctx, cfg)  # warm: imports, the watcher's registration
    time.sleep(0.2)
    backend.calls.clear()
    out[health] = {"calls": 0, "cpu": []}
    src.discover(ctx, cfg)
    out[health]["calls"] = dict(backend.calls)
    out[health]["src"] = src
    out[health]["cfg"] = cfg
res = {}
for health in (False, True):
    res[health] = []
for _ in range(cycles):
    for health in (False, True):
        src, cfg = out[health]["src"], out[health]["cfg"]
        t0 = time.process_time()
        src.discover(ctx, cfg)
        res[health].append(time.process_time() - t0)
for health in (False, True):
    out[health]["src"].close()
def med(xs):
    xs = sorted(xs); return xs[len(xs) // 2]
health_calls = {k: v - out[False]["calls"].get(k, 0) for k, v in out[True]["calls"].items()
                if v != out[False]["calls"].get(k, 0)}
json.dump({"calls_off": sum(out[False]["calls"].values()), "calls_on": sum(out[True]["calls"].values()),
           "health_calls": health_calls,
           "cpu_ms_off": med(res[False]) * 1e3, "cpu_ms_on": med(res[True]) * 1e3,
           "cpu_ms_off_mean": sum(res[False]) / cycles * 1e3, "cpu_ms_on_mean": sum(res[True]) / cycles * 1e3},
          sys.stdout)
"""


WORKER_CHILD = r"""
import json, os, resource, sys, tempfile, threading, time
import nfd.sources.nvml.source as nvml_source

nvml_source.driver_present = lambda ctx: True  # the mock's driver: this machine has no /proc/driver/nvidia
from nfd.sources import registry
from nfd.worker.daemon import Worker
from nfd.worker.flags import parse_flags

mode, cycles = sys.argv[1], int(sys.argv[2])
health = mode == "on"
if mode == "off-held":  # another NVML client holding it open, as the XID watcher does with health on
    import pynvml

    pynvml.nvmlInit()
conf = os.path.join(tempfile.mkdtemp(prefix="nfd-bench-health-worker-"), "nfd-worker.conf")
with open(conf, "w") as f:
    json.dump({"sources": {"nvml": {"health": {"enabled": health, "xidEvents": health}}}}, f)
w = Worker(parse_flags([f"-config={conf}", "-no-publish"]), env=dict(os.environ, NODE_NAME="bench-node"))
w.reload_config()
nvml = registry.get("nvml")
nvml_discover, nvml_ms = nvml.discover, []


def timed(*args, **kwargs):
    t0 = time.thread_time()
    try:
        return nvml_discover(*args, **kwargs)
    finally:
        nvml_ms.append((time.thread_time() - t0) * 1e3)


nvml.discover = timed


def cycle():
    w.run_discovery()
    return len(json.dumps(w.desired()))


def process_cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


for _ in range(3):  # warm: imports, first reads, the XID watcher's registration
    cycle()
time.sleep(0.2)
watcher = next((t for t in threading.enumerate() if t.name == "nvml-xid-watcher"), None)
clock = time.pthread_getcpuclockid(watcher.ident) if watcher is not None else None
w0, c0 = time.monotonic(), time.clock_gettime(clock) if clock is not None else 0.0
del nvml_ms[:]
thread_ms, process_ms, size = [], [], 0
for _ in range(cycles):
    t0, p0 = time.thread_time(), process_cpu()
    size = cycle()
    thread_ms.append((time.thread_time() - t0) * 1e3)
    process_ms.append((process_cpu() - p0) * 1e3)
wall = time.monotonic() - w0
watcher_cpu = (time.clock_gettime(clock) - c0) if clock is not None else 0.0
summary = w.features.attributes.get("nvml.health_summary") or {}
json.dump({"thread_ms": thread_ms, "process_ms": process_ms, "nvml_ms": nvml_ms, "wall_s": wall,
           "watcher_cpu_s": watcher_cpu, "watcher": watcher is not None, "labels": len(w.labels),
           "body_bytes": size, "sources": w.feature_source_names(), "healthy_count": summary.get("healthy_count")},
          sys.stdout)
"""
MODES = {"off": "health off", "off-held": "health off, NVML held open", "on": "health on"}


def bench_worker(profile: str, cycles: int, rounds: int) -> int:
    import statistics

    from tests.support import mocknvml

    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory(prefix="nfd-bench-health-") as tmp:
        env = mocknvml.prepare(profile, Path(tmp), with_host=False)  # the machine's own /sys and /proc
        for _ in range(rounds):
            for mode in MODES:
                proc = subprocess.run([sys.executable, "-c", WORKER_CHILD, mode, str(cycles)], cwd=ROOT, env=env,
                                      capture_output=True, text=True, check=False)
                if proc.returncode != 0:
                    print(proc.stderr[-3000:], file=sys.stderr)
                    return 1
                runs[mode].append(json.loads(proc.stdout))

    def med(mode: str, key: str) -> float:
        return statistics.median(float(x) for r in runs[mode] for x in r[key])

    def mean(mode: str, key: str) -> float:
        return statistics.fmean(float(x) for r in runs[mode] for x in r[key])

    first = runs["on"][0]
    print(f"worker cycle: every default feature source ({', '.join(first['sources'])}), labels, the NodeFeature "
          f"body ({first['body_bytes']} bytes with health); {rounds} rounds x {cycles} cycles per configuration, a "
          f"process each, in turn; healthy GPUs seen with health: {first['healthy_count']}")
    print("  CPU per cycle, median (mean): the cycle's thread | the nvml source's part | the process (all threads)")
    for mode, what in MODES.items():
        print(f"    {what + ':':<28} {med(mode, 'thread_ms'):6.2f} ({mean(mode, 'thread_ms'):.2f}) ms | "
              f"{med(mode, 'nvml_ms'):5.2f} ({mean(mode, 'nvml_ms'):.2f}) ms | "
              f"{med(mode, 'process_ms'):6.2f} ({mean(mode, 'process_ms'):.2f}) ms")
    for base in ("off", "off-held"):
        on, off = med("on", "thread_ms"), med(base, "thread_ms")
        src_on, src_off = med("on", "nvml_ms"), med(base, "nvml_ms")
        print(f"  health on / {MODES[base]}: cycle x{on / off:.2f} ({on - off:+.2f} ms), "
              f"nvml source x{src_on / src_off:.2f} ({src_on - src_off:+.2f} ms)")
    per_s = [float(r["watcher_cpu_s"]) / float(r["wall_s"]) * 1e3 for r in runs["on"]]
    print(f"  XID watcher thread: {statistics.median(per_s):.2f} ms CPU per second (median of {len(per_s)} runs; "
          f"on the mock its nvmlEventSetWait polls the event file every 10 ms, NVML's waits in the driver)")
    print("  health off: nothing holds NVML between passes, so each pass initialises it from scratch (on the mock: "
          "reading its data file again); health on, the XID watcher holds it; 'NVML held open' separates the two")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="h100x8")
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--worker-cycles", type=int, default=40, help="worker cycles per process (part 2; 0: skip it)")
    ap.add_argument("--rounds", type=int, default=5, help="processes per configuration (part 2)")
    args = ap.parse_args()
    from tests.support import mocknvml

    with tempfile.TemporaryDirectory(prefix="nfd-bench-health-") as tmp:
        env = mocknvml.prepare(args.profile, Path(tmp))
        proc = subprocess.run([sys.executable, "-c", CHILD, str(args.cycles)], cwd=ROOT, env=env,
                              capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return 1
    r = json.loads(proc.stdout)
    from nfd.nvml_fake import load_profile

    n = len(load_profile(args.profile)["gpus"])
    print(f"commit {commit()}")
    print(f"profile {args.profile}: {n} GPUs, mock libnvidia-ml.so.1 through pynvml, {args.cycles} cycles each")
    print(f"NVML calls per cycle: {r['calls_off']} without health, {r['calls_on']} with "
          f"({r['calls_on'] - r['calls_off']} health reads, {(r['calls_on'] - r['calls_off']) / n:.1f} per GPU)")
    for name, count in sorted(r["health_calls"].items()):
        print(f"  {name}: {count}")
    print(f"nvml source CPU per cycle (median): {r['cpu_ms_off']:.2f} ms without health, "
          f"{r['cpu_ms_on']:.2f} ms with (+{r['cpu_ms_on'] - r['cpu_ms_off']:.2f} ms)")
    print(f"  mean: {r['cpu_ms_off_mean']:.2f} ms / {r['cpu_ms_on_mean']:.2f} ms")
    if args.worker_cycles > 0:
        return bench_worker(args.profile, args.worker_cycles, args.rounds)
    return 0


def commit() -> str:
    proc = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True, text=True,
                          check=False)
    return proc.stdout.strip() or "?"


if __name__ == "__main__":
    sys.exit(main())
