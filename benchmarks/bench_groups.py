"""NodeFeatureGroup status at fleet scale on the real kube-apiserver (the e2e harness's etcd +
apiserver), nfd-master as its own process under its ServiceAccount.

Creates N Nodes and one minimal NodeFeature per node (two features, ~0.5 kB), starts nfd-master
with NodeFeatureGroupAPI, then for each case creates one group (in a namespace other than the
master's), waits for its status and prints: time from creation to status, the status request's
body, the object as stored (its managedFields included), and master and kube-apiserver+etcd
CPU; then the cost of one membership change (one node leaves: the whole status is rewritten).

Cases: ``CountOnly`` over all N nodes; ``Full`` over all N (past etcd's object size limit the
master refuses it: the time to that log line is printed); ``Full`` over the largest share of the
nodes (in percent) whose list fits, when not all of them do.

Run: ``python benchmarks/bench_groups.py [--nodes 20000] [--name-length 40] [--probe]``
(``--probe``: then write ever longer status lists by hand to find where the API server itself
refuses one, and how.)
Node names are padded to ``--name-length`` characters (40: about an EC2 internal DNS name).
The machine's cores are shared by kube-apiserver, etcd and the master.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_master_scale import bulk, cpu_s, peak_rss_mib, settle  # noqa: E402
from nfd.k8s.client import ApiClient  # noqa: E402
from nfd.k8s.creating import create  # noqa: E402
from nfd.k8s.errors import AlreadyExists  # noqa: E402
from nfd.k8s.resources import NODEFEATURES, NODES  # noqa: E402
from nfd.master import groupstatus  # noqa: E402
from tests.e2e.build import ensure_built  # noqa: E402
from tests.e2e.harness import KubeCluster, free_port  # noqa: E402

NS = "node-feature-discovery"
GROUP_NS = "fleet"
NFD = "/apis/nfd.k8s-sigs.io/v1alpha1"


def node_name(i: int, length: int) -> str:
    base = f"bench-{i:05d}"
    return base + ("." + "x" * length)[: max(0, length - len(base))]


def nodefeature(node: str, i: int, *, member: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
        "metadata": {"name": node, "namespace": NS, "labels": {"nfd.node.kubernetes.io/node-name": node}},
        "spec": {"features": {
            "flags": {"bench.member": {"elements": {"yes" if member else "no": {}}}},
            "attributes": {"bench.node": {"elements": {"percentile": str(i % 100)}}},
            "instances": {}}, "labels": {}},
    }


def group(name: str, policy: str, below: int) -> dict[str, Any]:
    """Nodes flagged bench.member=yes whose percentile is below ``below``."""
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureGroup",
            "metadata": {"name": name, "namespace": GROUP_NS},
            "spec": {"materializePolicy": policy, "featureGroupRules": [{"name": "members", "matchFeatures": [
                {"feature": "bench.member", "matchExpressions": {"yes": {"op": "Exists"}}},
                {"feature": "bench.node", "matchExpressions": {"percentile": {"op": "Lt", "value": [str(below)]}}},
            ]}]}}


async def populate(kube: KubeCluster, names: list[str]) -> None:
    api = await ApiClient.from_kubeconfig(kube.kubeconfig, qps=0, burst=1)

    async def mk_node(name: str) -> None:
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
        try:
            await create(api, NODES, body=body)
        except AlreadyExists:
            pass

    async def mk_nf(i: int, name: str) -> None:
        try:
            await create(api, NODEFEATURES, body=nodefeature(name, i), namespace=NS)
        except AlreadyExists:
            pass

    t0 = time.monotonic()
    await bulk([mk_node(n) for n in names], what="nodes", parallel=48)
    await bulk([mk_nf(i, n) for i, n in enumerate(names)], what="NodeFeatures", parallel=48)
    print(f"created {len(names)} nodes and NodeFeatures (~{len(json.dumps(nodefeature(names[0], 0)))} B each) "
          f"in {time.monotonic() - t0:.0f}s", flush=True)
    await api.close()


def status_of(kube: KubeCluster, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    obj: dict[str, Any] = kube.get(f"{NFD}/namespaces/{GROUP_NS}/nodefeaturegroups/{name}")
    return obj, obj.get("status") or {}


def wait(cond: Any, *, timeout: float, what: str) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond():
            return time.monotonic() - t0
        time.sleep(0.05)
    raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what}")


def probe(kube: KubeCluster, names: list[str]) -> None:
    """Status lists of growing length written by hand to a group that matches no node: the
    largest the server stores and its answer to the first it refuses."""
    from tests.e2e.harness import HttpError

    kube.request("POST", f"{NFD}/namespaces/{GROUP_NS}/nodefeaturegroups", body=group("probe", "Full", 0))
    wait(lambda: status_of(kube, "probe")[1].get("nodeCount") == 0, timeout=60, what="probe status")
    ok, count, stored = 0, 1000, 0
    while count <= len(names):
        obj, _ = status_of(kube, "probe")
        obj["status"] = {"nodes": [{"name": x} for x in names[:count]], "nodeCount": count}
        obj["metadata"].pop("managedFields", None)
        try:
            kube.request("PUT", f"{NFD}/namespaces/{GROUP_NS}/nodefeaturegroups/probe/status", body=obj)
        except HttpError as e:
            print(f"  server refused a status of {count} names ({len(json.dumps(obj))} B body): "
                  f"{e.status} {str(e)[:160]}")
            break
        stored = len(json.dumps(status_of(kube, "probe")[0], separators=(",", ":")))
        ok = count
        count += 500
    print(f"  largest status the server stored: {ok} names (stored object {stored} B)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=20000)
    ap.add_argument("--name-length", type=int, default=40)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--probe", action="store_true",
                    help="then find where the API server itself refuses a status list (admin writes)")
    args = ap.parse_args()
    n = args.nodes
    names = [node_name(i, args.name_length) for i in range(n)]
    tmp = Path(tempfile.mkdtemp(prefix="nfd-bench-groups-"))
    print(f"starting kube-apiserver + etcd in {tmp}", flush=True)
    kube = KubeCluster.start(binary=ensure_built(), tmpdir=tmp)
    try:
        kube.apply_manifest_dir(REPO / "deploy" / "base" / "rbac")
        kube.create_namespace(GROUP_NS, exist_ok=True)
        asyncio.run(populate(kube, names))
        server_pids = [p.pid for p in (kube._apiserver, kube._etcd) if p is not None]
        settle(server_pids)
        conf = tmp / "nfd-master.conf"
        conf.write_text("resyncPeriod: 0\n")
        kc = kube.serviceaccount_kubeconfig(NS, "nfd-master", expiration_s=86400)
        argv = [*os.environ.get("BENCH_MASTER_CMD", "nfd-master").split(), f"-port={free_port()}",
                f"-config={conf}", "-feature-gates=NodeFeatureGroupAPI=true"]
        t0 = time.monotonic()
        master = kube.start_process(argv, kubeconfig=kc, env={"KUBERNETES_NAMESPACE": NS}, name="bench-master")
        master.wait_log("informer caches synced", timeout=args.timeout)
        print(f"master caches synced in {time.monotonic() - t0:.1f}s", flush=True)
        settle([master.pid, *server_pids])

        per_entry = len('{"name":""},') + args.name_length
        fit_pct = min(100, int((groupstatus.STATUS_SIZE_LIMIT - 4096) / per_entry * 100 / n))
        cases = [("count-all", "CountOnly", 100), ("full-all", "Full", 100)]
        if fit_pct < 100:
            cases.append(("full-fit", "Full", fit_pct))
        rows = []
        for name, policy, below in cases:
            want = sum(1 for i in range(n) if i % 100 < below)
            c_m, c_a = cpu_s(master.pid), sum(cpu_s(p) for p in server_pids)
            log_at = len(master.logs())
            kube.request("POST", f"{NFD}/namespaces/{GROUP_NS}/nodefeaturegroups", body=group(name, policy, below))
            refused = False
            if policy == "Full" and want * per_entry > groupstatus.STATUS_SIZE_LIMIT:
                t = wait(lambda: "over the" in master.logs()[log_at:], timeout=args.timeout,  # noqa: B023
                         what=f"{name} refusal")
                refused = True
            else:
                t = wait(lambda: status_of(kube, name)[1].get("nodeCount") == want, timeout=args.timeout,  # noqa: B023
                         what=f"{name} status")
            d_m, d_a = cpu_s(master.pid) - c_m, sum(cpu_s(p) for p in server_pids) - c_a
            obj, st = status_of(kube, name)
            body = dict(obj, metadata={k: v for k, v in obj["metadata"].items() if k != "managedFields"})
            est = groupstatus.estimated_size(body) if st else 0
            row = {"case": f"{name} ({policy}, {want} members)", "t": t, "master": d_m, "api": d_a,
                   "body": 0 if refused else len(json.dumps(body, separators=(",", ":"))),
                   "stored": len(json.dumps(obj, separators=(",", ":"))), "estimated": est, "refused": refused}
            if refused:
                line = next(x for x in master.logs()[log_at:].splitlines() if "over the" in x)
                row["line"] = line.strip()
                assert not st, st
            else:
                # one node leaves the group: the status is recomputed and rewritten
                c_m, c_a = cpu_s(master.pid), sum(cpu_s(p) for p in server_pids)
                cur = kube.get(f"{NFD}/namespaces/{NS}/nodefeatures/{names[0]}")
                upd = nodefeature(names[0], 0, member=False)
                upd["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
                kube.request("PUT", f"{NFD}/namespaces/{NS}/nodefeatures/{names[0]}", body=upd)
                row["t_change"] = wait(lambda: status_of(kube, name)[1].get("nodeCount") == want - 1,  # noqa: B023
                                       timeout=args.timeout, what=f"{name} after a change")
                row["master_change"] = cpu_s(master.pid) - c_m
                row["api_change"] = sum(cpu_s(p) for p in server_pids) - c_a
                cur = kube.get(f"{NFD}/namespaces/{NS}/nodefeatures/{names[0]}")
                upd = nodefeature(names[0], 0)
                upd["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
                kube.request("PUT", f"{NFD}/namespaces/{NS}/nodefeatures/{names[0]}", body=upd)
                wait(lambda: status_of(kube, name)[1].get("nodeCount") == want, timeout=args.timeout,  # noqa: B023
                     what=f"{name} back")
            rows.append(row)
            kube.request("DELETE", f"{NFD}/namespaces/{GROUP_NS}/nodefeaturegroups/{name}")
            print(f"  done: {row}", flush=True)
            settle([master.pid, *server_pids])

        print(f"\nNodeFeatureGroup status, {n} nodes, names of {args.name_length} characters, "
              f"size limit {groupstatus.STATUS_SIZE_LIMIT} B ({os.cpu_count()} cores shared):")
        for r in rows:
            print(f"  {r['case']}:")
            if r["refused"]:
                print(f"    refused after {r['t']:.2f}s (master CPU {r['master']:.2f}s, "
                      f"kube-apiserver+etcd {r['api']:.2f}s); nothing written, stored object {r['stored']} B")
                print(f"    log: {r['line']}")
                continue
            print(f"    created -> status: {r['t']:.2f}s, request body {r['body']} B, stored object {r['stored']} B "
                  f"(without managedFields {r['estimated']} B)")
            print(f"    CPU: master {r['master']:.2f}s, kube-apiserver+etcd {r['api']:.2f}s")
            print(f"    one member leaves -> status: {r['t_change']:.2f}s (CPU: master {r['master_change']:.2f}s, "
                  f"kube-apiserver+etcd {r['api_change']:.2f}s)")
        print(f"  master peak RSS: {peak_rss_mib(master.pid):.0f} MiB")
        if args.probe:
            probe(kube, names)
        master.stop()
        return 0
    finally:
        kube.close()


if __name__ == "__main__":
    sys.exit(main())
