"""What each of nfd-master's caches costs per node, in process (no API server).

Builds the master's node pipeline (nfd.master.core.MasterCore) over an API that is never
called, fills its caches as a synced master holds them after its first pass, and prints the
bytes each one holds per node, measured with tracemalloc as the difference of two snapshots:

- the NodeFeature cache (bench_master_scale's realistic NodeFeatures, compacted as the informer
  keeps them) and the node -> NodeFeatures index;
- the Node cache (slim Nodes carrying what the first pass wrote: labels, the bookkeeping
  annotations, extended resources, taints);
- the desired-state cache (``NodeUpdater.desired_cache``: the desired state, the last-good
  outputs of each matching rule, the sets of evaluated rule objects);
- the evidence record;
- the rule book (per cluster, not per node).

``--nf-kb 130`` uses bench_master_scale's realistic heavy profiles (benchmarks/heavy_nodefeature.py)
and the rules it draws from them.

Run: ``python benchmarks/bench_master_memory.py [--nodes 1000] [--nf-kb 130]`` (prints per-node
figures and the projection to --project nodes, default 5,000).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_master_scale  # noqa: E402
from bench_master_scale import NS, PROFILES, make_rules, nodefeature  # noqa: E402

from nfd.common import jsoncodec  # noqa: E402
from nfd.master.config import MasterConfig  # noqa: E402
from nfd.master.core import MasterCore  # noqa: E402
from nfd.master.options import MasterOptions  # noqa: E402
from nfd.nodestate import bookkeeping as bk  # noqa: E402
from nfd.nodestate.nodeplan import slim_node  # noqa: E402


class _NoApi:
    """The caches are filled by hand; a call to the API would be a bug in this benchmark."""

    limiter = None

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"bench_master_memory: the API was called ({name})")


def _traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def _applied(node: str, desired: Any) -> dict[str, Any]:
    """The slim Node as the first pass leaves it: its own labels and capacity plus the desired
    labels, annotations, extended resources and taints and the bookkeeping annotations."""
    labels = {"kubernetes.io/hostname": node, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              **desired.labels}
    annotations = {"node.alpha.kubernetes.io/ttl": "0", **desired.annotations,
                   bk.FEATURE_LABELS: ",".join(sorted(desired.labels)),
                   bk.FEATURE_ANNOTATIONS: ",".join(sorted(desired.annotations)),
                   bk.EXTENDED_RESOURCES: ",".join(sorted(desired.extended_resources)),
                   bk.TAINTS: ",".join(t.to_string() for t in desired.taints)}
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110", **desired.extended_resources}
    obj: dict[str, Any] = {
        "metadata": {"name": node, "uid": f"00000000-0000-0000-0000-{abs(hash(node)) % 10**12:012d}",
                     "resourceVersion": "1000", "labels": labels, "annotations": annotations},
        "spec": {"taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in desired.taints]},
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }
    # as the watch delivers it: decoded from the API server's JSON
    return slim_node(jsoncodec.loads(jsoncodec.dumps(obj)))


async def measure(nodes: int, *, taints: str) -> dict[str, float]:
    core = MasterCore(_NoApi(), config=MasterConfig(enable_taints=True, resync_period=0),  # type: ignore[arg-type]
                      options=MasterOptions(namespace=NS))
    ctl = core.controller
    names = [f"bench-{i:05d}" for i in range(nodes)]
    out: dict[str, float] = {}

    t0 = _traced()
    for o in make_rules("v1", taints=taints):
        ctl.on_nfr_event("ADDED", ctl.nfr_informer.transform(o), None)  # type: ignore[misc]
    t1 = _traced()
    out["rule book (per cluster), MiB"] = (t1 - t0) / 2**20

    for i, n in enumerate(names):
        nf = nodefeature(n, i % PROFILES)
        nf["metadata"]["resourceVersion"] = str(10 + i)
        nf["metadata"]["uid"] = f"11111111-0000-0000-0000-{i:012d}"
        ctl.nf_informer.cache[(NS, n)] = ctl.nf_informer.transform(nf)  # type: ignore[misc]
        ctl.nf_index.setdefault(n, set()).add((NS, n))
    t2 = _traced()
    out["NodeFeature cache + index, kB/node"] = (t2 - t1) / nodes / 1024

    cpu0 = time.process_time()
    desired = {}
    for n in names:
        desired[n] = (await core.updater.desired_for(n)).desired
    cpu = time.process_time() - cpu0
    t3 = _traced()
    out["desired-state cache, kB/node"] = (t3 - t2) / nodes / 1024

    for n in names:
        ctl.node_informer.cache[("", n)] = _applied(n, desired[n])
    del desired
    t4 = _traced()
    out["Node cache, kB/node"] = (t4 - t3) / nodes / 1024

    for n in names:
        core.evidence.commit(n, core.evidence.resolve(n))
    t5 = _traced()
    out["evidence, kB/node"] = (t5 - t4) / nodes / 1024
    out["all per-node caches, kB/node"] = (t5 - t1) / nodes / 1024
    out["evaluation CPU (tracemalloc on), ms/node"] = cpu * 1000 / nodes
    # what one cached entry holds, split
    cd = next(iter(core.updater.desired_cache.values()))
    out["  of which last-good outputs, entries/node"] = float(len(cd.outputs))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--project", type=int, default=5000, help="nodes to project the per-node figures to")
    ap.add_argument("--taints", choices=("all", "quarter", "none"), default="all")
    ap.add_argument("--nf-kb", type=float, default=0, help="heavy NodeFeatures of about this size")
    args = ap.parse_args()
    if args.nf_kb:
        from heavy_nodefeature import vfs_for

        bench_master_scale.HEAVY_VFS = vfs_for(args.nf_kb, PROFILES)
    tracemalloc.start()
    res = asyncio.run(measure(args.nodes, taints=args.taints))
    kind = f"heavy ~{args.nf_kb:.0f} kB" if args.nf_kb else "~31 kB"
    print(f"bench_master_memory: {args.nodes} nodes, bench_master_scale's {kind} profiles and its 100 rules")
    for k, v in res.items():
        print(f"  {k:<46} {v:10.2f}")
    per_node = res["all per-node caches, kB/node"]
    print(f"  projected at {args.project} nodes: {per_node * args.project / 1024:.1f} MiB of caches "
          f"(+ {res['rule book (per cluster), MiB']:.1f} MiB rule book)")


if __name__ == "__main__":
    main()
