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


#: With --nf-kb: the number of SR-IOV VFs of the heavy profiles (benchmarks/heavy_nodefeature.py).
HEAVY_VFS: int | None = None


def heavy_nodefeature(node: str, p: int) -> dict[str, Any]:
    from heavy_nodefeature import profile

    assert HEAVY_VFS is not None
    feats, labels = profile(p, sriov_vfs=HEAVY_VFS)
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeature",
        "metadata": {"name": node, "namespace": NS, "labels": {"nfd.node.kubernetes.io/node-name": node}},
        "spec": {
            "features": {
                "flags": feats["flags"],
                "attributes": {**feats["attributes"], "system.name": {"elements": {"nodename": node}}},
                "instances": feats["instances"],
            },
            "labels": labels,
        },
    }


def nodefeature(node: str, p: int) -> dict[str, Any]:
    if HEAVY_VFS is not None:
        return heavy_nodefeature(node, p)
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


def heavy_universe() -> tuple[list[str], list[str], dict[str, Any]]:
    """With --nf-kb: the cpuid flags and kernel config options the rules pick from (the
    profiles' own), and the taint rule's matches."""
    from heavy_nodefeature import profile

    assert HEAVY_VFS is not None
    feats = [profile(p, sriov_vfs=HEAVY_VFS)[0] for p in range(PROFILES)]
    cpuid = sorted(set().union(*(f["flags"]["cpu.cpuid"]["elements"] for f in feats)))
    kconfig = sorted(feats[0]["attributes"]["kernel.config"]["elements"])
    full0 = feats[0]["attributes"]["kernel.version"]["elements"]["full"]
    taint = dict(TAINT_MATCH, quarter={"feature": "kernel.version", "matchExpressions": {"full": {"op": "In", "value": [full0]}}})
    return cpuid, kconfig, taint


def make_rules(version: str = "v1", *, taints: str = "all") -> list[dict[str, Any]]:
    """100 rules in 10 NodeFeatureRule objects."""
    rnd = random.Random(42)
    rules: list[dict[str, Any]] = []
    cpuid_names, kconfig_names, taint_match = CPUID, [f"CONFIG_OPTION_{k}" for k in range(1000)], TAINT_MATCH
    if HEAVY_VFS is not None:
        cpuid_names, kconfig_names, taint_match = heavy_universe()
    for i in range(40):
        a, b = rnd.sample(cpuid_names, 2)
        rules.append({"name": f"cpuid-{i}", "labels": {f"cpu-combo-{i}": "true"},
                      "matchFeatures": [{"feature": "cpu.cpuid", "matchExpressions": {
                          a: {"op": "Exists"}, b: {"op": "Exists" if i % 3 else "DoesNotExist"}}}]})
    for i in range(20):
        keys = rnd.sample(range(len(kconfig_names)), 3)
        rules.append({"name": f"kconfig-{i}", "labels": {f"kconfig-{i}": "true"},
                      "matchFeatures": [{"feature": "kernel.config", "matchExpressions": {
                          kconfig_names[k]: {"op": "In", "value": ["y", "m"]} for k in keys}}]})
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
                  "matchFeatures": [taint_match[taints]]})
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
DRA_SAMPLES = ("samples/dra-nvidia-gpu.yaml", "samples/dra-dranet-nics.yaml",
               "nvidia-gpu-labels-from-dra/nvidia-gpu-labels-from-dra.yaml")


def dra_slice(node: str) -> dict[str, Any]:
    import yaml

    obj: dict[str, Any] = yaml.safe_load(DRA_FIXTURE.read_text().replace("NODE", node))
    return obj


def dra_rules() -> list[dict[str, Any]]:
    import yaml

    return [yaml.safe_load((REPO / "deploy" / "nodefeaturerule" / f).read_text()) for f in DRA_SAMPLES]


def dra_merged(p: int, *, with_dra: bool) -> Any:
    from nfd.dra.pools import DraIndex
    from nfd.dra.slices import parse_slice
    from nfd.nodestate.nodefeatures import compact_nodefeature, merge_node_features

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
    from nfd.master.config import MasterConfig, policy_config
    from nfd.nodestate.desired import desired_state
    from nfd.nodestate.rulebook import RuleBook

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
            desired_state(merged, book.ordered(), policy, node_name="x")
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
    from nfd.master.config import MasterConfig, policy_config
    from nfd.nodestate.bookkeeping import encode_names
    from nfd.nodestate.desired import desired_state
    from nfd.nodestate.nodefeatures import compact_nodefeature, merge_node_features
    from nfd.nodestate.rulebook import RuleBook

    book = RuleBook()
    for o in rule_objs:
        assert book.upsert(o) is None
    policy = policy_config(MasterConfig(enable_taints=enable_taints))
    out = {}
    for p in range(PROFILES):
        merged = merge_node_features([compact_nodefeature(nodefeature("x", p))], node_name="x", master_namespace=NS)
        if with_dra:
            merged = dra_merged(p, with_dra=True)
        desired = desired_state(merged, book.ordered(), policy, node_name="x").desired
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


NFD_LABEL_PREFIXES = ("feature.node.kubernetes.io/", "nfd.node.kubernetes.io/")


def nfd_owned(node: dict[str, Any]) -> set[str]:
    """What nfd-master owns on a Node: its labels, annotations, taints and extended resources."""
    meta = node.get("metadata") or {}
    out = {f"label {k}" for k in meta.get("labels") or {} if k.startswith(NFD_LABEL_PREFIXES)}
    out |= {f"annotation {k}" for k in meta.get("annotations") or {} if k.startswith(NFD_LABEL_PREFIXES)}
    out |= {f"taint {t.get('key')}:{t.get('effect')}" for t in (node.get("spec") or {}).get("taints") or []}
    out |= {f"resource {k}" for k in (node.get("status") or {}).get("capacity") or {}
            if k.startswith(NFD_LABEL_PREFIXES)}
    return out


class NodeWatch:
    """Every bench Node as the API server has it, kept by list+watch in a thread of the benchmark,
    and every removal of something nfd owns (label, annotation, taint, extended resource) from
    any node at any time: across master and API server restarts the count must stay 0. A
    broken watch resumes; a 410 relists, and the relist is compared with the last state too."""

    def __init__(self, kube: KubeCluster) -> None:
        import threading

        self.kube = kube
        self.nodes: dict[str, dict[str, Any]] = {}
        self.owned: dict[str, set[str]] = {}
        self.removals = 0
        self.examples: list[str] = []
        self.reconnects = 0
        self.rv = ""
        self._stop = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="node-watch", daemon=True)

    def start(self) -> None:
        self._relist()
        self._thread.start()

    def stop(self) -> None:
        self._stop = True

    def _slim(self, node: dict[str, Any]) -> dict[str, Any]:
        meta = node.get("metadata") or {}
        return {"metadata": {k: meta.get(k) for k in ("name", "labels", "annotations")},
                "spec": {"taints": (node.get("spec") or {}).get("taints")},
                "status": {"capacity": (node.get("status") or {}).get("capacity")}}

    def _update(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        if not name.startswith("bench-"):
            return
        owned = nfd_owned(node)
        with self._lock:
            gone = self.owned.get(name, set()) - owned
            if gone:
                self.removals += len(gone)
                if len(self.examples) < 10:
                    self.examples.append(f"{name}: {sorted(gone)[:3]}")
            self.owned[name] = owned
            self.nodes[name] = self._slim(node)

    def _relist(self) -> None:
        cont = None
        while True:
            page = self.kube.admin.request("GET", "/api/v1/nodes", params={"limit": 1000, "continue": cont},
                                           timeout=120)
            for n in page["items"]:
                self._update(n)
            cont = page["metadata"].get("continue")
            if not cont:
                self.rv = page["metadata"]["resourceVersion"]
                return

    def _run(self) -> None:
        import ssl

        ctx = ssl.create_default_context(cafile=self.kube.ca_file)
        while not self._stop:
            try:
                if not self.rv:
                    self._relist()
                url = (f"{self.kube.server}/api/v1/nodes?watch=1&allowWatchBookmarks=true&timeoutSeconds=240"
                       f"&resourceVersion={self.rv}")
                req = urllib.request.Request(url)
                req.add_header("Authorization", f"Bearer {self.kube.admin_token}")
                with urllib.request.urlopen(req, context=ctx, timeout=300) as resp:
                    for line in resp:
                        if self._stop:
                            return
                        ev = json.loads(line)
                        obj = ev.get("object") or {}
                        if ev.get("type") == "ERROR":
                            self.rv = ""  # 410: relist
                            break
                        rv = (obj.get("metadata") or {}).get("resourceVersion")
                        if rv:
                            self.rv = rv
                        if ev.get("type") in ("ADDED", "MODIFIED"):
                            self._update(obj)
                        elif ev.get("type") == "DELETED":
                            self._update({"metadata": {"name": obj["metadata"]["name"]}})
            except Exception:  # the API server restarting: resume
                self.reconnects += 1
                time.sleep(1.0)

    def count(self, check: Any) -> int:
        with self._lock:
            nodes = list(self.nodes.values())
        return sum(1 for n in nodes if check(n))


class RssSampler:
    """The master's VmRSS every 0.2 s (to tell the peak during the initial list from after it)."""

    def __init__(self) -> None:
        import threading

        self.pid = 0
        self.samples: list[tuple[float, int, float]] = []  # (time, pid, MiB)
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="rss", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop:
            if self.pid:
                try:
                    for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                        if line.startswith("VmRSS:"):
                            self.samples.append((time.monotonic(), self.pid, int(line.split()[1]) / 1024))
                except OSError:
                    pass
            time.sleep(0.2)

    def peak(self, pid: int, t0: float = 0.0, t1: float = float("inf")) -> float:
        return max((m for t, p, m in self.samples if p == pid and t0 <= t <= t1), default=float("nan"))

    def last(self, pid: int) -> float:
        return next((m for _t, p, m in reversed(self.samples) if p == pid), float("nan"))


def apiserver_requests(kube: KubeCluster, resource: str) -> dict[str, int]:
    """The API server's apiserver_request_total for one resource, by verb (LIST, WATCH, ...)."""
    out: dict[str, int] = {}
    for line in str(kube.request("GET", "/metrics")).splitlines():
        if not line.startswith("apiserver_request_total{") or f'resource="{resource}"' not in line:
            continue
        verb = re.search(r'verb="(\w+)"', line)
        if verb:
            out[verb.group(1)] = out.get(verb.group(1), 0) + int(float(line.rsplit(" ", 1)[1]))
    return out


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


def etcd_db_mib(kube: KubeCluster) -> float:
    """The size of etcd's database file (its backend quota is 2 GiB by default)."""
    dbs = list(Path(kube._tmp, "etcd", "data").rglob("db"))
    return sum(p.stat().st_size for p in dbs) / 2**20 if dbs else float("nan")


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


def wait_watch(watch: NodeWatch, n: int, check: Any, *, timeout: float, what: str,
               actions: list[tuple[float, str, Any]] | None = None) -> float:
    """Time until the benchmark's node watch sees every node right; ``actions`` run once each
    when that many nodes (a fraction of n) are right (a master or API server restart)."""
    t0 = time.monotonic()
    pending = sorted(actions or [], key=lambda a: a[0])
    last = -1
    while True:
        done = watch.count(check)
        if done // 500 != last // 500 or (done >= n and done != last):
            print(f"  {what}: {done}/{n} nodes right at {time.monotonic() - t0:.1f}s", flush=True)
        last = done
        while pending and done >= pending[0][0] * n:
            frac, label, fn = pending.pop(0)
            print(f"  {what}: {label} at {done}/{n} nodes right ({time.monotonic() - t0:.1f}s)", flush=True)
            fn()
        if done >= n and not pending:
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise SystemExit(f"{what}: only {done}/{n} nodes right after {timeout}s")
        time.sleep(0.5)


class Masters:
    """The master process(es) of the run: a restart stops one (SIGTERM) and starts the next on
    the same port; what the stopped ones did (requests, CPU, peak RSS) is kept."""

    def __init__(self, kube: KubeCluster, argv: list[str], kc: str, port: int, rss: RssSampler | None) -> None:
        self.kube, self.argv, self.kc, self.port, self.rss = kube, argv, kc, port, rss
        self.proc: Any = None
        self.retired_verbs: dict[str, int] = {}
        self.retired_cpu = 0.0
        self.hwm: list[float] = []
        self.syncs: list[dict[str, Any]] = []  # per start: sync time, RSS during and after the list

    def start(self, *, timeout: float) -> None:
        t0 = time.monotonic()
        self.proc = self.kube.start_process(self.argv, kubeconfig=self.kc,
                                            env={"KUBERNETES_NAMESPACE": NS, "PYTHONPATH": str(REPO)},
                                            name=f"bench-master-{len(self.syncs)}")
        if self.rss is not None:
            self.rss.pid = self.proc.pid
        self.proc.wait_log("informer caches synced", timeout=timeout)
        t1 = time.monotonic()
        time.sleep(1.0)
        sync = {"s": t1 - t0, "cpu": cpu_s(self.proc.pid), "t0": t0, "t1": t1, "pid": self.proc.pid}
        if self.rss is not None:
            sync["rss_during"] = self.rss.peak(self.proc.pid, t0, t1)
            sync["rss_after"] = self.rss.last(self.proc.pid)
        sync["hwm_at_sync"] = peak_rss_mib(self.proc.pid)
        self.syncs.append(sync)

    def stop(self) -> None:
        with_metrics = scrape(self.port)
        for k, v in api_verbs(with_metrics).items():
            self.retired_verbs[k] = self.retired_verbs.get(k, 0) + v
        self.retired_cpu += cpu_s(self.proc.pid)
        self.hwm.append(peak_rss_mib(self.proc.pid))
        self.proc.stop()

    def restart(self, *, timeout: float) -> None:
        self.stop()
        self.start(timeout=timeout)

    def total_verbs(self) -> dict[str, int]:
        out = dict(self.retired_verbs)
        for k, v in api_verbs(scrape(self.port)).items():
            out[k] = out.get(k, 0) + v
        return out

    def total_cpu(self) -> float:
        return self.retired_cpu + cpu_s(self.proc.pid)

    def peak_hwm(self) -> float:
        return max([*self.hwm, peak_rss_mib(self.proc.pid)])


#: CPU seconds of the API server processes that were restarted (their CPU still counts).
RETIRED_API_CPU = [0.0]


def api_server_cpu(kube: KubeCluster) -> float:
    """CPU seconds of kube-apiserver and etcd, the restarted API servers' included."""
    return RETIRED_API_CPU[0] + sum(cpu_s(p.pid) for p in (kube._apiserver, kube._etcd) if p is not None)


def restart_apiserver(kube: KubeCluster, log: list[str]) -> None:
    t0 = time.monotonic()
    if kube._apiserver is not None:
        RETIRED_API_CPU[0] += cpu_s(kube._apiserver.pid)
    kube.stop_apiserver()
    kube.start_apiserver(timeout=900)
    log.append(f"API server restarted (etcd kept): ready again after {time.monotonic() - t0:.1f} s")
    print(f"  {log[-1]}", flush=True)


def allow_master_to_watch_nodes(kube: KubeCluster) -> None:
    """Our ClusterRole plus nodes/watch for nfd-master's ServiceAccount (upstream's has no watch)."""
    kube.apply_objects([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "nfd-master-watch-nodes"},
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "nfd-master-watch-nodes"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "nfd-master-watch-nodes"},
         "subjects": [{"kind": "ServiceAccount", "name": "nfd-master", "namespace": NS}]},
    ])


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
    ap.add_argument("--nf-kb", type=float, default=None,
                    help="realistic heavy NodeFeatures of about this size (benchmarks/heavy_nodefeature.py; "
                         "upstream's default is ~130 kB) instead of the ~31 kB synthetic ones")
    ap.add_argument("--restart-master-at", type=float, default=None, metavar="FRACTION",
                    help="restart nfd-master (SIGTERM, a new process) when this share of nodes is right "
                         "in the first pass")
    ap.add_argument("--restart-apiserver-at", type=float, default=None, metavar="FRACTION",
                    help="restart kube-apiserver (etcd kept) when this share of nodes is right in the first pass")
    ap.add_argument("--restarts-after", action="store_true",
                    help="after the first pass, restart the master, then the API server: no writes expected")
    ap.add_argument("--no-watch-list", action="store_true",
                    help="kube-apiserver with --feature-gates=WatchList=false: the master's informers list in pages")
    ap.add_argument("--informer-page-size", type=int, default=None,
                    help="the master's informerPageSize (paginated LISTs; default: the master's)")
    ap.add_argument("--gc-only", action="store_true", help="no nfd-master: the objects, then nfd-gc (with --gc-objects)")
    ap.add_argument("--gc-objects", type=int, default=0,
                    help="then nfd-gc: this many stale objects (half NodeFeatures, half NRTs) to delete")
    args = ap.parse_args()
    n = args.nodes
    global HEAVY_VFS
    if args.nf_kb:
        sys.path.insert(0, str(REPO / "benchmarks"))
        from heavy_nodefeature import BASES, size_kb, vfs_for

        HEAVY_VFS = vfs_for(args.nf_kb, PROFILES)
        sizes = [size_kb(p, sriov_vfs=HEAVY_VFS) for p in range(PROFILES)]
        print(f"heavy NodeFeatures: {HEAVY_VFS} SR-IOV VFs per profile; "
              + ", ".join(f"{BASES[p]} {sizes[p]:.0f} kB" for p in range(PROFILES)), flush=True)
    if args.dra_offline:
        print(f"dra source, offline, {n} nodes:")
        dra_offline(n, make_rules("v1", taints=args.taints) + dra_rules())
        return 0

    from nfd.master.config import MasterConfig
    from nfd.nodestate.bookkeeping import FEATURE_LABELS

    watching = bool(args.nf_kb or args.restart_master_at is not None or args.restart_apiserver_at is not None
                    or args.restarts_after)
    rule_objs = make_rules("v1", taints=args.taints) + (dra_rules() if args.dra else [])
    expected = expected_annotations(rule_objs, enable_taints=True, with_dra=args.dra)
    tmp = Path(tempfile.mkdtemp(prefix="nfd-bench-master-"))
    print(f"starting kube-apiserver + etcd in {tmp}", flush=True)
    if args.no_watch_list:
        os.environ["NFD_TEST_APISERVER_ARGS"] = (os.environ.get("NFD_TEST_APISERVER_ARGS", "")
                                                 + " --feature-gates=WatchList=false").strip()
    kube = KubeCluster.start(binary=ensure_built(), tmpdir=tmp)
    watch: NodeWatch | None = None
    try:
        kube.apply_manifest_dir(REPO / "deploy" / "base" / "rbac")
        if not args.upstream_rbac:
            allow_master_to_watch_nodes(kube)
        asyncio.run(populate(kube, n, rule_objs, with_dra=args.dra))
        conf = tmp / "nfd-master.conf"
        page_size = args.informer_page_size if args.informer_page_size is not None else MasterConfig().informer_page_size
        conf.write_text("enableTaints: true\nresyncPeriod: 0\n"
                        + (f"informerPageSize: {args.informer_page_size}\n" if args.informer_page_size is not None else ""))
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
        if args.gc_only:
            gc_bench(kube, n, args.gc_objects, RssSampler())
            return 0
        if watching:
            watch = NodeWatch(kube)
            watch.start()
        rss = RssSampler() if watching else None
        masters = Masters(kube, argv, kc, port, rss)
        nf_requests0 = apiserver_requests(kube, "nodefeatures")
        api_cpu0 = api_server_cpu(kube)
        t_start = time.monotonic()
        masters.start(timeout=args.timeout)
        master = masters.proc
        t_sync = masters.syncs[0]["s"]
        masters_log0 = [masters.proc.logs()]
        cpu_sync = masters.syncs[0]["cpu"]
        nf_requests1 = apiserver_requests(kube, "nodefeatures")
        api_cpu_sync = api_server_cpu(kube)
        events: list[str] = []
        actions: list[tuple[float, str, Any]] = []
        if args.restart_master_at is not None:
            actions.append((args.restart_master_at, "restarting nfd-master",
                            lambda: masters.restart(timeout=args.timeout)))
        if args.restart_apiserver_at is not None:
            actions.append((args.restart_apiserver_at, "restarting kube-apiserver",
                            lambda: restart_apiserver(kube, events)))
        if watch is not None:
            t_first = wait_watch(watch, n, initial_ok, timeout=args.timeout, what="first pass", actions=actions)
            w_first = None
            done, total = count_done(kube, initial_ok)  # verified by a LIST too
            if done < n:
                raise SystemExit(f"first pass: the watch saw every node right, a LIST finds {done}/{total}")
            t_first_total = time.monotonic() - t_start
            t_first = t_first_total - t_sync
        else:
            t_first, w_first = wait_all(kube, n, initial_ok, port=port, updates_before=0.0, timeout=args.timeout,
                                        what="first reconcile")
            t_first_total = time.monotonic() - t_start
        time.sleep(2.0)
        master = masters.proc
        verbs1 = masters.total_verbs()
        rss1 = masters.peak_hwm()
        cpu_first = masters.total_cpu()
        api_cpu1 = api_server_cpu(kube)
        after_restarts: list[str] = []
        if args.restarts_after:
            # a master restart with every node right: it must write nothing
            before = masters.total_verbs()
            masters.restart(timeout=args.timeout)
            req0 = 0.0
            t0 = time.monotonic()
            while scrape(port).get("nfd_master_node_update_requests_total", 0.0) < req0 + n:
                if time.monotonic() - t0 > args.timeout:
                    raise SystemExit("restarted master did not go through every node")
                time.sleep(0.5)
            time.sleep(2.0)
            after = masters.total_verbs()
            w = {v: after.get(v, 0) - before.get(v, 0) for v in ("PATCH", "UPDATE") if after.get(v, 0) != before.get(v, 0)}
            after_restarts.append(f"master restart after the first pass: synced in {masters.syncs[-1]['s']:.1f} s, "
                                  f"every node gone through in {time.monotonic() - t0:.1f} s after it, writes {w or 0}")
            print(f"  {after_restarts[-1]}", flush=True)
            before = after
            restart_apiserver(kube, after_restarts)
            t0 = time.monotonic()
            while time.monotonic() - t0 < 30.0:  # the master's watches resume
                time.sleep(1.0)
            after = masters.total_verbs()
            w = {v: after.get(v, 0) - before.get(v, 0) for v in ("PATCH", "UPDATE") if after.get(v, 0) != before.get(v, 0)}
            after_restarts.append(f"API server restart after the first pass: writes in the 30 s after it {w or 0}")
            print(f"  {after_restarts[-1]}", flush=True)
            done, _ = count_done(kube, initial_ok)
            after_restarts.append(f"nodes right after both restarts (LIST): {done}/{n}")
        master = masters.proc
        m1 = scrape(port)
        cur1 = api_verbs(m1)
        cpu_cur1 = cpu_s(master.pid)
        api_cpu_cur1 = api_server_cpu(kube)

        # a changed rule, to every node
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
        api_cpu_prop = api_server_cpu(kube)

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
        rss3 = masters.peak_hwm()
        writes = {v: verbs3.get(v, 0) - verbs2.get(v, 0) for v in ("PATCH", "UPDATE", "CREATE", "DELETE")}

        print()
        size = len(json.dumps(nodefeature("bench-00000", 0))) // 1024
        print(f"nfd-master scale benchmark: {n} nodes, 100 rules, parallelism {args.parallelism}, "
              f"node watch {'off (upstream RBAC)' if args.upstream_rbac else 'on'}"
              f"{', dra: a slice of 8 GPUs per node and the DRA sample rules' if args.dra else ''}"
              f"{f', heavy NodeFeatures ~{args.nf_kb:.0f} kB (profile 0: {size} kB)' if args.nf_kb else ''}")
        cores = os.cpu_count() or 1
        writes1 = sum(verbs1.get(v, 0) for v in ("PATCH", "UPDATE"))
        writes2 = sum(verbs2.get(v, 0) - cur1.get(v, 0) for v in ("PATCH", "UPDATE"))
        print(f"  caches synced after start:           {t_sync:8.1f} s  (CPU: master {cpu_sync:.1f} s, "
              f"kube-apiserver+etcd {api_cpu_sync - api_cpu0:.1f} s)")
        # apiserver_request_total counts a WATCH when it ends: a streaming list shows as no LIST
        lists = nf_requests1.get("LIST", 0) - nf_requests0.get("LIST", 0)
        refused = "streaming list refused" in masters_log0[0] or "no streaming lists" in masters_log0[0]
        how = (f"paginated LISTs of at most {page_size} (informerPageSize; pages of about 4 MB)" if lists or refused else
               f"WatchList: a streaming list (watch with sendInitialEvents), no paging (informerPageSize {page_size} "
               "is for paginated LISTs only)")
        print(f"  initial NodeFeature list:            {how}; the API server served {lists} NodeFeature LISTs")
        if rss is not None:
            s0 = masters.syncs[0]
            print(f"  master RSS during the initial list:  {s0['rss_during']:8.1f} MiB peak (sampled every 0.2 s), "
                  f"{s0['rss_after']:.1f} MiB after it, VmHWM at sync {s0['hwm_at_sync']:.1f} MiB")
        written_at = "n/a" if w_first is None else f"{t_sync + w_first:.1f} s"
        print(f"  first full reconcile (after start):  {t_first_total:8.1f} s  (after sync: {t_first:.1f} s; "
              f"all written at {written_at}, the rest is the benchmark's verifying LIST)")
        for ev in events:
            print(f"    during it: {ev}")
        for k, sy in enumerate(masters.syncs[1:len(masters.syncs) - (1 if args.restarts_after else 0)], 1):
            print(f"    during it: master restart #{k}: caches synced in {sy['s']:.1f} s, RSS during the list "
                  f"{sy.get('rss_during', float('nan')):.1f} MiB, after {sy.get('rss_after', float('nan')):.1f} MiB")
        print(f"  API requests, first reconcile:       {dict(sorted(verbs1.items()))}")
        print(f"  CPU until first reconcile done:      master {cpu_first:.1f} s, "
              f"kube-apiserver+etcd {api_cpu1 - api_cpu0:.1f} s (load average {os.getloadavg()[0]:.1f})")
        print(f"  kube-apiserver+etcd CPU per write:   {(api_cpu1 - api_cpu_sync) * 1000 / max(writes1, 1):8.1f} ms "
              f"(master {(cpu_first - cpu_sync) * 1000 / max(writes1, 1):.1f} ms after the sync; "
              f"{cpu_first * 1000 / max(writes1, 1):.1f} ms with the initial list{', all master processes' if len(masters.syncs) > 1 else ''})")
        print(f"  CPU floor of the first reconcile:    {(cpu_first + api_cpu1 - api_cpu0) / cores:8.1f} s "
              f"(all three processes' CPU over {cores} cores)")
        for line in after_restarts:
            print(f"  {line}")
        print(f"  rule change propagated to all nodes: {t_prop:8.1f} s  (written at "
              f"{'n/a' if w_prop is None else f'{w_prop:.1f} s'}; {writes2} writes; CPU: master "
              f"{cpu_prop - cpu_cur1:.1f} s ({(cpu_prop - cpu_cur1) * 1000 / max(writes2, 1):.1f} ms per write), "
              f"kube-apiserver+etcd {api_cpu_prop - api_cpu_cur1:.1f} s)")
        print(f"  API requests, rule change:           "
              f"{ {k: verbs2.get(k, 0) - cur1.get(k, 0) for k in sorted(verbs2) if verbs2.get(k, 0) != cur1.get(k, 0)} }")
        print(f"  forced no-op resync:                 {t_resync:8.1f} s, writes {writes} "
              f"(noop updates {int(m3.get('nfd_master_node_noop_updates_total', 0) - m2.get('nfd_master_node_noop_updates_total', 0))})")
        print(f"  master peak RSS:                     {max(rss1, rss3):8.1f} MiB"
              + (f" (per process: {', '.join(f'{h:.0f}' for h in [*masters.hwm, peak_rss_mib(master.pid)])} MiB)"
                 if len(masters.syncs) > 1 else ""))
        servers = {name: peak_rss_mib(proc.pid) for name, proc in (("kube-apiserver", kube._apiserver), ("etcd", kube._etcd))
                   if proc is not None}
        print("  API server peak RSS:                 "
              + ", ".join(f"{name} {mib:.0f} MiB" for name, mib in servers.items())
              + f" (etcd database {etcd_db_mib(kube):.0f} MiB)")
        ok = sum(writes.values()) == 0
        if watch is not None:
            print(f"  nfd-owned keys removed from nodes:   {watch.removals:8d}  (labels, annotations, taints, extended "
                  f"resources; the benchmark's node watch, {watch.reconnects} reconnects)"
                  + (f" e.g. {watch.examples}" if watch.examples else ""))
            ok = ok and watch.removals == 0
        if args.dra:
            dra_offline(n, rule_objs)
        masters.stop()
        if args.gc_objects:
            gc_bench(kube, n, args.gc_objects, rss or RssSampler())
            if watch is not None:
                print(f"  nfd-owned keys removed from nodes, at the end: {watch.removals}")
                ok = ok and watch.removals == 0
        return 0 if ok else 1
    finally:
        if watch is not None:
            watch.stop()
        kube.close()


def gc_bench(kube: KubeCluster, n: int, objects: int, rss: RssSampler) -> None:
    """nfd-gc on the same API server: ``objects`` stale objects (half NodeFeatures of nodes that
    do not exist, half NRTs) beside the n live nodes' NodeFeatures; nfd-gc lists metadata only
    (PartialObjectMetadataList), so the size of the NodeFeatures must not show in its RSS."""
    from nfd.k8s.resources import NODERESOURCETOPOLOGIES

    half = objects // 2

    async def make() -> None:
        api = await ApiClient.from_kubeconfig(kube.kubeconfig, qps=0, burst=1)

        async def nf(i: int) -> None:
            name = f"gone-{i:05d}"
            try:
                await create(api, NODEFEATURES, namespace=NS, body={
                    "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
                    "metadata": {"name": name, "namespace": NS, "labels": {"nfd.node.kubernetes.io/node-name": name}},
                    "spec": {"labels": {"feature.node.kubernetes.io/gone": "true"}}})
            except AlreadyExists:
                pass

        async def nrt(i: int) -> None:
            try:
                await create(api, NODERESOURCETOPOLOGIES, body={
                    "apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
                    "metadata": {"name": f"gone-{i:05d}"}, "zones": []})
            except AlreadyExists:
                pass

        await bulk([nf(i) for i in range(half)], what="stale NodeFeatures")
        await bulk([nrt(i) for i in range(objects - half)], what="stale NRTs")
        await api.close()

    t0 = time.monotonic()
    asyncio.run(make())
    print(f"\nnfd-gc: created {objects} stale objects in {time.monotonic() - t0:.1f} s "
          f"({n} live nodes keep their NodeFeatures)", flush=True)
    from tests.e2e.harness import free_port

    gport = free_port()
    # -v=2: the debug line that ends a pass with nothing stale ("listed N NodeResourceTopology objects")
    argv = ["nfd-gc", f"-port={gport}", "-gc-interval=1h", "-kube-api-qps=0", "-v=2"]
    t0 = time.monotonic()
    gc = kube.start_process(argv, kubeconfig=kube.kubeconfig, name="bench-gc", env={"PYTHONPATH": str(REPO)})
    rss.pid = gc.pid
    deleted = 0.0
    while deleted < objects:
        try:
            m = scrape(gport)
            deleted = sum(v for k, v in m.items() if k.startswith("nfd_gc_objects_deleted_total"))
        except OSError:
            pass
        if time.monotonic() - t0 > 1800:
            raise SystemExit(f"nfd-gc deleted only {deleted}/{objects} in 1800 s")
        time.sleep(0.5)
    t_first = time.monotonic() - t0
    hwm1, peak1 = peak_rss_mib(gc.pid), rss.peak(gc.pid)
    gc.stop()
    # a pass with nothing stale: a fresh process (its initial pass lists both kinds, deletes nothing)
    t0 = time.monotonic()
    gc2 = kube.start_process(argv, kubeconfig=kube.kubeconfig, name="bench-gc-2", env={"PYTHONPATH": str(REPO)})
    rss.pid = gc2.pid
    gc2.wait_log("NodeResourceTopology objects", timeout=600)
    t_steady = time.monotonic() - t0
    time.sleep(1.0)
    hwm2 = peak_rss_mib(gc2.pid)
    accept = "PartialObjectMetadataList" in __import__("nfd.k8s.fetching", fromlist=["METADATA_LIST"]).METADATA_LIST
    gc2.stop()
    print(f"nfd-gc, {n} nodes, {n} live NodeFeatures (~{len(json.dumps(nodefeature('bench-00000', 0))) // 1024} kB "
          f"each), {objects} stale objects (metadata-only lists: {accept}):")
    print(f"  first pass (start, node sync, lists, {objects} deletes): {t_first:8.1f} s, peak RSS {hwm1:.1f} MiB "
          f"(VmHWM; sampled peak {peak1:.1f} MiB)")
    print(f"  pass with nothing stale (process start to both lists done): {t_steady:8.1f} s, "
          f"peak RSS {hwm2:.1f} MiB")


if __name__ == "__main__":
    sys.exit(main())
