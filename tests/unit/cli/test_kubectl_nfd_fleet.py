"""``kubectl nfd test -A``: the master's pipeline and plan over many nodes, counted per item.

Pure inputs (Node, NodeFeature and NodeFeatureRule objects as the API returns them); the e2e test
(tests/e2e/test_kubectl_nfd.py) runs the command against the real kube-apiserver.
"""

from __future__ import annotations

from typing import Any

import pytest

from nfd.cli.fleet import FleetReport, build_rulebook, evictions, plan_fleet, tolerates
from nfd.nodestate.outputpolicy import PolicyConfig

NS = "node-feature-discovery"


def node(name: str, *, labels: dict[str, str] | None = None, managed: str = "", taints: list[Any] | None = None,
         capacity: dict[str, str] | None = None, ers: str = "", taint_ann: str = "") -> dict[str, Any]:
    ann = {}
    if managed:
        ann["nfd.node.kubernetes.io/feature-labels"] = managed
    if ers:
        ann["nfd.node.kubernetes.io/extended-resources"] = ers
    if taint_ann:
        ann["nfd.node.kubernetes.io/taints"] = taint_ann
    obj: dict[str, Any] = {"metadata": {"name": name, "labels": dict(labels or {}), "annotations": ann},
                           "spec": {"taints": taints or []}}
    if capacity:
        obj["status"] = {"capacity": dict(capacity), "allocatable": dict(capacity)}
    return obj


def nf(name: str, vendor: str, *, gpus: str = "0") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "labels": {"nfd.node.kubernetes.io/node-name": name}},
            "spec": {"features": {"attributes": {"cpu.model": {"elements": {"vendor_id": vendor}},
                                                 "gpu.count": {"elements": {"n": gpus}}}}}}


def nfr(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": name},
            "spec": {"rules": rules}}


INTEL = {"feature": "cpu.model", "matchExpressions": {"vendor_id": {"op": "In", "value": ["Intel"]}}}
GPU = {"feature": "gpu.count", "matchExpressions": {"n": {"op": "Gt", "value": ["0"]}}}


def plan(nodes: list[dict[str, Any]], nfs: list[dict[str, Any]], cluster: list[dict[str, Any]],
         file: list[dict[str, Any]], **policy: Any) -> FleetReport:
    rep = FleetReport()
    book = build_rulebook(cluster, file, rep)
    return plan_fleet(nodes=nodes, nodefeatures=nfs, rule_sets=book.ordered(), policy=PolicyConfig(**policy),
                      namespace=NS, report=rep)


def effect(rep: FleetReport, kind: str, key: str) -> tuple[list[str], list[str], list[str]]:
    e = rep.items.get((kind, key))
    return (e.gain, e.change, e.lose) if e else ([], [], [])


def test_gain_change_lose_per_label_against_the_nodes_managed_labels() -> None:
    fq = "feature.node.kubernetes.io"
    nodes = [
        node("a"),  # gains the label
        node("b", labels={f"{fq}/intel": "old"}, managed="intel"),  # value changes
        # the AMD node carries a managed label the new rule no longer produces: lost
        node("c", labels={f"{fq}/intel": "true", "team": "x"}, managed="intel"),
        # not managed by nfd (no bookkeeping entry): never counted as lost
        node("d", labels={f"{fq}/intel": "true"}),
    ]
    nfs = [nf("a", "Intel"), nf("b", "Intel"), nf("c", "AMD"), nf("d", "AMD")]
    rule = nfr("cpu", [{"name": "intel", "labels": {"intel": "true"}, "matchFeatures": [INTEL]}])
    rep = plan(nodes, nfs, [], [rule])
    assert rep.nodes == ["a", "b", "c", "d"]
    assert effect(rep, "label", f"{fq}/intel") == (["a"], ["b"], ["c"])
    assert ("label", "team") not in rep.items


def test_the_file_replaces_the_cluster_object_of_the_same_name() -> None:
    fq = "feature.node.kubernetes.io"
    old = nfr("cpu", [{"name": "old", "labels": {"old": "1"}, "matchFeatures": [INTEL]}])
    new = nfr("cpu", [{"name": "new", "labels": {"new": "1"}, "matchFeatures": [INTEL]}])
    other = nfr("other", [{"name": "keep", "labels": {"keep": "1"}}])
    n = node("a", labels={f"{fq}/old": "1", f"{fq}/keep": "1"}, managed="keep,old")
    rep = plan([n], [nf("a", "Intel")], [old, other], [new])
    assert effect(rep, "label", f"{fq}/old") == ([], [], ["a"])
    assert effect(rep, "label", f"{fq}/new") == (["a"], [], [])
    assert ("label", f"{fq}/keep") not in rep.items  # the cluster's other object still applies


def test_an_edit_that_breaks_a_rule_keeps_the_previous_revision_as_the_master_does() -> None:
    fq = "feature.node.kubernetes.io"
    old = nfr("cpu", [{"name": "r", "labels": {"x": "1"}, "matchFeatures": [INTEL]}])
    broken = nfr("cpu", [{"name": "r", "labels": {"x": "1"}, "matchFeatures": [
        {"feature": "cpu.model", "matchExpressions": {"vendor_id": {"op": "InRegexp", "value": ["("]}}}]}])
    n = node("a", labels={f"{fq}/x": "1"}, managed="x")
    rep = plan([n], [nf("a", "Intel")], [old], [broken])
    assert not rep.items  # nothing changes: the old revision stays in force
    assert len(rep.rulebook_messages) == 1 and "keeping its previous version" in rep.rulebook_messages[0]


def test_taints_resources_and_noexecute_evictions() -> None:
    rule = nfr("gpu", [{"name": "gpu", "matchFeatures": [GPU],
                        "taints": [{"key": "example.com/gpu", "value": "yes", "effect": "NoExecute"}],
                        "extendedResources": {"example.com/gpus": "@gpu.count.n"}}])
    nodes = [
        node("g1"),  # gains taint and resource
        node("g2", taints=[{"key": "example.com/gpu", "value": "no", "effect": "NoExecute"}],
             taint_ann="example.com/gpu=no:NoExecute", capacity={"example.com/gpus": "2"},
             ers="example.com/gpus"),  # value changes for both
        node("cpu", taints=[{"key": "example.com/gpu", "value": "yes", "effect": "NoExecute"}],
             taint_ann="example.com/gpu=yes:NoExecute", capacity={"example.com/gpus": "1"},
             ers="example.com/gpus"),  # loses both
    ]
    nfs = [nf("g1", "Intel", gpus="4"), nf("g2", "Intel", gpus="8"), nf("cpu", "Intel", gpus="0")]
    rep = plan(nodes, nfs, [], [rule], enable_taints=True)
    assert effect(rep, "taint", "example.com/gpu:NoExecute") == (["g1"], ["g2"], ["cpu"])
    assert effect(rep, "extended resource", "example.com/gpus") == (["g1"], ["g2"], ["cpu"])
    assert rep.new_noexecute == {"g1": [("example.com/gpu", "yes")], "g2": [("example.com/gpu", "yes")]}

    def pod(name: str, on: str, tolerations: list[Any] | None = None, phase: str = "Running") -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "w"}, "spec": {"nodeName": on, "tolerations": tolerations or []},
                "status": {"phase": phase}}

    pods = [
        pod("plain", "g1"),
        pod("tolerant", "g1", [{"key": "example.com/gpu", "operator": "Exists"}]),
        pod("wrong-value", "g2", [{"key": "example.com/gpu", "value": "no", "effect": "NoExecute"}]),
        pod("delayed", "g2", [{"key": "example.com/gpu", "operator": "Exists", "tolerationSeconds": 30}]),
        pod("done", "g1", phase="Succeeded"),
        pod("elsewhere", "cpu"),  # its node loses the taint: nothing evicts it
    ]
    got = [(e.pod, e.node, e.taint, e.after_s) for e in evictions(rep, pods)]
    assert got == [("w/plain", "g1", "example.com/gpu=yes:NoExecute", None),
                   ("w/delayed", "g2", "example.com/gpu=yes:NoExecute", 30),
                   ("w/wrong-value", "g2", "example.com/gpu=yes:NoExecute", None)]


def test_without_enable_taints_the_policy_drops_taints() -> None:
    rule = nfr("t", [{"name": "t", "taints": [{"key": "example.com/t", "effect": "NoExecute"}]}])
    rep = plan([node("a")], [nf("a", "Intel")], [], [rule])
    assert not rep.items and not rep.new_noexecute


def test_a_node_without_nodefeature_is_named_and_loses_what_nfd_manages() -> None:
    fq = "feature.node.kubernetes.io"
    rule = nfr("s", [{"name": "s", "labels": {"s": "1"}, "matchFeatures": [INTEL]}])
    rep = plan([node("bare", labels={f"{fq}/s": "1"}, managed="s")], [], [], [rule])
    assert rep.without_nodefeature == ["bare"]
    assert effect(rep, "label", f"{fq}/s") == ([], [], ["bare"])


def test_rule_errors_are_collected_per_rule_with_their_nodes() -> None:
    rule = nfr("e", [{"name": "bad", "labels": {"x": "1"}, "matchFeatures": [
        {"feature": "gpu.count", "matchExpressions": {"n": {"op": "Gt", "value": ["many"]}}}]}])
    rep = plan([node("a"), node("b")], [nf("a", "Intel"), nf("b", "AMD")], [], [rule])
    [(key, nodes)] = rep.rule_errors.items()
    assert key[0] == "e/bad" and nodes == ["a", "b"]


@pytest.mark.parametrize("tols, want", [
    ([], (False, None)),
    ([{"operator": "Exists"}], (True, None)),  # empty key + Exists: everything
    ([{"key": "k", "operator": "Exists", "effect": "NoSchedule"}], (False, None)),
    ([{"key": "k", "value": "v"}], (True, None)),  # Equal is the default operator
    ([{"key": "k", "value": "other"}], (False, None)),
    ([{"key": "k", "operator": "Exists", "tolerationSeconds": 60},
      {"key": "k", "value": "v", "tolerationSeconds": 10}], (False, 10)),
    ([{"key": "k", "operator": "Exists", "tolerationSeconds": 60}, {"key": "k", "operator": "Exists"}],
     (True, None)),
])
def test_toleration_matching(tols: list[dict[str, Any]], want: tuple[bool, int | None]) -> None:
    assert tolerates(tols, key="k", value="v", effect="NoExecute") == want


def test_conflicts_between_rules_name_the_rules_the_key_and_the_value_the_master_applies() -> None:
    """Two objects writing one label with different values: the nodes where both match, and the
    value of the object that runs last (NodeFeatureRules by name, rules in order)."""
    fq = "feature.node.kubernetes.io"
    gold = nfr("tier-a", [{"name": "gold", "labels": {"tier": "gold"}, "matchFeatures": [INTEL]}])
    silver = nfr("tier-b", [{"name": "silver", "labels": {"tier": "silver"}, "matchFeatures": [GPU]}])
    rep = plan([node("a"), node("b"), node("c")],
               [nf("a", "Intel", gpus="1"), nf("b", "Intel"), nf("c", "AMD", gpus="2")], [], [silver, gold])
    (conflict, nodes), = rep.conflicts.values()
    assert nodes == ["a"]
    j = rep.to_json()["conflicts"][0]
    assert j["key"] == f"{fq}/tier" and j["kind"] == "label"
    assert j["writers"] == [{"rule": "tier-a/gold", "value": "gold"}, {"rule": "tier-b/silver", "value": "silver"}]
    assert j["applied"] == {"rule": "tier-b/silver", "value": "silver"}
    text: list[str] = []
    from nfd.cli.fleet import print_report
    print_report(rep, show_nodes=True, write=text.append)
    assert (f'  label "{fq}/tier" is written with different values by tier-a/gold ("gold"), '
            'tier-b/silver ("silver"); nfd-master applies "silver" from tier-b/silver (NodeFeatureRules by '
            "name, then rules in order; the last one wins): on a\n") in text


def test_two_rules_with_one_name_are_named() -> None:
    twice = nfr("dup", [{"name": "same", "labels": {"a": "1"}}, {"name": "same", "labels": {"b": "1"}}])
    rep = plan([node("a")], [nf("a", "Intel")], [], [twice])
    assert "NodeFeatureRule 'dup': spec.rules[1].name: \"same\" is also the name of spec.rules[0]" in rep.rulebook_messages


def nfg(name: str, rules: list[dict[str, Any]], *, namespace: str | None = None, status: list[str] | None = None,
        policy: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    obj: dict[str, Any] = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureGroup", "metadata": meta,
                           "spec": {"featureGroupRules": rules}}
    if policy:
        obj["spec"]["materializePolicy"] = policy
    if status is not None:
        obj["status"] = {"nodes": [] if policy == "CountOnly" else [{"name": n} for n in status],
                         "nodeCount": len(status)}
    return obj


def plan_with_groups(file_groups: list[dict[str, Any]], cluster_groups: list[dict[str, Any]], *,
                     whole_cluster: bool = True, nodes: tuple[str, ...] = ("a", "b", "c")) -> FleetReport:
    from nfd.cli.fleet import compile_file_groups

    vendors = {"a": "Intel", "b": "Intel", "c": "AMD", "d": "AMD"}
    rep = FleetReport()
    groups = compile_file_groups(file_groups, cluster_groups, default_namespace="default", report=rep)
    return plan_fleet(nodes=[node(n) for n in nodes], nodefeatures=[nf(n, vendors[n]) for n in nodes], rule_sets=[],
                      policy=PolicyConfig(), namespace=NS, report=rep, groups=groups, whole_cluster=whole_cluster)


def test_a_file_group_is_evaluated_over_the_nodes_and_compared_with_its_status() -> None:
    intel = [{"name": "intel", "matchFeatures": [INTEL]}]
    rep = plan_with_groups([nfg("intel", intel, namespace="ops"), nfg("new", intel)],
                           [nfg("intel", [], namespace="ops", status=["b", "c", "gone"])])
    by = {(g.namespace, g.name): g for g in rep.groups}
    g = by[("ops", "intel")]
    assert (g.members, g.now, g.join, g.leave) == (["a", "b"], ["b", "c", "gone"], ["a"], ["c", "gone"])
    # without a namespace the group goes where kubectl apply puts it; not in the cluster: all join
    new = by[("default", "new")]
    assert (new.members, new.now, new.join, new.leave) == (["a", "b"], None, [], [])
    assert rep.to_json()["groups"][0]["exists"] is True and rep.to_json()["groups"][1]["exists"] is False
    lines: list[str] = []
    from nfd.cli.fleet import print_report
    print_report(rep, show_nodes=True, write=lines.append)
    text = "".join(lines)
    assert "  ops/intel: 2 member(s) of 3 nodes (now 3; join 1, leave 2)\n    members: a, b\n    join: a\n" \
           "    leave: c, gone\n" in text, text
    assert "  default/new: 2 member(s) of 3 nodes (not in the cluster)\n" in text, text


def test_with_a_selector_only_the_selected_nodes_can_leave() -> None:
    intel = [{"name": "intel", "matchFeatures": [INTEL]}]
    rep = plan_with_groups([nfg("intel", intel)], [nfg("intel", [], namespace="default", status=["c", "d"])],
                           whole_cluster=False, nodes=("a", "c"))
    (g,) = rep.groups
    assert (g.members, g.join, g.leave) == (["a"], ["a"], ["c"])  # d was not evaluated: not counted


def test_a_count_only_group_reports_its_count_and_a_broken_group_is_an_error() -> None:
    intel = [{"name": "intel", "matchFeatures": [INTEL]}]
    rep = plan_with_groups([nfg("count", intel, policy="CountOnly"), nfg("bad", [{"name": "x"}]),
                            {"kind": "NodeFeatureGroup", "metadata": {"name": "broken"}, "spec": {"featureGroupRules": 3}}],
                           [nfg("count", [], namespace="default", status=["a", "b", "c"], policy="CountOnly")])
    by = {g.name: g for g in rep.groups}
    assert (by["count"].members, by["count"].now_count, by["count"].join, by["count"].leave) == (["a", "b"], 3, [], [])
    assert rep.group_errors and rep.group_errors[0].startswith("NodeFeatureGroup default/broken: "), rep.group_errors
    lines: list[str] = []
    from nfd.cli.fleet import print_report
    print_report(rep, show_nodes=False, write=lines.append)
    assert "  default/count: 2 member(s) of 3 nodes (now 3; CountOnly: members not listed)\n" in "".join(lines)
    assert "error: NodeFeatureGroup default/broken: " in "".join(lines)


def test_a_group_rule_that_errors_is_collected_with_its_nodes() -> None:
    bad = [{"name": "r", "matchFeatures": [{"feature": "cpu.model",
                                            "matchExpressions": {"vendor_id": {"op": "Gt", "value": ["x"]}}}]}]
    rep = plan_with_groups([nfg("g", bad)], [])
    assert rep.groups[0].members == []
    assert {rule for rule, _ in rep.rule_errors} == {"g/r"}
    assert sorted(n for nodes in rep.rule_errors.values() for n in nodes) == ["a", "b", "c"]
