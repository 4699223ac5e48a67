"""nfd-master's memory with hostile NodeFeatures, and after they are gone.

Real kube-apiserver (tests/e2e/harness.py). 50 ordinary nodes are labelled; then 50 hostile
ones arrive, each NodeFeature carrying a 600 kB ``kernel.version.full`` of its own (random,
so compression does not hide it), with a rule
whose error embeds that per-node value (a template indexing with it) and one regexp rule over
it. The master's resident memory (VmRSS) is printed before, while they are there, and after
their NodeFeatures and Nodes are deleted. Run: ``python benchmarks/bench_hostile.py``.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nfd.k8s.client import ApiClient  # noqa: E402
from nfd.k8s.creating import create  # noqa: E402
from nfd.k8s.resources import NODEFEATURERULES, NODEFEATURES, NODES  # noqa: E402
from tests.e2e.build import ensure_built  # noqa: E402
from tests.e2e.harness import KubeCluster, free_port  # noqa: E402

NS = "node-feature-discovery"


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def nodefeature(node: str, full: str) -> dict[str, Any]:
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
        "metadata": {"name": node, "namespace": NS, "labels": {"nfd.node.kubernetes.io/node-name": node}},
        "spec": {"features": {"flags": {}, "attributes": {"kernel.version": {"elements": {"major": "6", "full": full}}},
                              "instances": {}}, "labels": {}},
    }


RULES = {
    "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "hostile"},
    "spec": {"rules": [
        {"name": "major", "labels": {"kernel-major": "@kernel.version.major"},
         "matchFeatures": [{"feature": "kernel.version", "matchExpressions": {"major": {"op": "Exists"}}}]},
        {"name": "generic", "labels": {"generic": "true"},
         "matchFeatures": [{"feature": "kernel.version", "matchExpressions": {"full": {"op": "InRegexp", "value": [".*-generic$"]}}}]},
        # fails on every node with the node's own value in the message
        {"name": "echo", "labelsTemplate": "{{ range .kernel.version }}{{ index .Name .Value }}{{ end }}",
         "matchFeatures": [{"feature": "kernel.version", "matchExpressions": {"full": {"op": "Exists"}}}]},
    ]},
}


async def put_all(kube: KubeCluster, objs: list[tuple[Any, dict[str, Any]]]) -> None:
    api = await ApiClient.from_kubeconfig(kube.kubeconfig, qps=0, burst=1)
    try:
        for res, obj in objs:
            ns = obj["metadata"].get("namespace")
            await create(api, res, body=obj, namespace=ns) if ns else await create(api, res, body=obj)
    finally:
        await api.close()


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="nfd-bench-hostile-"))
    kube = KubeCluster.start(binary=ensure_built(), tmpdir=tmp)
    try:
        kube.apply_manifest_dir(REPO / "deploy" / "base" / "rbac")
        normal = [f"ok-{i}" for i in range(50)]
        hostile = [f"bad-{i}" for i in range(50)]
        objs: list[tuple[Any, dict[str, Any]]] = [(NODEFEATURERULES, RULES)]
        for n in normal:
            objs += [(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}}),
                     (NODEFEATURES, nodefeature(n, "6.1.0-1-generic"))]
        asyncio.run(put_all(kube, objs))
        conf = tmp / "nfd-master.conf"
        conf.write_text("resyncPeriod: 0\n")
        port = free_port()
        kc = kube.serviceaccount_kubeconfig(NS, "nfd-master", expiration_s=86400)
        master = kube.start_process(["nfd-master", f"-port={port}", f"-config={conf}"], kubeconfig=kc,
                                    env={"KUBERNETES_NAMESPACE": NS}, name="bench-master")

        def labelled(names: list[str]) -> bool:
            return all((kube.get(f"/api/v1/nodes/{n}")["metadata"].get("labels") or {}).get(
                "feature.node.kubernetes.io/kernel-major") == "6" for n in names)

        kube.wait_until(lambda: labelled(normal), timeout=300, message="ordinary nodes labelled")
        time.sleep(5)
        base = rss_mib(master.pid)
        t0 = time.monotonic()
        objs = []
        for n in hostile:
            objs += [(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}}),
                     (NODEFEATURES, nodefeature(n, base64.b64encode(os.urandom(450_000)).decode() + "-generic"))]
        asyncio.run(put_all(kube, objs))
        kube.wait_until(lambda: labelled(hostile), timeout=600, message="hostile nodes processed")
        t_hostile = time.monotonic() - t0
        time.sleep(5)
        during = rss_mib(master.pid)
        log_bytes = len(master.logs())
        echo_errors = master.logs().count("rule echo failed")
        for n in hostile:
            kube.request("DELETE", f"/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/{NS}/nodefeatures/{n}")
            kube.delete_node(n)
        time.sleep(20)
        after = rss_mib(master.pid)
        print(f"master VmRSS: {base:.1f} MiB with 50 ordinary nodes; {during:.1f} MiB with 50 hostile "
              f"NodeFeatures (600 kB values, processed in {t_hostile:.1f}s); {after:.1f} MiB 20 s after "
              f"they were deleted; master log {log_bytes / 1024:.0f} KiB ({echo_errors} lines for the failing rule)")
        master.stop()
    finally:
        kube.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
