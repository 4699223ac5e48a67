"""``desired_state``: the one way from a node's merged NodeFeatures to its desired state, for the
master (paused after each rule), masterless mode and the CLIs (run at once)."""

from __future__ import annotations

from typing import Any

from nfd.api.features import Features
from nfd.nodestate.bookkeeping import Taint
from nfd.nodestate.desired import Desired, Evaluation, desired_state, desired_state_steps
from nfd.nodestate.nodefeatures import MergedNodeFeatures
from nfd.nodestate.outputpolicy import PolicyConfig
from nfd.rules.engine import compile_nodefeaturerule, run_to_end

NS = "feature.node.kubernetes.io"


def rules(*specs: dict[str, Any]) -> list[Any]:
    return [compile_nodefeaturerule({"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
                                     "metadata": {"name": "set"}, "spec": {"rules": list(specs)}})]


AVX = {"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Exists"}}}


def merged(**kw: Any) -> MergedNodeFeatures:
    f = Features()
    f.add_flags("cpu.cpuid", ["AVX"])
    return MergedNodeFeatures(features=f, found=True, **kw)


def test_the_policy_filters_the_rules_output_with_the_nodefeatures_labels() -> None:
    rs = rules({"name": "avx", "labels": {"avx": "true", "kubernetes.io/bad": "x"}, "matchFeatures": [AVX],
                "taints": [{"key": "example.com/t", "effect": "NoSchedule"}]},
               {"name": "none", "labels": {"never": "1"},
                "matchFeatures": [{"feature": "cpu.cpuid", "matchExpressions": {"SSE": {"op": "Exists"}}}]})
    out = desired_state(merged(labels={f"{NS}/from-nf": "1"}), rs, PolicyConfig(enable_taints=True), node_name="n1")
    assert out.desired == Desired(labels={f"{NS}/from-nf": "1", f"{NS}/avx": "true"},
                                  taints=[Taint("example.com/t", "", "NoSchedule")])
    assert [(k, key) for k, key, _ in out.report.rejected] == [("label", "kubernetes.io/bad")]
    assert list(out.report.outputs) == [("set", "avx", 0)]
    assert out.policy is not None and out.rules.results[1].matched is False
    # the master does not explain a rule that did not match; the CLIs ask for it
    assert out.rules.results[1].reason is None
    how = Evaluation(explain=True)
    assert desired_state(merged(), rs, PolicyConfig(), node_name="n1", how=how).rules.results[1].reason


def test_without_a_policy_the_rules_own_output_and_an_empty_desired_state() -> None:
    """``kubectl nfd dryrun/test``: upstream's plugin prints the rules' output, no master policy."""
    rs = rules({"name": "avx", "labels": {"avx": "@rule.matched.nothing"}, "matchFeatures": [AVX]})
    how = Evaluation(feed_back=False, auto_prefix=False)
    out = desired_state(merged(), rs, None, node_name="", how=how)
    assert out.policy is None and out.desired == Desired() and out.report.rejected == []
    assert out.rules.output.labels == {"avx": "@rule.matched.nothing"}
    assert out.rules.master_output.labels == {"avx": "@rule.matched.nothing"}  # not prefixed
    assert "rule.matched" not in out.rules.features.attributes  # no feedback


def test_auto_prefix_follows_the_policy_unless_told() -> None:
    rs = rules({"name": "avx", "labels": {"avx": "true"}, "matchFeatures": [AVX]})
    gate = PolicyConfig(disable_auto_prefix=True)
    assert desired_state(merged(), rs, gate, node_name="n").rules.master_output.labels == {"avx": "true"}
    assert desired_state(merged(), rs, PolicyConfig(), node_name="n").rules.master_output.labels == {
        f"{NS}/avx": "true"}


def test_the_steps_pause_after_each_rule_and_come_to_the_same_state() -> None:
    rs = rules(*({"name": f"r{i}", "labels": {f"l{i}": "1"}, "matchFeatures": [AVX]} for i in range(3)))
    steps = desired_state_steps(merged(), rs, PolicyConfig(), node_name="n")
    pauses = 0
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            paused = stop.value
            break
        pauses += 1
    assert pauses == 3
    at_once = desired_state(merged(), rs, PolicyConfig(), node_name="n")
    assert paused.desired == at_once.desired == run_to_end(
        desired_state_steps(merged(), rs, PolicyConfig(), node_name="n")).desired
    assert paused.report.duration_s >= 0.0
