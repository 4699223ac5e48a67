#!/usr/bin/env python3
"""GPU health's cost per worker cycle: NVML health reads per cycle and the nvml source's CPU per
cycle with and without health, on an 8-GPU node (profile h100x8, or --profile), through the real
pynvml over the mock libnvidia-ml.so.1 (tests/tools/mocknvml; needs a C compiler and Go).

    python3 benchmarks/bench_gpu_health.py [--profile h100x8] [--cycles 200]

Each configuration runs in the same fresh process, alternately (health off, on, off, on, ...),
``--cycles`` discover() calls each; CPU is the process's (all threads, so the XID watcher's
waits count) per cycle. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="h100x8")
    ap.add_argument("--cycles", type=int, default=200)
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
    print(f"profile {args.profile}: {n} GPUs, mock libnvidia-ml.so.1 through pynvml, {args.cycles} cycles each")
    print(f"NVML calls per cycle: {r['calls_off']} without health, {r['calls_on']} with "
          f"({r['calls_on'] - r['calls_off']} health reads, {(r['calls_on'] - r['calls_off']) / n:.1f} per GPU)")
    for name, count in sorted(r["health_calls"].items()):
        print(f"  {name}: {count}")
    print(f"nvml source CPU per cycle (median): {r['cpu_ms_off']:.2f} ms without health, "
          f"{r['cpu_ms_on']:.2f} ms with (+{r['cpu_ms_on'] - r['cpu_ms_off']:.2f} ms)")
    print(f"  mean: {r['cpu_ms_off_mean']:.2f} ms / {r['cpu_ms_on_mean']:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
