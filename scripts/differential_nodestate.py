#!/usr/bin/env python3
"""A node's way to its desired state, before and after a refactoring: one canonical JSON line per
random case, to be compared between two checkouts (issue #48's differential run).

    python scripts/differential_nodestate.py --cases 500 --seed 1 > after.jsonl
    (in the other checkout, the same command)                     > before.jsonl
    cmp before.jsonl after.jsonl

Each case is drawn (seeded) from the rule corpus (tests/unit/rules/corpus/cases: its rule sets,
its NodeFeatures and features, its master policies and groups), with a random master policy and
a random Node as it stands now (owned and foreign labels, bookkeeping annotations, taints,
extended resources). For each case it records:

- ``master``: the master's path: the compacted NodeFeatures merged, the desired state and the
  node report (rule errors, rejections, outputs, budgets), and the plan against the Node with and
  without skip-removal (every patch op, the taints patch, the changes);
- ``dryrun``: ``nfd rules dryrun`` (JSON, text or ``--raw``) with its exit status and stderr;
- ``kubectl``: ``kubectl nfd dryrun`` on the case's first rule object;
- every ``--fleet`` cases: ``kubectl nfd test -A``'s report over those cases' nodes (the
  cluster's rules and the file's, the file's groups against a status), as JSON and as text.

It imports the names of either layout (before: nfd.master.pipeline etc., after: nfd.nodestate),
so the same file runs in both checkouts: run it with the other checkout first on PYTHONPATH.
It runs under PYTHONHASHSEED=0 (it restarts itself so): some messages name the first of a set's
elements that fails, and which is first depends on the string hash.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CASES = Path("tests/unit/rules/corpus/cases")
NS = "node-feature-discovery"
NF_API = "nfd.k8s-sigs.io/v1alpha1"


def _load_corpus(root: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rules, groups = [], []
    for f in sorted((root / CASES).glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            d = json.loads(line)
            if "rules" in d:
                rules.append(d)
            elif "group" in d:
                groups.append(d)
    return rules, groups


def _spec_features(features: dict[str, Any]) -> dict[str, Any]:
    return {
        "flags": {k: {"elements": {e: {} for e in v}} for k, v in features.get("flags", {}).items()},
        "attributes": {k: {"elements": v} for k, v in features.get("attributes", {}).items()},
        "instances": {k: {"elements": [{"attributes": a} for a in v]} for k, v in features.get("instances", {}).items()},
    }


def _nodefeature(name: str, namespace: str, node: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": NF_API, "kind": "NodeFeature",
            "metadata": {"name": name, "namespace": namespace, "labels": {"nfd.node.kubernetes.io/node-name": node}},
            "spec": spec}


def _random_policy(rng: random.Random, base: dict[str, Any] | None) -> dict[str, Any]:
    conf = json.loads(json.dumps((base or {}).get("config") or {}))
    if rng.random() < 0.5:
        conf["enableTaints"] = rng.random() < 0.7
    if rng.random() < 0.15:
        conf["disableAutoPrefix"] = True
    r = conf.setdefault("restrictions", {})
    for key, p in (("allowOverwrite", 0.3), ("denyNodeFeatureLabels", 0.2), ("disableLabels", 0.05),
                   ("disableAnnotations", 0.05), ("disableExtendedResources", 0.05)):
        if rng.random() < p:
            r[key] = not r.get(key, key == "allowOverwrite")
    if rng.random() < 0.15:
        conf["extraLabelNs"] = rng.sample(["example.com", "vendor.io", "kubernetes.io", "x.y"], 2)
    if rng.random() < 0.15:
        conf["denyLabelNs"] = rng.sample(["example.com", "*.vendor.io", "other.org"], 2)
    if rng.random() < 0.1:
        conf["labelWhiteList"] = rng.choice(["^l", "a|b", "^(r|l)[0-9]$", ".*"])
    return conf


def _random_node(rng: random.Random, name: str, rule_sets: dict[str, list[Any]], instance: str) -> dict[str, Any]:
    """A Node as it may stand: some of the rules' labels (owned or not), stale owned ones, taints."""
    from_rules = sorted({k for rs in rule_sets.values() for r in rs if isinstance(r, dict)
                         for k in (r.get("labels") or {}) if isinstance(k, str)})
    names = [k if "/" in k else f"feature.node.kubernetes.io/{k}" for k in from_rules]
    names += ["feature.node.kubernetes.io/stale", "example.com/foreign", "feature.node.kubernetes.io/label-1"]
    labels = {"kubernetes.io/hostname": name}
    owned = []
    for k in rng.sample(names, min(len(names), rng.randint(0, 5))):
        labels[k] = rng.choice(["true", "1", "old", ""])
        if rng.random() < 0.6:
            owned.append(k)
    pre = f"{instance}." if instance else ""
    short = sorted(k.removeprefix("feature.node.kubernetes.io/") for k in owned)
    anns: dict[str, str] = {}
    if short:
        anns[f"{pre}nfd.node.kubernetes.io/feature-labels"] = ",".join(short)
    if rng.random() < 0.3:
        anns["feature.node.kubernetes.io/old-ann"] = "x"
        anns[f"{pre}nfd.node.kubernetes.io/feature-annotations"] = "old-ann"
    taints = []
    if rng.random() < 0.4:
        taints.append({"key": "t1", "value": rng.choice(["v", "w"]), "effect": "NoExecute"})
        anns["nfd.node.kubernetes.io/taints"] = "t1=v:NoExecute"
    if rng.random() < 0.2:
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    status: dict[str, Any] = {}
    if rng.random() < 0.7:
        status["capacity"] = {"cpu": "4", "feature.node.kubernetes.io/er1": "6"}
        if rng.random() < 0.5:
            anns[f"{pre}nfd.node.kubernetes.io/extended-resources"] = "er1"
        if rng.random() < 0.7:
            status["allocatable"] = {"cpu": "4"}
    if rng.random() < 0.2:
        anns[f"{pre}nfd.node.kubernetes.io/master.version"] = "v0.17.0"
    return {"metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": str(rng.randint(1, 999)),
                         "labels": labels, "annotations": anns},
            "spec": {"taints": taints} if taints else {}, "status": status}


def make_case(rng: random.Random, i: int, rule_cases: list[dict[str, Any]],
              group_cases: list[dict[str, Any]]) -> dict[str, Any]:
    node = f"node-{i}"
    picked = rng.sample(rule_cases, rng.choice([1, 1, 2, 3]))
    rule_sets: dict[str, list[Any]] = {}
    for j, c in enumerate(picked):
        for name, rules in c["rules"].items():
            rule_sets[f"{name}-{j}"] = rules
    src = picked[0]
    policy_src = next((c.get("policy") for c in picked if c.get("policy")), None)
    if "nodefeatures" in src:
        nfs = []
        for o in src["nodefeatures"]:
            meta = o.get("metadata") or {}
            ns = NS if meta.get("namespace") == src["nodefeatures"][0]["metadata"].get("namespace") else "other"
            own = meta.get("name") == src["nodefeatures"][0]["metadata"].get("name")
            nfs.append(_nodefeature(node if own else str(meta.get("name")), ns, node, o.get("spec") or {}))
    else:
        spec: dict[str, Any] = {"features": _spec_features(src.get("features") or {})}
        if policy_src is not None and policy_src.get("nodefeatureLabels"):
            spec["labels"] = policy_src["nodefeatureLabels"]
        nfs = [_nodefeature(node, NS, node, spec)]
        if rng.random() < 0.3:  # a third-party object from another case's features
            other = rng.choice(rule_cases).get("features") or {}
            nfs.append(_nodefeature("third-party", "other", node,
                                    {"features": _spec_features(other), "labels": {"tp": "1"}}))
    groups = []
    for k in range(rng.choice([0, 0, 1, 2])):
        g = rng.choice(group_cases)
        groups.append({"apiVersion": NF_API, "kind": "NodeFeatureGroup",
                       "metadata": {"name": f"g{k}", "namespace": NS}, "spec": {"featureGroupRules": g["group"]}})
    instance = rng.choice(["", "", "", "inst"])
    return {
        "node": node, "rule_sets": rule_sets, "nodefeatures": nfs, "groups": groups,
        "policy": _random_policy(rng, policy_src), "instance": instance,
        "node_obj": _random_node(rng, node, rule_sets, instance),
        "raw": rng.random() < 0.15, "text": rng.random() < 0.3, "no_budget": rng.random() < 0.1,
        "cluster_split": rng.random(),
    }


def _rule_objs(rule_sets: dict[str, list[Any]]) -> list[dict[str, Any]]:
    return [{"apiVersion": NF_API, "kind": "NodeFeatureRule", "metadata": {"name": n}, "spec": {"rules": r}}
            for n, r in rule_sets.items()]


# -- the layouts ---------------------------------------------------------------------------


def _api() -> dict[str, Any]:
    """The functions of the checkout being run, under one set of names."""
    from nfd.rules.engine import EvalBudget, run_to_end

    try:  # after issue #48
        from nfd.nodestate import desired as d
        from nfd.nodestate import nodefeatures as nf
        from nfd.nodestate import nodeplan as p
        from nfd.nodestate.outputpolicy import PolicyConfig

        def desired(merged: Any, rule_sets: list[Any], policy: Any, node: str) -> tuple[Any, Any]:
            out = d.desired_state(merged, rule_sets, policy, node_name=node, how=d.Evaluation(budget=EvalBudget()))
            return out.desired, out.report
    except ImportError:  # before
        from nfd.rules.policy import PolicyConfig  # type: ignore[no-redef]

        from nfd.master import nodeplan as p  # type: ignore[no-redef]
        from nfd.master import pipeline
        from nfd.rules import nodefeatures as nf  # type: ignore[no-redef]

        def desired(merged: Any, rule_sets: list[Any], policy: Any, node: str) -> tuple[Any, Any]:
            return run_to_end(pipeline.compute_desired_steps(  # type: ignore[no-any-return]
                merged, rule_sets=rule_sets, policy=policy, node_name=node, budget=EvalBudget()))
    return {"nf": nf, "plan": p, "PolicyConfig": PolicyConfig, "desired": desired}


def _jsonable(x: Any) -> Any:
    if hasattr(x, "to_json"):
        return x.to_json()
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        items = [_jsonable(v) for v in x]
        return sorted(items, key=json.dumps) if isinstance(x, (set, frozenset)) else items
    if hasattr(x, "__dataclass_fields__"):
        return {k: _jsonable(getattr(x, k)) for k in x.__dataclass_fields__ if not k.startswith("_")}
    return x


def master_path(api: dict[str, Any], case: dict[str, Any]) -> dict[str, Any]:
    from nfd.rules.engine import compile_nodefeaturerule

    nf, p = api["nf"], api["plan"]
    conf = case["policy"]
    try:
        policy = api["PolicyConfig"].from_master_config(conf, disable_auto_prefix=bool(conf.get("disableAutoPrefix")))
    except Exception as e:  # noqa: BLE001 - a bad policy is an outcome too
        return {"policyError": str(e)}
    entries = [nf.compact_nodefeature(o) for o in case["nodefeatures"]]
    merged = nf.merge_node_features(
        entries, node_name=case["node"], master_namespace=NS,
        deny_third_party_labels=policy.deny_node_feature_labels, auto_prefix=not policy.disable_auto_prefix)
    sets = []
    for o in _rule_objs(case["rule_sets"]):
        try:
            sets.append(compile_nodefeaturerule(o))
        except Exception as e:  # noqa: BLE001
            sets.append(f"compile error: {e}")
    rule_sets = [s for s in sets if not isinstance(s, str)]
    desired, rep = api["desired"](merged, rule_sets, policy, case["node"])
    out: dict[str, Any] = {
        "merged": {"features": merged.features.to_json(), "labels": merged.labels, "found": merged.found,
                   "sources": merged.sources, "errors": merged.errors, "hasFeatures": merged.has_features},
        "compileErrors": [s for s in sets if isinstance(s, str)],
        "desired": _jsonable(desired),
        "report": {"ruleErrors": rep.rule_errors, "rejected": rep.rejected, "overBudget": rep.over_budget,
                   "deferred": rep.deferred,
                   "outputs": [[list(k), o.to_json()] for k, o in rep.outputs.items()]},
    }
    node = p.NodeState.from_obj(p.slim_node(case["node_obj"]))
    for skip in (False, True):
        plan = p.plan_node_update(node, desired, skip_removal=skip, allow_overwrite=policy.allow_overwrite,
                                  instance=case["instance"])
        out[f"plan{'Skip' if skip else ''}"] = {
            "status": plan.status_ops, "metadata": plan.metadata_ops, "taints": plan.taints_patch,
            "strategic": p.ops_to_strategic(plan.status_ops + plan.metadata_ops), "noop": plan.noop,
            "changes": _jsonable(plan.changes), "describe": plan.changes.describe(), "counts": plan.changes.counts()}
    return out


def _run_cli(main: Any, argv: list[str], tmp: str) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code
    return {"rc": rc, "stdout": out.getvalue().replace(tmp, "<tmp>"), "stderr": err.getvalue().replace(tmp, "<tmp>")}


def _write(path: Path, docs: list[dict[str, Any]]) -> str:
    path.write_text("\n---\n".join(json.dumps(d) for d in docs), encoding="utf-8")
    return str(path)


def cli_paths(case: dict[str, Any], tmp: str) -> dict[str, Any]:
    from nfd.cli import kubectl_nfd
    from nfd.cli import rules as cli_rules

    d = Path(tmp)
    rules_file = _write(d / "rules.yaml", _rule_objs(case["rule_sets"]))
    nf_file = _write(d / "nf.yaml", case["nodefeatures"])
    conf = dict(case["policy"])
    dap = conf.pop("disableAutoPrefix", False)
    conf_file = _write(d / "nfd-master.conf", [conf])
    argv = ["dryrun", "-f", rules_file, "--nodefeature", nf_file, "--config", conf_file]
    if case["groups"]:
        argv += ["-f", _write(d / "groups.yaml", case["groups"])]
    if dap:
        argv.append("--disable-auto-prefix")
    if case["raw"]:
        argv.append("--raw")
    if case["no_budget"]:
        argv.append("--no-budget")
    argv += ["-o", "text" if case["text"] else "json"]
    out = {"dryrun": _run_cli(cli_rules.main, argv, tmp)}
    first = _write(d / "first.yaml", _rule_objs(case["rule_sets"])[:1])
    out["kubectl"] = _run_cli(kubectl_nfd.main, ["dryrun", "-f", first, "-n", nf_file], tmp)
    return out


def fleet_path(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """``kubectl nfd test -A`` over the cases' nodes: half the rule objects in the cluster, the
    rest (and a same-named edit of one) in the file; the first case's policy and groups."""
    from nfd.cli import fleet

    api = _api()
    conf = dict(cases[0]["policy"])
    dap = conf.pop("disableAutoPrefix", False)
    try:
        policy = api["PolicyConfig"].from_master_config(conf, disable_auto_prefix=bool(dap))
    except Exception as e:  # noqa: BLE001
        return {"policyError": str(e)}
    cluster, file_rules, nodes, nfs, groups = [], [], [], [], []
    for c in cases:
        for o in _rule_objs(c["rule_sets"]):
            (cluster if c["cluster_split"] < 0.5 else file_rules).append(o)
        nodes.append(c["node_obj"])
        nfs.extend(c["nodefeatures"])
        groups.extend(c["groups"])
    if cluster and file_rules:  # an edit of a cluster object
        file_rules.append(dict(file_rules[0], metadata={"name": cluster[0]["metadata"]["name"]}))
    cluster_groups = []
    for k, g in enumerate(groups):
        g["metadata"] = {"name": f"g{k}", "namespace": NS}
        status = {"nodes": [{"name": n["metadata"]["name"]} for n in nodes[: k + 1]], "nodeCount": k + 1}
        spec = dict(g["spec"], **({"materializePolicy": "CountOnly"} if k % 3 == 2 else {}))
        cluster_groups.append({"metadata": g["metadata"], "spec": spec, "status": status})
    rep = fleet.FleetReport()
    book = fleet.build_rulebook(cluster, file_rules, rep)
    compiled = fleet.compile_file_groups(groups, cluster_groups, default_namespace="default", report=rep)
    fleet.plan_fleet(nodes=nodes, nodefeatures=nfs, rule_sets=book.ordered(), policy=policy, namespace=NS,
                     instance=cases[0]["instance"], report=rep, groups=compiled, whole_cluster=True)
    pods = [{"metadata": {"name": f"p-{n['metadata']['name']}", "namespace": "default"},
             "spec": {"nodeName": n["metadata"]["name"]}} for n in nodes]
    rep.evictions = fleet.evictions(rep, pods)
    text = io.StringIO()
    fleet.print_report(rep, show_nodes=True, write=text.write)
    return {"json": rep.to_json(), "text": text.getvalue()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fleet", type=int, default=10, help="cases per fleet report")
    ap.add_argument("--root", default=str(ROOT), help="the checkout whose corpus is drawn from")
    args = ap.parse_args(argv)
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable, *sys.argv], dict(os.environ, PYTHONHASHSEED="0"))
    import logging

    logging.disable(logging.CRITICAL)  # logs are not compared (they name the modules that moved)
    rule_cases, group_cases = _load_corpus(Path(args.root))
    rng = random.Random(args.seed)
    api = _api()
    batch: list[dict[str, Any]] = []
    w = sys.stdout.write
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.cases):
            case = make_case(rng, i, rule_cases, group_cases)
            rec = {"case": i, "master": master_path(api, json.loads(json.dumps(case))),
                   **cli_paths(json.loads(json.dumps(case)), tmp)}
            w(json.dumps(rec, sort_keys=True, default=str) + "\n")
            batch.append(case)
            if len(batch) == args.fleet or i == args.cases - 1:
                w(json.dumps({"fleet": i, **fleet_path(json.loads(json.dumps(batch)))},
                             sort_keys=True, default=str) + "\n")
                batch = []
    return 0


if __name__ == "__main__":
    sys.exit(main())
