"""Masterless mode at scale on the real kube-apiserver, beside nfd-master on the same objects.

N simulated masterless workers, each as a real DaemonSet pod's would be: its own pod-bound
ServiceAccount token (node claim), its own API client and watches (NodeFeatureRules, the
NodeFeatures of its node by label selector, its Node by field selector) and its own writes,
through deploy/components/masterless's RBAC, admission policy and FlowSchema (its priority
level queues their writes; ``--no-flow-control`` leaves them in workload-low). They run many per process
(``--procs`` host processes, N/procs workers each). The objects are bench_master_scale.py's:
N nodes, one realistic NodeFeature each (tens of kB), 100 rules.

Printed, for masterless and then for nfd-master on the same objects (pruned in between):
time from start until every node is right, time for a changed rule to reach every node, API
requests per node per minute in steady state, kube-apiserver+etcd CPU and the apiserver's
memory, and the mode's cost per worker (RSS added, CPU per rule change), with the ratio.

Run: ``python benchmarks/bench_masterless.py [--nodes 1000] [--procs 2] [--steady 60]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

NS = "node-feature-discovery"
CONF = "enableTaints: true\nresyncPeriod: 0\n"


# -- the host process: many workers' node updaters in one event loop --------------------------------


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def host(spec_path: str, status_path: str) -> None:
    from nfd.k8s.client import ApiClient
    from nfd.master import master as _master  # noqa: F401  (imports counted in the baseline)
    from nfd.worker.masterless import MasterlessNode

    spec = json.loads(Path(spec_path).read_text())
    import gc

    # as nfd-master does (nfd/master/__main__.py): bursts of decoded objects, fewer full passes
    gc.set_threshold(20_000, 20, 50)
    gc.collect()
    base_rss = _rss_kib()
    # time spent in the cyclic GC: with hundreds of workers in one heap a full collection walks
    # all of them, which a real worker (its own small heap) never does
    gc_s = [0.0, 0.0]  # all collections, full (generation 2) ones
    gc_t0 = [0.0]

    def _gc_cb(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            gc_t0[0] = time.process_time()
        else:
            took = time.process_time() - gc_t0[0]
            gc_s[0] += took
            if info.get("generation") == 2:
                gc_s[1] += took

    gc.callbacks.append(_gc_cb)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    updaters: list[Any] = []
    apis: list[ApiClient] = []
    # requests by "VERB resource[/subresource]" and, for writes, per node: where they go
    kinds: dict[str, int] = {}
    node_writes: dict[str, int] = {}
    prof: Any = None
    if spec.get("profile"):
        import cProfile

        prof = cProfile.Profile()
        on = [False]

        def _toggle(*_: Any) -> None:
            if on[0]:
                prof.disable()
                prof.dump_stats(spec["profile"])
            else:
                prof.enable()
            on[0] = not on[0]

        loop.add_signal_handler(signal.SIGUSR1, _toggle)
    for w in spec["workers"]:
        api = await ApiClient.from_kubeconfig(w["kubeconfig"], user_agent="nfd-worker", http2=spec.get("http2", True))
        _count_requests(api, w["node"], kinds, node_writes)
        u = MasterlessNode(api, node_name=w["node"], namespace=NS, master_config_path=spec["config"],
                        **({"spread_s": spec["spread"]} if spec.get("spread") is not None else {}))
        u.start()
        updaters.append(u)
        apis.append(api)
        if len(updaters) % 50 == 0:
            await asyncio.sleep(0.05)  # let the first ones connect (a DaemonSet rolls out too)

    harness_s = [0.0]  # CPU of write_status itself: the benchmark's, not the workers'

    def write_status() -> None:
        t0 = time.process_time()
        verbs: dict[str, int] = {}
        for a in apis:
            for k, v in a.metrics.items():
                verbs[k] = verbs.get(k, 0) + v
        ru = resource.getrusage(resource.RUSAGE_SELF)
        st = {"n": len(updaters), "processed": sum(1 for u in updaters if u.processed > 0),
              "passes": sum(u.processed for u in updaters), "verbs": verbs, "kinds": kinds,
              "node_writes": node_writes, "rss_kib": _rss_kib(),
              "base_rss_kib": base_rss, "cpu_s": ru.ru_utime + ru.ru_stime, "gc_s": gc_s[0], "gc2_s": gc_s[1],
              "harness_s": harness_s[0],
              "echoes": {"skipped": sum(u.core.controller.echoes_skipped for u in updaters),
                         "decoded": sum(u.core.controller.echoes_decoded for u in updaters)}}
        tmp = status_path + ".tmp"
        Path(tmp).write_text(json.dumps(st))
        os.replace(tmp, status_path)
        harness_s[0] += time.process_time() - t0

    while not stop.is_set():
        write_status()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.5):
                await stop.wait()
    for u in updaters:
        await u.stop()
    for a in apis:
        await a.close()


def _count_requests(api: Any, node: str, kinds: dict[str, int], node_writes: dict[str, int]) -> None:
    """Wrap one client's requests (each attempt, so a 429 retried inside request() counts
    twice): by verb, resource/subresource and, when not 2xx, status; Node writes per node."""
    inner = api._once

    async def once(method: str, path: str, **kw: Any) -> Any:
        parts = [p for p in path.split("?")[0].split("/") if p]
        # /api/v1/<res>[/<name>[/<sub>]] or /apis/<g>/<v>/[namespaces/<ns>/]<res>[/<name>[/<sub>]]
        rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
        if rest[:1] == ["namespaces"] and len(rest) > 2:
            rest = rest[2:]
        res = rest[0] if rest else "/" + "/".join(parts)
        if len(rest) > 2:
            res += "/" + rest[2]
        key = f"{method.upper()} {res}"
        try:
            out = await inner(method, path, **kw)
        except Exception as e:
            key += f" {type(e).__name__}"
            raise
        else:
            if out[0] >= 300:
                key += f" {out[0]}"
        finally:
            kinds[key] = kinds.get(key, 0) + 1
            if method.upper() in ("PATCH", "PUT", "POST") and res.startswith("nodes"):
                node_writes[node] = node_writes.get(node, 0) + 1
        return out

    api._once = once


def _workers_cpu(sts: list[dict[str, Any]]) -> float:
    """The host processes' CPU less the benchmark's own status writing (every 0.5 s over all of
    a host's workers: a third of an idle host's CPU in a profile)."""
    return sum(s["cpu_s"] - s.get("harness_s", 0.0) for s in sts)


def _sum_kinds(sts: list[dict[str, Any]], field: str = "kinds") -> dict[str, int]:
    total: dict[str, int] = {}
    for s in sts:
        for k, v in (s.get(field) or {}).items():
            total[k] = total.get(k, 0) + v
    return total


def _delta(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: b.get(k, 0) - a.get(k, 0) for k in sorted(b) if b.get(k, 0) != a.get(k, 0)}


def _histogram(a: dict[str, int], b: dict[str, int], n: int) -> dict[int, int]:
    """How many nodes got 0, 1, 2, ... node writes between two snapshots."""
    h: dict[int, int] = {}
    for i in range(n):
        node = f"bench-{i:05d}"
        d = b.get(node, 0) - a.get(node, 0)
        h[d] = h.get(d, 0) + 1
    return dict(sorted(h.items()))


# -- offline: one worker's CPU per rule change, stage by stage, no API server ------------------------


def _merge_into(node: dict[str, Any], body: dict[str, Any]) -> None:
    """Apply a plan's strategic merge body to a node dict as the API server would (maps only)."""
    for part, fields in (("metadata", ("labels", "annotations")), ("status", ("capacity", "allocatable"))):
        for f in fields:
            for k, v in ((body.get(part) or {}).get(f) or {}).items():
                m = node.setdefault(part, {}).setdefault(f, {})
                if v is None:
                    m.pop(k, None)
                else:
                    m[k] = v
    if "taints" in (body.get("spec") or {}):
        node.setdefault("spec", {})["taints"] = body["spec"]["taints"]


def offline(reps: int) -> None:
    """What one masterless worker does for one edited NodeFeatureRule, in process, repeated:
    decode the watch event, compile, merge + evaluate its node, plan + encode the PATCH, decode
    the answer and the Node watch's echo. CPU time per stage, median of ``reps`` edits."""
    import statistics

    from bench_master_scale import make_rules, nodefeature

    from nfd.common import jsoncodec
    from nfd.master.config import MasterConfig
    from nfd.master.core import MasterCore
    from nfd.master.options import MasterOptions
    from nfd.nodestate.nodefeatures import compact_nodefeature
    from nfd.nodestate.nodeplan import NodeState, ops_to_strategic, plan_node_update, slim_node

    class _NoApi:  # the informers are fed by hand here; nothing is sent
        limiter = None

    node = "bench-00001"
    m = MasterCore(_NoApi(), config=MasterConfig(enable_taints=True),  # type: ignore[arg-type]
                  options=MasterOptions(namespace=NS, only_node=node))
    nf = nodefeature(node, 1)
    nf["metadata"]["resourceVersion"] = "10"
    key = (NS, node)
    m.controller.nf_informer.cache[key] = compact_nodefeature(nf)
    m.controller.nf_index[node] = {key}
    rv = [100]
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Node",
                           "metadata": {"name": node, "resourceVersion": "100", "labels": {
                               "kubernetes.io/hostname": node, "kubernetes.io/os": "linux"}, "annotations": {}},
                           "spec": {}, "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                                                  "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
    by_version = {v: make_rules(v) for v in ("v1", "v2")}
    for o in by_version["v1"]:
        m.controller.on_nfr_event("ADDED", m.controller.nfr_informer.transform(o), None)  # type: ignore[misc]
    loop = asyncio.new_event_loop()

    def write(desired: Any) -> bytes:
        plan = plan_node_update(NodeState.from_obj(slim_node(obj)), desired, allow_overwrite=True)
        body: dict[str, Any] = {}
        for ops in (plan.status_ops, plan.metadata_ops):
            if ops:
                b = ops_to_strategic(ops)
                _merge_into(obj, b)
                body.update(b)
        if plan.taints_patch is not None:
            _merge_into(obj, plan.taints_patch)
        rv[0] += 1
        obj["metadata"]["resourceVersion"] = str(rv[0])
        return jsoncodec.dumps(body)

    write(loop.run_until_complete(m.updater.desired_for(node)).desired)  # the first pass
    stages: dict[str, list[float]] = {}

    def clock(name: str, t0: float) -> float:
        t1 = time.process_time()
        stages.setdefault(name, []).append(t1 - t0)
        return t1

    changed = [i for i, o in enumerate(by_version["v1"]) if any(r["name"] == "changeable" for r in o["spec"]["rules"])][0]
    old = m.controller.nfr_informer.transform(by_version["v1"][changed])  # type: ignore[misc]
    for i in range(reps):
        new_obj = json.loads(json.dumps(by_version["v2" if i % 2 == 0 else "v1"][changed]))
        new_obj["metadata"]["resourceVersion"] = str(1000 + i)
        event = jsoncodec.dumps({"type": "MODIFIED", "object": new_obj})
        t = t_start = time.process_time()
        ev = jsoncodec.loads(event)
        slim = m.controller.nfr_informer.transform(ev["object"])  # type: ignore[misc]
        t = clock("decode the rule's watch event", t)
        m.controller.on_nfr_event("MODIFIED", slim, old)
        old = slim
        t = clock("compile the edited rule object", t)
        cd = loop.run_until_complete(m.updater.desired_for(node))
        t = clock("merge + evaluate + policy for its node", t)
        write(cd.desired)
        t = clock("plan + encode the patch", t)
        answer = jsoncodec.dumps(obj)
        t = time.process_time()
        m.controller.remember(jsoncodec.loads(answer))
        t = clock("decode the PATCH answer (Node)", t)
        echo = jsoncodec.dumps({"type": "MODIFIED", "object": obj})
        t = time.process_time()
        m.controller.node_informer.transform(jsoncodec.loads(echo)["object"])  # type: ignore[misc]
        t = clock("decode the Node watch echo", t)
        stages.setdefault("total (without sending)", []).append(t - t_start)
    loop.close()
    print(f"one masterless worker, one edited NodeFeatureRule (10 of the 100 rules, one of them changed), "
          f"median CPU of {reps} edits:")
    for name, xs in stages.items():
        print(f"  {name:44s} {statistics.median(xs) * 1000:7.3f} ms")


# -- the benchmark ----------------------------------------------------------------------------------


def _proc_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


async def _identities(kube: Any, n: int, tmp: Path) -> list[dict[str, str]]:
    """A pod per node and a token bound to it (the node claim), as a DaemonSet's pods have."""
    from bench_master_scale import bulk

    from nfd.k8s.client import ApiClient
    from nfd.k8s.creating import create
    from nfd.k8s.errors import AlreadyExists
    from nfd.k8s.resources import PODS
    from tests.e2e.harness import write_kubeconfig

    api = await ApiClient.from_kubeconfig(kube.kubeconfig, qps=0, burst=1)
    out: list[dict[str, str]] = [{} for _ in range(n)]
    (tmp / "kc").mkdir(exist_ok=True)

    async def one(i: int) -> None:
        node = f"bench-{i:05d}"
        pod = f"nfd-worker-{i:05d}"
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "namespace": NS},
                "spec": {"nodeName": node, "serviceAccountName": "nfd-worker",
                         "containers": [{"name": "w", "image": "registry.k8s.io/pause:3.10"}]}}
        try:
            obj = await create(api, PODS, body=body, namespace=NS)
        except AlreadyExists:
            obj = await api.request("GET", f"/api/v1/namespaces/{NS}/pods/{pod}")
        tr = await api.request(
            "POST", f"/api/v1/namespaces/{NS}/serviceaccounts/nfd-worker/token", verb="CREATE",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                  "spec": {"expirationSeconds": 86400,
                           "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod,
                                              "uid": obj["metadata"]["uid"]}}})
        kc = write_kubeconfig(tmp / "kc" / f"{node}.yaml", server=kube.server, ca_file=kube.ca_file,
                              token=tr["status"]["token"], user=f"worker-{i}", namespace=NS)
        out[i] = {"node": node, "kubeconfig": kc}

    await bulk([one(i) for i in range(n)], what="worker identities")
    await api.close()
    return out


def _read_status(paths: list[Path]) -> list[dict[str, Any]]:
    out = []
    for p in paths:
        try:
            out.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            out.append({})
    return out


def _sum_verbs(sts: list[dict[str, Any]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for s in sts:
        for k, v in (s.get("verbs") or {}).items():
            total[k] = total.get(k, 0) + v
    return total


def _wait_nodes(kube: Any, n: int, check: Any, *, timeout: float, what: str) -> float:
    from bench_master_scale import count_done

    t0 = time.monotonic()
    while True:
        done, _ = count_done(kube, check)
        if done >= n:
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise SystemExit(f"{what}: only {done}/{n} nodes right after {timeout:.0f}s")
        print(f"  {what}: {done}/{n} nodes right at {time.monotonic() - t0:.0f}s", flush=True)
        time.sleep(0.5)


def _put_rules(kube: Any, version: str) -> None:
    from bench_master_scale import make_rules

    changed = [o for o in make_rules(version) if any(r["name"] == "changeable" for r in o["spec"]["rules"])][0]
    path = f"/apis/nfd.k8s-sigs.io/v1alpha1/nodefeaturerules/{changed['metadata']['name']}"
    changed["metadata"]["resourceVersion"] = kube.get(path)["metadata"]["resourceVersion"]
    kube.request("PUT", path, body=changed)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--procs", type=int, default=2, help="host processes for the simulated workers")
    ap.add_argument("--steady", type=float, default=60.0, help="steady-state window, seconds")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--skip-master", action="store_true")
    ap.add_argument("--profile", metavar="PATH", help="cProfile the host processes during the rule change; "
                    "PATH-<i>.prof per host, the top functions of host 0 printed")
    ap.add_argument("--profile-phase", choices=("rule", "steady"), default="rule",
                    help="what --profile covers: the rule change (default) or the steady state")
    ap.add_argument("--spread", type=float, metavar="S", help="the workers' write spread after a rule change, "
                    "seconds (default: MasterlessNode's; 0: all at once, as before it had one)")
    ap.add_argument("--http1", action="store_true", help="the workers' clients on HTTP/1.1 (aiohttp), as before "
                    "they spoke HTTP/2: four connections per worker")
    ap.add_argument("--no-flow-control", action="store_true", help="without the component's FlowSchema and "
                    "PriorityLevelConfiguration (flow-control.yaml): the workers in workload-low, as before it")
    ap.add_argument("--offline", type=int, metavar="REPS", help="only the in-process per-worker figures, REPS edits")
    ap.add_argument("--host", nargs=2, metavar=("SPEC", "STATUS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.host:
        asyncio.run(host(*args.host))
        return 0
    if args.offline:
        offline(args.offline)
        return 0

    from bench_master_scale import (
        PROFILES,
        api_verbs,
        cpu_s,
        expected_annotations,
        make_rules,
        peak_rss_mib,
        populate,
        scrape,
        settle,
        wait_all,
    )

    from nfd.nodestate.bookkeeping import FEATURE_LABELS
    from tests.e2e.build import ensure_built
    from tests.e2e.harness import KubeCluster, flowcontrol_counts, free_port, load_manifest_objects

    n = args.nodes
    rule_objs = make_rules("v1")
    expected = expected_annotations(rule_objs, enable_taints=True)

    def initial_ok(node: dict[str, Any]) -> bool:
        p = int(node["metadata"]["name"].split("-")[1]) % PROFILES
        return (node["metadata"].get("annotations") or {}).get(FEATURE_LABELS) == expected[p]

    def v2_ok(node: dict[str, Any]) -> bool:
        return (node["metadata"].get("labels") or {}).get("feature.node.kubernetes.io/rules-version") == "v2"

    tmp = Path(tempfile.mkdtemp(prefix="nfd-bench-masterless-"))
    print(f"starting kube-apiserver + etcd in {tmp}", flush=True)
    kube = KubeCluster.start(binary=ensure_built(), tmpdir=tmp)
    hosts: list[Any] = []
    try:
        kube.apply_manifest_dir(REPO / "deploy" / "base" / "rbac")
        comp = REPO / "deploy" / "components" / "masterless"
        objs = load_manifest_objects([comp / "rbac.yaml", comp / "node-update-policy.yaml",
                                      *([] if args.no_flow_control else [comp / "flow-control.yaml"])])
        for o in objs:
            for s in o.get("subjects") or []:
                s["namespace"] = NS
            for r in (o.get("spec") or {}).get("rules") or []:
                for s in r.get("subjects") or []:
                    s["serviceAccount"]["namespace"] = NS
            for v in (o.get("spec") or {}).get("variables") or []:
                if v["name"] == "enableTaints":
                    v["expression"] = "true"
        kube.apply_objects(objs)
        asyncio.run(populate(kube, n, rule_objs))
        ids = asyncio.run(_identities(kube, n, tmp))
        conf = tmp / "nfd-master.conf"
        conf.write_text(CONF)
        server_pids = [p.pid for p in (kube._apiserver, kube._etcd) if p is not None]
        apiserver_pid = kube._apiserver.pid
        settle(server_pids)

        # -- masterless ------------------------------------------------------------------------
        procs = max(1, min(args.procs, n))
        status_paths = [tmp / f"host-{i}.json" for i in range(procs)]
        api_cpu0 = sum(cpu_s(p) for p in server_pids)
        t_start = time.monotonic()
        for i in range(procs):
            spec = tmp / f"host-{i}-spec.json"
            prof = f"{args.profile}-{i}.prof" if args.profile else ""
            spec.write_text(json.dumps({"config": str(conf), "workers": ids[i::procs], "profile": prof,
                                        "spread": args.spread, "http2": not args.http1}))
            hosts.append(kube.start_process([sys.executable, __file__, "--host", str(spec), str(status_paths[i])],
                                            kubeconfig=kube.kubeconfig, name=f"bench-host-{i}"))
        while True:
            sts = _read_status(status_paths)
            done = sum(s.get("processed", 0) for s in sts)
            if done >= n:
                break
            if time.monotonic() - t_start > args.timeout:
                raise SystemExit(f"masterless: {done}/{n} nodes processed after {args.timeout:.0f}s")
            if any(not h.running for h in hosts):
                raise SystemExit("a worker host process died: " + hosts[0].logs()[-3000:])
            time.sleep(0.5)
        t_ml_processed = time.monotonic() - t_start
        _wait_nodes(kube, n, initial_ok, timeout=args.timeout, what="masterless first pass")
        t_ml_first = time.monotonic() - t_start
        api_cpu_ml1 = sum(cpu_s(p) for p in server_pids)
        ml_api_first = api_cpu_ml1 - api_cpu0
        sts1 = _read_status(status_paths)
        ml_cpu_first = _workers_cpu(sts1)
        rss_added = sum(s["rss_kib"] - s["base_rss_kib"] for s in sts1) / n / 1024
        verbs_first = _sum_verbs(sts1)

        # steady state
        time.sleep(2.0)
        prof_steady = bool(args.profile) and args.profile_phase == "steady"
        prof_rule = bool(args.profile) and args.profile_phase == "rule"
        if prof_steady:
            for h in hosts:
                os.kill(h.pid, signal.SIGUSR1)
            time.sleep(0.5)
        sts_a = _read_status(status_paths)
        api_cpu_a = sum(cpu_s(p) for p in server_pids)
        time.sleep(args.steady)
        sts_b = _read_status(status_paths)
        api_cpu_b = sum(cpu_s(p) for p in server_pids)
        if prof_steady:
            for h in hosts:
                os.kill(h.pid, signal.SIGUSR1)
        va, vb = _sum_verbs(sts_a), _sum_verbs(sts_b)
        steady = {k: vb.get(k, 0) - va.get(k, 0) for k in vb if vb.get(k, 0) != va.get(k, 0)}
        per_node_min = sum(steady.values()) / n / (args.steady / 60.0)
        ml_steady_api_cpu = (api_cpu_b - api_cpu_a) / args.steady
        ml_apiserver_rss = _proc_kib(apiserver_pid, "VmRSS") / 1024

        # a changed rule
        if prof_rule:
            for h in hosts:
                os.kill(h.pid, signal.SIGUSR1)
            time.sleep(0.5)
            sts_b = _read_status(status_paths)
        cpu_before = _workers_cpu(sts_b)
        api_cpu_c = sum(cpu_s(p) for p in server_pids)
        apf_b = flowcontrol_counts(kube)
        t0 = time.monotonic()
        _put_rules(kube, "v2")
        t_ml_prop = _wait_nodes(kube, n, v2_ok, timeout=args.timeout, what="masterless rule change")
        time.sleep(2.0)
        sts_c = _read_status(status_paths)
        if prof_rule:
            for h in hosts:
                os.kill(h.pid, signal.SIGUSR1)
        t_rule_window = time.monotonic() - t0
        ml_cpu_rule_ms = (_workers_cpu(sts_c) - cpu_before) * 1000 / n
        # the workers' CPU while idle (steady state), per second: subtracted from the window
        idle_rate = (_workers_cpu(sts_b) - _workers_cpu(sts_a)) / args.steady
        ml_cpu_rule_net_ms = ml_cpu_rule_ms - idle_rate * t_rule_window * 1000 / n
        gc_rule_ms = (sum(s.get("gc_s", 0.0) for s in sts_c) - sum(s.get("gc_s", 0.0) for s in sts_b)) * 1000 / n
        gc2_rule_ms = (sum(s.get("gc2_s", 0.0) for s in sts_c) - sum(s.get("gc2_s", 0.0) for s in sts_b)) * 1000 / n
        ml_api_cpu_rule = sum(cpu_s(p) for p in server_pids) - api_cpu_c
        apf_rule = _delta(apf_b, flowcontrol_counts(kube))
        verbs_rule = {k: _sum_verbs(sts_c).get(k, 0) - vb.get(k, 0) for k in _sum_verbs(sts_c)}
        kinds_first = _sum_kinds(sts1)
        kinds_steady = _delta(_sum_kinds(sts_a), _sum_kinds(sts_b))
        kinds_rule = _delta(_sum_kinds(sts_b), _sum_kinds(sts_c))
        hist_first = _histogram({}, _sum_kinds(sts1, "node_writes"), n)
        hist_rule = _histogram(_sum_kinds(sts_b, "node_writes"), _sum_kinds(sts_c, "node_writes"), n)
        _ = t0
        for h in hosts:
            h.stop(timeout=60)
        hosts.clear()

        print()
        print(f"masterless benchmark: {n} nodes, 100 rules, {procs} host processes "
              f"({n // procs} simulated workers each, own token, watches and writes)")
        print(f"  every node right after start:        {t_ml_first:8.1f} s  (all processed at {t_ml_processed:.1f} s;"
              f" the rest is the benchmark's verifying LIST)")
        print(f"  API requests, first pass:            {dict(sorted(verbs_first.items()))}")
        print(f"  workers' CPU until first pass done:  {ml_cpu_first:8.1f} s  ({ml_cpu_first * 1000 / n:.1f} ms per worker;"
              f" kube-apiserver+etcd {ml_api_first:.1f} s)")
        print(f"  steady state, {args.steady:.0f} s:                 {steady or 'no requests'} "
              f"= {per_node_min:.3f} requests per node per minute; kube-apiserver+etcd {ml_steady_api_cpu:.3f} cores")
        print(f"  kube-apiserver RSS with {3 * n} watches: {ml_apiserver_rss:8.1f} MiB")
        print(f"  rule change propagated to all nodes: {t_ml_prop:8.1f} s  (requests {verbs_rule}; "
              f"kube-apiserver+etcd {ml_api_cpu_rule:.1f} s CPU)")
        print(f"  per worker: RSS added {rss_added:.2f} MiB (target <= 5), CPU per rule change "
              f"{ml_cpu_rule_ms:.2f} ms (target <= 5)")
        print(f"  per worker CPU per rule change, net of the idle workers' {idle_rate * 1000 / n:.3f} ms/s over the "
              f"{t_rule_window:.1f} s window: {ml_cpu_rule_net_ms:.2f} ms; of it in the cyclic GC: {gc_rule_ms:.2f} ms")
        print(f"  of the GC, full collections over the host's heap of {n // procs} workers: {gc2_rule_ms:.2f} ms "
              f"(a worker's own heap is 1/{n // procs} of it); net of them too: {ml_cpu_rule_net_ms - gc2_rule_ms:.2f} ms")
        print(f"  requests by kind, first pass:        {kinds_first}")
        print(f"  requests by kind, steady state:      {kinds_steady or 'none'}")
        print(f"  requests by kind, rule change:       {kinds_rule}")
        print(f"  API Priority and Fairness, rule change (level: dispatched / rejected by reason): {apf_rule}")
        print(f"  nodes by Node writes they got (writes: nodes), first pass: {hist_first}; rule change: {hist_rule}")
        echoes = _delta(_sum_kinds(sts_b, "echoes"), _sum_kinds(sts_c, "echoes"))
        accepted = sum(v for k, v in kinds_rule.items() if k.startswith("PATCH nodes") and len(k.split()) == 2)
        print(f"  Node watch echoes of the rule change's {accepted} writes: {echoes.get('skipped', 0)} taken "
              f"undecoded, {echoes.get('decoded', 0)} decoded after the write's answer (the rest came before it)")
        if args.profile:
            import pstats

            time.sleep(1.0)
            what = "the rule change" if prof_rule else f"the {args.steady:.0f} s of steady state"
            print(f"  profile of host 0 during {what} ({args.profile}-0.prof):")
            pstats.Stats(f"{args.profile}-0.prof", stream=sys.stdout).sort_stats("tottime").print_stats(30)
        sys.stdout.flush()
        if args.skip_master:
            return 0

        # -- nfd-master on the same objects ------------------------------------------------------
        kc = kube.serviceaccount_kubeconfig(NS, "nfd-master", expiration_s=86400)
        print("pruning the nodes for nfd-master's run", flush=True)
        prune = kube.start_process(["nfd-master", "-prune", f"-config={conf}"], kubeconfig=kc,
                                   env={"KUBERNETES_NAMESPACE": NS}, name="bench-prune")
        prune.wait(timeout=args.timeout)
        _put_rules(kube, "v1")
        kube.apply_objects([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "nfd-master-watch-nodes"},
             "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["watch"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "nfd-master-watch-nodes"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                         "name": "nfd-master-watch-nodes"},
             "subjects": [{"kind": "ServiceAccount", "name": "nfd-master", "namespace": NS}]},
        ])
        settle(server_pids)
        port = free_port()
        api_cpu0 = sum(cpu_s(p) for p in server_pids)
        t_start = time.monotonic()
        master = kube.start_process(["nfd-master", f"-port={port}", f"-config={conf}"], kubeconfig=kc,
                                    env={"KUBERNETES_NAMESPACE": NS}, name="bench-master")
        master.wait_log("informer caches synced", timeout=args.timeout)
        t_sync = time.monotonic() - t_start
        wait_all(kube, n, initial_ok, port=port, updates_before=0.0, timeout=args.timeout, what="master first pass")
        t_m_first = time.monotonic() - t_start
        api_cpu_m1 = sum(cpu_s(p) for p in server_pids)
        m_cpu_first = cpu_s(master.pid)
        time.sleep(2.0)
        v_a = api_verbs(scrape(port))
        api_cpu_a = sum(cpu_s(p) for p in server_pids)
        time.sleep(args.steady)
        m1 = scrape(port)
        v_b = api_verbs(m1)
        m_steady = {k: v_b.get(k, 0) - v_a.get(k, 0) for k in v_b if v_b.get(k, 0) != v_a.get(k, 0)}
        m_steady_api_cpu = (sum(cpu_s(p) for p in server_pids) - api_cpu_a) / args.steady
        m_apiserver_rss = _proc_kib(apiserver_pid, "VmRSS") / 1024
        cpu_m_before = cpu_s(master.pid)
        api_cpu_c = sum(cpu_s(p) for p in server_pids)
        _put_rules(kube, "v2")
        t_m_prop, _w = wait_all(kube, n, v2_ok, port=port, updates_before=m1.get("nfd_master_node_updates_total", 0.0),
                                timeout=args.timeout, what="master rule change")
        time.sleep(2.0)
        m_cpu_rule_ms = (cpu_s(master.pid) - cpu_m_before) * 1000 / n
        m_api_cpu_rule = sum(cpu_s(p) for p in server_pids) - api_cpu_c
        m_rss = peak_rss_mib(master.pid)
        master.stop()

        def ratio(a: float, b: float) -> str:
            return f"{a / b:.2f}x" if b else "n/a"

        print()
        print(f"side by side, {n} nodes, same objects ({os.cpu_count()} cores shared by everything):")
        print(f"  {'':38s} {'masterless':>12s} {'nfd-master':>12s} {'ratio':>8s}")
        rows = [
            ("every node right after start, s", t_ml_first, t_m_first),
            ("rule change to every node, s", t_ml_prop, t_m_prop),
            ("steady requests per node per minute", per_node_min,
             sum(m_steady.values()) / n / (args.steady / 60.0)),
            ("apiserver+etcd CPU, first pass, s", ml_api_first, api_cpu_m1 - api_cpu0),
            ("apiserver+etcd CPU, rule change, s", ml_api_cpu_rule, m_api_cpu_rule),
            ("apiserver+etcd CPU, steady, cores", ml_steady_api_cpu, m_steady_api_cpu),
            ("kube-apiserver RSS, MiB", ml_apiserver_rss, m_apiserver_rss),
            ("labeller CPU, first pass, s", ml_cpu_first, m_cpu_first),
            ("labeller CPU per node per rule change, ms", ml_cpu_rule_ms, m_cpu_rule_ms),
            ("labeller memory, MiB (workers: added)", rss_added * n, m_rss),
        ]
        for name, a, b in rows:
            print(f"  {name:38s} {a:12.3f} {b:12.3f} {ratio(a, b):>8s}")
        print(f"  (nfd-master: caches synced at {t_sync:.1f} s; steady requests {m_steady or 'none'})")
        return 0
    finally:
        for h in hosts:
            h.stop(timeout=30)
        kube.close()


if __name__ == "__main__":
    sys.exit(main())
