"""Footprint of nfd-topology-updater: RSS and CPU per scan cycle, beside upstream's.

Models (``--model``):

- ``big`` (default): 2 sockets x 36 cores x 2 threads = 144 CPUs (tests/fixtures/numa/two),
  8 GPUs (4 per NUMA node), memory and 1Gi hugepages per NUMA node, 200 pods (40 Guaranteed
  with exclusive CPUs, 8 of them with GPUs and pinned memory; 160 Burstable); a pod leaves and
  comes back every 4 s, so writes happen;
- ``host``: this machine's own /sys (what upstream's updater reads: it has no host-root
  option), 10 pods, one of them Guaranteed and pinned to a CPU, nothing changing: the steady
  node of a real cluster.

Pods are created in the real kube-apiserver of the e2e harness (the updater talks to it as in
a cluster: HTTP/2, TLS, a bearer token); the test kubelet speaks PodResources v1 over a real
unix socket; ``--configz`` serves the kubelet settings over HTTPS as a kubelet's /configz
(what the default ``-kubelet-config-uri`` reads every cycle) instead of a file.

The updater runs as its real command (``python -m nfd.topology_updater``). With
``UPSTREAM_NFD_TOPOLOGY_UPDATER=<binary>`` (built outside the repository) upstream's runs
beside it, runs interleaved (``--runs``), and the ratios are printed. Figures: RSS (steady =
median of the second half of the samples, and peak), CPU per scan cycle (all the process's CPU
from its first write on, over the kubelet List calls). ``--profile FILE`` runs ours under
cProfile (figures then include its overhead).

With ``--real-kubelet`` the node is the e2e suite's real one (tests/e2e/node.py: a kubelet with
the static CPU manager and the topology manager, containerd, runc; root and Go needed, one such
node per machine: the bench waits for the machine's node lock): a Guaranteed pod pinned to one
CPU and ``--pods`` (4) ordinary ones, both updaters as host processes on the kubelet's
PodResources socket, its HTTPS /configz and its state dir. A real kubelet counts no List calls:
cycles there are the steady time over the interval.

    python benchmarks/bench_topology_updater.py [--model host] [--configz] [--interval 2] [--runs 2]
    python benchmarks/bench_topology_updater.py --real-kubelet --interval 2 --runs 2
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

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


def serve_configz(kube) -> str:  # noqa: ANN001
    """The kubelet's /configz over HTTPS (HTTP/1.1, kept alive) in a thread; returns its URI.
    What a real node's updater reads every cycle by default (https://NODE_ADDRESS:10250/configz)."""
    import ssl
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    body = json.dumps({"kubeletconfig": {"topologyManagerPolicy": "single-numa-node",
                                         "topologyManagerScope": "container"}}).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: object) -> None:
            pass

    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(kube.pki / "server.crt"), str(kube.pki / "server.key"))
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"https://127.0.0.1:{srv.server_address[1]}/configz"


def cpu_seconds(ps: psutil.Process) -> float:
    """CPU time of all the process's threads in ns resolution (/proc/PID/task/*/schedstat; psutil's
    cpu_times count 10 ms clock ticks, coarser than a few cycles' worth), else psutil's."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{ps.pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{ps.pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
    except OSError:
        ct = ps.cpu_times()
        return float(ct.user + ct.system)
    return total / 1e9


def host_cpus() -> list[int]:
    with open("/sys/devices/system/cpu/online") as f:
        out: list[int] = []
        for part in f.read().strip().split(","):
            lo, _, hi = part.partition("-")
            out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def build_model(args: argparse.Namespace, sock: str) -> tuple[FakeKubelet, list[Pod], list[dict], str, str | None]:
    """(kubelet, its pods, the API's pods, a description, NFD_HOST_ROOT or None for /)."""
    if args.model == "host":
        # this machine's own /sys (upstream's updater reads it too), one CPU-pinned Guaranteed
        # pod on the last CPU (the first is the kubelet's reserved one), the rest Burstable
        cpus = host_cpus()
        kubelet = FakeKubelet(sock, cpus=cpus[1:], memory=[Memory("memory", 8 * GiB, [0])]).start()
        klpods, api = [], []
        for i in range(args.pods):
            pod = api_pod(i, i == 0)
            meta = pod["metadata"]
            kp = Pod(meta["namespace"], meta["name"],
                     [Container("main", cpus=[cpus[-1]] if i == 0 else []), Container("sidecar")])
            klpods.append(kp)
            api.append(pod)
        desc = f"this host's /sys ({len(cpus)} CPUs), {args.pods} pods, 1 CPU-pinned"
        root = None
    else:
        n_guaranteed = 40
        api = [api_pod(i, i < n_guaranteed) for i in range(args.pods)]
        kubelet = FakeKubelet(
            sock,
            cpus=[c for c in range(144) if c not in (0, 1, 72, 73)],
            devices=[Device("nvidia.com/gpu", [f"GPU-{g}"], [g // 4]) for g in range(8)],
            memory=[Memory("memory", 240 * GiB, [n]) for n in (0, 1)]
            + [Memory("hugepages-1Gi", 4 * GiB, [n]) for n in (0, 1)],
        ).start()
        klpods = [kubelet_pod(i, i < n_guaranteed, 2 + i if i < n_guaranteed else 0) for i in range(args.pods)]
        desc = f"2 sockets, 144 CPUs, 8 GPUs, {args.pods} pods"
        root = os.path.join(ROOT, "tests/fixtures/numa/two")
    for kp in klpods:
        kubelet.add_pod(kp)
    return kubelet, klpods, api, desc, root


async def run_one(name: str, argv: list[str], env: dict[str, str], *, cwd: str, args: argparse.Namespace,
                  kube, cycles_now: Callable[[], float], churn_step: Callable[[int], None] | None,  # noqa: ANN001
                  node: str, log_path: str) -> dict:
    """One updater's run: RSS samples and CPU from its first write on, over `cycles_now()` (the
    fake kubelet's List count, or elapsed / interval on a real kubelet); `churn_step(n)` every
    4 s when given (odd n: a pod goes, even: it comes back)."""
    nrt_path = f"/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/{node}"
    with contextlib.suppress(Exception):  # each run starts without the object: its first write is a create
        kube.request("DELETE", nrt_path)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=cwd)
    ps = psutil.Process(proc.pid)
    samples: list[float] = []
    t0 = time.monotonic()
    churn = 0
    started_cpu = None
    start_lists = 0
    t_steady = 0.0
    try:
        while time.monotonic() - t0 < args.seconds:
            await asyncio.sleep(0.5)
            if proc.poll() is not None:
                with open(log_path) as f:
                    raise SystemExit(f"{name} exited with {proc.returncode}:\n" + f.read()[-3000:])
            if started_cpu is None:
                if kube.get_or_none(nrt_path) is None:
                    continue
                started_cpu, start_lists, t_steady = cpu_seconds(ps), cycles_now(), time.monotonic()
            samples.append(ps.memory_info().rss / 2**20)
            if churn_step is not None and len(samples) % 8 == 0:  # a pod goes away and comes back
                churn += 1
                churn_step(churn)
        if started_cpu is None:
            with open(log_path) as f:
                raise SystemExit(f"{name} wrote no NodeResourceTopology in {args.seconds:.0f}s:\n" + f.read()[-3000:])
        if args.smaps:
            os.system(f"cat /proc/{proc.pid}/smaps_rollup | head -12")
        cycles = round(cycles_now() - start_lists)
        cpu = cpu_seconds(ps) - started_cpu
        steady_wall = time.monotonic() - t_steady
        nrt = kube.get_or_none(nrt_path)
    finally:
        proc.send_signal(2)  # SIGINT: a cProfile run writes its profile on the way out
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        if churn % 2 and churn_step is not None:  # the victim back, for the next run
            churn_step(churn + 1)
    half = samples[len(samples) // 2 :]
    return {"rss": statistics.median(half), "peak": max(samples), "cycles": cycles, "wall": steady_wall,
            "cpu_ms": 1000 * cpu / max(cycles, 1), "share": 100 * cpu / steady_wall, "nrt": nrt}


async def main_async(args: argparse.Namespace) -> None:
    tmp = tempfile.mkdtemp(prefix="nfd-bench-")
    sock = os.path.join(tmp, "kubelet.sock")
    kubelet, klpods, pods_json, desc, host_root = build_model(args, sock)
    kube = start_cluster(pods_json)
    try:
        listed = kube.get("/api/v1/pods", fieldSelector=f"spec.nodeName={NODE}")["items"]
        avg_pod_kb = sum(len(json.dumps(p)) for p in listed) / max(len(listed), 1) / 1024
        token_file = os.path.join(tmp, "token")
        with open(token_file, "w") as f:
            f.write("kubelet-token\n")
        kcfg = os.path.join(tmp, "kubelet.yaml")
        with open(kcfg, "w") as f:
            f.write("topologyManagerPolicy: single-numa-node\ntopologyManagerScope: container\n")
        uri = serve_configz(kube) if args.configz else f"file://{kcfg}"
        common = [f"-kubeconfig={kube.kubeconfig}", f"-kubelet-config-uri={uri}", f"-api-auth-token-file={token_file}",
                  f"-podresources-socket={sock}", "-kubelet-state-dir=", f"-sleep-interval={args.interval}s"]
        env = dict(os.environ, NODE_NAME=NODE, KUBERNETES_NAMESPACE="nfd", POD_NAMESPACE="nfd")
        candidates = updater_candidates(common, env, args=args, tmp=tmp, host_root=host_root)

        def churn_step(n: int) -> None:
            victim = klpods[(n * 3 if n % 2 else (n - 1) * 3) % len(klpods)]
            if n % 2:
                kubelet.remove_pod(victim.namespace, victim.name)
            else:
                kubelet.add_pod(victim)

        runs = await run_candidates(candidates, args=args, kube=kube, tmp=tmp, node=NODE,
                                    cycles_now=lambda: kubelet.calls["List"],
                                    churn_step=churn_step if args.churn else None)
    finally:
        kubelet.stop()
        kube.close()
    report(runs, header=(
        f"nfd-topology-updater footprint ({desc}, {avg_pod_kb:.1f} kB/pod JSON, -sleep-interval={args.interval:g}s, "
        f"kubelet settings from {'HTTPS /configz' if args.configz else 'a file'}"
        f"{', a pod leaving and returning every 4 s' if args.churn else ''}; {args.runs} run(s) each, interleaved)"))


def updater_candidates(common: list[str], env: dict[str, str], *, args: argparse.Namespace, tmp: str,
                       host_root: str | None) -> list[tuple[str, list[str], dict[str, str], str]]:
    """(name, argv, env, cwd) of ours (this checkout's, or --repo's) and, with
    UPSTREAM_NFD_TOPOLOGY_UPDATER, upstream's binary: the same flags for both."""
    ours_env = dict(env, PYTHONPATH=args.repo or ROOT)  # the updater of this (or another) checkout
    if host_root:
        ours_env["NFD_HOST_ROOT"] = host_root
    ours = [sys.executable, *(["-m", "cProfile", "-o", args.profile] if args.profile else []),
            "-m", "nfd.topology_updater", *common, "-port=0", "-config="]
    candidates = [("nfd", ours, ours_env, args.repo or ROOT)]
    upstream = os.environ.get("UPSTREAM_NFD_TOPOLOGY_UPDATER")
    if upstream:
        if host_root:
            print("note: upstream reads this host's /sys, not the modelled node's: use --model host")
        empty_conf = os.path.join(tmp, "upstream.conf")
        open(empty_conf, "w").close()
        candidates.append(("upstream", [upstream, *common, f"-port={free_port()}", f"-config={empty_conf}"],
                           env, tmp))
    return candidates


REAL_NS = "nfd-bench-apps"


def real_pods(n_ordinary: int) -> list[dict]:
    """A Guaranteed pod with one exclusive CPU (the static CPU manager pins it) and `n_ordinary`
    Burstable ones; the pause image, imported into the node's containerd (never pulled)."""
    from tests.e2e.node import PAUSE_REF

    def pod(name: str, resources: dict) -> dict:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": REAL_NS},
                "spec": {"hostNetwork": True, "terminationGracePeriodSeconds": 1,
                         "containers": [{"name": "app", "image": PAUSE_REF, "imagePullPolicy": "Never",
                                         "resources": resources}]}}

    one = {"cpu": "1", "memory": "64Mi"}
    return [pod("pinned", {"requests": one, "limits": one})] + [
        pod(f"ordinary-{i}", {"requests": {"cpu": "10m", "memory": "16Mi"}}) for i in range(n_ordinary)]


async def main_real_async(args: argparse.Namespace) -> None:
    """--real-kubelet: the e2e suite's real node (tests/e2e/node.py: kubelet with the static CPU
    manager and the topology manager, containerd, runc), one machine-wide node at a time."""
    from tests.e2e.node import cannot_run_containers, machine_lock, start_node, stop_node

    reason = cannot_run_containers()
    if reason:
        raise SystemExit(f"--real-kubelet: no real node here: {reason}")
    tmp = tempfile.mkdtemp(prefix="nfd-bench-real-")
    with machine_lock(log=print):
        node = start_node(log=print)
        try:
            kube = node.kube
            kube.wait_crd_established("noderesourcetopologies.topology.node.k8s.io")
            for ns in (REAL_NS, "nfd"):
                kube.create_namespace(ns, exist_ok=True)
            for body in real_pods(args.pods):
                kube.request("POST", f"/api/v1/namespaces/{REAL_NS}/pods", body=body)

            def all_running() -> bool:
                items = kube.get(f"/api/v1/namespaces/{REAL_NS}/pods")["items"]
                return len(items) == args.pods + 1 and all(p["status"].get("phase") == "Running" for p in items)

            kube.wait_until(all_running, timeout=180, interval=1, message=f"the bench pods running in {REAL_NS}")
            pinned = ",".join(c for e in node.cpu_manager_state().get("entries", {}).values() for c in e.values())
            policy = node.kubelet_config()["topologyManagerPolicy"]
            token_file = os.path.join(tmp, "token")  # configz is authorized by the kubelet's webhook
            with open(token_file, "w") as f:
                f.write(kube.admin_token + "\n")
            common = [f"-kubeconfig={kube.kubeconfig}",
                      f"-kubelet-config-uri=https://127.0.0.1:{node.kubelet_port}/configz",
                      f"-api-auth-token-file={token_file}",
                      f"-podresources-socket={node.root_dir / 'pod-resources' / 'kubelet.sock'}",
                      f"-kubelet-state-dir={node.root_dir}", f"-sleep-interval={args.interval:g}s"]
            env = dict(os.environ, NODE_NAME=node.name, NODE_ADDRESS="127.0.0.1", KUBERNETES_NAMESPACE="nfd",
                       POD_NAMESPACE="nfd")
            candidates = updater_candidates(common, env, args=args, tmp=tmp, host_root=None)
            t0 = time.monotonic()
            runs = await run_candidates(candidates, args=args, kube=kube, tmp=tmp, node=node.name,
                                        cycles_now=lambda: (time.monotonic() - t0) / args.interval,
                                        churn_step=None)
        finally:
            stop_node(node)
    report(runs, header=(
        f"nfd-topology-updater footprint (a real kubelet: static CPU manager, topology manager {policy}, "
        f"{len(host_cpus())} CPUs; {args.pods + 1} pods, 1 pinned to CPU(s) {pinned}; configz over HTTPS from "
        f"the kubelet, -sleep-interval={args.interval:g}s, cycles = steady time / interval; "
        f"{args.runs} run(s) each, interleaved)"))


async def run_candidates(candidates: list[tuple[str, list[str], dict[str, str], str]], *, args: argparse.Namespace,
                         kube, tmp: str, node: str, cycles_now: Callable[[], float],  # noqa: ANN001
                         churn_step: Callable[[int], None] | None) -> dict[str, list[dict]]:
    """Each candidate `args.runs` times, interleaved (ours, upstream's, ours, ...)."""
    runs: dict[str, list[dict]] = {c[0]: [] for c in candidates}
    for r in range(args.runs):
        for name, argv, cenv, cwd in candidates:
            runs[name].append(await run_one(name, argv, cenv, cwd=cwd, args=args, kube=kube, cycles_now=cycles_now,
                                            churn_step=churn_step, node=node,
                                            log_path=os.path.join(tmp, f"{name}-{r}.log")))
    return runs


def report(runs: dict[str, list[dict]], *, header: str) -> None:
    print(header)
    for name, rs in runs.items():
        for r in rs:
            print(f"  {name:9s} RSS steady {r['rss']:5.1f} MiB (peak {r['peak']:5.1f})   cycles {r['cycles']:3d} in "
                  f"{r['wall']:4.1f}s   CPU per cycle {r['cpu_ms']:5.2f} ms   CPU share {r['share']:.2f}%")
    if "upstream" in runs:
        med = {n: {k: statistics.median(r[k] for r in rs) for k in ("rss", "cpu_ms")} for n, rs in runs.items()}
        print(f"  ratio nfd/upstream (medians): RSS {med['nfd']['rss'] / med['upstream']['rss']:.2f}x, "
              f"CPU per cycle {med['nfd']['cpu_ms'] / med['upstream']['cpu_ms']:.2f}x")
    nrt = runs["nfd"][-1]["nrt"]
    for z in (nrt or {}).get("zones") or []:
        print("  " + z["name"] + ": "
              + ", ".join(f"{r['name']}={r['available']}/{r['allocatable']}" for r in z["resources"]))
    if "upstream" in runs:  # the same node: the same object from both (zones, attributes)
        def key(obj: dict | None, k: str) -> list:
            return sorted(((obj or {}).get(k) or []), key=lambda e: json.dumps(e, sort_keys=True))

        ours_nrt, theirs = runs["nfd"][-1]["nrt"], runs["upstream"][-1]["nrt"]
        diff = [k for k in ("zones", "attributes") if key(ours_nrt, k) != key(theirs, k)]
        print("  NodeResourceTopology zones and attributes: "
              + (f"differ from upstream's in {', '.join(diff)}: ours {[key(ours_nrt, k) for k in diff]}, "
                 f"upstream's {[key(theirs, k) for k in diff]}" if diff else "the same as upstream's"))


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=40.0, help="per run")
    ap.add_argument("--runs", type=int, default=1, help="runs per updater (interleaved with upstream's)")
    ap.add_argument("--model", choices=("big", "host"), default="big",
                    help="big: the modelled 144-CPU node; host: this machine's /sys and one CPU-pinned pod")
    ap.add_argument("--pods", type=int, help="pods on the node (big: 200, host: 10)")
    ap.add_argument("--interval", type=float, default=1.0, help="-sleep-interval, seconds")
    ap.add_argument("--churn", action=argparse.BooleanOptionalAction, default=None,
                    help="a pod leaves and comes back every 4 s (default: with --model big)")
    ap.add_argument("--configz", action="store_true",
                    help="the kubelet settings from an HTTPS /configz (the default URI's kind) instead of a file")
    ap.add_argument("--smaps", action="store_true", help="print the updater's memory map summary")
    ap.add_argument("--repo", metavar="DIR", help="run the updater from another checkout (before/after runs)")
    ap.add_argument("--profile", metavar="FILE", help="run the updater under cProfile, writing FILE")
    ap.add_argument("--real-kubelet", action="store_true",
                    help="the e2e suite's real node (kubelet, containerd, runc; root and Go needed): a CPU-pinned "
                         "Guaranteed pod and --pods ordinary ones (default 4); waits for the machine's node lock")
    args = ap.parse_args()
    if args.real_kubelet:
        if args.pods is None:
            args.pods = 4
        asyncio.run(main_real_async(args))
        return
    if args.pods is None:
        args.pods = 10 if args.model == "host" else 200
    if args.churn is None:
        args.churn = args.model == "big"
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
