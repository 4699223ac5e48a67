#!/usr/bin/env python3
"""Big GPU nodes: nfd-topology-updater's and nfd-worker's steady RSS and CPU per cycle on a node
shaped like a GB200 compute tray, beside upstream's binaries on the same inputs.

    UPSTREAM_NFD_TOPOLOGY_UPDATER=/path/to/nfd-topology-updater UPSTREAM_NFD_WORKER=/path/to/nfd-worker \\
        python3 benchmarks/bench_big_node.py [--only updater,worker] [--runs 2] [--seconds 40] [--pods 250]

The node: tests/fixtures/gb200/root (tests/fixtures/gb200/make_tree.py: 144 Arm CPUs on 2 Grace
NUMA nodes, 8 GPUs whose memory and MIG placeholders are 64 CPU-less NUMA nodes, 8 ConnectX-7, 2
BlueField-3, 4 NVMe). Ours reads it through ``NFD_HOST_ROOT``; upstream's binaries read fixed
host paths, so they run in a private mount namespace where the tree's sys/, etc/, boot/ and
/proc files are bind-mounted over the host's (tests/support/hostroot.py; root needed).

- ``updater``: the test kubelet (PodResources v1 on a unix socket) with ``--pods`` pods (64
  Guaranteed with 2 exclusive CPUs each, 8 of them with a GPU and pinned memory; the rest
  Burstable), their Pod objects in the e2e harness's real kube-apiserver, kubelet settings over
  HTTPS /configz; a pod leaves and comes back every 4 s (``--no-churn``: nothing changes).
  Steady RSS (median of the second half of 0.5 s samples) and CPU per cycle (all threads, from
  the first write on, over the kubelet's List calls): the figures of bench_topology_updater.py,
  whose measuring code this reuses. The chart's limit for the updater is 60 Mi.
- ``worker``: the worker daemon (``core.sleepInterval: 5s``, publishing its NodeFeature to the
  real kube-apiserver), on the fixture and on this host, ours and upstream's alternately:
  steady RSS and CPU per cycle as bench_worker.py's ``daemon`` section measures them (whose code
  this reuses). Upstream's cpu source executes CPUID on this x86 host whatever the tree says;
  ours reads the tree's ``cpuid.json`` (an Arm CPU's HWCAPs): the label counts are printed.

Prints figures and ratios (ours / upstream's); asserts nothing. Run it under
an exclusive lock (``flock``) on a shared machine, so no other benchmark runs beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_topology_updater as btu  # noqa: E402
import bench_worker as bw  # noqa: E402

from tests.support import hostroot  # noqa: E402
from tests.support.kubelet import Container, Device, FakeKubelet, Memory, Pod  # noqa: E402

GB200 = ROOT / "tests" / "fixtures" / "gb200" / "root"
GiB = 1 << 30
CORES = 72
N_GPUS = 8
N_GUARANTEED = 64
RESERVED = (0, CORES)  # the kubelet's reservedSystemCPUs: the first core of each Grace


def commit() -> str:
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return (r.stdout.strip() or "?") + ("+dirty" if dirty else "")


# -- topology-updater ----------------------------------------------------------------------------
def gb200_kubelet(sock: str, pods: int) -> tuple[FakeKubelet, list[Pod], list[dict]]:
    """The test kubelet of the GB200 node and its pods (kubelet's and the API's)."""
    cpus = [c for c in range(2 * CORES) if c not in RESERVED]
    kubelet = FakeKubelet(
        sock,
        cpus=cpus,
        # the GPU device plugin reports each GPU's PCI NUMA node: the Grace it hangs off
        devices=[Device("nvidia.com/gpu", [f"GPU-{g:02d}"], [g // (N_GPUS // 2)]) for g in range(N_GPUS)],
        memory=[Memory("memory", 470 * GiB, [n]) for n in (0, 1)]
        + [Memory("hugepages-2Mi", 2 * GiB, [n]) for n in (0, 1)],
    ).start()
    klpods, api = [], []
    free = {0: [c for c in cpus if c < CORES], 1: [c for c in cpus if c >= CORES]}
    for i in range(pods):
        guaranteed = i < N_GUARANTEED
        api.append(btu.api_pod(i, guaranteed))
        meta = api[-1]["metadata"]
        if not guaranteed:
            klpods.append(Pod(meta["namespace"], meta["name"], [Container("main"), Container("sidecar")]))
            continue
        numa = i % 2
        main = Container("main", cpus=[free[numa].pop(0), free[numa].pop(0)])
        if i < N_GPUS:
            gpu = numa * (N_GPUS // 2) + i // 2  # a GPU on the pod's NUMA node
            main.devices = [Device("nvidia.com/gpu", [f"GPU-{gpu:02d}"], [numa])]
            main.memory = [Memory("memory", 16 * GiB, [numa])]
        klpods.append(Pod(meta["namespace"], meta["name"], [main, Container("sidecar")]))
    for kp in klpods:
        kubelet.add_pod(kp)
    return kubelet, klpods, api


async def bench_updater(args: argparse.Namespace, tmp: str) -> None:
    sock = os.path.join(tmp, "kubelet.sock")
    kubelet, klpods, api = gb200_kubelet(sock, args.pods)
    kube = btu.start_cluster(api)
    try:
        token_file = os.path.join(tmp, "token")
        Path(token_file).write_text("kubelet-token\n")
        uri = btu.serve_configz(kube)
        common = [f"-kubeconfig={kube.kubeconfig}", f"-kubelet-config-uri={uri}", f"-api-auth-token-file={token_file}",
                  f"-podresources-socket={sock}", "-kubelet-state-dir=", f"-sleep-interval={args.interval}s"]
        env = dict(os.environ, NODE_NAME=btu.NODE, KUBERNETES_NAMESPACE="nfd", POD_NAMESPACE="nfd")
        prof = ["-m", "cProfile", "-o", args.profile] if args.profile else []
        ours = [sys.executable, *prof, "-m", "nfd.topology_updater", *common, "-port=0", "-config="]
        candidates = [("nfd", ours, dict(env, PYTHONPATH=str(ROOT), NFD_HOST_ROOT=str(GB200)), str(ROOT))]
        upstream = os.environ.get("UPSTREAM_NFD_TOPOLOGY_UPDATER")
        why = hostroot.why_not()
        if upstream and why:
            print(f"upstream's updater not run: reading the fixture {why}")
        elif upstream:
            conf = os.path.join(tmp, "upstream.conf")
            Path(conf).write_text("")
            argv = hostroot.in_host_root([upstream, *common, f"-port={btu.free_port()}", f"-config={conf}"], GB200)
            candidates.append(("upstream", argv, env, tmp))

        def churn_step(n: int) -> None:
            victim = klpods[(n * 3 if n % 2 else (n - 1) * 3) % len(klpods)]
            if n % 2:
                kubelet.remove_pod(victim.namespace, victim.name)
            else:
                kubelet.add_pod(victim)

        args.smaps = False
        runs = await btu.run_candidates(candidates, args=args, kube=kube, tmp=tmp, node=btu.NODE,
                                        cycles_now=lambda: kubelet.calls["List"],
                                        churn_step=churn_step if args.churn else None)
    finally:
        kubelet.stop()
        kube.close()
    nrt = runs["nfd"][-1]["nrt"] or {}
    print(f"nfd-topology-updater on the GB200 tree, {args.pods} pods ({N_GUARANTEED} Guaranteed), "
          f"-sleep-interval={args.interval:g}s, /configz over HTTPS"
          f"{', a pod leaving and returning every 4 s' if args.churn else ', nothing changing'}; "
          f"{args.runs} run(s) each, interleaved; {bw.load_note()}; commit {commit()}")
    for name, rs in runs.items():
        for r in rs:
            print(f"  {name:9s} RSS steady {r['rss']:5.1f} MiB (peak {r['peak']:5.1f})   cycles {r['cycles']:3d} in "
                  f"{r['wall']:4.1f}s   CPU per cycle {r['cpu_ms']:5.2f} ms")
    if "upstream" in runs:
        med = {n: {k: statistics.median(r[k] for r in rs) for k in ("rss", "cpu_ms")} for n, rs in runs.items()}
        print(f"  ratio nfd/upstream (medians): RSS {med['nfd']['rss'] / med['upstream']['rss']:.2f}x, "
              f"CPU per cycle {med['nfd']['cpu_ms'] / med['upstream']['cpu_ms']:.2f}x")
    print("  ours: " + zone_summary(nrt))
    if "upstream" in runs:
        theirs = runs["upstream"][-1]["nrt"] or {}
        print("  upstream's: " + zone_summary(theirs))
        print("  zones whose resources differ: " + (zone_diff(nrt, theirs) or "none"))
    peak = max(r["peak"] for r in runs["nfd"])
    print(f"  chart limit 60Mi: nfd-topology-updater peak RSS {peak:.1f} MiB "
          f"({'within' if peak < 60 else 'OVER'}, {60 - peak:+.1f} MiB headroom)")


def zone_summary(nrt: dict) -> str:
    """The zones in a line: how many, and those with resources other than zero."""
    zones = nrt.get("zones") or []
    busy = [f"{z['name']}: " + ", ".join(f"{r['name']} {r['available']}/{r['allocatable']}/{r['capacity']}"
                                         for r in z.get("resources") or [] if r.get("capacity") not in ("0", None))
            for z in zones if any(r.get("capacity") not in ("0", None) for r in z.get("resources") or [])]
    return f"{len(zones)} zones; with resources (available/allocatable/capacity): " + "; ".join(busy)


def zone_diff(a: dict, b: dict) -> str:
    za = {z["name"]: z for z in a.get("zones") or []}
    zb = {z["name"]: z for z in b.get("zones") or []}
    out = [f"{n} only in ours" for n in sorted(set(za) - set(zb))] + [f"{n} only in upstream's" for n in sorted(set(zb) - set(za))]
    for n in sorted(set(za) & set(zb), key=lambda x: int(x.rsplit("-", 1)[1])):
        ra = {r["name"]: r for r in za[n].get("resources") or []}
        rb = {r["name"]: r for r in zb[n].get("resources") or []}
        if ra != rb:
            out.append(f"{n}: ours {sorted(ra.values(), key=str)} upstream's {sorted(rb.values(), key=str)}")
        if sorted(map(str, za[n].get("costs") or [])) != sorted(map(str, zb[n].get("costs") or [])):
            out.append(f"{n}: costs differ")
    return "; ".join(out)


# -- worker --------------------------------------------------------------------------------------
def bench_worker_daemons(args: argparse.Namespace, tmp: Path) -> None:
    try:
        cluster = bw.start_cluster(tmp)
    except Exception as e:  # noqa: BLE001
        print(f"worker: no kube-apiserver ({type(e).__name__}: {e}); skipped")
        return
    try:
        conf = tmp / "nfd-worker.conf"
        conf.write_text(f"core:\n  sleepInterval: {bw.INTERVAL_S:g}s\n")
        why = hostroot.why_not()
        upstream = bw.UPSTREAM
        if upstream and why:
            print(f"upstream's worker not run on the fixture: {why}")
        runs: list[tuple[str, list[str], dict[str, str], str]] = []
        for host in ("gb200", "this host"):
            for impl in ("ours", "upstream"):
                if impl == "upstream" and (not upstream or (host == "gb200" and why)):
                    continue
                node = f"bench-{impl}-{host.replace(' ', '-')}"
                cluster.create_node(node)
                argv = bw.daemon_argv(impl, conf, cluster.kubeconfig, [])
                env = dict(bw.ENV, NODE_NAME=node)
                if host == "gb200":
                    if impl == "ours":
                        env["NFD_HOST_ROOT"] = str(GB200)
                    else:
                        argv = hostroot.in_host_root(argv, GB200)
                runs.append((f"{impl}, {host}", argv, env, node))
        results: dict[str, list[dict[str, float]]] = {}
        for r in range(args.runs):
            for name, argv, env, _ in (runs if r % 2 == 0 else list(reversed(runs))):
                results.setdefault(name, []).append(
                    bw.measure_daemon(argv, env=env, warmup_s=2 * bw.INTERVAL_S, seconds=args.worker_seconds))
        nfs = cluster.get("/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/node-feature-discovery/nodefeatures")["items"]
        labels = {o["metadata"]["name"]: len((o.get("spec") or {}).get("labels") or {}) for o in nfs}
        print(f"nfd-worker daemons, sleepInterval {bw.INTERVAL_S:g}s, publishing to a real kube-apiserver, "
              f"{args.runs} run(s) each (interleaved), {args.worker_seconds:.0f} s windows after "
              f"{2 * bw.INTERVAL_S:.0f} s; {bw.load_note()}; commit {commit()}:")
        for host in ("gb200", "this host"):
            up = results.get(f"upstream, {host}")
            for impl in ("ours", "upstream"):
                xs = results.get(f"{impl}, {host}")
                if not xs:
                    continue
                rss, cpu = statistics.median(x["rss"] for x in xs), statistics.median(x["cpu_ms"] for x in xs)
                ratio = ""
                if up and impl == "ours":
                    ratio = (f"  ratio RSS {rss / statistics.median(x['rss'] for x in up):.2f}x, "
                             f"CPU {cpu / statistics.median(x['cpu_ms'] for x in up):.2f}x")
                node = next(n for nm, _, _, n in runs if nm == f"{impl}, {host}")
                each = ", ".join(f"{x['cpu_ms']:.2f}" for x in xs)
                print(f"  {impl + ', ' + host:<20} steady RSS {rss:5.1f} MiB, CPU per cycle {cpu:6.2f} ms "
                      f"(runs: {each}){ratio}   labels published: {labels.get(node, '?')}")
    finally:
        cluster.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="updater,worker", help="comma-separated: updater, worker")
    ap.add_argument("--runs", type=int, default=2, help="runs per implementation (interleaved)")
    ap.add_argument("--seconds", type=float, default=40.0, help="per updater run")
    ap.add_argument("--worker-seconds", type=float, default=30.0, help="measured window per worker run")
    ap.add_argument("--pods", type=int, default=250)
    ap.add_argument("--interval", type=float, default=2.0, help="the updater's -sleep-interval, seconds")
    ap.add_argument("--profile", metavar="FILE", help="run our updater under cProfile, writing FILE")
    ap.add_argument("--churn", action=argparse.BooleanOptionalAction, default=True,
                    help="a pod leaves and comes back every 4 s (default on)")
    args = ap.parse_args()
    if not (GB200 / "sys").is_dir():
        print(f"{GB200}: missing; run tests/fixtures/gb200/make_tree.py")
        return 1
    only = set(args.only.split(","))
    for var in ("UPSTREAM_NFD_TOPOLOGY_UPDATER", "UPSTREAM_NFD_WORKER"):
        print(f"{var}: {os.environ.get(var) or 'not set (ours alone)'}")
    tmp = tempfile.mkdtemp(prefix="nfd-bench-big-")
    if "updater" in only:
        asyncio.run(bench_updater(args, tmp))
    if "worker" in only:
        bench_worker_daemons(args, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
