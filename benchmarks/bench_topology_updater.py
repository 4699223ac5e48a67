"""Footprint of nfd-topology-updater on a modelled big node: RSS and CPU per scan cycle.

Model: 2 sockets x 36 cores x 2 threads = 144 CPUs (tests/fixtures/numa/two), 8 GPUs (4 per
NUMA node), memory and 1Gi hugepages per NUMA node, 200 pods (40 Guaranteed with exclusive CPUs,
8 of them with GPUs and pinned memory; 160 Burstable) created in the real kube-apiserver of the
e2e harness (the updater talks to it as in a cluster: HTTP/2, TLS, a bearer token), and the test
kubelet speaking PodResources v1 over a real unix socket.

The updater runs as its real command (``python -m nfd.topology_updater``) with a 1 s interval;
every few seconds a pod comes or goes so writes happen. Prints RSS (steady = median of the
second half of the samples, and peak), CPU per scan cycle, and the NodeResourceTopology written.
``--profile FILE`` runs the updater under cProfile (figures then include its overhead).

    python benchmarks/bench_topology_updater.py [--seconds 40] [--pods 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.support.kubelet import Container, Device, FakeKubelet, Memory, Pod  # noqa: E402

GiB = 1 << 30
NODE = "bench-node"


def full_pod(i: int, guaranteed: bool) -> dict:
    """A realistic Pod object as the API server returns it."""
    res = {"cpu": "2", "memory": "8Gi"} if guaranteed else {"cpu": "250m", "memory": "256Mi"}
    lim = res if guaranteed else {"cpu": "1", "memory": "1Gi"}
    name = f"workload-{i:03d}-7d9f8b6c5-x{i:04d}"
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "namespace": f"team-{i % 7}",
            "uid": f"5f0e{i:04d}-1111-2222-3333-444455556666",
            "resourceVersion": str(1000 + i),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {
                "app": f"workload-{i}",
                "pod-template-hash": "7d9f8b6c5",
                "tier": "backend",
                "team": f"team-{i % 7}",
            },
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z",
                "prometheus.io/scrape": "true",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"workload-{i:03d}-7d9f8b6c5",
                    "uid": "abc",
                    "controller": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:labels": {f"f:{k}": {} for k in ("app", "tier", "team")}},
                        "f:spec": {
                            "f:containers": {'k:{"name":"main"}': {".": {}, "f:image": {}, "f:resources": {}}}
                        },
                    },
                },
                {
                    "manager": "kubelet",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "subresource": "status",
                    "fieldsV1": {
                        "f:status": {
                            "f:conditions": {},
                            "f:containerStatuses": {},
                            "f:hostIP": {},
                            "f:phase": {},
                            "f:podIP": {},
                        }
                    },
                },
            ],
        },
        "spec": {
            "nodeName": NODE,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example.com/team/workload:1.2.3",
                    "args": ["--port=8080", "--log-level=info", "--config=/etc/app/config.yaml"],
                    "env": [{"name": f"ENV_{k}", "value": f"value-{k}-{i}"} for k in range(12)],
                    "resources": {"requests": res, "limits": lim},
                    "volumeMounts": [
                        {"name": "config", "mountPath": "/etc/app"},
                        {
                            "name": "kube-api-access",
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                            "readOnly": True,
                        },
                    ],
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 10},
                    "terminationMessagePath": "/dev/termination-log",
                    "imagePullPolicy": "IfNotPresent",
                },
                {
                    "name": "sidecar",
                    "image": "registry.example.com/infra/proxy:2.0",
                    "resources": {
                        "requests": res if guaranteed else {"cpu": "50m", "memory": "64Mi"},
                        "limits": lim if guaranteed else {"cpu": "100m", "memory": "128Mi"},
                    },
                },
            ],
            "volumes": [
                {"name": "config", "configMap": {"name": f"workload-{i}-config"}},
                {
                    "name": "kube-api-access",
                    "projected": {
                        "sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]
                    },
                },
            ],
            "restartPolicy": "Always",
            "serviceAccountName": "default",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
        },
        "status": {
            "phase": "Running",
            "qosClass": "Guaranteed" if guaranteed else "Burstable",
            "hostIP": "10.0.0.1",
            "podIP": f"10.1.{i // 250}.{i % 250}",
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "name": c,
                    "ready": True,
                    "restartCount": 0,
                    "image": "img",
                    "imageID": "sha256:" + "ab" * 32,
                    "containerID": "containerd://" + "cd" * 32,
                    "started": True,
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                }
                for c in ("main", "sidecar")
            ],
        },
    }


def kubelet_pod(i: int, guaranteed: bool, cpu_base: int) -> Pod:
    pod = full_pod(i, guaranteed)
    meta = pod["metadata"]
    if not guaranteed:
        return Pod(meta["namespace"], meta["name"], [Container("main"), Container("sidecar")])
    numa = 0 if i % 2 == 0 else 1
    # one core and its SMT sibling per Guaranteed pod (exclusive CPUs never overlap)
    main = Container("main", cpus=[cpu_base, cpu_base + 72])
    side = Container("sidecar")
    if i < 8:
        main.devices = [Device("nvidia.com/gpu", [f"GPU-{i}"], [i // 4])]
        main.memory = [Memory("memory", 8 * GiB, [numa]), Memory("hugepages-1Gi", GiB, [numa])]
    return Pod(meta["namespace"], meta["name"], [main, side])


def api_pod(i: int, guaranteed: bool) -> dict:
    """full_pod as a client creates it (the server fills in uid, status, managedFields)."""
    pod = full_pod(i, guaranteed)
    meta = pod["metadata"]
    for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
        meta.pop(k, None)
    meta["ownerReferences"][0]["uid"] = f"5f0e{i:04d}-0000-0000-0000-000000000000"
    pod.pop("status")
    return pod


def start_cluster(pods: list[dict]):  # -> KubeCluster
    from tests.e2e.build import ensure_built
    from tests.e2e.harness import KubeCluster

    kube = KubeCluster.start(binary=ensure_built(), tmpdir=tempfile.mkdtemp(prefix="nfd-bench-topo-kube-"))
    kube.wait_crd_established("noderesourcetopologies.topology.node.k8s.io")
    kube.create_node(NODE)
    for ns in sorted({p["metadata"]["namespace"] for p in pods} | {"nfd"}):
        kube.create_namespace(ns, exist_ok=True)
    for p in pods:
        kube.request("POST", f"/api/v1/namespaces/{p['metadata']['namespace']}/pods", body=p)
    return kube


async def main_async(args: argparse.Namespace) -> None:
    tmp = tempfile.mkdtemp(prefix="nfd-bench-")
    sock = os.path.join(tmp, "kubelet.sock")
    n_guaranteed = 40
    pods_json = [api_pod(i, i < n_guaranteed) for i in range(args.pods)]
    kube = start_cluster(pods_json)
    nrt_path = f"/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/{NODE}"
    listed = kube.get("/api/v1/pods", fieldSelector=f"spec.nodeName={NODE}")["items"]
    avg_pod_kb = sum(len(json.dumps(p)) for p in listed) / max(len(listed), 1) / 1024
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
        p = kubelet_pod(i, g, 2 + i if g else 0)
        klpods.append(p)
        kubelet.add_pod(p)

    kubeconfig = kube.kubeconfig
    kcfg = os.path.join(tmp, "kubelet.yaml")
    with open(kcfg, "w") as f:
        f.write("topologyManagerPolicy: single-numa-node\ntopologyManagerScope: container\n")
    env = dict(
        os.environ,
        NODE_NAME=NODE,
        KUBERNETES_NAMESPACE="nfd",
        NFD_HOST_ROOT=os.path.join(ROOT, "tests/fixtures/numa/two"),
    )
    argv = [
        sys.executable,
        *(["-m", "cProfile", "-o", args.profile] if args.profile else []),
        "-m",
        "nfd.topology_updater",
        f"-kubeconfig={kubeconfig}",
        f"-kubelet-config-uri=file://{kcfg}",
        f"-podresources-socket={sock}",
        "-kubelet-state-dir=",
        f"-sleep-interval={args.interval}s",
        "-port=0",
        "-config=",
    ]
    log_path = os.path.join(tmp, "updater.log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    ps = psutil.Process(proc.pid)
    samples: list[float] = []
    t0 = time.monotonic()
    churn = 0
    started_cpu = None
    start_lists = 0
    written = False
    try:
        while time.monotonic() - t0 < args.seconds:
            await asyncio.sleep(0.5)
            if proc.poll() is not None:
                with open(log_path) as f:
                    raise SystemExit(f"updater exited with {proc.returncode}:\n" + f.read()[-3000:])
            if not written and kube.get_or_none(nrt_path) is None:
                continue
            written = True
            if started_cpu is None:
                ct = ps.cpu_times()
                started_cpu, start_lists, t_steady = (
                    ct.user + ct.system,
                    kubelet.calls["List"],
                    time.monotonic(),
                )
            samples.append(ps.memory_info().rss / 2**20)
            if len(samples) % 8 == 0:  # a pod goes away and comes back: two writes
                churn += 1
                victim = klpods[(churn * 3) % len(klpods)]
                if churn % 2:
                    kubelet.remove_pod(victim.namespace, victim.name)
                else:
                    kubelet.add_pod(victim)
        if args.smaps:
            os.system(f"cat /proc/{proc.pid}/smaps_rollup | head -12")
            os.system(
                f"awk '/^[0-9a-f]+-/{{name=$6}} /^Rss:/{{r[name]+=$2}} END{{for(n in r) if (r[n]>800) print r[n], n}}' /proc/{proc.pid}/smaps | sort -rn | head -15"
            )
        ct = ps.cpu_times()
        cycles = kubelet.calls["List"] - start_lists
        cpu = ct.user + ct.system - (started_cpu or 0.0)
        steady_wall = time.monotonic() - t_steady
        nrt = kube.get_or_none(nrt_path)
    finally:
        proc.send_signal(2)  # SIGINT: a cProfile run writes its profile on the way out
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        kubelet.stop()
        kube.close()
    half = samples[len(samples) // 2 :]
    print(
        f"nfd-topology-updater footprint (2 sockets, 144 CPUs, 8 GPUs, {args.pods} pods, {avg_pod_kb:.1f} kB/pod JSON)"
    )
    print(
        f"  RSS steady (median, 2nd half): {statistics.median(half):.1f} MiB   peak: {max(samples):.1f} MiB   samples: {len(samples)}"
    )
    print(
        f"  scan cycles: {cycles} in {steady_wall:.1f}s   CPU per cycle: {1000 * cpu / max(cycles, 1):.1f} ms   CPU share: {100 * cpu / steady_wall:.1f}%"
    )
    zones = nrt["zones"] if nrt else []
    for z in zones:
        print(
            "  "
            + z["name"]
            + ": "
            + ", ".join(f"{r['name']}={r['available']}/{r['allocatable']}" for r in z["resources"])
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=40.0)
    ap.add_argument("--pods", type=int, default=200)
    ap.add_argument("--interval", type=float, default=1.0, help="-sleep-interval, seconds")
    ap.add_argument("--smaps", action="store_true", help="print the updater's memory map summary")
    ap.add_argument("--profile", metavar="FILE", help="run the updater under cProfile, writing FILE")
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
