"""RuleMemo: a node's unchanged rules are not run again when only other rules change
(masterless workers), and the result is always what a full evaluation gives."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

import nfd.rules.engine as engine
from nfd.api.features import Features
from nfd.rules.engine import (
    CompiledRuleSet,
    RuleMemo,
    compile_nodefeaturerule,
    iter_process_rule_sets,
    run_to_end,
)


def nfr(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
            "metadata": {"name": name}, "spec": {"rules": rules}}


def node_features() -> Features:
    return Features(
        flags={"cpu.cpuid": {"AVX", "AVX2", "SSE4"}},
        attributes={"kernel.version": {"major": "6", "minor": "8"}, "system.osrelease": {"ID": "ubuntu"}},
        instances={"pci.device": [{"vendor": "10de", "class": "0302"}, {"vendor": "8086", "class": "0200"}]},
    )


BASE: list[dict[str, Any]] = [
    {"name": "avx", "labels": {"avx": "true"},
     "matchFeatures": [{"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Exists"}}}]},
    {"name": "ver", "labels": {"version": "v1"}},
    {"name": "chained", "labels": {"chained": "yes"},
     "matchFeatures": [{"feature": "rule.matched", "matchExpressions": {"version": {"op": "In", "value": ["v1"]}}}]},
    {"name": "cel-chained", "labels": {"cel-chained": "yes"},
     "matchCEL": ["attributes['rule.matched']['version'] == 'v1'"]},
    {"name": "tmpl", "labelsTemplate": "{{ range .pci.device }}vendor-{{ .vendor }}=present\n{{ end }}",
     "matchFeatures": [{"feature": "pci.device", "matchExpressions": {"class": {"op": "InRegexp", "value": ["^03"]}}}]},
    {"name": "kver", "labels": {"kernel-6": "true"},
     "matchFeatures": [{"feature": "kernel.version", "matchExpressions": {"major": {"op": "Gt", "value": ["5"]}}}]},
]


class Counting:
    """Counts evaluate_rule calls by rule name."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        real = engine.evaluate_rule

        def counted(rule: Any, *a: Any, **kw: Any) -> Any:
            self.calls.append(rule.name)
            return real(rule, *a, **kw)

        monkeypatch.setattr(engine, "evaluate_rule", counted)


def run(sets: list[CompiledRuleSet], f: Features, memo: RuleMemo | None) -> Any:
    return run_to_end(iter_process_rule_sets(sets, f, node_name="n1", explain=False, memo=memo))


def summary(res: Any) -> tuple[Any, ...]:
    m = res.master_output
    return (m.labels, m.annotations, m.extended_resources, m.vars, m.taints,
            res.output.labels, [(r.rule_set, r.name, r.matched, r.error) for r in res.results],
            res.features.attributes.get("rule.matched"))


def test_only_the_edited_rule_and_the_rules_reading_its_output_run_again(monkeypatch: pytest.MonkeyPatch) -> None:
    f = node_features()
    other = compile_nodefeaturerule(nfr("a-other", [BASE[0], BASE[4], BASE[5]]))
    v1 = compile_nodefeaturerule(nfr("b-main", [BASE[1], BASE[2], BASE[3]]))
    memo = RuleMemo()
    first = run([other, v1], f, memo)
    assert first.master_output.labels["feature.node.kubernetes.io/chained"] == "yes"
    count = Counting(monkeypatch)
    # the same rules again: nothing runs
    again = run([other, v1], f, memo)
    assert count.calls == []
    assert summary(again) == summary(first)
    # edit "ver" (as the rulebook does: the unchanged rules keep their compiled objects)
    edited = nfr("b-main", [{"name": "ver", "labels": {"version": "v2"}}, BASE[2], BASE[3]])
    v2 = compile_nodefeaturerule(edited, reuse=lambda i: v1.rules[i] if i else None)
    res = run([other, v2], f, memo)
    assert count.calls == ["ver", "chained", "cel-chained"]  # the two readers of rule.matched follow it
    assert "feature.node.kubernetes.io/chained" not in res.master_output.labels
    assert "feature.node.kubernetes.io/cel-chained" not in res.master_output.labels
    assert summary(res) == summary(run([other, v2], f, None))


def test_new_features_object_runs_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    sets = [compile_nodefeaturerule(nfr("r", BASE))]
    memo = RuleMemo()
    run(sets, node_features(), memo)
    count = Counting(monkeypatch)
    changed = node_features()
    changed.flags["cpu.cpuid"].discard("AVX")
    res = run(sets, changed, memo)
    assert len(count.calls) == len(BASE)
    assert "feature.node.kubernetes.io/avx" not in res.master_output.labels


def test_a_failed_rule_is_run_again(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = {"name": "bad", "labels": {"x": "y"}, "matchCEL": ["attributes['kernel.version']['nope'] == '1'"]}
    sets = [compile_nodefeaturerule(nfr("r", [BASE[0], bad]))]
    f = node_features()
    memo = RuleMemo()
    first = run(sets, f, memo)
    assert [e[0] for e in first.errors] == ["bad"]
    count = Counting(monkeypatch)
    second = run(sets, f, memo)
    assert count.calls == ["bad"]
    assert [e[0] for e in second.errors] == ["bad"]


def test_auto_prefix_change_is_not_served_from_the_memo() -> None:
    f = node_features()
    sets = [compile_nodefeaturerule(nfr("r", BASE))]
    memo = RuleMemo()
    run(sets, f, memo)
    res = run_to_end(iter_process_rule_sets(sets, f, node_name="n1", explain=False, auto_prefix=False, memo=memo))
    assert "avx" in res.master_output.labels


def _random_rule(rnd: random.Random, i: int) -> dict[str, Any]:
    kind = rnd.randrange(5)
    name = f"r{i}"
    if kind == 0:
        return {"name": name, "labels": {f"l{i}": rnd.choice(["a", "b"])},
                "matchFeatures": [{"feature": "cpu.cpuid", "matchExpressions": {
                    rnd.choice(["AVX", "AVX512", "SSE4"]): {"op": rnd.choice(["Exists", "DoesNotExist"])}}}]}
    if kind == 1:
        return {"name": name, "labels": {f"l{rnd.randrange(6)}": rnd.choice(["a", "b", "c"])},
                "vars": {f"v{rnd.randrange(4)}": rnd.choice(["1", "2"])}}
    if kind == 2:
        return {"name": name, "labels": {f"c{i}": "true"},
                "matchFeatures": [{"feature": "rule.matched", "matchExpressions": {
                    f"l{rnd.randrange(6)}": {"op": "In", "value": [rnd.choice(["a", "b", "c"])]}}}]}
    if kind == 3:
        return {"name": name, "labels": {f"e{i}": "true"},
                "matchCEL": [f"'v{rnd.randrange(4)}' in attributes['rule.matched']"]}
    return {"name": name, "labelsTemplate": "{{ range .pci.device }}v-{{ .vendor }}-" + str(i) + "=1\n{{ end }}",
            "matchFeatures": [{"feature": "pci.device", "matchExpressions": {"vendor": {"op": "Exists"}}}]}


def test_random_edits_give_the_full_evaluation() -> None:
    """Edit one rule of one object at a time, as a watch delivers them; after each edit the
    memoised evaluation equals a fresh one."""
    rnd = random.Random(7)
    f = node_features()
    objs = [nfr(f"set-{j}", [_random_rule(rnd, j * 10 + k) for k in range(6)]) for j in range(3)]
    compiled = [compile_nodefeaturerule(o) for o in objs]
    memo = RuleMemo()
    run(compiled, f, memo)
    for step in range(150):
        j = rnd.randrange(len(objs))
        k = rnd.randrange(6)
        new = copy.deepcopy(objs[j])
        new["spec"]["rules"][k] = _random_rule(rnd, j * 10 + k)
        old_c = compiled[j]
        compiled[j] = compile_nodefeaturerule(new, reuse=lambda i, k=k, old_c=old_c: None if i == k else old_c.rules[i])
        objs[j] = new
        got = run(compiled, f, memo)
        want = run(compiled, f, None)
        assert summary(got) == summary(want), step


def test_untouched_rule_sets_are_served_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit to one object: the objects before it, and those after it that do not read
    rule.matched, come back as one entry each (not rule by rule), with the same result."""
    f = node_features()
    a = compile_nodefeaturerule(nfr("a", [BASE[0], BASE[4]]))
    b1 = compile_nodefeaturerule(nfr("b", [BASE[1]]))
    c = compile_nodefeaturerule(nfr("c", [BASE[5]]))
    d = compile_nodefeaturerule(nfr("d", [BASE[2]]))  # reads rule.matched (b's "version")
    memo = RuleMemo()
    run([a, b1, c, d], f, memo)
    before = dict(memo.sets)
    assert set(before) == {"a", "b", "c", "d"}
    b2 = compile_nodefeaturerule(nfr("b", [{"name": "ver", "labels": {"version": "v2"}}]))
    count = Counting(monkeypatch)
    res = run([a, b2, c, d], f, memo)
    assert count.calls == ["ver", "chained"]
    assert memo.sets["a"] is before["a"] and memo.sets["c"] is before["c"]
    assert memo.sets["b"] is not before["b"] and memo.sets["d"] is not before["d"]
    assert summary(res) == summary(run([a, b2, c, d], f, None))
    # and back: d reads the old rule.matched again, and matches again
    res = run([a, b1, c, d], f, memo)
    assert res.master_output.labels["feature.node.kubernetes.io/chained"] == "yes"
    assert summary(res) == summary(run([a, b1, c, d], f, None))


def test_a_rule_set_with_a_failed_rule_is_not_served_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = {"name": "bad", "labels": {"x": "y"}, "matchCEL": ["attributes['kernel.version']['nope'] == '1'"]}
    sets = [compile_nodefeaturerule(nfr("r", [BASE[0], bad]))]
    memo = RuleMemo()
    run(sets, node_features(), memo)
    assert "r" not in memo.sets
