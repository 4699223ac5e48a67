"""NodeFeatureRule / NodeFeatureGroup models: upstream field names, round trips, field paths."""

from __future__ import annotations

import pytest

from nfd.api.errors import ValidationError, ValidationErrors
from nfd.api.nodefeaturegroup import NodeFeatureGroup
from nfd.api.nodefeaturerule import NodeFeatureRule

NFR = {
    "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
    "kind": "NodeFeatureRule",
    "metadata": {"name": "my-sample-rule-object"},
    "spec": {
        "rules": [
            {
                "name": "my sample rule",
                "labels": {"my-sample-feature": "true"},
                "labelsTemplate": "{{ range .pci.device }}x={{ .vendor }}\n{{ end }}",
                "annotations": {"note": "x"},
                "vars": {"v": "1"},
                "varsTemplate": "a=b",
                "taints": [{"key": "example.com/t", "value": "v", "effect": "NoSchedule"}],
                "extendedResources": {"widgets": "@kernel.version.major"},
                "matchFeatures": [
                    {"feature": "kernel.loadedmodule", "matchExpressions": {"dummy": {"op": "Exists"}}},
                    {"feature": "kernel.config", "matchExpressions": {"X86": {"op": "In", "value": ["y"]}}},
                    {"feature": "cpu.cpuid", "matchName": {"op": "InRegexp", "value": ["^AVX"]}},
                    {
                        "feature": "kernel.version",
                        "matchExpressions": {"full": {"op": "Gt", "value": ["5.0"], "type": "version"}},
                    },
                ],
                "matchAny": [{"matchFeatures": [{"feature": "a.b", "matchExpressions": {}}]}],
                "matchCEL": ["true"],
            }
        ]
    },
}


def test_roundtrip_uses_upstream_field_names() -> None:
    obj = NodeFeatureRule.from_json(NFR)
    assert obj.name == "my-sample-rule-object"
    r = obj.rules[0]
    assert r.match_features[2].match_name is not None and r.match_features[2].match_name.value == ["^AVX"]
    assert r.match_features[3].match_expressions is not None
    assert r.match_features[3].match_expressions["full"].type == "version"
    assert r.taints[0].effect == "NoSchedule"
    assert obj.to_json() == NFR
    # an empty matchExpressions map survives (it means "any element")
    assert obj.to_json()["spec"]["rules"][0]["matchAny"][0]["matchFeatures"][0]["matchExpressions"] == {}


def test_errors_name_every_field_path() -> None:
    bad = {
        "kind": "NodeFeatureRule",
        "metadata": {"name": "x"},
        "spec": {
            "rules": [
                {"name": "ok"},
                {
                    "name": "r",
                    "labels": {"a": 1},
                    "matchFeatures": [{"feature": "a.b", "matchExpressions": {"vendor": {"op": 3}}}],
                },
                "not-a-rule",
                {
                    "name": "t",
                    "taints": [{"key": "k", "effect": None}],
                    "matchAny": [{"matchFeatures": {"x": 1}}],
                },
            ]
        },
    }
    with pytest.raises(ValidationErrors) as ei:
        NodeFeatureRule.from_json(bad)
    paths = [e.path for e in ei.value.errors]
    assert paths == [
        "spec.rules[1].labels.a",
        "spec.rules[1].matchFeatures[0].matchExpressions.vendor.op",
        "spec.rules[2]",
        "spec.rules[3].matchAny[0].matchFeatures",
    ]
    assert str(ei.value.errors[1]).startswith(
        "spec.rules[1].matchFeatures[0].matchExpressions.vendor.op: must be a string"
    )


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ([], ""),
        ({"kind": "NodeFeature"}, "kind"),
        ({"kind": "NodeFeatureRule", "metadata": []}, "metadata"),
        ({"kind": "NodeFeatureRule", "spec": "x"}, "spec"),
        ({"kind": "NodeFeatureRule", "spec": {"rules": {}}}, "spec.rules"),
    ],
)
def test_not_an_object(obj: object, path: str) -> None:
    with pytest.raises(ValidationError) as ei:
        NodeFeatureRule.from_json(obj)
    assert ei.value.path == path


def test_null_fields_are_empty() -> None:
    obj = NodeFeatureRule.from_json(
        {
            "kind": "NodeFeatureRule",
            "metadata": {"name": "n"},
            "spec": {"rules": [{"name": "a", "labels": {"x": None}, "matchFeatures": None}]},
        }
    )
    assert obj.rules[0].labels == {"x": ""}
    assert obj.rules[0].match_features == []


def test_nodefeaturegroup() -> None:
    g = {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureGroup",
        "metadata": {"name": "g", "namespace": "nfd"},
        "spec": {
            "featureGroupRules": [
                {
                    "name": "r",
                    "vars": {"a": "b"},
                    "matchFeatures": [
                        {"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Exists"}}}
                    ],
                }
            ]
        },
        "status": {"nodes": [{"name": "n1"}]},
    }
    obj = NodeFeatureGroup.from_json(g)
    assert obj.namespace == "nfd" and obj.nodes == ["n1"] and obj.rules[0].vars == {"a": "b"}
    assert obj.to_json() == g
    with pytest.raises(ValidationErrors) as ei:
        NodeFeatureGroup.from_json({**g, "spec": {"featureGroupRules": [{"name": 5}]}})
    assert ei.value.errors[0].path == "spec.featureGroupRules[0].name"


def test_unknown_fields_follow_the_crd_schema() -> None:
    """The field sets unknown_fields checks against are the CRD's (crds/), level by level."""
    from nfd.api import nodefeaturerule as m
    from nfd.api.crds import version_schema

    def props(s: dict) -> frozenset[str]:
        return frozenset(s["properties"])

    for kind, (list_field, group) in m._SPEC_FIELDS.items():
        top = version_schema(kind, "v1alpha1")
        assert props(top) == m._TOP_FIELDS[kind], kind
        spec = top["properties"]["spec"]
        assert props(spec) == {list_field} | m._SPEC_EXTRA[kind]
        rule = spec["properties"][list_field]["items"]
        assert props(rule) == (m._GROUP_RULE_FIELDS if group else m._RULE_FIELDS), kind
        term = rule["properties"]["matchFeatures"]["items"]
        assert props(term) == m._TERM_FIELDS
        assert props(term["properties"]["matchExpressions"]["additionalProperties"]) == m._EXPR_FIELDS
        assert props(term["properties"]["matchName"]) == m._EXPR_FIELDS
        assert props(rule["properties"]["matchAny"]["items"]) == {"matchFeatures"}
        if not group:
            assert props(rule["properties"]["taints"]["items"]) == m._TAINT_FIELDS


def test_unknown_fields_paths() -> None:
    from nfd.api.nodefeaturerule import unknown_fields

    obj = {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "x"},
        "status": {}, "spec": {"rule": [], "rules": [
            {"name": "a", "matchFeature": [], "matchFeatures": [{"feature": "cpu.cpuid", "matchExpression": {},
                                                                 "matchExpressions": {"AVX": {"op": "Exists", "values": []}}}]},
            {"name": "b", "matchAny": [{"matchFeatures": [{"feature": "x.y", "matchName": {"op": "In", "val": []}}],
                                        "extra": 1}], "taints": [{"key": "a/b", "effect": "NoSchedule", "valu": "x"}]},
            "not-a-rule",
        ]},
    }
    assert unknown_fields(obj) == [
        "status",
        "spec.rule",
        "spec.rules[0].matchFeature",
        "spec.rules[0].matchFeatures[0].matchExpression",
        "spec.rules[0].matchFeatures[0].matchExpressions.AVX.values",
        "spec.rules[1].matchAny[0].extra",
        "spec.rules[1].matchAny[0].matchFeatures[0].matchName.val",
        "spec.rules[1].taints[0].valu",
    ]
    group = {"kind": "NodeFeatureGroup", "status": {}, "spec": {"featureGroupRules": [{"name": "g", "labels": {}}]}}
    assert unknown_fields(group) == ["spec.featureGroupRules[0].labels"]
    assert unknown_fields({"kind": "Pod", "x": 1}) == [] and unknown_fields([1]) == []
