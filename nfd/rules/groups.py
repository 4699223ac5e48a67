"""NodeFeatureGroup membership, as nfd-master computes it.

A node is a member when any of the group's rules matches its features. Rules run in order and
feed only their ``vars`` back into ``rule.matched``; a rule that errors is skipped (logged by the
caller) and feeds nothing back.
"""

from __future__ import annotations

from nfd.api.features import Features
from nfd.rules.engine import BackrefWriter, CompiledRuleSet, RuleResult, evaluate_rule, features_view


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
