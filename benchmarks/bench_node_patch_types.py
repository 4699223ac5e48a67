"""API server CPU per Node write by patch type (JSON patch, merge patch, strategic merge patch).

Starts the test kube-apiserver + etcd, creates 1,000 Nodes, then sets and unsets 100 labels and
one annotation on each (what nfd-master's first pass writes) with each patch type, 10 requests
in parallel, and prints kube-apiserver+etcd CPU per write. nfd-master writes JSON patches (its
resourceVersion guard is a ``test`` op); this measures what another type would save the server.

Run: ``python benchmarks/bench_node_patch_types.py``
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
import bench_master_scale as b  # noqa: E402

from nfd.k8s.client import ApiClient  # noqa: E402
from nfd.k8s.creating import create  # noqa: E402
from nfd.k8s.patching import patch  # noqa: E402
from nfd.k8s.resources import NODES  # noqa: E402
from tests.e2e.build import ensure_built  # noqa: E402
from tests.e2e.harness import KubeCluster  # noqa: E402

N = 1000


def cpu(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / 100


LABELS = {f"feature.node.kubernetes.io/label-{i}": "true" for i in range(100)}
ANN = {"nfd.node.kubernetes.io/feature-labels": ",".join(f"label-{i}" for i in range(100))}


def esc(k: str) -> str:
    return k.replace("~", "~0").replace("/", "~1")


def body(kind: str, on: bool) -> Any:
    if kind == "json":
        if on:
            return [{"op": "add", "path": f"/metadata/labels/{esc(k)}", "value": v} for k, v in LABELS.items()] + \
                   [{"op": "add", "path": "/metadata/annotations", "value": ANN}]
        return [{"op": "remove", "path": f"/metadata/labels/{esc(k)}"} for k in LABELS] + [{"op": "remove", "path": "/metadata/annotations"}]
    return {"metadata": {"labels": LABELS if on else {k: None for k in LABELS}, "annotations": ANN if on else {k: None for k in ANN}}}


async def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="nfd-patchbench-"))
    kube = KubeCluster.start(binary=ensure_built(), tmpdir=tmp)
    try:
        api = await ApiClient.from_kubeconfig(kube.kubeconfig, qps=0, burst=1)
        await b.bulk([create(api, NODES, body={"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}}}) for i in range(N)])
        pids = [kube._apiserver.pid, kube._etcd.pid]
        time.sleep(5)
        for rnd in range(2):
            for kind in ("json", "merge", "strategic"):
                for on in (True, False):
                    c0 = sum(cpu(p) for p in pids)
                    t0 = time.monotonic()
                    await b.bulk([patch(api, NODES, name=f"n{i}", body=body(kind, on), patch_type=kind) for i in range(N)], parallel=10)
                    c1 = sum(cpu(p) for p in pids)
                    print(f"round {rnd} {kind:9s} {'set' if on else 'unset'}: {(c1 - c0) * 1000 / N:5.2f} ms apiserver+etcd CPU per write, {time.monotonic() - t0:.1f}s", flush=True)
        await api.close()
    finally:
        kube.close()
if __name__ == "__main__":
    asyncio.run(main())
