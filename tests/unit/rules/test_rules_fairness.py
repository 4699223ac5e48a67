"""Which rules are charged for running out of a budget, deferred rule sets, and the master's
cost ledger (nfd.master.fairness)."""

from __future__ import annotations

from typing import Any

import nfd.rules.engine as engine
from nfd.api.features import Features
from nfd.master.fairness import CostLedger
from nfd.rules.engine import EvalBudget, RuleOutput, compile_nodefeaturerule, process_rule_sets

SPEND = "{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}x=y"  # a whole step budget
KERNEL = [{"feature": "kernel.version", "matchExpressions": {"major": {"op": "Exists"}}}]


def kernel() -> Features:
    f = Features()
    f.add_attributes("kernel.version", {"major": "6"})
    return f


def nfr(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": name},
            "spec": {"rules": list(rules)}}


def test_only_the_rules_that_spend_a_budget_are_charged() -> None:
    hostile = compile_nodefeaturerule(nfr("a-hostile", *(
        {"name": f"spend-{i}", "labelsTemplate": SPEND, "matchFeatures": KERNEL} for i in range(4))))
    victim = compile_nodefeaturerule(nfr("b-victim", {"name": "t", "labelsTemplate": "k=v", "matchFeatures": KERNEL},
                                         {"name": "plain", "labels": {"plain": "1"}, "matchFeatures": []}))
    # 1.5 allowances for the node: spend-0 spends its own, spend-1 the node's rest
    res = process_rule_sets([hostile, victim], kernel(), budget=EvalBudget(template_steps=1_500_000))
    by = {(r.rule_set, r.name): r for r in res.results}
    assert by[("a-hostile", "spend-0")].over_budget and by[("a-hostile", "spend-1")].over_budget
    # the rest did not run for lack of steps: failing, not charged
    assert by[("a-hostile", "spend-2")].error and not by[("a-hostile", "spend-2")].over_budget
    assert "not expanded" in (by[("b-victim", "t")].error or "") and not by[("b-victim", "t")].over_budget
    assert res.output.labels == {"plain": "1"}


def test_a_deferred_set_is_not_run_and_its_previous_outputs_stand_in(monkeypatch: Any) -> None:
    rs = compile_nodefeaturerule(nfr("a", {"name": "r", "labels": {"a": "new"}, "matchFeatures": []},
                                     {"name": "gone", "labels": {"g": "1"}, "matchFeatures": []}))
    later = compile_nodefeaturerule(nfr("b", {
        "name": "backref", "labels": {"saw-a": "yes"},
        "matchFeatures": [{"feature": "rule.matched", "matchExpressions": {"a": {"op": "In", "value": ["old"]}}}]}))
    ran: list[str] = []
    real = engine.evaluate_rule

    def counting(rule: Any, *a: Any, **kw: Any) -> Any:
        ran.append(rule.name)
        return real(rule, *a, **kw)

    monkeypatch.setattr(engine, "evaluate_rule", counting)
    previous = {("a", "r", 0): RuleOutput(labels={"a": "old"})}
    res = process_rule_sets([rs, later], Features(), previous=previous, deferred={"a"})
    assert ran == ["backref"]  # a's rules did not run
    assert res.deferred == ["a"] and not res.errors
    # a's previous output is kept and fed back to later rules, as a failing rule's is; a rule
    # without a previous output contributes nothing (nothing is added without evaluation)
    assert res.output.labels == {"a": "old", "saw-a": "yes"}
    assert all(r.deferred for r in res.results if r.rule_set == "a")
    # not deferred: evaluated as usual
    assert process_rule_sets([rs, later], Features(), previous=previous).output.labels == {"a": "new", "g": "1"}


def test_ledger_defers_a_rule_object_after_three_nodes_once_per_revision() -> None:
    ledger = CostLedger(threshold=3)
    assert ledger.record(rule_set="h", revision=b"1", node="n1", example="spend-0: x") is None
    assert ledger.record(rule_set="h", revision=b"1", node="n1", example="spend-0: x") is None  # same node
    assert ledger.record(rule_set="h", revision=b"1", node="n2", example="spend-0: x") is None
    assert ledger.deferred() == frozenset()
    d = ledger.record(rule_set="h", revision=b"1", node="n3", example="spend-0: x")
    assert d is not None and d.count == 3 and d.nodes == ["n1", "n2", "n3"]
    assert "NodeFeatureRule h ran out of its evaluation budget on 3 nodes" in d.message()
    assert ledger.deferred() == {"h"}
    assert ledger.record(rule_set="h", revision=b"1", node="n4", example="") is None  # reported once
    # an edit starts over: evaluated with the others again until it fails on 3 nodes
    ledger.revised("h", b"2")
    assert ledger.deferred() == frozenset() and ledger.node_count("h") == 0
    for n in ("n1", "n2"):
        ledger.record(rule_set="h", revision=b"2", node=n, example="")
    assert ledger.record(rule_set="h", revision=b"2", node="n3", example="") is not None
    ledger.revised("h", b"2")  # the same revision again (a resync): nothing changes
    assert ledger.deferred() == {"h"}
    ledger.revised("h", None)  # deleted
    assert ledger.deferred() == frozenset()
