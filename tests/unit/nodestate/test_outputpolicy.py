"""Master policy (cases from upstream's TestFilterLabels/TestGetDynamicValue and §3.7 rules)."""

from __future__ import annotations

import pytest

from nfd.api import DEFAULT_LABEL_NS
from nfd.api.errors import ValidationError
from nfd.api.features import Features
from nfd.nodestate.outputpolicy import PolicyConfig, add_ns, apply_policy, filter_label
from nfd.rules.engine import RuleOutput, compile_nodefeaturerule, process_rule_sets

LSM = Features(attributes={"test.feature": {"LSM": "123"}})
UPSTREAM_CFG = PolicyConfig(
    extra_label_ns=frozenset({"example.io"}),
    deny_label_ns=frozenset({"", "kubernetes.io", "denied.ns", "*.kubernetes.io", "*.denied.subns"}),
)


@pytest.mark.parametrize(
    ("name", "value", "features", "want"),
    [
        ("example.io/test", "test-val", Features(), "test-val"),
        ("example.io/testLabel", "@test.feature.LSM", LSM, "123"),
        ("test-label", "test-value", Features(), None),
        ("kubernetes.io/test-label", "test-value", Features(), None),
        ("sub.ns.kubernetes.io/test-label", "test-value", Features(), None),
        ("denied.ns/test-label", "test-value", Features(), None),
        ("my.denied.subns/test-label", "test-value", Features(), None),
        ("denied.subns/test-label", "test-value", Features(), "test-value"),
        ("xdenied.subns/test-label", "test-value", Features(), "test-value"),
    ],
)
def test_filter_label_upstream_cases(name: str, value: str, features: Features, want: str | None) -> None:
    got, why = filter_label(name, value, features, UPSTREAM_CFG)
    assert got == want
    assert (why is None) is (want is not None)


def test_extra_label_ns_reallows_denied_namespaces_without_revalidating() -> None:
    cfg = PolicyConfig(
        extra_label_ns=frozenset({"sub.kubernetes.io", "vendor.io"}), deny_label_ns=frozenset({"vendor.io"})
    )
    assert filter_label("sub.kubernetes.io/x", "v", Features(), cfg) == ("v", None)
    assert filter_label("vendor.io/x", "not a valid value", Features(), cfg) == ("not a valid value", None)
    assert filter_label("kubernetes.io/x", "v", Features(), cfg)[0] is None
    # deny entries can deny even the default namespace unless re-allowed
    cfg2 = PolicyConfig(deny_label_ns=frozenset({"*.kubernetes.io"}))
    assert filter_label("feature.node.kubernetes.io/x", "v", Features(), cfg2)[0] is None


def test_whitelist_applies_to_name_part() -> None:
    cfg = PolicyConfig(label_whitelist="^cpu-")
    assert filter_label("feature.node.kubernetes.io/cpu-x", "1", Features(), cfg) == ("1", None)
    got, why = filter_label("feature.node.kubernetes.io/kernel-x", "1", Features(), cfg)
    assert got is None and "whitelist" in (why or "")
    with pytest.raises(ValidationError, match="labelWhiteList"):
        PolicyConfig(label_whitelist="(")


def test_add_ns_prefixed_twin_wins() -> None:
    assert add_ns(
        {"a": "1", "feature.node.kubernetes.io/a": "2", "b": "3", "x.io/c": "4"}, "feature.node.kubernetes.io"
    ) == {
        "feature.node.kubernetes.io/a": "2",
        "feature.node.kubernetes.io/b": "3",
        "x.io/c": "4",
    }
    assert add_ns({"a": "1"}, None) == {"a": "1"}


def _master(out: RuleOutput) -> RuleOutput:
    """apply_policy takes process_rule_sets' master_output: names already auto-prefixed."""
    return RuleOutput(
        labels=add_ns(out.labels, DEFAULT_LABEL_NS),
        annotations=add_ns(out.annotations, DEFAULT_LABEL_NS),
        extended_resources=add_ns(out.extended_resources, DEFAULT_LABEL_NS),
        taints=out.taints,
    )


def test_apply_policy_end_to_end() -> None:
    features = Features(attributes={"kernel.version": {"major": "6"}, "rule.matched": {"gpu": "true"}})
    out = RuleOutput(
        labels={
            "a": "nfr",
            "dyn": "@kernel.version.major",
            "chain": "@rule.matched.gpu",
            "bad": "@no.such.thing",
            "nfd.node.kubernetes.io/x": "1",
        },
        annotations={"note": "hi", "nfd.node.kubernetes.io/y": "no", "vendor.io/big": "x" * 2000},
        extended_resources={"gpus": "@kernel.version.major", "bad-qty": "lots", "kubernetes.io/x": "1"},
        taints=[
            {"key": "feature.node.kubernetes.io/t", "value": "", "effect": "NoSchedule"},
            {"key": "nokey", "value": "", "effect": "NoSchedule"},
            {"key": "vendor.io/t", "value": "v", "effect": "Sometimes"},
        ],
    )
    res = apply_policy(
        nodefeature_labels={"a": "nf", "b": "nf"},
        rule_output=_master(out),
        features=features,
        config=PolicyConfig(enable_taints=True),
    )
    assert res.labels == {
        "feature.node.kubernetes.io/a": "nfr",
        "feature.node.kubernetes.io/b": "nf",
        "feature.node.kubernetes.io/dyn": "6",
        "feature.node.kubernetes.io/chain": "true",
    }
    assert res.annotations == {"feature.node.kubernetes.io/note": "hi"}
    assert res.extended_resources == {"feature.node.kubernetes.io/gpus": "6"}
    assert res.taints == [{"key": "feature.node.kubernetes.io/t", "value": "", "effect": "NoSchedule"}]
    rejected = {(r.kind, r.key) for r in res.rejected}
    assert ("label", "feature.node.kubernetes.io/bad") in rejected
    assert ("label", "nfd.node.kubernetes.io/x") in rejected
    assert ("annotation", "nfd.node.kubernetes.io/y") in rejected
    assert ("annotation", "vendor.io/big") in rejected
    assert ("extendedResource", "feature.node.kubernetes.io/bad-qty") in rejected
    assert ("extendedResource", "kubernetes.io/x") in rejected
    assert ("taint", "nokey:NoSchedule") in rejected
    assert ("taint", "vendor.io/t=v:Sometimes") in rejected


def test_taints_only_with_enable_taints_and_restrictions() -> None:
    out = RuleOutput(
        labels={"a": "1"},
        annotations={"n": "x"},
        extended_resources={"e": "1"},
        taints=[{"key": "feature.node.kubernetes.io/t", "value": "", "effect": "NoSchedule"}],
    )
    res = apply_policy(
        nodefeature_labels={}, rule_output=_master(out), features=Features(), config=PolicyConfig()
    )
    assert res.taints == [] and res.labels and res.annotations and res.extended_resources
    cfg = PolicyConfig(
        disable_labels=True, disable_annotations=True, disable_extended_resources=True, enable_taints=True
    )
    res = apply_policy(
        nodefeature_labels={"z": "1"}, rule_output=_master(out), features=Features(), config=cfg
    )
    assert (res.labels, res.annotations, res.extended_resources) == ({}, {}, {})
    assert len(res.taints) == 1


def test_disable_auto_prefix() -> None:
    out = RuleOutput(
        labels={"plain": "1"},
        annotations={"plain": "a"},
        extended_resources={"plain": "2"},
        taints=[{"key": "plain", "value": "", "effect": "NoSchedule"}],
    )
    res = apply_policy(
        nodefeature_labels={},
        rule_output=out,
        features=Features(),
        config=PolicyConfig(disable_auto_prefix=True, enable_taints=True),
    )
    assert (
        res.labels == {"plain": "1"}
        and res.annotations == {"plain": "a"}
        and res.extended_resources == {"plain": "2"}
    )
    assert res.taints == []  # unprefixed taint keys are always rejected


def test_from_master_config() -> None:
    cfg = PolicyConfig.from_master_config(
        {
            "extraLabelNs": ["a.io"],
            "denyLabelNs": ["*.b.io"],
            "labelWhiteList": "^x",
            "enableTaints": True,
            "restrictions": {"disableLabels": True, "allowOverwrite": False},
        }
    )
    assert cfg.extra_label_ns == {"a.io"} and cfg.is_denied_ns("c.b.io") and not cfg.is_denied_ns("b.io")
    assert cfg.enable_taints and cfg.disable_labels and not cfg.allow_overwrite
    with pytest.raises(ValidationError, match="extraLabelNs"):
        PolicyConfig.from_master_config({"extraLabelNs": [1]})


def test_rule_output_names_are_prefixed_once() -> None:
    # upstream path.Join's an empty key to the bare namespace, which then fails validation;
    # prefixing master_output again would turn it into a valid "ns/ns" label
    out = process_rule_sets(
        [
            compile_nodefeaturerule(
                {
                    "kind": "NodeFeatureRule",
                    "metadata": {"name": "a"},
                    "spec": {"rules": [{"name": "r", "labels": {"": "x", "ok": "1"}}]},
                }
            )
        ],
        Features(),
        node_name="n",
    )
    assert set(out.master_output.labels) == {DEFAULT_LABEL_NS, f"{DEFAULT_LABEL_NS}/ok"}
    res = apply_policy(
        nodefeature_labels={}, rule_output=out.master_output, features=out.features, config=PolicyConfig()
    )
    assert res.labels == {f"{DEFAULT_LABEL_NS}/ok": "1"}
    assert (("label", DEFAULT_LABEL_NS)) in {(r.kind, r.key) for r in res.rejected}


def test_outputs_the_api_server_would_refuse_are_dropped_one_by_one() -> None:
    from nfd.nodestate.outputpolicy import PolicyConfig, apply_policy

    out = RuleOutput(
        labels={"feature.node.kubernetes.io/good": "yes"},
        extended_resources={"vendor.example.com/neg": "-1", "vendor.example.com/frac": "1.5",
                            "feature.node.kubernetes.io/half": "0.5", "vendor.example.com/ok": "4"},
        taints=[{"key": "example.com/t", "value": "bad value!", "effect": "NoSchedule"},
                {"key": "example.com/u", "value": "fine", "effect": "NoSchedule"},
                {"key": "example.com/u", "value": "again", "effect": "NoSchedule"},
                {"key": "example.com/u", "value": "other", "effect": "NoExecute"}],
        annotations={f"example.com/a{i}": "x" * 1000 for i in range(300)},
    )
    res = apply_policy(nodefeature_labels={}, rule_output=out, features=Features(),
                       config=PolicyConfig(enable_taints=True, extra_label_ns=frozenset({"example.com"})))
    assert res.labels == {"feature.node.kubernetes.io/good": "yes"}
    # kube-apiserver: non-negative always, an integer for extended (non-kubernetes.io) names
    assert res.extended_resources == {"feature.node.kubernetes.io/half": "0.5", "vendor.example.com/ok": "4"}
    assert [(t["key"], t["value"], t["effect"]) for t in res.taints] == [
        ("example.com/u", "fine", "NoSchedule"), ("example.com/u", "other", "NoExecute")]
    reasons = {r.key: r.reason for r in res.rejected}
    assert "must be greater than or equal to 0" in reasons["vendor.example.com/neg"]
    assert "must be an integer" in reasons["vendor.example.com/frac"]
    assert "invalid taint value 'bad value!'" in reasons["example.com/t=bad value!:NoSchedule"]
    assert "duplicates" in reasons["example.com/u=again:NoSchedule"]
    assert len(res.annotations) < 300 and sum(len(k) + len(v) for k, v in res.annotations.items()) <= 256 * 1024
    assert any("annotations from rules would pass 262144 bytes" in r.reason for r in res.rejected)


def test_verdicts_are_remembered_per_config_for_static_values_only() -> None:
    cfg = PolicyConfig(deny_label_ns=frozenset({"denied.ns"}), label_whitelist="^ok")
    assert filter_label("example.com/ok-a", "1", LSM, cfg) == ("1", None)
    assert filter_label("denied.ns/ok", "1", LSM, cfg)[1] == "namespace 'denied.ns' is not allowed"
    assert filter_label("example.com/bad", "1", LSM, cfg)[0] is None
    assert set(cfg._verdicts) == {("l", "example.com/ok-a", "1"), ("l", "denied.ns/ok", "1"), ("l", "example.com/bad", "1")}
    # a second call gives the same answer from the memo
    assert filter_label("denied.ns/ok", "1", LSM, cfg)[1] == "namespace 'denied.ns' is not allowed"
    # dynamic values depend on the features: never remembered
    assert filter_label("example.com/ok-dyn", "@test.feature.LSM", LSM, cfg) == ("123", None)
    other = Features(attributes={"test.feature": {"LSM": "456"}})
    assert filter_label("example.com/ok-dyn", "@test.feature.LSM", other, cfg) == ("456", None)
    # long (hostile) values are judged, not kept
    long = "x" * 600
    assert filter_label("example.com/ok-long", long, LSM, cfg)[0] is None
    assert not any(k[1] == "example.com/ok-long" for k in cfg._verdicts)
    # another config, another memo
    assert filter_label("example.com/bad", "1", LSM, PolicyConfig())[0] == "1"


def test_verdict_memo_starts_over_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    import nfd.nodestate.outputpolicy as policy

    monkeypatch.setattr(policy, "VERDICTS_MAX", 4)
    cfg = PolicyConfig()
    for i in range(10):
        assert filter_label(f"example.com/l{i}", "v", LSM, cfg) == ("v", None)
        assert len(cfg._verdicts) <= 4


def test_a_replaced_config_does_not_inherit_verdicts() -> None:
    from dataclasses import replace

    cfg = PolicyConfig()
    assert filter_label("denied.ns/x", "1", LSM, cfg) == ("1", None)
    denied = replace(cfg, deny_label_ns=frozenset({"denied.ns"}))
    assert denied._verdicts == {} and filter_label("denied.ns/x", "1", LSM, denied)[0] is None
