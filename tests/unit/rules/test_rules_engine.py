"""Rule evaluation, matchAny, matchName, chaining and error isolation (cases from upstream's
rule_test.go / grouprule_test.go and the customization guide)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from nfd.api.errors import ValidationErrors
from nfd.api.features import Features
from nfd.nodestate.groups import member_name, node_matches_group
from nfd.rules.engine import (
    BrokenRule,
    CompiledRuleSet,
    compile_group_rules,
    compile_nodefeaturerule,
    compile_rule,
    evaluate_rule,
    process_rule_sets,
)

HAVE_TEMPLATES = importlib.util.find_spec("nfd.lang.gotemplate") is not None and hasattr(
    importlib.import_module("nfd.lang.gotemplate")
    if importlib.util.find_spec("nfd.lang.gotemplate")
    else None,
    "parse",
)
needs_templates = pytest.mark.skipif(not HAVE_TEMPLATES, reason="nfd.lang.gotemplate not available yet")


def feats(
    flags: dict[str, list[str]] | None = None,
    attrs: dict[str, dict[str, str]] | None = None,
    insts: dict[str, list[dict[str, str]]] | None = None,
) -> Features:
    return Features(
        flags={k: set(v) for k, v in (flags or {}).items()},
        attributes={k: dict(v) for k, v in (attrs or {}).items()},
        instances={k: [dict(i) for i in v] for k, v in (insts or {}).items()},
    )


def me(op: str, *values: str, type: str = "") -> dict[str, Any]:  # noqa: A002
    d: dict[str, Any] = {"op": op}
    if values:
        d["value"] = list(values)
    if type:
        d["type"] = type
    return d


def term(
    feature: str, exprs: dict[str, Any] | None = None, name: dict[str, Any] | None = None
) -> dict[str, Any]:
    t: dict[str, Any] = {"feature": feature}
    if exprs is not None:
        t["matchExpressions"] = exprs
    if name is not None:
        t["matchName"] = name
    return t


def run(rule: dict[str, Any], f: Features) -> Any:
    rule.setdefault("name", "test")
    return evaluate_rule(compile_rule(rule, path="spec.rules[0]"), f)


def nfr(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "NodeFeatureRule", "metadata": {"name": name}, "spec": {"rules": list(rules)}}


R2 = {
    "labels": {"label-1": "label-val-1"},
    "vars": {"var-1": "var-val-1"},
    "matchFeatures": [term("domain-1.kf-1", {"key-1": me("Exists")})],
}


def test_rule_without_matchers_always_matches() -> None:
    r1 = {"labels": {"label-1": "", "label-2": "true"}}
    for f in (Features(), feats({"domain-1.kf-1": []}, {"domain-1.vf-1": {}}, {"domain-1.if-1": []})):
        res = run(dict(r1), f)
        assert res.matched and res.error is None
        assert res.output.labels == r1["labels"]
        assert res.output.vars == {}


def test_missing_feature_is_no_match_not_error() -> None:
    res = run(dict(R2), Features())
    assert not res.matched and res.error is None and res.output.labels == {}
    assert "domain-1.kf-1" in (res.reason or "")


def test_empty_feature_sets_and_empty_match_expressions() -> None:
    f = feats({"domain-1.kf-1": []}, {"domain-1.vf-1": {}}, {"domain-1.if-1": []})
    assert not run(dict(R2), f).matched
    f = feats(
        {"domain-1.kf-1": ["key-x"]},
        {"domain-1.vf-1": {"key-1": "val-x"}},
        {"domain-1.if-1": [{"attr-1": "val-x"}]},
    )
    # an empty matchExpressions set matches any existing flag/attribute feature ...
    r = {"labels": {"a": "b"}, "matchFeatures": [term("domain-1.kf-1", {})]}
    assert run(r, f).matched
    # ... but an instance feature only with at least one instance
    assert run({"labels": {"a": "b"}, "matchFeatures": [term("domain-1.if-1", {})]}, f).matched
    f.instances["domain-1.if-1"] = []
    assert not run({"labels": {"a": "b"}, "matchFeatures": [term("domain-1.if-1", {})]}, f).matched
    # a term with neither matchExpressions nor matchName only needs the feature to exist
    assert run({"labels": {"a": "b"}, "matchFeatures": [term("domain-1.if-1")]}, f).matched


def test_flag_attribute_and_instance_features() -> None:
    f = feats(
        {"domain-1.kf-1": ["key-x"]},
        {"domain-1.vf-1": {"key-1": "val-x"}},
        {"domain-1.if-1": [{"attr-1": "val-x"}]},
    )
    assert not run(dict(R2), f).matched
    f.flags["domain-1.kf-1"].add("key-1")
    res = run(dict(R2), f)
    assert res.matched and res.output.labels == R2["labels"] and res.output.vars == R2["vars"]

    r3 = {
        "labels": {"label-3": "label-val-3", "empty": ""},
        "matchFeatures": [term("domain-1.vf-1", {"key-1": me("In", "val-1")})],
    }
    assert not run(dict(r3), f).matched
    f.attributes["domain-1.vf-1"]["key-1"] = "val-1"
    assert run(dict(r3), f).output.labels == {"label-3": "label-val-3", "empty": ""}

    r4 = {
        "labels": {"label-4": "label-val-4"},
        "matchFeatures": [term("domain-1.if-1", {"attr-1": me("In", "val-1")})],
    }
    assert not run(dict(r4), f).matched
    f.instances["domain-1.if-1"][0]["attr-1"] = "val-1"
    assert run(dict(r4), f).matched

    # multiple terms are ANDed
    r5 = {
        "labels": {"label-5": "label-val-5"},
        "matchFeatures": [
            term("domain-1.vf-1", {"key-1": me("In", "val-x")}),
            term("domain-1.if-1", {"attr-1": me("In", "val-1")}),
        ],
    }
    assert not run(dict(r5), f).matched
    r5["matchFeatures"][0]["matchExpressions"]["key-1"] = me("In", "val-1")
    assert run(dict(r5), f).matched

    # matchAny: OR over elements, ANDed with matchFeatures
    r5["matchAny"] = [{"matchFeatures": [term("domain-1.kf-1", {"key-na": me("Exists")})]}]
    assert not run(dict(r5), f).matched
    r5["matchAny"].append({"matchFeatures": [term("domain-1.kf-1", {"key-1": me("Exists")})]})
    assert run(dict(r5), f).matched


MULTI = feats(
    {"dom.feat": ["k-1", "k-2"]},
    {"dom.feat": {"a-1": "v-1", "a-2": "v-2"}},
    {"dom.feat": [{"ia-1": "iv-1"}, {"ia-2": "iv-2"}]},
)


@pytest.mark.parametrize(
    ("exprs", "want"),
    [
        ({"k-1": me("Exists")}, True),
        ({"a-1": me("In", "v-1")}, True),
        ({"ia-1": me("In", "iv-1")}, True),
        ({"k-2": me("Exists"), "a-2": me("In", "v-2")}, True),
        ({"ia-2": me("In", "iv-2")}, True),
        # an instance must match every expression by itself
        ({"ia-1": me("Exists"), "ia-2": me("Exists")}, False),
        # instances are evaluated on their own: no instance has k-1, so DoesNotExist matches there
        ({"k-1": me("DoesNotExist")}, True),
        ({"zz": me("DoesNotExist")}, True),
        # a flag key does not satisfy a value operator
        ({"k-1": me("In", "k-1")}, False),
        ({"a-1": me("Exists"), "nope": me("Exists")}, False),
    ],
)
def test_multi_type_feature(exprs: dict[str, Any], want: bool) -> None:
    assert run({"labels": {"x": "y"}, "matchFeatures": [term("dom.feat", exprs)]}, MULTI).matched is want


@pytest.mark.parametrize(
    ("exprs", "want"),
    [
        # DoesNotExist needs the key absent from flags AND attributes
        ({"k-1": me("DoesNotExist")}, False),
        ({"a-1": me("DoesNotExist")}, False),
        ({"zz": me("DoesNotExist")}, True),
        ({"k-1": me("Exists"), "a-1": me("In", "v-1")}, True),
        ({"k-1": me("Exists"), "a-1": me("In", "v-2")}, False),
    ],
)
def test_flags_and_attributes_union(exprs: dict[str, Any], want: bool) -> None:
    f = feats({"dom.feat": ["k-1", "k-2"]}, {"dom.feat": {"a-1": "v-1", "a-2": "v-2"}})
    assert run({"labels": {"x": "y"}, "matchFeatures": [term("dom.feat", exprs)]}, f).matched is want


def test_feature_name_lookup_is_case_insensitive_but_keys_are_not() -> None:
    f = feats({"cpu.cpuid": ["AVX512F"]})
    assert run({"matchFeatures": [term("CPU.CpuId", {"AVX512F": me("Exists")})]}, f).matched
    assert not run({"matchFeatures": [term("cpu.cpuid", {"avx512f": me("Exists")})]}, f).matched


def test_match_name() -> None:
    f = feats(
        {"cpu.cpuid": ["AVX", "AVX2", "SSE4"]},
        {"kernel.config": {"NO_HZ": "y", "PREEMPT": "y"}},
        {"pci.device": [{"vendor": "10de"}, {"class": "0300"}]},
    )
    assert run({"matchFeatures": [term("cpu.cpuid", name=me("InRegexp", "^AVX"))]}, f).matched
    assert not run({"matchFeatures": [term("cpu.cpuid", name=me("In", "AVX512F"))]}, f).matched
    assert run({"matchFeatures": [term("kernel.config", name=me("In", "PREEMPT"))]}, f).matched
    # instances: a name is any attribute name of any instance
    assert run({"matchFeatures": [term("pci.device", name=me("In", "class"))]}, f).matched
    # DoesNotExist never matches a name; Exists matches when there is any element
    assert not run({"matchFeatures": [term("cpu.cpuid", name=me("DoesNotExist"))]}, f).matched
    assert run({"matchFeatures": [term("cpu.cpuid", name=me("Exists"))]}, f).matched
    # both matchExpressions and matchName must match
    r = {"matchFeatures": [term("cpu.cpuid", {"SSE4": me("Exists")}, me("In", "nope"))]}
    assert not run(r, f).matched
    # numeric operator over non-numeric names is an error; over no names it is not
    assert run({"matchFeatures": [term("cpu.cpuid", name=me("Gt", "1"))]}, f).error is not None
    assert run({"matchFeatures": [term("x.y", name=me("Gt", "1"))]}, feats({"x.y": []})).error is None


def test_errors_only_where_upstream_reaches_them() -> None:
    f = feats({"cpu.cpuid": ["AVX"]}, {"kernel.version": {"major": "6", "full": "6.1.0-13-amd64"}})
    bad = {"major": me("Equals", "6")}
    # evaluated -> error
    assert run({"matchFeatures": [term("kernel.version", bad)]}, f).error is not None
    # an earlier term failing (fail-fast) means the bad expression is never evaluated
    r = {"matchFeatures": [term("missing.feature", {"a": me("Exists")}), term("kernel.version", bad)]}
    res = run(r, f)
    assert not res.matched and res.error is None
    # wrong value count: error only when the key has a value
    assert run({"matchFeatures": [term("kernel.version", {"major": me("In")})]}, f).error is not None
    assert run({"matchFeatures": [term("kernel.version", {"minor": me("In")})]}, f).error is None
    # non-integer feature value for Gt: an evaluation-time error
    res = run({"matchFeatures": [term("kernel.version", {"full": me("Gt", "5")})]}, f)
    assert res.error is not None and "not a number" in res.error
    # version comparison of the same value works
    assert run(
        {"matchFeatures": [term("kernel.version", {"full": me("Gt", "5.4", type="version")})]}, f
    ).matched
    # matchAny without templates stops at the first match: a bad later element is not reached
    r = {
        "matchAny": [
            {"matchFeatures": [term("cpu.cpuid", {"AVX": me("Exists")})]},
            {"matchFeatures": [term("kernel.version", bad)]},
        ]
    }
    assert run(r, f).matched
    # a bad instance value is found even after another instance matched
    fi = feats(insts={"pci.device": [{"n": "5"}, {"n": "x"}]})
    assert run({"matchFeatures": [term("pci.device", {"n": me("Gt", "1")})]}, fi).error is not None


def test_malformed_rule_raises_validation_errors_with_paths() -> None:
    with pytest.raises(ValidationErrors) as ei:
        compile_rule(
            {
                "name": "x",
                "labels": {"a": 1},
                "matchFeatures": [{"feature": "a.b", "matchExpressions": {"k": {"op": "In", "value": "v"}}}],
            },
            path="spec.rules[3]",
        )
    paths = [e.path for e in ei.value.errors]
    assert "spec.rules[3].labels.a" in paths
    assert "spec.rules[3].matchFeatures[0].matchExpressions.k.value" in paths


def test_broken_rules_fail_alone_and_chain_continues() -> None:
    rs = compile_nodefeaturerule(
        nfr(
            "a",
            {"name": "first", "labels": {"first": "true"}},
            {"name": "broken", "labels": {"x": 5}},
            {
                "name": "badop",
                "labels": {"y": "z"},
                "matchFeatures": [term("rule.matched", {"first": me("Nope")})],
            },
            {
                "name": "second",
                "labels": {"second": "true"},
                "matchFeatures": [term("rule.matched", {"first": me("IsTrue")})],
            },
        )
    )
    assert isinstance(rs.rules[1], BrokenRule)
    res = process_rule_sets([rs], Features())
    assert res.output.labels == {"first": "true", "second": "true"}
    assert [n for n, _ in res.errors] == ["broken", "badop"]
    assert "spec.rules[1].labels.x" in res.errors[0][1]


def test_chaining_order_and_backrefs() -> None:
    f = feats({"cpu.cpuid": ["AVX"]}, {"kernel.version": {"major": "6"}})
    a = nfr(
        "b-second",
        {
            "name": "uses-var",
            "labels": {"from-var": "true"},
            "matchFeatures": [term("rule.matched", {"my-var": me("In", "yes"), "avx-label": me("IsTrue")})],
        },
    )
    b = nfr(
        "a-first",
        {
            "name": "no-match",
            "labels": {"never": "x"},
            "matchFeatures": [term("cpu.cpuid", {"SSE9": me("Exists")})],
        },
        {
            "name": "sees-empty-set",
            "labels": {"saw-empty": "true"},
            "matchFeatures": [term("rule.matched", {})],
        },
        {
            "name": "sets",
            "labels": {"avx-label": "true", "dyn": "@kernel.version.major"},
            "vars": {"my-var": "yes"},
            "matchFeatures": [term("cpu.cpuid", {"AVX": me("Exists")})],
        },
    )
    res = process_rule_sets([compile_nodefeaturerule(a), compile_nodefeaturerule(b)], f)
    assert [r.name for r in res.results] == ["no-match", "sees-empty-set", "sets", "uses-var"]
    assert res.output.labels == {
        "saw-empty": "true",
        "avx-label": "true",
        "dyn": "@kernel.version.major",
        "from-var": "true",
    }
    assert res.output.vars == {"my-var": "yes"}
    # raw label values (not resolved) and vars are fed back; caller's features untouched
    assert res.features.attributes["rule.matched"]["dyn"] == "@kernel.version.major"
    assert "rule.matched" not in f.attributes
    # without feed-back a later rule cannot see earlier outputs
    res2 = process_rule_sets([compile_nodefeaturerule(a), compile_nodefeaturerule(b)], f, feed_back=False)
    assert "from-var" not in res2.output.labels and "saw-empty" not in res2.output.labels


def test_outputs_taints_annotations_extended_resources_and_master_prefixing() -> None:
    rs = compile_nodefeaturerule(
        nfr(
            "x",
            {
                "name": "r1",
                "labels": {"feature.node.kubernetes.io/dup": "prefixed", "dup": "bare"},
                "annotations": {"note": "hi"},
                "extendedResources": {"widgets": "3"},
                "taints": [{"key": "feature.node.kubernetes.io/t", "value": "v", "effect": "NoSchedule"}],
            },
            {"name": "r2", "taints": [{"key": "example.com/t2", "effect": "NoExecute"}]},
        )
    )
    res = process_rule_sets([rs], Features())
    assert res.output.labels == {"feature.node.kubernetes.io/dup": "prefixed", "dup": "bare"}
    assert res.master_output.labels == {"feature.node.kubernetes.io/dup": "prefixed"}
    assert res.output.annotations == {"note": "hi"}
    assert res.master_output.extended_resources == {"feature.node.kubernetes.io/widgets": "3"}
    assert res.output.taints == [
        {"key": "feature.node.kubernetes.io/t", "value": "v", "effect": "NoSchedule"},
        {"key": "example.com/t2", "value": "", "effect": "NoExecute"},
    ]


def test_not_an_nfr_object() -> None:
    from nfd.api.errors import ValidationError

    with pytest.raises(ValidationError):
        compile_nodefeaturerule({"kind": "ConfigMap"})
    with pytest.raises(ValidationError, match="spec.rules"):
        compile_nodefeaturerule({"kind": "NodeFeatureRule", "spec": {"rules": {}}})


def test_static_problems_for_validation() -> None:
    rs = compile_nodefeaturerule(
        nfr(
            "v",
            {
                "name": "",
                "matchFeatures": [
                    {"feature": "nodot", "matchExpressions": {"k": {"op": "Gt", "value": ["a"]}}},
                    {"feature": "a.b", "matchName": {"op": "InRegexp", "value": ["("]}},
                ],
            },
        )
    )
    probs = dict(rs.problems())
    assert probs["spec.rules[0].name"] == "required"
    assert "spec.rules[0].matchFeatures[0].feature" in probs
    assert "spec.rules[0].matchFeatures[0].matchExpressions.k.value" in probs
    assert probs["spec.rules[0].matchFeatures[1].matchName.value[0]"] == "error parsing regexp: missing closing ): `(`"


# -- NodeFeatureGroup --------------------------------------------------------------------


def nfg(*rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "NodeFeatureGroup",
        "metadata": {"name": "g", "namespace": "nfd"},
        "spec": {"featureGroupRules": list(rules)},
    }


def test_group_membership() -> None:
    f = feats({"cpu.cpuid": ["AVX"]}, {"system.name": {"nodename": "node-a"}})
    g = compile_group_rules(nfg({"name": "r", "matchFeatures": [term("cpu.cpuid", {"AVX": me("Exists")})]}))
    assert node_matches_group(g, f, node_name="node-a")
    assert member_name(f) == "node-a"
    assert not node_matches_group(
        compile_group_rules(nfg({"name": "r", "matchFeatures": [term("cpu.cpuid", {"SSE": me("Exists")})]})),
        f,
    )
    # vars feed later group rules; labels are not part of group rules at all
    g2 = compile_group_rules(
        nfg(
            {
                "name": "a",
                "vars": {"v": "1"},
                "labels": {"ignored": "x"},
                "matchFeatures": [term("cpu.cpuid", {"NOPE": me("Exists")})],
            },
            {"name": "b", "vars": {"w": "true"}},
            {"name": "c", "matchFeatures": [term("rule.matched", {"w": me("IsTrue")})]},
        )
    )
    assert node_matches_group(g2, f)
    only_chain = CompiledRuleSet(name="g", rules=g2.rules[:1] + g2.rules[2:], kind="NodeFeatureGroup")
    assert not node_matches_group(only_chain, f)
    # an erroring rule is skipped, others still decide
    g3 = compile_group_rules(
        nfg({"name": "bad", "matchFeatures": [term("cpu.cpuid", {"AVX": me("Exists", "x")})]}, {"name": "ok"})
    )
    assert node_matches_group(g3, f)
    assert not node_matches_group(
        compile_group_rules(nfg({"name": "bad", "matchFeatures": [term("cpu.cpuid", {"AVX": me("Bad")})]})), f
    )


# -- templates (need nfd.lang.gotemplate) --------------------------------------------------

TPL_FEATURES = feats(
    {"domain_1.kf_1": ["key-a", "key-b", "key-c"], "domain.mf": ["key-a", "key-b", "key-c"]},
    {
        "domain_1.vf_1": {"key-1": "val-1", "keu-2": "val-2", "key-3": "val-3", "key-4": "val-4"},
        "domain.mf": {"key-d": "val-d", "key-e": "val-e"},
    },
    {
        "domain_1.if_1": [
            {"attr-1": "1", "attr-2": "val-2"},
            {"attr-1": "10", "attr-2": "val-20"},
            {"attr-1": "100", "attr-2": "val-200"},
            {"attr-1": "1000", "attr-2": "val-2000", "attr-3": "3000"},
        ]
    },
)
TPL_RULE: dict[str, Any] = {
    "labels": {"label-1": "label-val-1"},
    "labelsTemplate": (
        "\nlabel-1=will-be-overridden\nlabel-2=\n"
        "{{range .domain_1.kf_1}}kf-{{.Name}}=present\n{{end}}\n"
        "{{range .domain_1.vf_1}}vf-{{.Name}}=vf-{{.Value}}\n{{end}}\n"
        '{{range .domain_1.if_1}}if-{{index . "attr-1"}}_{{index . "attr-2"}}=present\n{{end}}'
    ),
    "vars": {"var-1": "var-val-1"},
    "varsTemplate": "\nvar-1=value-will-be-overridden-by-vars\nvar-2=\n{{range .domain_1.kf_1}}kf-{{.Name}}=true\n{{end}}",
    "matchFeatures": [
        term("domain_1.kf_1", {"key-a": me("Exists"), "key-c": me("Exists"), "foo": me("DoesNotExist")}),
        term("domain_1.vf_1", {"key-1": me("In", "val-1", "val-2"), "bar": me("DoesNotExist")}),
        term("domain_1.if_1", {"attr-1": me("Lt", "100")}),
        term("domain_1.if_1", {"attr-1": me("Exists"), "attr-2": me("Exists"), "attr-3": me("Exists")}),
    ],
}
TPL_LABELS = {
    "label-1": "label-val-1",
    "label-2": "",
    "kf-key-a": "present",
    "kf-key-c": "present",
    "kf-foo": "present",
    "vf-key-1": "vf-val-1",
    "vf-bar": "vf-",
    "if-1_val-2": "present",
    "if-10_val-20": "present",
    "if-1000_val-2000": "present",
}
TPL_VARS = {"var-1": "var-val-1", "var-2": "", "kf-key-a": "true", "kf-key-c": "true", "kf-foo": "true"}


@needs_templates
def test_templates_match_features_and_match_any() -> None:
    import copy

    res = run(copy.deepcopy(TPL_RULE), TPL_FEATURES)
    assert res.error is None
    assert res.output.labels == TPL_LABELS
    assert res.output.vars == TPL_VARS
    r3 = copy.deepcopy(TPL_RULE)
    r3["matchAny"] = [{"matchFeatures": r3.pop("matchFeatures")}]
    res = run(r3, TPL_FEATURES)
    assert (res.output.labels, res.output.vars) == (TPL_LABELS, TPL_VARS)


@needs_templates
def test_template_multi_type_and_match_name() -> None:
    r = {
        "labelsTemplate": "{{range .domain.mf}}mf-{{.Name}}=found\n{{end}}",
        "matchFeatures": [term("domain.mf", {"key-a": me("Exists"), "key-d": me("In", "val-d")})],
    }
    assert run(r, TPL_FEATURES).output.labels == {"mf-key-a": "found", "mf-key-d": "found"}
    r4 = {
        "labelsTemplate": "{{range .domain_1.vf_1}}{{.Name}}={{.Value}}\n{{end}}",
        "matchFeatures": [term("domain_1.vf_1", {"key-5": me("DoesNotExist")}, me("In", "key-1", "key-4"))],
    }
    assert run(r4, TPL_FEATURES).output.labels == {"key-1": "val-1", "key-4": "val-4", "key-5": ""}


@needs_templates
@pytest.mark.parametrize(
    ("field", "src", "want"),
    [
        ("labelsTemplate", "foo=bar", {"foo": "bar"}),
        ("labelsTemplate", "foo", None),
        ("labelsTemplate", "{{", None),
        ("varsTemplate", "bar=baz", {"bar": "baz"}),
        ("varsTemplate", "bar", None),
        ("varsTemplate", "{{", None),
        ("labelsTemplate", "{{ .nope.missing }}", None),
    ],
)
def test_template_errors(field: str, src: str, want: dict[str, str] | None) -> None:
    r = {field: src, "matchFeatures": [term("domain_1.kf_1", {"key-a": me("Exists")})]}
    res = run(r, TPL_FEATURES)
    if want is None:
        assert res.error is not None and field in res.error
    else:
        assert res.error is None
        assert (res.output.labels if field == "labelsTemplate" else res.output.vars) == want


@needs_templates
def test_template_parse_error_only_when_rule_matches() -> None:
    r = {"labelsTemplate": "{{", "matchFeatures": [term("domain_1.kf_1", {"zzz": me("Exists")})]}
    res = run(r, TPL_FEATURES)
    assert res.error is None and not res.matched


@needs_templates
def test_template_keys_use_feature_name_as_written() -> None:
    f = feats(attrs={"system.osrelease": {"ID": "ubuntu"}})
    r = {
        "labelsTemplate": "{{range .system.osRelease}}os={{.Value}}{{end}}",
        "matchFeatures": [term("system.osRelease", {"ID": me("Exists")})],
    }
    assert run(r, f).output.labels == {"os": "ubuntu"}


@needs_templates
def test_template_size_cap() -> None:
    big = "a=b\n" + " " * (64 * 1024)
    f = feats({"a.b": ["x"]})
    res = run({"labelsTemplate": big, "matchFeatures": [term("a.b", {})]}, f)
    assert res.error is not None and "maximum" in res.error
    ok = run({"labelsTemplate": "a=b\n" + " " * (64 * 1024 - 4), "matchFeatures": [term("a.b", {})]}, f)
    assert ok.error is None and ok.output.labels == {"a": "b"}
    # without matchers templates are never expanded (upstream)
    assert run({"labelsTemplate": "a=b"}, f).output.labels == {}


# -- matchCEL (our extension) --------------------------------------------------------------


def test_match_cel_is_anded_and_explained() -> None:
    f = feats({"cpu.cpuid": ["AVX"]}, {"kernel.version": {"major": "6"}})
    base = {"labels": {"x": "1"}, "matchFeatures": [term("cpu.cpuid", {"AVX": me("Exists")})]}
    ok = run({**base, "matchCEL": ["'AVX' in flags['cpu.cpuid']", "node.name == ''"]}, f)
    assert ok.matched and ok.error is None
    no = run({**base, "matchCEL": ["true", "int(attributes['kernel.version']['major']) > 6"]}, f)
    assert not no.matched and no.error is None
    assert "kernel.version" in (no.reason or "")
    # matchCEL alone (no matchFeatures) also gates the rule
    assert not run({"labels": {"x": "1"}, "matchCEL": ["false"]}, f).matched


def test_match_cel_errors() -> None:
    f = feats({"cpu.cpuid": ["AVX"]})
    rs = compile_nodefeaturerule(
        nfr("c", {"name": "bad-syntax", "matchCEL": ["1 +"]}, {"name": "ok", "labels": {"a": "b"}})
    )
    assert isinstance(rs.rules[0], BrokenRule) and "spec.rules[0].matchCEL[0]" in rs.rules[0].error
    res = process_rule_sets([rs], f)
    assert res.output.labels == {"a": "b"} and res.errors[0][0] == "bad-syntax"
    rt = run({"labels": {"x": "1"}, "matchCEL": ["attributes['no.such']['x'] == 'y'"]}, f)
    assert rt.error is not None and not rt.matched


def test_existing_rule_matched_is_copied_not_mutated() -> None:
    f = feats(attrs={"rule.matched": {"pre": "true"}})
    rs = compile_nodefeaturerule(
        nfr(
            "a",
            {
                "name": "r",
                "labels": {"x": "1"},
                "matchFeatures": [term("rule.matched", {"pre": me("IsTrue")})],
            },
        )
    )
    res = process_rule_sets([rs], f)
    assert res.output.labels == {"x": "1"}
    assert res.features.attributes["rule.matched"] == {"pre": "true", "x": "1"}
    assert f.attributes["rule.matched"] == {"pre": "true"}
    again = process_rule_sets([rs], res.features)
    assert again.output.labels == {"x": "1"} and res.features.attributes["rule.matched"] == {
        "pre": "true",
        "x": "1",
    }


def test_explain_false_same_results_without_reasons() -> None:
    """nfd-master evaluates with explain=False: the same matches, outputs and errors; no reasons."""
    f = feats(
        flags={"cpu.cpuid": ["AVX", "SSE4"]},
        attrs={"kernel.version": {"major": "6"}},
        insts={"pci.device": [{"vendor": "10de", "class": "0302"}]},
    )
    rules = [
        {"name": "hit", "labels": {"hit": "true"}, "matchFeatures": [term("cpu.cpuid", {"AVX": me("Exists")})]},
        {"name": "miss-expr", "labels": {"a": "1"}, "matchFeatures": [term("cpu.cpuid", {"AVX512": me("Exists")})]},
        {"name": "miss-feature", "labels": {"b": "1"}, "matchFeatures": [term("no.such", {"x": me("Exists")})]},
        {"name": "miss-inst", "labels": {"c": "1"}, "matchFeatures": [term("pci.device", {"vendor": me("In", "8086")})]},
        {"name": "miss-name", "labels": {"d": "1"}, "matchFeatures": [term("kernel.version", name=me("In", "minor"))]},
        {
            "name": "miss-any",
            "labels": {"e": "1"},
            "matchAny": [{"matchFeatures": [term("cpu.cpuid", {"NOPE": me("Exists")})]}],
        },
        {"name": "err", "labels": {"f": "1"}, "matchFeatures": [term("kernel.version", {"major": me("Gt", "x")})]},
        {"name": "chained", "labels": {"g": "1"}, "matchFeatures": [term("rule.matched", {"hit": me("IsTrue")})]},
    ]
    sets = [compile_nodefeaturerule(nfr("s", *rules))]
    full = process_rule_sets(sets, f)
    lean = process_rule_sets(sets, f, explain=False)
    assert [(r.name, r.matched, r.error) for r in lean.results] == [(r.name, r.matched, r.error) for r in full.results]
    assert lean.master_output == full.master_output
    assert lean.errors == full.errors and lean.errors
    misses = [r for r in full.results if not r.matched and r.error is None]
    assert len(misses) == 5 and all(r.reason for r in misses)
    assert all(r.reason is None for r in lean.results)
