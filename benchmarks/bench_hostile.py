"""nfd-master (and masterless workers) under hostile input, on the real kube-apiserver
(tests/e2e/harness.py). Four measurements, one per subcommand:

``memory``: the master's resident memory (VmRSS) with hostile NodeFeatures and after. 50
ordinary nodes are labelled; then 50 hostile ones arrive, each NodeFeature carrying a 600 kB
``kernel.version.full`` of its own (random, so compression does not hide it), with a rule whose
error embeds that per-node value (a template indexing with it) and one regexp rule over it.

``rule --nodes N [--no-hostile]``: N nodes and, present before the master starts, one
NodeFeatureRule of 40 rules whose templates each spend a whole step budget, matching every node
but one (the "healthy" node). Prints the first pass's duration with the master's /healthz
latency percentiles and longest silence (probed every 0.2 s, like a kubelet but more often),
then a harmless rule change three times: until it lands on the healthy node, and on every node,
with the probes meanwhile. ``--no-hostile`` leaves the hostile object out: the normal
rule-change time to compare with.

``burst --nodes N``: after the first pass, every node's NodeFeature is updated at once with a
600 kB value of its own; prints the probes during the burst and how long until the master has
processed it.

``gil``: no API server. /healthz from the probe thread (nfd.common.probes) while the main
thread evaluates the hostile rule for ten nodes at once, probed from another process, for
``sys.setswitchinterval`` 1, 5 (the default) and 20 ms.

Run: ``python benchmarks/bench_hostile.py memory|rule|burst|gil [--nodes N]``.
The machine's cores are shared by kube-apiserver, etcd, the master and the probes.
"""

from __future__ import annotations

import asyncio
import base64
import json
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


def memory() -> int:
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
        master, _ = start_master(kube, tmp)

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


FNS = "feature.node.kubernetes.io"
SPEND = "{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}x=y"  # a whole step budget


def scale_nodefeature(node: str, *, hostile: bool, full: str = "6.1.0-1-generic") -> dict[str, Any]:
    obj = nodefeature(node, full)
    obj["spec"]["features"]["flags"] = {"bench.all": {"elements": {"yes": {}}},
                                        **({"bench.hostile": {"elements": {"yes": {}}}} if hostile else {})}
    return obj


def base_rules(canary: str) -> dict[str, Any]:
    every = {"feature": "bench.all", "matchExpressions": {"yes": {"op": "Exists"}}}
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "base"},
            "spec": {"rules": [
                {"name": "canary", "labels": {"canary": canary}, "matchFeatures": [every]},
                {"name": "major", "labels": {"kernel-major": "@kernel.version.major"},
                 "matchFeatures": [every, {"feature": "kernel.version", "matchExpressions": {"major": {"op": "Exists"}}}]},
                {"name": "tmpl", "labelsTemplate": "{{ range .kernel.version }}kv-{{ .Name }}=set\n{{ end }}",
                 "matchFeatures": [{"feature": "kernel.version", "matchExpressions": {"major": {"op": "Exists"}}}]},
            ]}}


HOSTILE_RULE = {
    "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "hostile"},
    "spec": {"rules": [{"name": f"spend-{i}", "labelsTemplate": SPEND,
                        "matchFeatures": [{"feature": "bench.hostile", "matchExpressions": {"yes": {"op": "Exists"}}}]}
                       for i in range(40)]},
}


async def bulk_put(kube: KubeCluster, objs: list[tuple[Any, dict[str, Any]]], *, parallel: int = 32,
                   replace: bool = False) -> None:
    """Create (or, ``replace``, update) the objects, ``parallel`` at a time."""
    from nfd.k8s.fetching import get as get_obj
    from nfd.k8s.updating import replace as put

    api = await ApiClient.from_kubeconfig(kube.kubeconfig, qps=0, burst=1)
    sem = asyncio.Semaphore(parallel)

    async def one(res: Any, obj: dict[str, Any]) -> None:
        ns = obj["metadata"].get("namespace")
        async with sem:
            if replace:
                cur = await get_obj(api, res, name=obj["metadata"]["name"], namespace=ns)
                obj["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
                await put(api, res, body=obj, name=obj["metadata"]["name"], namespace=ns)
            elif ns:
                await create(api, res, body=obj, namespace=ns)
            else:
                await create(api, res, body=obj)

    try:
        await asyncio.gather(*(one(r, o) for r, o in objs))
    finally:
        await api.close()


def count_labelled(kube: KubeCluster, key: str, value: str) -> int:
    items = kube.get("/api/v1/nodes", labelSelector=f"{FNS}/{key}={value}")["items"]
    return len(items)


def cpu_s(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def wait_count(kube: KubeCluster, key: str, value: str, n: int, *, timeout: float) -> float:
    t0 = time.monotonic()
    while count_labelled(kube, key, value) < n:
        if time.monotonic() - t0 > timeout:
            raise SystemExit(f"timed out: {count_labelled(kube, key, value)}/{n} nodes with {key}={value}")
        time.sleep(0.5)
    return time.monotonic() - t0


def start_master(kube: KubeCluster, tmp: Path) -> tuple[Any, int]:
    conf = tmp / "nfd-master.conf"
    conf.write_text("resyncPeriod: 0\n")
    port = free_port()
    kc = kube.serviceaccount_kubeconfig(NS, "nfd-master", expiration_s=86400)
    master = kube.start_process(["nfd-master", f"-port={port}", f"-config={conf}"], kubeconfig=kc,
                                env={"KUBERNETES_NAMESPACE": NS}, name="bench-master")
    return master, port


def scale(n: int, *, hostile: bool, burst: bool) -> int:
    from tests.e2e.probing import Prober

    tmp = Path(tempfile.mkdtemp(prefix="nfd-bench-hostile-"))
    kube = KubeCluster.start(binary=ensure_built(), tmpdir=tmp)
    try:
        kube.apply_manifest_dir(REPO / "deploy" / "base" / "rbac")
        # the healthy node (not matched by the hostile object) is the last one in the master's
        # order (it queues nodes in name order): it waits behind all the others
        names = [f"node-{i:05d}" for i in range(n)]
        healthy = names[-1]
        t0 = time.monotonic()
        asyncio.run(bulk_put(kube, [(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": x}})
                                    for x in names]))
        asyncio.run(bulk_put(kube, [(NODEFEATURES, scale_nodefeature(x, hostile=x != healthy)) for x in names]))
        asyncio.run(bulk_put(kube, [(NODEFEATURERULES, base_rules("v0"))] +
                             ([(NODEFEATURERULES, json.loads(json.dumps(HOSTILE_RULE)))] if hostile else [])))
        print(f"{n} nodes created in {time.monotonic() - t0:.0f}s; hostile rule object: {'yes' if hostile else 'no'}",
              flush=True)
        time.sleep(5)
        master, port = start_master(kube, tmp)
        prober = Prober(f"http://127.0.0.1:{port}/healthz", interval_s=0.2).start()
        first = wait_count(kube, "canary", "v0", n, timeout=3600)
        print(f"first pass: all {n} nodes labelled in {first:.1f}s (from the first /healthz answer); "
              f"probes: {prober.summary()}", flush=True)
        prober.stop()
        time.sleep(3)
        c0 = cpu_s(master.pid)
        prober = Prober(f"http://127.0.0.1:{port}/healthz", interval_s=0.2).start()
        for k in range(1, 4):
            kube.request("PUT", "/apis/nfd.k8s-sigs.io/v1alpha1/nodefeaturerules/base",
                         body=dict(base_rules(f"v{k}"), metadata={
                             "name": "base",
                             "resourceVersion": kube.get("/apis/nfd.k8s-sigs.io/v1alpha1/nodefeaturerules/base")
                             ["metadata"]["resourceVersion"]}))
            t1 = time.monotonic()
            while (kube.get(f"/api/v1/nodes/{healthy}")["metadata"].get("labels") or {}).get(f"{FNS}/canary") != f"v{k}":
                time.sleep(0.05)
            on_healthy = time.monotonic() - t1
            every = wait_count(kube, "canary", f"v{k}", n, timeout=3600) + on_healthy
            print(f"rule change {k}: on the healthy node in {on_healthy:.2f}s, on all {n} nodes in {every:.1f}s",
                  flush=True)
            time.sleep(2)
        prober.stop()
        print(f"probes during the rule changes: {prober.summary()}; master CPU {cpu_s(master.pid) - c0:.1f}s "
              f"over {len(prober.latencies) * 0.2:.0f}s", flush=True)
        if burst:
            prober = Prober(f"http://127.0.0.1:{port}/healthz", interval_s=0.2).start()
            t2 = time.monotonic()
            big = [(NODEFEATURES, scale_nodefeature(
                x, hostile=x != healthy, full=base64.b64encode(os.urandom(450_000)).decode() + "-generic"))
                for x in names]
            for _, obj in big:
                obj["spec"]["labels"] = {"burst": "1"}  # on the node once the master has processed it
            asyncio.run(bulk_put(kube, big, parallel=8, replace=True))
            del big
            sent = time.monotonic() - t2
            done = wait_count(kube, "burst", "1", n, timeout=3600) + sent
            time.sleep(2)
            prober.stop()
            print(f"burst: {n} NodeFeatures updated with a 600 kB value each in {sent:.1f}s, all processed after "
                  f"{done:.1f}s; probes: {prober.summary()}; master VmRSS {rss_mib(master.pid):.0f} MiB", flush=True)
        logs = master.logs()
        print(f"master log: {logs.count('ran out of its evaluation budget')} deferral line(s); "
              f"{len(logs) // 1024} KiB", flush=True)
        master.stop()
    finally:
        kube.close()
    return 0


def gil() -> int:
    """In-process: probe-thread latency while the loop thread evaluates hostile nodes."""
    import subprocess
    import threading

    from nfd.api.features import Features
    from nfd.common import httpserver
    from nfd.common.probes import Heartbeat, ProbeServer, liveness_route
    from nfd.master.config import MasterConfig, policy_config
    from nfd.master.evalsched import EvalSlicer
    from nfd.nodestate.desired import Evaluation, desired_state_steps
    from nfd.nodestate.nodefeatures import MergedNodeFeatures
    from nfd.rules.engine import EvalBudget, compile_nodefeaturerule

    rs = compile_nodefeaturerule(json.loads(json.dumps(HOSTILE_RULE)))
    feats = Features()
    feats.add_flags("bench.hostile", ["yes"])
    pol = policy_config(MasterConfig())
    probe_src = ("import sys,time,urllib.request\nurl=sys.argv[1];xs=[]\nend=time.monotonic()+float(sys.argv[2])\n"
                 "while time.monotonic()<end:\n t=time.monotonic();urllib.request.urlopen(url,timeout=10).read()\n"
                 " xs.append(time.monotonic()-t);time.sleep(0.05)\nxs.sort();n=len(xs)\n"
                 "print(n,xs[n//2]*1000,xs[min(n-1,int(n*.99))]*1000,xs[-1]*1000)")
    for interval in (0.001, 0.005, 0.02):
        sys.setswitchinterval(interval)

        async def run(interval: float = interval) -> str:
            hb = Heartbeat()
            hb.start()
            server = ProbeServer(0, {"/healthz": liveness_route(hb), "/x": httpserver.healthz}, host="127.0.0.1",
                                 heartbeat=hb)
            slicer = EvalSlicer()
            stop = asyncio.Event()
            evaluated = [0]

            async def node(i: int) -> None:
                while not stop.is_set():
                    merged = MergedNodeFeatures(features=feats, labels={}, found=True)
                    steps = desired_state_steps(merged, [rs], pol, node_name=f"n{i}",
                                                how=Evaluation(budget=EvalBudget()))
                    await slicer.drive(steps)
                    evaluated[0] += 1

            tasks = [asyncio.create_task(node(i)) for i in range(10)]
            out: list[str] = []
            th = threading.Thread(target=lambda: out.append(subprocess.run(
                [sys.executable, "-c", probe_src, f"http://127.0.0.1:{server.port}/healthz", "8"],
                capture_output=True, text=True, check=True).stdout))
            th.start()
            while th.is_alive():
                await asyncio.sleep(0.1)
            stop.set()
            await asyncio.gather(*tasks)
            server.close()
            k, p50, p99, mx = out[0].split()
            return (f"switchinterval {interval * 1000:g} ms: {k} probes, latency p50 {float(p50):.1f} ms, "
                    f"p99 {float(p99):.1f} ms, max {float(mx):.1f} ms; {evaluated[0]} hostile node evaluations in 8 s")

        print(asyncio.run(run()), flush=True)
    return 0


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["memory", "rule", "burst", "gil"], nargs="?", default="memory")
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--no-hostile", action="store_true")
    a = ap.parse_args()
    if a.what == "memory":
        return memory()
    if a.what == "gil":
        return gil()
    return scale(a.nodes, hostile=not a.no_hostile, burst=a.what == "burst")


if __name__ == "__main__":
    sys.exit(main())
