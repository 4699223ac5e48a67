"""nfd-master at scale on the real kube-apiserver (the e2e harness's etcd + apiserver).

Creates N Node objects and one realistic NodeFeature per node (tens of kB: ~100 cpuid flags,
~1,000 kernel config attributes, 20 PCI devices, os-release...), 100 NodeFeatureRules' worth of
rules (mixed operators, matchAny, templates, dynamic values, annotations, extended resources, one
taint), then starts nfd-master as its own process under its ServiceAccount and prints:

- time until every node carries exactly the expected state (checked against the expected
  ``feature-labels`` annotation, computed offline with the same engine for each node profile);
- API requests issued by the master, by verb (its nfd_master_api_requests_total);
- the master's peak RSS (VmHWM);
- time to propagate a changed rule to every node;
- a forced full resync with nothing changed: its duration and the writes it issued (must be 0).

With ``--dra`` every node also gets a ResourceSlice of 8 GPUs as the NVIDIA GPU DRA driver
publishes them (tests/fixtures/dra) and the shipped DRA sample rules are added: compare its
sync time, first reconcile and peak RSS with a run without it for what the dra source adds.
It also prints, offline (this process, no API), the cost of indexing the slices, their memory
and the per-node evaluation cost with and without the devices; ``--dra-offline`` prints only
those (no API server, a few seconds).

Run: ``python benchmarks/bench_master_scale.py [--nodes 1000] [--upstream-rbac] [--taints all|quarter|none] [--dra | --dra-offline]``
(``--nodes 5000`` is supported; it needs a few minutes to create the objects).

The taint rule matches every node by default (``--taints all``): each node then needs two
writes (a Node's taints and its extended resources cannot share a request), the worst case.
``quarter`` taints one node profile in four, ``none`` drops the taint rule's match.

Before the master starts, the benchmark waits for the API server to go idle after creating
the objects, so the figures measure the master's start, not the tail of the bulk creation.
The machine's cores are shared by kube-apiserver, etcd and the master: the printed CPU
seconds, divided by the cores, give the floor under the wall-clock figures.
By default the master may watch Nodes (ClusterRole nfd-master + nodes/watch); with
``--upstream-rbac`` it runs with upstream's ClusterRole (no watch: it reads each Node).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nfd.k8s.client import ApiClient  # noqa: E402
from nfd.k8s.creating import create  # noqa: E402
from nfd.k8s.errors import AlreadyExists  # noqa: E402
from nfd.k8s.patching import patch  # noqa: E402
from nfd.k8s.resources import NODEFEATURERULES, NODEFEATURES, NODES, RESOURCESLICES  # noqa: E402
from tests.e2e.build import ensure_built  # noqa: E402
from tests.e2e.harness import KubeCluster  # noqa: E402

NS = "node-feature-discovery"
PROFILES = 4
CPUID = [f"FLAG{i}" for i in range(100)] + ["AVX", "AVX2", "AVX512F", "SSE4", "SSE42", "VMX", "SGX"]


def profile_features(p: int) -> dict[str, Any]:
    rnd = random.Random(p)
    flags = sorted(f for f in CPUID if rnd.random() < 0.8 or f in ("AVX", "SSE4"))
    if p % 2 == 0 and "AVX512F" not in flags:
        flags.append("AVX512F")
    kconfig = {f"CONFIG_OPTION_{i}": rnd.choice(["y", "m", "n"]) for i in range(1000)}
    pci = [
        {"class": rnd.choice(["0200", "0300", "0302", "0108", "0604"]), "vendor": rnd.choice(["8086", "10de", "15b3", "1af4"]),
         "device": f"{rnd.randrange(0x1000, 0xffff):04x}", "subsystem_vendor": "1028", "subsystem_device": "0000",
         "sriov_totalvfs": str(rnd.choice([0, 8, 64]))}
        for _ in range(20)
    ]
    return {
        "flags": {"cpu.cpuid": flags, "kernel.loadedmodule": [f"mod_{i}" for i in range(60 + p)]},
        "attributes": {
            "cpu.model": {"vendor_id": "Intel" if p < 3 else "AMD", "family": "6", "id": str(100 + p)},
            "kernel.version": {"full": f"6.{p}.0-generic", "major": "6", "minor": str(p), "revision": "0"},
            "kernel.config": kconfig,
            "system.osrelease": {"ID": "ubuntu", "VERSION_ID": f"22.0{p}", "VERSION_ID.major": "22"},
            "memory.numa": {"is_numa": "true" if p % 2 else "false", "node_count": str(1 + p % 2)},
        },
        "instances": {"pci.device": pci},
    }


def nodefeature(node: str, p: int) -> dict[str, Any]:
    f = profile_features(p)
    attrs = dict(f["attributes"])
    attrs["system.name"] = {"nodename": node}
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeature",
        "metadata": {"name": node, "namespace": NS, "labels": {"nfd.node.kubernetes.io/node-name": node}},
        "spec": {
            "features": {
                "flags": {k: {"elements": {e: {} for e in v}} for k, v in f["flags"].items()},
                "attributes": {k: {"elements": v} for k, v in attrs.items()},
                "instances": {k: {"elements": [{"attributes": a} for a in v]} for k, v in f["instances"].items()},
            },
            "labels": {f"cpu-cpuid.{x}": "true" for x in f["flags"]["cpu.cpuid"][:20]},
        },
    }


TAINT_MATCH = {  # which nodes the taint rule matches
    "all": {"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Exists"}}},
    "quarter": {"feature": "cpu.model", "matchExpressions": {"id": {"op": "In", "value": ["100"]}}},  # profile 0
    "none": {"feature": "cpu.cpuid", "matchExpressions": {"NO_SUCH_FLAG": {"op": "Exists"}}},
}


def make_rules(version: str = "v1", *, taints: str = "all") -> list[dict[str, Any]]:
    """100 rules in 10 NodeFeatureRule objects."""
    rnd = random.Random(42)
    rules: list[dict[str, Any]] = []
    for i in range(40):
        a, b = rnd.sample(CPUID, 2)
        rules.append({"name": f"cpuid-{i}", "labels": {f"cpu-combo-{i}": "true"},
                      "matchFeatures": [{"feature": "cpu.cpuid", "matchExpressions": {
                          a: {"op": "Exists"}, b: {"op": "Exists" if i % 3 else "DoesNotExist"}}}]})
    for i in range(20):
        keys = rnd.sample(range(1000), 3)
        rules.append({"name": f"kconfig-{i}", "labels": {f"kconfig-{i}": "true"},
                      "matchFeatures": [{"feature": "kernel.config", "matchExpressions": {
                          f"CONFIG_OPTION_{k}": {"op": "In", "value": ["y", "m"]} for k in keys}}]})
    for i in range(10):
        rules.append({"name": f"pci-{i}", "labels": {f"pci-{i}.present": "true"},
                      "matchFeatures": [{"feature": "pci.device", "matchExpressions": {
                          "vendor": {"op": "In", "value": [["8086", "10de", "15b3", "1af4"][i % 4]]},
                          "class": {"op": "InRegexp", "value": ["^0[23]"]}}}]})
    for i in range(10):
        rules.append({"name": f"kver-{i}", "labels": {f"kernel-ge-6.{i % 4}": "true"},
                      "matchFeatures": [{"feature": "kernel.version", "matchExpressions": {
                          "major": {"op": "Ge", "value": ["6"]}, "minor": {"op": "Ge", "value": [str(i % 4)]},
                          "full": {"op": "Gt", "value": ["5.4.0"], "type": "version"}}}]})
    for i in range(10):
        rules.append({"name": f"any-{i}", "labels": {f"any-{i}": "true"},
                      "matchAny": [
                          {"matchFeatures": [{"feature": "cpu.model", "matchExpressions": {"id": {"op": "In", "value": [str(100 + i % 5)]}}}]},
                          {"matchFeatures": [{"feature": "memory.numa", "matchExpressions": {"is_numa": {"op": "IsTrue"}}}]},
                      ]})
    for i in range(5):
        rules.append({"name": f"tmpl-{i}",
                      "labelsTemplate": "{{ range .pci.device }}vendor-{{ .vendor }}-" + str(i) + "=present\n{{ end }}",
                      "matchFeatures": [{"feature": "pci.device", "matchExpressions": {"class": {"op": "In", "value": ["0300", "0302"]}}}]})
    rules.append({"name": "dyn", "labels": {"os-version": "@system.osrelease.VERSION_ID"},
                  "annotations": {"kernel-full": "@kernel.version.full"}})
    rules.append({"name": "er", "extendedResources": {"numa-nodes": "@memory.numa.node_count"},
                  "matchFeatures": [{"feature": "memory.numa", "matchExpressions": {"node_count": {"op": "Gt", "value": ["0"]}}}]})
    rules.append({"name": "taint", "taints": [{"key": "example.com/avx512", "value": "true", "effect": "PreferNoSchedule"}],
                  "matchFeatures": [TAINT_MATCH[taints]]})
    rules.append({"name": "changeable", "labels": {"rules-version": version}})
    rules.append({"name": "chained", "labels": {"chained": "true"},
                  "matchFeatures": [{"feature": "rule.matched", "matchExpressions": {"rules-version": {"op": "Exists"}}}]})
    assert len(rules) == 100, len(rules)
    return [
        {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
         "metadata": {"name": f"bench-rules-{j:02d}"}, "spec": {"rules": rules[j * 10:(j + 1) * 10]}}
        for j in range(10)
    ]


DRA_FIXTURE = REPO / "tests" / "fixtures" / "dra" / "nvidia-gpu-h100x8.yaml"
DRA_SAMPLES = ("dra-nvidia-gpu.yaml", "dra-dranet-nics.yaml")


def dra_slice(node: str) -> dict[str, Any]:
    import yaml

    obj: dict[str, Any] = yaml.safe_load(DRA_FIXTURE.read_text().replace("NODE", node))
    return obj


def dra_rules() -> list[dict[str, Any]]:
    import yaml

    return [yaml.safe_load((REPO / "deploy" / "nodefeaturerule" / "samples" / f).read_text()) for f in DRA_SAMPLES]


def dra_merged(p: int, *, with_dra: bool) -> Any:
    from nfd.dra.pools import DraIndex
    from nfd.dra.slices import parse_slice
    from nfd.rules.nodefeatures import compact_nodefeature, merge_node_features

    merged = merge_node_features([compact_nodefeature(nodefeature("x", p))], node_name="x", master_namespace=NS)
    if with_dra:
        idx = DraIndex()
        idx.upsert(parse_slice(dra_slice("x")))
        nd = idx.node_devices("x", {})
        merged.features.add_instances("dra.device", nd.instances)
        merged.devices = nd.cel
    return merged


def dra_offline(n: int, rule_objs: list[dict[str, Any]]) -> None:
    """What the dra source costs in the master's process, measured here without the API."""
    import tracemalloc

    from nfd.dra.pools import DraIndex
    from nfd.dra.slices import compact_slice
    from nfd.master.config import MasterConfig
    from nfd.master.pipeline import RuleBook, compute_desired_steps, policy_config
    from nfd.rules.engine import run_to_end

    def build() -> tuple[DraIndex, list[Any]]:
        idx, cache = DraIndex(), []
        for i in range(n):
            raw = json.loads(raw_text)  # a fresh decoded object per slice, as the informer has
            raw["metadata"]["name"] = f"bench-{i:05d}-gpu.nvidia.com"
            raw["metadata"]["resourceVersion"] = str(i + 1)
            raw["spec"]["nodeName"] = raw["spec"]["pool"]["name"] = f"bench-{i:05d}"
            entry = compact_slice(raw)
            cache.append(entry)
            idx.upsert(entry["dra"])
        return idx, cache

    raw_text = json.dumps(dra_slice("bench-00000"))
    t0 = time.perf_counter()
    idx, _ = build()
    t_index = time.perf_counter() - t0
    del idx, _
    tracemalloc.start()
    idx, cache = build()
    mem = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    t0 = time.perf_counter()
    for i in range(n):
        idx.node_devices(f"bench-{i:05d}", {})
    t_lookup = (time.perf_counter() - t0) / n
    # what merged_for() does per evaluated node: the dra.device instances and the CEL devices
    t0 = time.perf_counter()
    for i in range(n):
        nd = idx.node_devices(f"bench-{i:05d}", {})
        nd.instances, nd.cel  # noqa: B018 - built on first read
    t_build = (time.perf_counter() - t0) / n
    book = RuleBook()
    for o in rule_objs:
        assert book.upsert(o) is None
    policy = policy_config(MasterConfig(enable_taints=True))
    per: dict[bool, float] = {}
    for with_dra in (False, True):
        merged = dra_merged(0, with_dra=with_dra)
        reps = 50
        t0 = time.perf_counter()
        for _ in range(reps):
            run_to_end(compute_desired_steps(merged, rule_sets=book.ordered(), policy=policy, node_name="x"))
        per[with_dra] = (time.perf_counter() - t0) / reps
    print(f"  dra, offline: {n} slices x 8 devices parsed and indexed in {t_index:.2f} s, "
          f"{mem / 2**20:.1f} MiB held ({mem / max(n, 1) / 1024:.1f} kB per slice); "
          f"node_devices() {t_lookup * 1e6:.1f} us per node, {t_build * 1e6:.1f} us with its instances and "
          "CEL devices built")
    print(f"  dra, offline: rules+policy per node {per[False] * 1e3:.2f} ms without devices, "
          f"{per[True] * 1e3:.2f} ms with 8 devices and the DRA sample rules "
          f"(+{(per[True] - per[False]) * 1e3:.2f} ms)")


def expected_annotations(rule_objs: list[dict[str, Any]], *, enable_taints: bool, with_dra: bool = False) -> dict[int, str]:
    """Per profile: the feature-labels annotation the master must write (same engine, offline)."""
    from nfd.master.bookkeeping import encode_names
    from nfd.master.config import MasterConfig
    from nfd.master.pipeline import RuleBook, compute_desired_steps, policy_config
    from nfd.rules.engine import run_to_end
    from nfd.rules.nodefeatures import compact_nodefeature, merge_node_features

    book = RuleBook()
    for o in rule_objs:
        assert book.upsert(o) is None
    policy = policy_config(MasterConfig(enable_taints=enable_taints))
    out = {}
    for p in range(PROFILES):
        merged = merge_node_features([compact_nodefeature(nodefeature("x", p))], node_name="x", master_namespace=NS)
        if with_dra:
            merged = dra_merged(p, with_dra=True)
        desired, _ = run_to_end(compute_desired_steps(merged, rule_sets=book.ordered(), policy=policy, node_name="x"))
        out[p] = encode_names(desired.labels)
    return out


async def bulk(coros: list[Any], *, parallel: int = 32, what: str = "") -> None:
    sem = asyncio.Semaphore(parallel)
    done = 0
    t0 = time.monotonic()

    async def one(c: Any) -> None:
        nonlocal done
        async with sem:
            await c
        done += 1
        if what and done % 1000 == 0:
            print(f"  {what}: {done}/{len(coros)} in {time.monotonic() - t0:.0f}s", flush=True)

    await asyncio.gather(*(one(c) for c in coros))


async def populate(kube: KubeCluster, n: int, rule_objs: list[dict[str, Any]], *, with_dra: bool = False) -> None:
    api = await ApiClient.from_kubeconfig(kube.kubeconfig, qps=0, burst=1)

    async def mk_node(i: int) -> None:
        name = f"bench-{i:05d}"
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}
        try:
            await create(api, NODES, body=body)
        except AlreadyExists:
            pass
        await patch(api, NODES, name=name, subresource="status", patch_type="merge",
                    body={"status": {"capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                                     "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}}})

    async def mk_nf(i: int) -> None:
        name = f"bench-{i:05d}"
        try:
            await create(api, NODEFEATURES, body=nodefeature(name, i % PROFILES), namespace=NS)
        except AlreadyExists:
            pass

    async def mk_slice(i: int) -> None:
        try:
            await create(api, RESOURCESLICES, body=dra_slice(f"bench-{i:05d}"))
        except AlreadyExists:
            pass

    t0 = time.monotonic()
    await bulk([mk_node(i) for i in range(n)], what="nodes")
    await bulk([mk_nf(i) for i in range(n)], what="NodeFeatures")
    if with_dra:
        await bulk([mk_slice(i) for i in range(n)], what="ResourceSlices")
    for o in rule_objs:
        try:
            await create(api, NODEFEATURERULES, body=o)
        except AlreadyExists:
            pass
    print(f"created {n} nodes, {n} NodeFeatures (~{len(json.dumps(nodefeature('bench-00000', 0))) // 1024} kB each), "
          f"{sum(len(o['spec']['rules']) for o in rule_objs)} rules in {time.monotonic() - t0:.1f}s", flush=True)
    await api.close()


def node_states(kube: KubeCluster, *, attempts: int = 5) -> list[dict[str, Any]]:
    """Every bench node. An overloaded apiserver answers a page with 504 ("Too large resource
    version": its watch cache is behind the continue token): the whole list starts over."""
    from tests.e2e.harness import HttpError

    for attempt in range(attempts):
        try:
            return _node_states(kube)
        except HttpError as e:
            if e.status != 504 or attempt == attempts - 1:
                raise
            print(f"  (listing nodes: {e}; again)", flush=True)
            time.sleep(2.0)
    raise AssertionError("unreachable")


def _node_states(kube: KubeCluster) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cont = None
    while True:
        params: dict[str, Any] = {"limit": 1000, "labelSelector": "kubernetes.io/hostname"}
        if cont:
            params["continue"] = cont
        page = kube.admin.request("GET", "/api/v1/nodes", params=params, timeout=120)
        items += [i for i in page["items"] if i["metadata"]["name"].startswith("bench-")]
        cont = page["metadata"].get("continue")
        if not cont:
            return items


def count_done(kube: KubeCluster, check: Any) -> tuple[int, int]:
    nodes = node_states(kube)
    return sum(1 for n in nodes if check(n)), len(nodes)


def wait_all(kube: KubeCluster, n: int, check: Any, *, port: int, updates_before: float, timeout: float,
             what: str) -> tuple[float, float | None]:
    """Time until every node is right: (verified, written). Progress comes from the master's own
    counter of node writes (cheap); the node objects are then listed (expensive at 5,000 nodes)
    to verify that every node really is right. ``written`` is when the counter reached n, given
    only if the first verification passed and the master wrote nothing meanwhile (the nodes were
    then already right at that moment; the LIST itself is the benchmark's cost, not the master's).
    """
    t0 = time.monotonic()
    last = -1
    t_written: float | None = None
    first_check = True
    while True:
        written = int(scrape(port).get("nfd_master_node_updates_total", 0.0) - updates_before)
        if written // 500 != last // 500 or written >= n:
            if written != last:
                print(f"  {what}: {written}/{n} nodes written at {time.monotonic() - t0:.1f}s", flush=True)
            last = written
        if written >= n:
            if t_written is None:
                t_written = time.monotonic() - t0
            done, _ = count_done(kube, check)
            after = int(scrape(port).get("nfd_master_node_updates_total", 0.0) - updates_before)
            if done >= n:
                exact = first_check and after == written
                return time.monotonic() - t0, (t_written if exact else None)
            first_check = False
            print(f"  {what}: {done}/{n} nodes verified at {time.monotonic() - t0:.1f}s", flush=True)
            time.sleep(2.0)
        if time.monotonic() - t0 > timeout:
            raise SystemExit(f"{what}: only {written}/{n} nodes written after {timeout}s")
        time.sleep(0.2)


def scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        k, _, v = line.rpartition(" ")
        out[k] = float(v)
    return out


def api_verbs(m: dict[str, float]) -> dict[str, int]:
    out = {}
    for k, v in m.items():
        mm = re.match(r'nfd_master_api_requests_total\{verb="(\w+)"\}', k)
        if mm:
            out[mm.group(1)] = int(v)
    return out


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int) -> float:
    """User+system CPU seconds of a process (to tell master-bound from apiserver-bound)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settle(pids: list[int], *, window: float = 5.0, idle_share: float = 0.3, limit: float = 300.0) -> None:
    """Wait until the API server and etcd use under ``idle_share`` of a core over ``window``: after
    a bulk creation the API server decodes the backlog of NodeFeature events into its watch
    cache for minutes (then idles at ~0.15 core)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        c0 = sum(cpu_s(p) for p in pids)
        time.sleep(window)
        used = (sum(cpu_s(p) for p in pids) - c0) / window
        if used < idle_share:
            print(f"API server idle after {time.monotonic() - t0:.0f}s", flush=True)
            return
    print(f"API server still busy after {limit:.0f}s; starting anyway", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--parallelism", type=int, default=10)
    ap.add_argument("--qps", type=float, default=None, help="master -kube-api-qps (default: its own default)")
    ap.add_argument("--upstream-rbac", action="store_true", help="no nodes/watch permission")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--taints", choices=sorted(TAINT_MATCH), default="all",
                    help="nodes the taint rule matches (all: two writes per node on the first pass)")
    ap.add_argument("--dra", action="store_true",
                    help="a ResourceSlice of 8 GPUs per node and the DRA sample rules (the dra source's cost)")
    ap.add_argument("--dra-offline", action="store_true",
                    help="only the dra source's offline figures (no API server)")
    args = ap.parse_args()
    n = args.nodes
    if args.dra_offline:
        print(f"dra source, offline, {n} nodes:")
        dra_offline(n, make_rules("v1", taints=args.taints) + dra_rules())
        return 0

    from nfd.master.bookkeeping import FEATURE_LABELS

    rule_objs = make_rules("v1", taints=args.taints) + (dra_rules() if args.dra else [])
    expected = expected_annotations(rule_objs, enable_taints=True, with_dra=args.dra)
    tmp = Path(tempfile.mkdtemp(prefix="nfd-bench-master-"))
    print(f"starting kube-apiserver + etcd in {tmp}", flush=True)
    kube = KubeCluster.start(binary=ensure_built(), tmpdir=tmp)
    try:
        kube.apply_manifest_dir(REPO / "deploy" / "base" / "rbac")
        if not args.upstream_rbac:
            kube.apply_objects([
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": "nfd-master-watch-nodes"},
                 "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["watch"]}]},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                 "metadata": {"name": "nfd-master-watch-nodes"},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "nfd-master-watch-nodes"},
                 "subjects": [{"kind": "ServiceAccount", "name": "nfd-master", "namespace": NS}]},
            ])
        asyncio.run(populate(kube, n, rule_objs, with_dra=args.dra))
        conf = tmp / "nfd-master.conf"
        conf.write_text("enableTaints: true\nresyncPeriod: 0\n")
        kc = kube.serviceaccount_kubeconfig(NS, "nfd-master", expiration_s=86400)
        port = int(os.environ.get("BENCH_PORT", "0")) or __import__("tests.e2e.harness", fromlist=["free_port"]).free_port()
        # BENCH_MASTER_CMD (e.g. "python -m cProfile -o master.prof -m nfd.master") profiles it.
        prefix = os.environ.get("BENCH_MASTER_CMD", "nfd-master").split()
        argv = [*prefix, f"-port={port}", f"-config={conf}", f"-nfd-api-parallelism={args.parallelism}"]
        if args.qps:
            argv += [f"-kube-api-qps={args.qps}", f"-kube-api-burst={int(args.qps * 2)}"]

        def initial_ok(node: dict[str, Any]) -> bool:
            p = int(node["metadata"]["name"].split("-")[1]) % PROFILES
            return (node["metadata"].get("annotations") or {}).get(FEATURE_LABELS) == expected[p]

        server_pids = [p.pid for p in (kube._apiserver, kube._etcd) if p is not None]
        settle(server_pids)
        api_cpu0 = sum(cpu_s(p) for p in server_pids)
        t_start = time.monotonic()
        master = kube.start_process(argv, kubeconfig=kc, env={"KUBERNETES_NAMESPACE": NS}, name="bench-master")
        master.wait_log("informer caches synced", timeout=args.timeout)
        t_sync = time.monotonic() - t_start
        cpu_sync = cpu_s(master.pid)
        api_cpu_sync = sum(cpu_s(p) for p in server_pids)
        t_first, w_first = wait_all(kube, n, initial_ok, port=port, updates_before=0.0, timeout=args.timeout,
                           what="first reconcile")
        t_first_total = time.monotonic() - t_start
        time.sleep(2.0)
        m1 = scrape(port)
        verbs1 = api_verbs(m1)
        rss1 = peak_rss_mib(master.pid)
        cpu_first = cpu_s(master.pid)
        api_cpu1 = sum(cpu_s(p) for p in server_pids)

        # a changed rule, to every node
        api_before = verbs1
        t0 = time.monotonic()
        changed = [o for o in make_rules("v2", taints=args.taints) if any(r["name"] == "changeable" for r in o["spec"]["rules"])][0]
        cur = kube.get(f"/apis/nfd.k8s-sigs.io/v1alpha1/nodefeaturerules/{changed['metadata']['name']}")
        changed["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
        kube.request("PUT", f"/apis/nfd.k8s-sigs.io/v1alpha1/nodefeaturerules/{changed['metadata']['name']}", body=changed)
        t_prop, w_prop = wait_all(
            kube, n, lambda nd: (nd["metadata"].get("labels") or {}).get("feature.node.kubernetes.io/rules-version") == "v2",
            port=port, updates_before=m1.get("nfd_master_node_updates_total", 0.0), timeout=args.timeout,
            what="rule change")
        _ = t0
        time.sleep(2.0)
        m2 = scrape(port)
        verbs2 = api_verbs(m2)
        cpu_prop = cpu_s(master.pid)
        api_cpu_prop = sum(cpu_s(p) for p in server_pids)

        # forced full resync with nothing changed
        req_before = m2.get("nfd_master_node_update_requests_total", 0.0)
        t0 = time.monotonic()
        os.kill(master.pid, signal.SIGUSR1)
        while scrape(port).get("nfd_master_node_update_requests_total", 0.0) < req_before + n:
            if time.monotonic() - t0 > args.timeout:
                raise SystemExit("forced resync did not finish")
            time.sleep(0.2)
        t_resync = time.monotonic() - t0
        time.sleep(1.0)
        m3 = scrape(port)
        verbs3 = api_verbs(m3)
        rss3 = peak_rss_mib(master.pid)
        writes = {v: verbs3.get(v, 0) - verbs2.get(v, 0) for v in ("PATCH", "UPDATE", "CREATE", "DELETE")}

        print()
        print(f"nfd-master scale benchmark: {n} nodes, 100 rules, parallelism {args.parallelism}, "
              f"node watch {'off (upstream RBAC)' if args.upstream_rbac else 'on'}"
              f"{', dra: a slice of 8 GPUs per node and the DRA sample rules' if args.dra else ''}")
        cores = os.cpu_count() or 1
        writes1 = sum(verbs1.get(v, 0) for v in ("PATCH", "UPDATE"))
        writes2 = sum(verbs2.get(v, 0) - api_before.get(v, 0) for v in ("PATCH", "UPDATE"))
        print(f"  caches synced after start:           {t_sync:8.1f} s  (CPU: master {cpu_sync:.1f} s, "
              f"kube-apiserver+etcd {api_cpu_sync - api_cpu0:.1f} s)")
        written_at = "n/a" if w_first is None else f"{t_sync + w_first:.1f} s"
        print(f"  first full reconcile (after start):  {t_first_total:8.1f} s  (after sync: {t_first:.1f} s; "
              f"all written at {written_at}, the rest is the benchmark's verifying LIST)")
        print(f"  API requests, first reconcile:       {dict(sorted(verbs1.items()))}")
        print(f"  CPU until first reconcile done:      master {cpu_first:.1f} s, "
              f"kube-apiserver+etcd {api_cpu1 - api_cpu0:.1f} s (load average {os.getloadavg()[0]:.1f})")
        print(f"  kube-apiserver+etcd CPU per write:   {(api_cpu1 - api_cpu_sync) * 1000 / max(writes1, 1):8.1f} ms "
              f"(master {(cpu_first - cpu_sync) * 1000 / max(writes1, 1):.1f} ms)")
        print(f"  CPU floor of the first reconcile:    {(cpu_first + api_cpu1 - api_cpu0) / cores:8.1f} s "
              f"(all three processes' CPU over {cores} cores)")
        print(f"  rule change propagated to all nodes: {t_prop:8.1f} s  (written at "
              f"{'n/a' if w_prop is None else f'{w_prop:.1f} s'}; {writes2} writes; CPU: master "
              f"{cpu_prop - cpu_first:.1f} s, kube-apiserver+etcd {api_cpu_prop - api_cpu1:.1f} s)")
        print(f"  API requests, rule change:           "
              f"{ {k: verbs2.get(k, 0) - api_before.get(k, 0) for k in sorted(verbs2) if verbs2.get(k, 0) != api_before.get(k, 0)} }")
        print(f"  forced no-op resync:                 {t_resync:8.1f} s, writes {writes} "
              f"(noop updates {int(m3.get('nfd_master_node_noop_updates_total', 0) - m2.get('nfd_master_node_noop_updates_total', 0))})")
        print(f"  master peak RSS:                     {max(rss1, rss3):8.1f} MiB")
        if args.dra:
            dra_offline(n, rule_objs)
        master.stop()
        return 0 if sum(writes.values()) == 0 else 1
    finally:
        kube.close()


if __name__ == "__main__":
    sys.exit(main())
