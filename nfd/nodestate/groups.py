"""NodeFeatureGroup membership and the status that says it, as nfd-master computes them.

A node is a member when any of the group's rules matches its features. Rules run in order and
feed only their ``vars`` back into ``rule.matched``; a rule that errors is skipped (logged by the
caller) and feeds nothing back. Nodes without any NodeFeature are skipped. The member name is
the node's ``system.name.nodename`` feature as upstream reads it; where that feature is missing
we use the Node's name (upstream would list an empty name).

``spec.materializePolicy`` (proposed upstream in #2548) picks what the status holds: ``Full``
(default) lists the members in ``status.nodes``, ``CountOnly`` writes only ``status.nodeCount``;
both write ``status.nodeCount`` (#2550's name). nfd-master writes it (nfd.master.groupstatus).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from nfd.api.features import Features
from nfd.nodestate.nodefeatures import MergedNodeFeatures
from nfd.rules.engine import BackrefWriter, CompiledRuleSet, RuleResult, evaluate_rule, features_view

FULL = "Full"
COUNT_ONLY = "CountOnly"
POLICIES = (FULL, COUNT_ONLY)


def evaluate_group(group: CompiledRuleSet, features: Features, *, node_name: str = "") -> list[RuleResult]:
    """Every group rule's result for one node (caller's features untouched)."""
    view = features_view(features)
    backref = BackrefWriter(view)
    results = []
    for rule in group.rules:
        res = evaluate_rule(rule, view, node_name=node_name)
        res.rule_set = group.name
        results.append(res)
        if res.error is None:
            backref.feed({}, res.output.vars)
    return results


def node_matches_group(group: CompiledRuleSet, features: Features, *, node_name: str = "") -> bool:
    """True when any group rule matches (errors count as no match, later rules still run)."""
    return any(r.matched for r in evaluate_group(group, features, node_name=node_name))


def member_name(features: Features) -> str:
    """The name upstream records in ``status.nodes``: the ``system.name`` feature's ``nodename``
    (empty when the system source did not report it), not the Node object's name."""
    return features.attributes.get("system.name", {}).get("nodename", "")


def group_members(
    group: CompiledRuleSet,
    *,
    nodes: Iterable[str],
    merged_for: Callable[[str], MergedNodeFeatures],
    on_error: Callable[[str, RuleResult], None] | None = None,
) -> list[str]:
    """The names ``status.nodes`` lists for ``group`` over ``nodes`` (each node's merged
    NodeFeatures by ``merged_for``): a node without any NodeFeature is never a member, a member
    is named by ``member_name`` (its Node name when that is empty), each name once, in node
    order. ``on_error(node, result)`` hears each group rule that failed on a node."""
    members: list[str] = []
    seen: set[str] = set()
    for node in nodes:
        merged = merged_for(node)
        if not merged.sources:
            continue
        results = evaluate_group(group, merged.features, node_name=node)
        if on_error is not None:
            for r in results:
                if r.error is not None:
                    on_error(node, r)
        if not any(r.matched for r in results):
            continue
        name = member_name(merged.features) or node
        if name not in seen:
            seen.add(name)
            members.append(name)
    return members


def policy_of(obj: dict[str, Any]) -> str:
    """``spec.materializePolicy``, Full when unset."""
    return str((obj.get("spec") or {}).get("materializePolicy") or FULL)


def desired_status(policy: str, members: list[str]) -> dict[str, Any]:
    nodes = [{"name": m} for m in members] if policy == FULL else []
    return {"nodes": nodes, "nodeCount": len(members)}


def status_current(obj: dict[str, Any], want: dict[str, Any]) -> bool:
    """True when ``obj``'s status already says ``want``. A missing nodeCount next to the right
    nodes counts as current in Full mode (a CRD without the field prunes it on every write)."""
    have = obj.get("status") or {}
    if (have.get("nodes") or []) != want["nodes"]:
        return False
    count = have.get("nodeCount")
    return count == want["nodeCount"] or (count is None and bool(want["nodes"]))
