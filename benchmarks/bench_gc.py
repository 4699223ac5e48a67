"""nfd-gc sweep cost against an in-memory API (our CPU, not the API server's).

Models an autoscaled cluster with N live nodes (NodeFeature + NRT each) and S stale
NodeFeatures/NRTs of deleted nodes; prints sweep wall time, requests by verb, and the time
of a steady-state sweep (nothing to delete: one LIST per page of each kind, no node LIST).

    python benchmarks/bench_gc.py [--nodes 5000] [--stale 5000] [--list-size 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "gc"))

from gcfakeapi import NODES, GcFakeApi  # noqa: E402

from nfd.gc.collector import GarbageCollector  # noqa: E402


class NodeCache:
    def __init__(self, names: set[str]) -> None:
        self.cache = {("", n): {"metadata": {"name": n}} for n in names}
        self.synced = True


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--stale", type=int, default=5000)
    ap.add_argument("--list-size", type=int, default=200)
    a = ap.parse_args()
    api = GcFakeApi()
    for i in range(a.nodes):
        api.node(f"node-{i}")
        api.nodefeature("nfd", f"node-{i}", f"node-{i}")
        api.nrt(f"node-{i}")
    for i in range(a.stale):
        api.nodefeature("nfd", f"gone-{i}", f"gone-{i}")
        api.nrt(f"gone-{i}")
    gc = GarbageCollector(api, list_size=a.list_size)
    gc.nodes = NodeCache(api.names(NODES))
    t = time.perf_counter()
    report = asyncio.run(gc.sweep())
    first = time.perf_counter() - t
    verbs = dict(api.metrics)
    api.metrics.clear()
    t = time.perf_counter()
    asyncio.run(gc.sweep())
    steady = time.perf_counter() - t
    print(f"nfd-gc sweep: {a.nodes} live nodes, {2 * a.stale} stale objects, list-size {a.list_size}")
    print(f"  first sweep: {first:.2f}s, deleted {len(report.deleted)}, requests {verbs}")
    print(f"  steady sweep (nothing stale): {steady * 1000:.0f} ms, requests {dict(api.metrics)}")


if __name__ == "__main__":
    main()
