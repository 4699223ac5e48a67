#!/usr/bin/env python3
"""``kubectl nfd test -A`` of two checkouts against one e2e cluster (issue #48's differential run
of the fleet preview): the same random cases as scripts/differential_nodestate.py, put into a
kube-apiserver of the e2e harness (Nodes with labels, bookkeeping annotations, taints and
capacity; their NodeFeatures; half the rule objects and the groups with a status), then the
plugin of each checkout run on the file holding the other half, as JSON and as text.

    python scripts/differential_fleet_e2e.py --cases 40 --seed 1 --root OTHER_CHECKOUT --root .

Exit status 0 when every checkout printed the same, 1 otherwise (the first difference shown).
Needs the harness's control plane (``python -m tests.e2e.build``); wrap it in the e2e lock.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from differential_nodestate import NS, _load_corpus, _rule_objs, make_case  # noqa: E402

from tests.e2e.build import ensure_built  # noqa: E402
from tests.e2e.harness import HttpError, KubeCluster  # noqa: E402


def _create(kube: KubeCluster, path: str, body: dict[str, Any], skipped: list[str]) -> dict[str, Any] | None:
    try:
        out: dict[str, Any] = kube.request("POST", path, body=body)
        return out
    except HttpError as e:  # a corpus object the API server refuses: left out, named
        skipped.append(f"{body.get('kind')} {(body.get('metadata') or {}).get('name')}: {e.status}")
        return None


def populate(kube: KubeCluster, cases: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The cluster's objects; returns the file's objects and what the API server refused."""
    skipped: list[str] = []
    for ns in (NS, "other"):
        kube.create_namespace(ns, exist_ok=True)
    file_objs: list[dict[str, Any]] = []
    api = "/apis/nfd.k8s-sigs.io/v1alpha1"
    for c in cases:
        n = c["node_obj"]
        meta = n["metadata"]
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": meta["name"], "labels": meta["labels"], "annotations": meta["annotations"]},
                "spec": n.get("spec") or {}}
        if _create(kube, "/api/v1/nodes", node, skipped) is not None and n.get("status"):
            kube.request("PATCH", f"/api/v1/nodes/{meta['name']}/status", body={"status": n["status"]},
                         content_type="application/merge-patch+json")
        for o in c["nodefeatures"]:
            o = copy.deepcopy(o)
            m = o["metadata"]
            if m["name"] != c["node"]:  # third-party objects: one per node
                m["name"] = f"{m['name']}-{c['node']}".lower()
            _create(kube, f"{api}/namespaces/{m['namespace']}/nodefeatures", o, skipped)
        for o in _rule_objs(c["rule_sets"]):
            o["metadata"]["name"] = f"{c['node']}-{o['metadata']['name']}".lower()  # one per case
            if c["cluster_split"] < 0.5:
                _create(kube, f"{api}/nodefeaturerules", o, skipped)
            else:
                file_objs.append(o)
        for k, g in enumerate(c["groups"]):
            g = copy.deepcopy(g)
            g["metadata"] = {"name": f"{c['node']}-g{k}", "namespace": NS}
            if k % 2:
                got = _create(kube, f"{api}/namespaces/{NS}/nodefeaturegroups", g, skipped)
                if got is not None:
                    got["status"] = {"nodes": [{"name": c["node"]}], "nodeCount": 1}
                    kube.request("PUT", f"{api}/namespaces/{NS}/nodefeaturegroups/{g['metadata']['name']}/status",
                                 body=got)
            file_objs.append(g)
    return file_objs, skipped


def run_plugin(root: str, rules_file: str, kubeconfig: str, policy: dict[str, Any]) -> dict[str, Any]:
    extra = ["--enable-taints"] if policy.get("enableTaints") else []
    out = {}
    for fmt in ("json", "text"):
        argv = [sys.executable, "-m", "nfd.cli.kubectl_nfd", "test", "-A", "-f", rules_file, "-k", kubeconfig,
                "-s", NS, "-o", fmt, "--show-nodes", *extra]
        p = subprocess.run(argv, capture_output=True, text=True, cwd=root, timeout=600,
                           env=dict(os.environ, PYTHONPATH=root, PYTHONHASHSEED="0"))
        out[fmt] = {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--root", action="append", required=True, help="a checkout (give two or more)")
    args = ap.parse_args()
    rule_cases, group_cases = _load_corpus(ROOT)
    rng = random.Random(args.seed)
    cases = [make_case(rng, i, rule_cases, group_cases) for i in range(args.cases)]
    kube = KubeCluster.start(binary=ensure_built(log=lambda _: None))
    try:
        file_objs, skipped = populate(kube, cases)
        with tempfile.TemporaryDirectory() as tmp:
            rules_file = Path(tmp) / "rules.yaml"
            rules_file.write_text("\n---\n".join(json.dumps(o) for o in file_objs), encoding="utf-8")
            outs = [run_plugin(os.path.abspath(r), str(rules_file), kube.kubeconfig, cases[0]["policy"])
                    for r in args.root]
    finally:
        kube.close()
    first = outs[0]
    nodes = json.loads(first["json"]["stdout"] or "{}").get("nodes")
    print(f"{args.cases} cases, {nodes} nodes, {len(file_objs)} objects in the file, "
          f"{len(skipped)} objects the API server refused")
    same = all(o == first for o in outs[1:])
    for r, o in zip(args.root[1:], outs[1:], strict=True):
        for fmt in ("json", "text"):
            if o[fmt] != first[fmt]:
                print(f"{r}: {fmt} differs from {args.root[0]}:\n{json.dumps(o[fmt])[:2000]}\n--- vs ---\n"
                      f"{json.dumps(first[fmt])[:2000]}")
    print("identical" if same else "DIFFERENT", {fmt: (first[fmt]["rc"], len(first[fmt]["stdout"])) for fmt in first})
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
