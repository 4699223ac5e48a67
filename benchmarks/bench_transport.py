"""CPU per Node PATCH of the API client, by transport, on the real kube-apiserver.

What one masterless worker pays for its write after a rule change, isolated from everything
else: HTTP/1.1 (aiohttp) on a kept-alive connection, HTTP/1.1 on a new connection (what a
worker pays when its connection was idle past the keep-alive timeout: the TLS handshake), and
HTTP/2 (nfd/k8s/http2.py), each with and without the Node watch that echoes every write (as a
masterless worker holds). The bearer token is a real ServiceAccount token (~700 bytes; it rides
on every request). Prints the median of ``--rounds`` rounds of ``--patches`` PATCHes each.

Run: ``python benchmarks/bench_transport.py [--patches 300] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


async def _round(kube: Any, token: str, *, http2: bool, patches: int, fresh: bool, watch: bool) -> float:
    from nfd.k8s.client import ApiClient
    from nfd.k8s.config import ConnectionConfig

    api = ApiClient(ConnectionConfig(server=kube.server, ca_file=kube.ca_file, token=token), qps=0, burst=1,
                    http2=http2)
    await api.request("GET", "/version")
    echoes = [0]

    async def node_watch() -> None:
        params = {"watch": "true", "fieldSelector": "metadata.name=bench-transport", "timeoutSeconds": 600}
        async for _ in api.stream_lines("/api/v1/nodes", params=params):
            echoes[0] += 1

    task = asyncio.create_task(node_watch()) if watch else None
    await asyncio.sleep(0.5)
    t0 = time.process_time()
    for i in range(patches):
        if fresh:
            await api.close()
        await api.request("PATCH", "/api/v1/nodes/bench-transport", body={"metadata": {"labels": {"x": str(i)}}},
                          content_type="application/strategic-merge-patch+json")
    while watch and echoes[0] < patches:
        await asyncio.sleep(0.01)
    per = (time.process_time() - t0) / patches * 1000
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    await api.close()
    return per


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--patches", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    from tests.e2e.build import ensure_built
    from tests.e2e.harness import KubeCluster, read_kubeconfig_token

    kube = KubeCluster.start(binary=ensure_built(), tmpdir=Path(tempfile.mkdtemp(prefix="nfd-bench-transport-")))
    try:
        # a node the size of a labelled one: its echo is what a worker's Node watch receives
        kube.create_node("bench-transport", labels={f"feature.node.kubernetes.io/l{i}": "v" * 20 for i in range(100)})
        kube.apply_objects([
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bench", "namespace": "default"}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "bench-transport"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
             "subjects": [{"kind": "ServiceAccount", "name": "bench", "namespace": "default"}]},
        ])
        token = read_kubeconfig_token(kube.serviceaccount_kubeconfig("default", "bench", expiration_s=3600))
        cases = [
            ("HTTP/1.1, kept-alive connection", dict(http2=False, fresh=False)),
            ("HTTP/1.1, new connection each", dict(http2=False, fresh=True)),
            ("HTTP/2", dict(http2=True, fresh=False)),
            ("HTTP/2, new connection each", dict(http2=True, fresh=True)),
        ]
        print(f"CPU per Node PATCH (token {len(token)} bytes), median of {args.rounds} rounds of {args.patches}:")
        print(f"  {'':34s} {'alone':>9s} {'with the Node watch':>20s}")
        for name, kw in cases:
            alone = statistics.median(asyncio.run(_round(kube, token, patches=args.patches, watch=False, **kw))
                                      for _ in range(args.rounds))
            watched = ("" if kw["fresh"] else
                       f"{statistics.median(asyncio.run(_round(kube, token, patches=args.patches, watch=True, **kw)) for _ in range(args.rounds)):8.3f} ms")
            print(f"  {name:34s} {alone:6.3f} ms {watched:>20s}")
    finally:
        kube.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
