"""A node's desired state: its merged NodeFeatures through the NodeFeatureRules and the output
policy, in one pure function.

``desired_state`` (and ``desired_state_steps``, the same computation pausing after each rule) is
the one way from a node's features to what it should carry, for every caller: nfd-master and
masterless mode (nfd.master.nodeupdater, in slices of the event loop), ``nfd rules dryrun``,
``kubectl nfd dryrun``/``test`` and the fleet report (nfd.cli). What differs between them is
said by the arguments: the output policy (``None``: the rules' own output, as upstream's kubectl
plugin prints it) and ``Evaluation`` (budgets, explanations, feedback, the master's per-node
memory). The plan against a Node is nfd.nodestate.nodeplan's.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from nfd.nodestate.bookkeeping import Taint
from nfd.nodestate.nodefeatures import MergedNodeFeatures
from nfd.nodestate.outputpolicy import PolicyConfig, PolicyResult, apply_policy
from nfd.rules.engine import (
    CompiledRuleSet,
    EvalBudget,
    ProcessResult,
    RuleKey,
    RuleMemo,
    iter_process_rule_sets,
    run_to_end,
)


@dataclass(slots=True)
class Desired:
    """What the rules and policy want on the node (already validated and filtered)."""

    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    extended_resources: dict[str, str] = field(default_factory=dict)
    taints: list[Taint] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Evaluation:
    """How the rules run on the node (the defaults are nfd-master's, less its budgets)."""

    budget: EvalBudget | None = None  # the per-node budgets; None: unbounded
    explain: bool = False  # each result says why its rule did not match (the CLIs)
    feed_back: bool = True  # rules read the earlier ones' outputs in ``rule.matched``
    auto_prefix: bool | None = None  # None: as the policy says (off under DisableAutoPrefix)
    # nfd-master's memory of the node (see iter_process_rule_sets): the outputs of its last
    # evaluation, the rules' results on the same features, the rule sets not run now
    previous: Mapping[RuleKey, Any] | None = None
    memo: RuleMemo | None = None
    deferred: frozenset[str] = frozenset()


@dataclass(slots=True)
class NodeReport:
    """What happened while computing one node's state, for logs and metrics."""

    rule_errors: list[tuple[str, str]] = field(default_factory=list)  # ("<nfr>/<rule>", message)
    rejected: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, key, reason)
    duration_s: float = 0.0  # rules and policy, not counting the pauses
    outputs: dict[RuleKey, Any] = field(default_factory=dict)  # matched rules' outputs
    # rule set -> "rule: error" of its first rule that ran out of a budget on this node
    over_budget: dict[str, str] = field(default_factory=dict)
    deferred: list[str] = field(default_factory=list)  # rule sets not run (``deferred=``)


@dataclass(slots=True)
class NodeOutcome:
    """A node's desired state and how it came about."""

    desired: Desired  # what the policy lets through (empty without a policy)
    report: NodeReport
    rules: ProcessResult  # the engine's results, outputs and features (with rule.matched)
    policy: PolicyResult | None  # None without a policy


def desired_state_steps(
    merged: MergedNodeFeatures,
    rule_sets: list[CompiledRuleSet],
    policy: PolicyConfig | None,
    *,
    node_name: str,
    how: Evaluation = Evaluation(),
) -> Generator[None, None, NodeOutcome]:
    """``desired_state``, pausing after each rule (nfd-master serves probes, lease renewal and
    other nodes meanwhile); ``NodeReport.outputs`` is the node's ``how.previous`` next time and
    ``duration_s`` the time it worked, not counting the pauses."""
    auto_prefix = how.auto_prefix
    if auto_prefix is None:
        auto_prefix = policy is None or not policy.disable_auto_prefix
    steps = iter_process_rule_sets(
        rule_sets, merged.features, node_name=node_name, feed_back=how.feed_back, auto_prefix=auto_prefix,
        explain=how.explain, budget=how.budget, previous=how.previous, devices=merged.devices, memo=how.memo,
        deferred=how.deferred,
    )
    busy = 0.0  # time working, not paused
    t0 = time.perf_counter()
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            result: ProcessResult = stop.value
            break
        busy += time.perf_counter() - t0
        yield
        t0 = time.perf_counter()
    out = NodeOutcome(Desired(), _report(result), result, None)
    if policy is not None:
        out.policy, out.desired = _apply(merged, result, policy, out.report)
    out.report.duration_s = busy + time.perf_counter() - t0
    return out


def desired_state(
    merged: MergedNodeFeatures,
    rule_sets: list[CompiledRuleSet],
    policy: PolicyConfig | None,
    *,
    node_name: str,
    how: Evaluation = Evaluation(),
) -> NodeOutcome:
    """What ``rule_sets`` and ``policy`` make of the node ``node_name`` with the features
    ``merged`` (nfd.nodestate.nodefeatures.merge_node_features): the rules run as ``how`` says,
    then the policy filters their output with the NodeFeatures' own labels. Never raises for a
    rule's or an output's fault: those are in the report."""
    return run_to_end(desired_state_steps(merged, rule_sets, policy, node_name=node_name, how=how))


def _report(result: ProcessResult) -> NodeReport:
    rep = NodeReport()
    # "<NodeFeatureRule>/<rule>": the log names both, as upstream's "failed to process rule"
    rep.rule_errors = [(f"{r.rule_set}/{r.name}", r.error) for r in result.results if r.error is not None]
    rep.outputs = {r.key(): r.output for r in result.results if r.matched}
    rep.deferred = list(result.deferred)
    for r in result.results:
        if r.over_budget and r.rule_set not in rep.over_budget:
            rep.over_budget[r.rule_set] = f"{r.name}: {r.error or 'spent the node budget'}"
    return rep


def _apply(
    merged: MergedNodeFeatures, result: ProcessResult, policy: PolicyConfig, rep: NodeReport
) -> tuple[PolicyResult, Desired]:
    # master_output is combined per rule with auto-prefixing, as upstream; dynamic
    # @rule.matched.* values resolve against the features after feedback.
    pol = apply_policy(
        nodefeature_labels=merged.labels, rule_output=result.master_output, features=result.features, config=policy,
    )
    rep.rejected.extend((rj.kind, rj.key, rj.reason) for rj in pol.rejected)
    taints = [Taint(t.get("key") or "", t.get("value") or "", t.get("effect") or "") for t in pol.taints]
    desired = Desired(
        labels=dict(pol.labels),
        annotations=dict(pol.annotations),
        extended_resources=dict(pol.extended_resources),
        taints=taints,
    )
    return pol, desired
