"""nfd.api.schema: objects checked against the CRDs' structural schemas in crds/, every problem
with its field path, as the API server refuses them."""

from __future__ import annotations

from nfd.api.schema import object_schema, schema_problems


def test_a_group_without_feature_group_rules_is_refused() -> None:
    """Our CRD requires spec.featureGroupRules: ``spec: {}`` is refused, as the API server does."""
    obj = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureGroup", "metadata": {"name": "g"},
           "spec": {}}
    assert schema_problems(obj, object_schema("NodeFeatureGroup")) == [("spec.featureGroupRules", "required")]


def test_every_violation_is_named_with_its_path() -> None:
    obj = {"spec": {"rules": [{"labels": {"a": 1}, "taints": [{"key": "k", "effect": "NoSchedule",
                                                               "timeAdded": "yesterday"}],
                               "matchFeatures": [{"matchExpressions": {"x": {"op": "Equals", "value": [1]}}}]}]}}
    assert schema_problems(obj, object_schema("NodeFeatureRule")) == [
        ("spec.rules[0].name", "required"),
        ("spec.rules[0].labels.a", "must be a string, got integer"),
        ("spec.rules[0].taints[0].timeAdded", '"yesterday" is not an RFC 3339 date-time (2006-01-02T15:04:05Z)'),
        ("spec.rules[0].matchFeatures[0].feature", "required"),
        ("spec.rules[0].matchFeatures[0].matchExpressions.x.op",
         'unsupported value "Equals": supported values: "In", "NotIn", "InRegexp", "Exists", "DoesNotExist", '
         '"Gt", "Ge", "Lt", "Le", "GtLt", "GeLe", "IsTrue", "IsFalse"'),
        ("spec.rules[0].matchFeatures[0].matchExpressions.x.value[0]", "must be a string, got integer"),
    ]


def test_nulls_are_pruned_unknown_fields_ignored_and_the_other_keywords_checked() -> None:
    schema = {"type": "object", "required": ["a"], "properties": {
        "a": {"type": "string", "maxLength": 3, "pattern": "^[a-z]+$"},
        "n": {"type": "integer", "minimum": 1, "maximum": 5},
        "s": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "maxItems": 2},
        "q": {"x-kubernetes-int-or-string": True},
        "e": {"type": "string", "enum": ["x"]},
    }}
    assert schema_problems({"a": None, "zz": 1}, schema) == [("a", "required")]
    assert schema_problems({"a": "ABCD", "n": 9, "s": ["x", "x", "y"], "q": 1.5, "e": "y"}, schema) == [
        ("a", "may not be longer than 3 characters (4)"),
        ("a", "\"ABCD\" should match '^[a-z]+$'"),
        ("n", "should be less than or equal to 5"),
        ("s", "must have at most 2 items (3)"),
        ("s[1]", 'duplicate value "x" (also [0])'),
        ("q", "must be an integer or a string, got number"),
        ("e", 'unsupported value "y": supported values: "x"'),
    ]
