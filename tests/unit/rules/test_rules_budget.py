"""Per-node evaluation limits and what a failing rule leaves in place (nfd-master's use of the engine)."""

from __future__ import annotations

import time
from typing import Any

from nfd.api.features import Features
from nfd.nodestate.rulebook import RuleBook
from nfd.rules.engine import EvalBudget, RuleOutput, compile_nodefeaturerule, process_rule_sets


def nfr(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": name},
            "spec": {"rules": list(rules)}}


def features(**attrs: str) -> Features:
    f = Features()
    f.add_attributes("kernel.version", attrs)
    return f


GT = {"name": "major", "labels": {"new-kernel": "true"},
      "matchFeatures": [{"feature": "kernel.version", "matchExpressions": {"major": {"op": "Gt", "value": ["5"]}}}]}
PLAIN = {"name": "plain", "labels": {"plain": "yes"}, "matchFeatures": []}


def test_runtime_error_keeps_the_previous_output_of_that_rule() -> None:
    rs = compile_nodefeaturerule(nfr("a", GT, PLAIN))
    first = process_rule_sets([rs], features(major="6"))
    assert first.output.labels == {"new-kernel": "true", "plain": "yes"}
    previous = {r.key(): r.output for r in first.results if r.matched}
    # "6.x" is not an integer: Gt fails at run time, which says nothing about the kernel
    res = process_rule_sets([rs], features(major="6.x"), previous=previous)
    assert res.output.labels == {"new-kernel": "true", "plain": "yes"}
    (err,) = res.errors
    assert err[0] == "major"
    assert next(r for r in res.results if r.name == "major").kept_previous
    # without a previous evaluation the failing rule contributes nothing (upstream)
    assert process_rule_sets([rs], features(major="6.x")).output.labels == {"plain": "yes"}
    # a clean evaluation that does not match does remove it
    assert process_rule_sets([rs], features(major="4"), previous=previous).output.labels == {"plain": "yes"}


def test_previous_output_is_not_used_for_a_deleted_rule() -> None:
    previous = {("a", "major", 0): RuleOutput(labels={"new-kernel": "true"})}
    rs = compile_nodefeaturerule(nfr("a", PLAIN))
    assert process_rule_sets([rs], features(major="6.x"), previous=previous).output.labels == {"plain": "yes"}


def test_node_budget_fails_the_remaining_rules_with_a_named_error(monkeypatch: Any) -> None:
    rs = compile_nodefeaturerule(nfr("s", *({"name": f"r{i}", "labels": {f"r{i}": "1"}, "matchFeatures": []}
                                            for i in range(5))))
    import nfd.rules.engine as engine

    real = engine.evaluate_rule

    def slow(rule: Any, *a: Any, **kw: Any) -> Any:
        time.sleep(0.06)
        return real(rule, *a, **kw)

    monkeypatch.setattr(engine, "evaluate_rule", slow)
    res = process_rule_sets([rs], Features(), budget=EvalBudget(rule_s=1.0, node_s=0.1))
    assert set(res.output.labels) == {"r0", "r1"}
    assert [name for name, _ in res.errors] == ["r2", "r3", "r4"]
    assert "not evaluated: this node's rules used their time budget of 0.1s" in res.errors[0][1]
    # sleeping is not work: a rule that only waited (the process descheduled) does not fail
    res = process_rule_sets([rs], Features(), budget=EvalBudget(rule_s=0.05, node_s=10))
    assert res.errors == []

    def busy(rule: Any, *a: Any, **kw: Any) -> Any:
        end = time.thread_time() + 0.06
        while time.thread_time() < end:
            pass
        return real(rule, *a, **kw)

    monkeypatch.setattr(engine, "evaluate_rule", busy)
    res = process_rule_sets([rs], Features(), budget=EvalBudget(rule_s=0.05, node_s=10))
    assert len(res.errors) == 5
    assert "more than the rule time budget of 0.05s" in res.errors[0][1]


def test_garbage_collection_is_not_charged_to_a_rule(monkeypatch: Any) -> None:
    """A full collection walks the whole heap (a master's thousands of nodes): the rule that
    happened to trigger it did not do that work."""
    rs = compile_nodefeaturerule(nfr("s", {"name": "r", "labels": {"r": "1"}, "matchFeatures": []}))
    import nfd.rules.engine as engine

    real = engine.evaluate_rule

    def collecting(rule: Any, *a: Any, **kw: Any) -> Any:
        engine._gc_clock("start", {"generation": 2})
        end = time.thread_time() + 0.08
        while time.thread_time() < end:
            pass
        engine._gc_clock("stop", {"generation": 2})
        return real(rule, *a, **kw)

    monkeypatch.setattr(engine, "evaluate_rule", collecting)
    res = process_rule_sets([rs], Features(), budget=EvalBudget(rule_s=0.05, node_s=0.05))
    assert res.errors == [] and res.output.labels == {"r": "1"}


def test_rulebook_keeps_the_last_good_revision_of_a_broken_edit() -> None:
    book = RuleBook()
    good = nfr("r", GT)
    assert book.upsert(good) is None
    gen = book.generation
    broken = nfr("r", {**GT, "matchFeatures": [{"feature": "kernel.version",
                                                 "matchExpressions": {"full": {"op": "InRegexp", "value": ["("]}}}]})
    msg = book.upsert(broken)
    assert msg is not None and "keeping its previous version" in msg and "error parsing regexp" in msg
    assert book.generation == gen  # nothing re-evaluated: the good revision is still in force
    assert book.ordered()[0].rules[0].match_features is not None
    res = process_rule_sets(book.ordered(), features(major="6", full="6.1"))
    assert res.output.labels == {"new-kernel": "true"}
    # fixing it takes the new revision
    fixed = nfr("r", {**GT, "labels": {"fixed": "yes"}})
    assert book.upsert(fixed) is None and book.generation == gen + 1
    # deleting it still removes it
    book.remove("r")
    assert book.ordered() == []


def test_rulebook_takes_a_new_object_with_invalid_rules_as_upstream() -> None:
    book = RuleBook()
    bad = nfr("n", {"name": "x", "labels": {"x": "1"},
                    "matchFeatures": [{"feature": "a.b", "matchName": {"op": "InRegexp", "value": ["("]}}]}, PLAIN)
    assert book.upsert(bad) is None
    res = process_rule_sets(book.ordered(), Features())
    assert res.output.labels == {"plain": "yes"}


def test_template_steps_are_shared_by_a_nodes_rules() -> None:
    spend = "{{ range until 1000 }}{{ range until 300 }}{{ end }}{{ end }}x=y"  # ~300,000 steps each
    mine = {"feature": "kernel.version", "matchExpressions": {"major": {"op": "Exists"}}}
    rs = compile_nodefeaturerule(nfr("t", *({"name": f"t{i}", "labelsTemplate": spend, "matchFeatures": [mine]}
                                            for i in range(6))))
    budget = EvalBudget(rule_s=60, node_s=60, template_steps=1_000_000)
    res = process_rule_sets([rs], features(major="6"), budget=budget)
    ok = [r.name for r in res.results if r.matched]
    assert ok == ["t0", "t1", "t2"], res.errors
    assert all("step budget" in msg for _, msg in res.errors[1:]), res.errors
    # each evaluation gets its own allowance; without a budget each template has its own only
    assert len([r for r in process_rule_sets([rs], features(major="6")).results if r.matched]) == 6


BURN = "{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}"


def _burners(n: int) -> dict[str, Any]:
    return nfr("burn", *({"name": f"burn{i}", "labelsTemplate": BURN,
                          "matchFeatures": [{"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Exists"}}}]}
                         for i in range(n)))


NODE_BUDGET = ("this node's templates used their step budget", "this node's rules used their time budget")


def test_offline_tools_stop_where_the_master_stops(tmp_path: Any, capsys: Any) -> None:
    """40 budget-burning templates: nfd-master stops them at its per-node budget; nfd rules dryrun
    and kubectl-nfd dryrun do the same and name the budget, one line per rule."""
    import json

    import yaml

    from nfd.cli.kubectl_nfd import main as kubectl_main
    from nfd.cli.rules import main as rules_main
    from nfd.master.config import MasterConfig, policy_config
    from nfd.nodestate.desired import Evaluation, desired_state
    from nfd.nodestate.nodefeatures import MergedNodeFeatures

    obj = _burners(40)
    f = Features()
    f.add_flags("cpu.cpuid", ["AVX"])
    # the master's path
    book = RuleBook()
    assert book.upsert(obj) is None
    rep = desired_state(MergedNodeFeatures(features=f), book.ordered(), policy_config(MasterConfig()),
                        node_name="n1", how=Evaluation(budget=EvalBudget())).report
    master_stopped = [n for n, msg in rep.rule_errors if any(b in msg for b in NODE_BUDGET)]
    assert len(master_stopped) >= 30
    # the offline tools
    rules, nf = tmp_path / "r.yaml", tmp_path / "nf.yaml"
    rules.write_text(yaml.safe_dump(obj))
    nf.write_text(yaml.safe_dump({"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
                                  "metadata": {"name": "n1"},
                                  "spec": {"features": {"flags": {"cpu.cpuid": {"elements": {"AVX": {}}}}}}}))
    assert rules_main(["dryrun", "-f", str(rules), "--nodefeature", str(nf), "-o", "json"]) == 1
    errors = json.loads(capsys.readouterr().out)["errors"]
    assert len(errors) == 40
    stopped = [e["rule"] for e in errors if any(b in e["message"] for b in NODE_BUDGET)]
    assert len(stopped) >= 30
    assert all("budget" in e["message"] for e in errors)  # each says which budget stopped it
    assert rules_main(["dryrun", "-f", str(rules), "--nodefeature", str(nf)]) == 1
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  burn/")]
    assert len(lines) == 40 and all("budget" in ln for ln in lines)
    assert kubectl_main(["dryrun", "-f", str(rules), "-n", str(nf)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 40 and sum(any(b in ln for b in NODE_BUDGET) for ln in err) >= 30


def test_rules_sharing_a_name_each_keep_their_own_previous_output() -> None:
    """The CRD lets two rules of one object share a name: a failing one keeps its own output,
    not its namesake's (the previous outputs are keyed by the rule's place among its name's)."""
    failing = {**GT, "name": "dup", "labels": {"first": "yes"}}
    rs = compile_nodefeaturerule(nfr("a", failing, {**PLAIN, "name": "dup", "labels": {"second": "yes"}}))
    first = process_rule_sets([rs], features(major="6"))
    assert first.output.labels == {"first": "yes", "second": "yes"}
    assert [r.key() for r in first.results] == [("a", "dup", 0), ("a", "dup", 1)]
    previous = {r.key(): r.output for r in first.results if r.matched}
    res = process_rule_sets([rs], features(major="6.x"), previous=previous)
    assert res.output.labels == {"first": "yes", "second": "yes"}
    kept = next(r for r in res.results if r.kept_previous)
    assert kept.occurrence == 0 and kept.output.labels == {"first": "yes"}
