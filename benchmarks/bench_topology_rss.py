"""nfd-topology-updater's memory against upstream's 60Mi limit, on the real test kube-apiserver.

The same modelled node as bench_topology_updater.py (2 sockets, 144 CPUs, 8 GPUs, 200 pods: 40
Guaranteed with exclusive CPUs, 8 of them with GPUs and pinned memory), but the Pods are real
objects in the test kube-apiserver (tests/e2e/harness.py; built from Go modules on first use)
and the updater talks to it as in a cluster: LIST + WATCH of its node's pods, server-side apply
of its NodeResourceTopology. The kubelet is tests/support/kubelet (PodResources v1 on a unix
socket). Pods churn every few seconds so writes happen.

Prints RSS (steady = median of the second half of the samples, and peak), the proportional
and unique set sizes at the end, and how they compare with upstream's Helm limit (60Mi) and
ours (deploy/helm values topologyUpdater.resources.limits.memory).

    python benchmarks/bench_topology_rss.py [--seconds 60] [--pods 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_topology_updater import GiB, full_pod, kubelet_pod  # noqa: E402

from tests.e2e.build import ensure_built  # noqa: E402
from tests.e2e.harness import KubeCluster  # noqa: E402
from tests.support.kubelet import Device, FakeKubelet, Memory  # noqa: E402

NODE = "bench-node"
UPSTREAM_LIMIT_MIB = 60


def api_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """The Pod as a client creates it (the server fills in status, uid, managedFields)."""
    meta = pod["metadata"]
    spec = dict(pod["spec"], nodeName=NODE)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta},
            "spec": spec}


def chart_limit() -> str:
    values = yaml.safe_load((ROOT / "deploy/helm/node-feature-discovery/values.yaml").read_text())
    return str(values["topologyUpdater"]["resources"]["limits"]["memory"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--pods", type=int, default=200)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="nfd-bench-rss-"))
    began = time.monotonic()
    kube = KubeCluster.start(binary=ensure_built())
    print(f"test kube-apiserver up in {time.monotonic() - began:.1f}s", flush=True)
    kubelet = None
    proc = None
    try:
        kube.create_namespace("nfd")
        kube.create_node(NODE, capacity={"cpu": "144", "memory": "480Gi", "pods": "250"})
        n_guaranteed = 40
        pods = [full_pod(i, i < n_guaranteed) for i in range(args.pods)]
        for ns in sorted({p["metadata"]["namespace"] for p in pods}):
            kube.create_namespace(ns, exist_ok=True)
        for p in pods:
            kube.request("POST", f"/api/v1/namespaces/{p['metadata']['namespace']}/pods", body=api_pod(p))
        sock = str(tmp / "kubelet.sock")
        kubelet = FakeKubelet(
            sock,
            cpus=[c for c in range(144) if c not in (0, 1, 72, 73)],
            devices=[Device("nvidia.com/gpu", [f"GPU-{g}"], [g // 4]) for g in range(8)],
            memory=[Memory("memory", 240 * GiB, [n]) for n in (0, 1)]
            + [Memory("hugepages-1Gi", 4 * GiB, [n]) for n in (0, 1)],
        ).start()
        klpods = []
        for i in range(args.pods):
            g = i < n_guaranteed
            kp = kubelet_pod(i, g, 2 + i if g else 0)
            klpods.append(kp)
            kubelet.add_pod(kp)
        kcfg = tmp / "kubelet.yaml"
        kcfg.write_text("topologyManagerPolicy: single-numa-node\ntopologyManagerScope: container\n")
        proc = kube.start_process(
            ["nfd-topology-updater", f"-kubelet-config-uri=file://{kcfg}", f"-podresources-socket={sock}",
             "-kubelet-state-dir=", "-sleep-interval=1s", "-port=0", "-config="],
            kubeconfig=kube.kubeconfig, name="topology-updater",
            env={"NODE_NAME": NODE, "KUBERNETES_NAMESPACE": "nfd",
                 "NFD_HOST_ROOT": str(ROOT / "tests/fixtures/numa/two")})
        nrt_path = f"/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/{NODE}"
        ps = psutil.Process(proc.pid)
        startup: list[float] = []  # from exec to the first NodeResourceTopology (the initial LIST)
        deadline = time.monotonic() + 60
        while kube.get_or_none(nrt_path) is None:
            if time.monotonic() > deadline or not proc.running:
                raise SystemExit(f"no NodeResourceTopology:\n{proc.logs()[-3000:]}")
            startup.append(ps.memory_info().rss / 2**20)
            time.sleep(0.05)
        samples: list[float] = []
        t0 = time.monotonic()
        churn = 0
        while time.monotonic() - t0 < args.seconds:
            time.sleep(0.5)
            if not proc.running:
                raise SystemExit(f"nfd-topology-updater exited:\n{proc.logs()[-3000:]}")
            samples.append(ps.memory_info().rss / 2**20)
            if len(samples) % 8 == 0:  # a pod goes and comes back: two writes
                churn += 1
                victim = klpods[(churn * 3) % len(klpods)]
                if churn % 2:
                    kubelet.remove_pod(victim.namespace, victim.name)
                else:
                    kubelet.add_pod(victim)
        full = ps.memory_full_info()
        nrt = kube.get(nrt_path)
    finally:
        if proc is not None:
            proc.stop()
        if kubelet is not None:
            kubelet.stop()
        kube.close()
    half = samples[len(samples) // 2:]
    steady = statistics.median(half)
    print(f"nfd-topology-updater on the test kube-apiserver (2 sockets, 144 CPUs, 8 GPUs, {args.pods} pods, "
          f"{args.seconds:.0f}s, {churn} pod churns)")
    print(f"  RSS steady (median, 2nd half): {steady:.1f} MiB   peak: {max(samples):.1f} MiB   "
          f"samples: {len(samples)}")
    print(f"  RSS peak while starting (first LIST, first scan): {max(startup, default=0.0):.1f} MiB")
    print(f"  at the end: PSS {full.pss / 2**20:.1f} MiB   USS {full.uss / 2**20:.1f} MiB")
    print(f"  zones published: {len(nrt.get('zones') or [])}")
    peak = max([*samples, *startup])
    print(f"  upstream's limit {UPSTREAM_LIMIT_MIB}Mi: peak RSS {'within' if peak < UPSTREAM_LIMIT_MIB else 'OVER'} "
          f"({UPSTREAM_LIMIT_MIB - peak:+.1f} MiB headroom; about RSS - USS of it is shared, file-backed "
          f"pages the kernel can reclaim); our chart's limit: {chart_limit()}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
