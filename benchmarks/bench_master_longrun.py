"""nfd-master over a day of churn, compressed, on the real kube-apiserver: does its memory grow?

Upstream's long-running master grew 2 GB in an hour (#1614) and 1.2 GiB a day (#1841). This
benchmark runs nfd-master as its own process under its ServiceAccount (as
benchmarks/bench_master_scale.py does, with its object generators) over ``--sim-hours`` of
simulated cluster life compressed into ``--minutes`` of wall time, with every event of the day
on one schedule:

- node churn: each simulated hour ``--churn`` of the nodes are deleted with their NodeFeature
  (half Node first, half NodeFeature first) and as many new nodes (new names) join, Node then
  NodeFeature, as a worker's start writes it;
- NodeFeature updates: each simulated hour ``--nf-updates`` of the nodes rewrite their
  NodeFeature: another hardware profile (other features, other labels) one time in four,
  another value of a NodeFeature label, and always a new value of one attribute no rule reads
  (a fresh spec every time: what a cache keyed by content would keep);
- rule edits: every ``--edit-minutes`` simulated minutes one NodeFeatureRule is edited; every
  ``--label-edit-every``-th edit changes a label every node carries (a write to every node),
  the others add a new rule that matches no node (a new revision of the object, every node
  re-evaluated, nothing written);
- a NodeFeatureGroup (one hardware profile's nodes), its status kept by the master;
- the master's ``resyncPeriod`` set to one simulated hour (``--resync-s`` to change it).

Every ``--sample-s`` seconds it samples the master's RSS (VmRSS) and CPU with the cumulative
number of updates (API writes of the schedule: NodeFeature creates/updates/deletes, Node
creates/deletes, rule edits). After the warm-up (the first ``--warmup`` of the run) it fits a
least-squares line of RSS against updates and prints its slope in MiB per 1,000 updates (with
its standard error), RSS at the end of the warm-up, at the end and its peak, and a table of
RSS over time. At the end it waits for the master to go idle and verifies that every node
carries exactly the labels the current rules give it (its ``feature-labels`` annotation and its
``feature.node.kubernetes.io`` labels, computed offline with the same engine from the node's
current NodeFeature), that the group lists exactly the nodes of its profile, and that no
removed node is left with a Node or a NodeFeature.

Run: ``python benchmarks/bench_master_longrun.py [--nodes 400] [--minutes 18] [--sim-hours 24] [--seed 1]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_master_scale import (  # noqa: E402
    NS,
    PROFILES,
    REPO,
    allow_master_to_watch_nodes,
    api_verbs,
    cpu_s,
    make_rules,
    nodefeature,
    populate,
    scrape,
    settle,
)

from nfd.k8s.client import ApiClient  # noqa: E402
from nfd.k8s.creating import create  # noqa: E402
from nfd.k8s.deleting import delete  # noqa: E402
from nfd.k8s.errors import AlreadyExists, NotFound  # noqa: E402
from nfd.k8s.patching import patch  # noqa: E402
from nfd.k8s.resources import NODEFEATURERULES, NODEFEATURES, NODES  # noqa: E402
from tests.e2e.build import ensure_built  # noqa: E402
from tests.e2e.harness import KubeCluster, free_port  # noqa: E402

GROUP = "bench-profile0"
VARIANTS = ("a", "b", "c")
FNS = "feature.node.kubernetes.io/"


def node_nf(node: str, p: int, variant: str, seq: int) -> dict[str, Any]:
    """bench_master_scale's NodeFeature of profile ``p``, with a NodeFeature label whose value
    is ``variant`` and an attribute no rule reads whose value is new on every write."""
    nf = nodefeature(node, p)
    nf["spec"]["labels"]["bench-variant"] = variant
    nf["spec"]["features"]["attributes"]["bench.stamp"] = {"elements": {"seq": str(seq)}}
    return nf


def group_obj() -> dict[str, Any]:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureGroup",
            "metadata": {"name": GROUP, "namespace": NS},
            "spec": {"featureGroupRules": [{"name": "profile0", "matchFeatures": [
                {"feature": "cpu.model", "matchExpressions": {"id": {"op": "In", "value": ["100"]}}}]}]}}


def probe_rule(k: int) -> dict[str, Any]:
    """A rule that matches no node; ``k`` makes each edit a new revision of its object."""
    return {"name": "edit-probe", "labels": {"never": "x"},
            "matchFeatures": [{"feature": "cpu.cpuid", "matchExpressions": {f"NO_SUCH_FLAG_{k}": {"op": "Exists"}}}]}


@dataclass
class World:
    """What the benchmark has written: the live nodes and their NodeFeature, the rules."""

    rules: dict[str, dict[str, Any]]  # name -> current object
    live: dict[str, tuple[int, str, int]] = field(default_factory=dict)  # node -> (profile, variant, seq)
    removed: set[str] = field(default_factory=set)
    busy: set[str] = field(default_factory=set)
    next_node: int = 0
    seq: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {
        "nf_update": 0, "nf_create": 0, "nf_delete": 0, "node_create": 0, "node_delete": 0, "rule_edit": 0})
    edits: int = 0
    label_version: int = 1

    @property
    def updates(self) -> int:
        return sum(self.counts.values())


@dataclass
class Sample:
    t: float  # wall seconds since the schedule started
    sim_h: float
    updates: int
    rss_mib: float
    cpu_s: float


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def fit(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least squares y = a + b x: (b, a, standard error of b)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if n < 3 or sxx == 0:
        return float("nan"), my, float("nan")
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    a = my - b * mx
    resid = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys, strict=True))
    return b, a, math.sqrt(resid / (n - 2) / sxx)


def schedule(args: argparse.Namespace, rnd: random.Random) -> list[tuple[float, str]]:
    """(simulated seconds, kind) of every event of the run, in order."""
    day = args.sim_hours * 3600.0
    ev: list[tuple[float, str]] = []
    per_h_churn = args.nodes * args.churn
    per_h_nf = args.nodes * args.nf_updates
    for kind, per_h in (("churn", per_h_churn), ("nf", per_h_nf)):
        count = int(round(per_h * args.sim_hours))
        ev += [(rnd.uniform(0, day), kind) for _ in range(count)]
    step = args.edit_minutes * 60.0
    k = 1
    while k * step < day:
        ev.append((k * step, "edit"))
        k += 1
    ev.sort()
    return ev


class Driver:
    def __init__(self, api: ApiClient, world: World, rnd: random.Random, args: argparse.Namespace) -> None:
        self.api = api
        self.w = world
        self.rnd = rnd
        self.args = args
        self.errors: dict[str, int] = {}

    def _count(self, what: str) -> None:
        self.w.counts[what] += 1

    def _pick(self) -> str | None:
        free = [n for n in self.w.live if n not in self.w.busy]
        return self.rnd.choice(free) if free else None

    async def nf_update(self) -> None:
        node = self._pick()
        if node is None:
            return
        p, variant, _ = self.w.live[node]
        if self.rnd.random() < 0.25:
            p = self.rnd.choice([q for q in range(PROFILES) if q != p])
        if self.rnd.random() < 0.5:
            variant = self.rnd.choice([v for v in VARIANTS if v != variant])
        self.w.seq += 1
        seq = self.w.seq
        self.w.busy.add(node)
        try:
            body = [{"op": "replace", "path": "/spec", "value": node_nf(node, p, variant, seq)["spec"]}]
            await patch(self.api, NODEFEATURES, name=node, namespace=NS, body=body, patch_type="json")
            self.w.live[node] = (p, variant, seq)
            self._count("nf_update")
        finally:
            self.w.busy.discard(node)

    async def churn(self) -> None:
        old = self._pick()
        if old is not None:
            self.w.busy.add(old)
            del self.w.live[old]
            self.w.removed.add(old)
            steps = [("node_delete", NODES, None), ("nf_delete", NODEFEATURES, NS)]
            if self.rnd.random() < 0.5:
                steps.reverse()
            for what, res, ns in steps:
                if await delete(self.api, res, name=old, namespace=ns):
                    self._count(what)
            self.w.busy.discard(old)
        name = f"bench-{self.w.next_node:05d}"
        self.w.next_node += 1
        p, variant = self.rnd.randrange(PROFILES), self.rnd.choice(VARIANTS)
        self.w.seq += 1
        seq = self.w.seq
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}
        await create(self.api, NODES, body=body)
        self._count("node_create")
        await patch(self.api, NODES, name=name, subresource="status", patch_type="merge",
                    body={"status": {"capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                                     "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}}})
        await create(self.api, NODEFEATURES, body=node_nf(name, p, variant, seq), namespace=NS)
        self._count("nf_create")
        self.w.live[name] = (p, variant, seq)

    async def edit(self) -> None:
        self.w.edits += 1
        k = self.w.edits
        if k % self.args.label_edit_every == 0:
            self.w.label_version = self.w.label_version % 4 + 1
            obj = [o for o in make_rules(f"v{self.w.label_version}")
                   if any(r["name"] == "changeable" for r in o["spec"]["rules"])][0]
        else:
            base = make_rules(f"v{self.w.label_version}")[k % 9]  # objects 00..08 (09 has "changeable")
            obj = json.loads(json.dumps(base))
            obj["spec"]["rules"].append(probe_rule(k))
        name = obj["metadata"]["name"]
        await patch(self.api, NODEFEATURERULES, name=name, body=[{"op": "replace", "path": "/spec", "value": obj["spec"]}],
                    patch_type="json")
        self.w.rules[name] = obj
        self._count("rule_edit")

    async def run_one(self, kind: str) -> None:
        try:
            await {"nf": self.nf_update, "churn": self.churn, "edit": self.edit}[kind]()
        except (NotFound, AlreadyExists) as e:
            self.errors[type(e).__name__] = self.errors.get(type(e).__name__, 0) + 1


def expected_state(world: World) -> dict[str, dict[str, str]]:
    """Per live node: the labels the master must have written (same engine, offline)."""
    from nfd.master.config import MasterConfig, policy_config
    from nfd.nodestate.desired import desired_state
    from nfd.nodestate.nodefeatures import compact_nodefeature, merge_node_features
    from nfd.nodestate.rulebook import RuleBook

    book = RuleBook()
    for o in world.rules.values():
        assert book.upsert(o) is None
    policy = policy_config(MasterConfig(enable_taints=True))
    out = {}
    for node, (p, variant, seq) in world.live.items():
        merged = merge_node_features([compact_nodefeature(node_nf(node, p, variant, seq))], node_name=node,
                                     master_namespace=NS)
        desired = desired_state(merged, book.ordered(), policy, node_name=node).desired
        out[node] = dict(desired.labels)
    return out


def verify(kube: KubeCluster, world: World) -> list[str]:
    """What is wrong at the end (empty: all right)."""
    from bench_master_scale import node_states

    from nfd.nodestate.bookkeeping import FEATURE_LABELS, encode_names

    expected = expected_state(world)
    problems: list[str] = []
    nodes = {n["metadata"]["name"]: n for n in node_states(kube)}
    for name, labels in expected.items():
        nd = nodes.get(name)
        if nd is None:
            problems.append(f"{name}: Node missing")
            continue
        have = nd["metadata"].get("labels") or {}
        ann = (nd["metadata"].get("annotations") or {}).get(FEATURE_LABELS)
        ours = {k: v for k, v in have.items() if k.startswith(FNS)}
        want = {k: v for k, v in labels.items() if k.startswith(FNS)}
        if ann != encode_names(labels) or ours != want or any(have.get(k) != v for k, v in labels.items()):
            problems.append(f"{name}: labels differ ({sorted(set(ours.items()) ^ set(want.items()))[:4]})")
    left = sorted(world.removed & set(nodes))
    if left:
        problems.append(f"removed nodes still present: {left[:5]} ({len(left)})")
    nfs = kube.get(f"/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/{NS}/nodefeatures")["items"]
    nf_names = {o["metadata"]["name"] for o in nfs}
    if world.removed & nf_names:
        problems.append(f"NodeFeatures of removed nodes: {sorted(world.removed & nf_names)[:5]}")
    if nf_names != set(world.live):
        problems.append(f"NodeFeatures differ from the live nodes: {sorted(nf_names ^ set(world.live))[:5]}")
    grp = kube.get(f"/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/{NS}/nodefeaturegroups/{GROUP}")
    members = sorted(x["name"] for x in (grp.get("status") or {}).get("nodes") or [])
    want_members = sorted(n for n, (p, _, _) in world.live.items() if p == 0)
    if members != want_members:
        problems.append(f"group {GROUP}: {len(members)} members, expected {len(want_members)} "
                        f"(extra {sorted(set(members) - set(want_members))[:3]}, "
                        f"missing {sorted(set(want_members) - set(members))[:3]})")
    return problems


def wait_idle(port: int, *, quiet_s: float = 6.0, limit: float = 300.0) -> float:
    """Wait until the master has written nothing for ``quiet_s`` (its no-op resync passes go on);
    returns the seconds waited."""
    t0 = time.monotonic()
    last, since = -1.0, time.monotonic()
    while time.monotonic() - t0 < limit:
        verbs = api_verbs(scrape(port))
        cur = float(sum(verbs.get(v, 0) for v in ("PATCH", "UPDATE", "CREATE", "DELETE")))
        if cur != last:
            last, since = cur, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
        time.sleep(0.5)
    return time.monotonic() - t0


async def run_schedule(kube: KubeCluster, world: World, args: argparse.Namespace, master_pid: int,
                       events: list[tuple[float, str]], rnd: random.Random) -> tuple[list[Sample], float]:
    api = await ApiClient.from_kubeconfig(kube.kubeconfig, qps=0, burst=1)
    drv = Driver(api, world, rnd, args)
    wall = args.minutes * 60.0
    scale = wall / (args.sim_hours * 3600.0)  # wall seconds per simulated second
    samples: list[Sample] = []
    t0 = time.monotonic()
    done = asyncio.Event()

    async def sampler() -> None:
        while True:
            t = time.monotonic() - t0
            samples.append(Sample(t, t / scale / 3600.0, world.updates, rss_mib(master_pid), cpu_s(master_pid)))
            if done.is_set():
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(args.sample_s):
                    await done.wait()

    sampling = asyncio.ensure_future(sampler())
    sem = asyncio.Semaphore(16)
    tasks: set[asyncio.Task[None]] = set()
    max_lag = 0.0
    last_report = 0.0

    async def one(kind: str) -> None:
        async with sem:
            await drv.run_one(kind)

    for sim_t, kind in events:
        due = sim_t * scale
        now = time.monotonic() - t0
        if due > now:
            await asyncio.sleep(due - now)
        else:
            max_lag = max(max_lag, now - due)
        t = asyncio.ensure_future(one(kind))
        tasks.add(t)
        t.add_done_callback(tasks.discard)
        if time.monotonic() - t0 - last_report >= 60.0:
            last_report = time.monotonic() - t0
            s = samples[-1]
            print(f"  {last_report:5.0f}s  sim {sim_t / 3600:5.1f} h  updates {world.updates:6d}  "
                  f"nodes {len(world.live)}  RSS {s.rss_mib:6.1f} MiB", flush=True)
    if tasks:
        await asyncio.gather(*tasks)
    rest = wall - (time.monotonic() - t0)
    if rest > 0:
        await asyncio.sleep(rest)
    done.set()
    await sampling
    await api.close()
    if drv.errors:
        print(f"  (schedule: objects already gone or present: {drv.errors})")
    return samples, max_lag


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=400)
    ap.add_argument("--minutes", type=float, default=18.0, help="wall-clock length of the run")
    ap.add_argument("--sim-hours", type=float, default=24.0, help="simulated hours compressed into it")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--churn", type=float, default=0.03, help="share of the nodes replaced per simulated hour")
    ap.add_argument("--nf-updates", type=float, default=0.5, help="NodeFeature rewrites per node per simulated hour")
    ap.add_argument("--edit-minutes", type=float, default=10.0, help="simulated minutes between rule edits")
    ap.add_argument("--label-edit-every", type=int, default=6, help="every n-th edit changes a label on every node")
    ap.add_argument("--resync-s", type=float, default=None, help="master resyncPeriod (default: one simulated hour)")
    ap.add_argument("--sample-s", type=float, default=5.0)
    ap.add_argument("--warmup", type=float, default=0.2, help="share of the run left out of the fit")
    ap.add_argument("--rows", type=int, default=20)
    args = ap.parse_args()
    n = args.nodes
    rnd = random.Random(args.seed)
    scale = args.minutes * 60.0 / (args.sim_hours * 3600.0)
    resync = args.resync_s if args.resync_s is not None else max(5.0, 3600.0 * scale)

    rule_objs = make_rules("v1")
    world = World(rules={o["metadata"]["name"]: o for o in rule_objs}, next_node=n)
    for i in range(n):
        world.live[f"bench-{i:05d}"] = (i % PROFILES, "a", 0)
    events = schedule(args, rnd)
    tmp = Path(tempfile.mkdtemp(prefix="nfd-bench-longrun-"))
    print(f"starting kube-apiserver + etcd in {tmp}", flush=True)
    kube = KubeCluster.start(binary=ensure_built(), tmpdir=tmp)
    try:
        kube.apply_manifest_dir(REPO / "deploy" / "base" / "rbac")
        allow_master_to_watch_nodes(kube)
        # bench_master_scale's nodes and NodeFeatures, rewritten with this benchmark's labels
        asyncio.run(populate(kube, n, rule_objs))
        for i in range(n):
            name = f"bench-{i:05d}"
            kube.request("PATCH", f"/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/{NS}/nodefeatures/{name}",
                         body=[{"op": "replace", "path": "/spec", "value": node_nf(name, i % PROFILES, "a", 0)["spec"]}],
                         content_type="application/json-patch+json")
        kube.request("POST", f"/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/{NS}/nodefeaturegroups", body=group_obj())
        conf = tmp / "nfd-master.conf"
        conf.write_text(f"enableTaints: true\nresyncPeriod: {resync:g}s\n")
        kc = kube.serviceaccount_kubeconfig(NS, "nfd-master", expiration_s=86400)
        port = free_port()
        env = {"KUBERNETES_NAMESPACE": NS,
               "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
        argv = [sys.executable, "-m", "nfd.master", f"-port={port}", f"-config={conf}",
                "-feature-gates=NodeFeatureGroupAPI=true"]
        server_pids = [p.pid for p in (kube._apiserver, kube._etcd) if p is not None]
        settle(server_pids)
        master = kube.start_process(argv, kubeconfig=kc, env=env, name="bench-master")
        master.wait_log("informer caches synced", timeout=600)
        t0 = time.monotonic()
        while scrape(port).get("nfd_master_node_updates_total", 0.0) < n:
            if time.monotonic() - t0 > 600:
                raise SystemExit("first reconcile did not finish")
            time.sleep(0.5)
        wait_idle(port)
        rss_start = rss_mib(master.pid)
        api_cpu0 = sum(cpu_s(p) for p in server_pids)
        m0 = scrape(port)
        print(f"first reconcile done in {time.monotonic() - t0:.1f}s, master RSS {rss_start:.1f} MiB; "
              f"running {len(events)} events of {args.sim_hours:g} simulated hours in {args.minutes:g} minutes "
              f"(resyncPeriod {resync:g}s)", flush=True)
        samples, max_lag = asyncio.run(run_schedule(kube, world, args, master.pid, events, rnd))
        # the figures
        m1 = scrape(port)
        api_cpu = sum(cpu_s(p) for p in server_pids) - api_cpu0
        warm_t = samples[-1].t * args.warmup
        post = [s for s in samples if s.t >= warm_t]
        slope, _, se = fit([float(s.updates) for s in post], [s.rss_mib for s in post])
        slope_t, _, se_t = fit([s.t / 60.0 for s in post], [s.rss_mib for s in post])
        second = [s for s in samples if s.t >= samples[-1].t / 2]
        slope2, _, se2 = fit([float(s.updates) for s in second], [s.rss_mib for s in second])
        warm = post[0]
        last = samples[-1]
        peak = max(s.rss_mib for s in samples)
        upd = world.updates
        print()
        print(f"nfd-master long run: {n} nodes, {args.sim_hours:g} simulated hours in {samples[-1].t / 60:.1f} wall "
              f"minutes (x{1 / scale:.0f}), seed {args.seed}, resyncPeriod {resync:g}s, 100+ rules, 1 NodeFeatureGroup")
        print(f"  updates: {upd} ({', '.join(f'{k} {v}' for k, v in world.counts.items())}); "
              f"{world.next_node - n} nodes replaced, {world.edits} rule edits "
              f"({world.edits // args.label_edit_every} changing every node's labels)")
        writes = int(m1.get("nfd_master_node_updates_total", 0) - m0.get("nfd_master_node_updates_total", 0))
        reqs = int(m1.get("nfd_master_node_update_requests_total", 0) - m0.get("nfd_master_node_update_requests_total", 0))
        fails = int(m1.get("nfd_master_node_update_failures_total", 0) - m0.get("nfd_master_node_update_failures_total", 0))
        print(f"  master: {reqs} node passes, {writes} node writes, {fails} failed passes; CPU {last.cpu_s - samples[0].cpu_s:.0f} s "
              f"(kube-apiserver+etcd {api_cpu:.0f} s) over {last.t:.0f} s; schedule lag at most {max_lag:.1f} s")
        print(f"  RSS: {rss_start:.1f} MiB after the first reconcile, {warm.rss_mib:.1f} MiB at the end of the warm-up "
              f"({warm.t / 60:.1f} min, {warm.updates} updates), {last.rss_mib:.1f} MiB at the end, peak {peak:.1f} MiB")
        print(f"  slope after the warm-up: {slope * 1000:+.3f} MiB per 1,000 updates (standard error {se * 1000:.3f}; "
              f"{len(post)} samples, {last.updates - warm.updates} updates); "
              f"{slope_t * 60:+.2f} MiB per wall hour (se {se_t * 60:.2f})")
        print(f"  slope over the second half: {slope2 * 1000:+.3f} MiB per 1,000 updates (standard error {se2 * 1000:.3f})")
        print()
        print("   wall     sim    updates   RSS MiB   master CPU")
        step = max(1, len(samples) // args.rows)
        rows = samples[::step]
        if rows[-1] is not samples[-1]:
            rows.append(samples[-1])
        prev = samples[0]
        for s in rows:
            dt = s.t - prev.t
            cpu = f"{(s.cpu_s - prev.cpu_s) / dt * 100:5.0f} %" if dt > 0 else "     -"
            print(f"  {s.t / 60:5.1f}m  {s.sim_h:5.1f}h  {s.updates:8d}  {s.rss_mib:8.1f}   {cpu}")
            prev = s
        print()
        idle_s = wait_idle(port)
        problems = verify(kube, world)
        if problems:  # the master may still have been catching up on the last events
            wait_idle(port, quiet_s=15.0)
            problems = verify(kube, world)
        master_alive = master.running
        print(f"  the master wrote nothing for 6 s from {idle_s:.0f} s after the end of the run on")
        if problems:
            print(f"  correctness: FAILED ({len(problems)} problems)")
            for p in problems[:10]:
                print(f"    {p}")
        else:
            print(f"  correctness: all {len(world.live)} live nodes carry exactly the labels of the current rules; "
                  f"the group lists exactly its {sum(1 for v in world.live.values() if v[0] == 0)} nodes; "
                  f"none of the {len(world.removed)} removed nodes is left with a Node or a NodeFeature")
        if not master_alive:
            print("  the master exited during the run")
        master.stop()
        return 0 if not problems and master_alive else 1
    finally:
        kube.close()


if __name__ == "__main__":
    sys.exit(main())
