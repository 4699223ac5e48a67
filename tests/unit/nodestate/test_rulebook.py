"""RuleBook recompiles only the rules an edit changed (every masterless worker compiles each
edit of a NodeFeatureRule, so a one-rule edit of a 10-rule object must not cost ten compiles)."""

from __future__ import annotations

from typing import Any

from nfd.api.features import Features
from nfd.nodestate.rulebook import RuleBook
from nfd.rules.engine import process_rule_sets


def nfr(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": name},
            "spec": {"rules": list(rules)}}


def rule(name: str, label: str, major: str = "5") -> dict[str, Any]:
    return {"name": name, "labels": {label: "true"},
            "matchFeatures": [{"feature": "kernel.version", "matchExpressions": {"major": {"op": "Gt", "value": [major]}}}]}


def kernel(major: str) -> Features:
    f = Features()
    f.add_attributes("kernel.version", {"major": major})
    return f


def test_an_edit_recompiles_only_the_changed_rule() -> None:
    book = RuleBook()
    assert book.upsert(nfr("r", rule("a", "a"), rule("b", "b"), rule("c", "c"))) is None
    a, b, c = book.ordered()[0].rules
    gen = book.generation
    assert book.upsert(nfr("r", rule("a", "a"), rule("b", "b2", major="7"), rule("c", "c"))) is None
    assert book.generation == gen + 1
    a2, b2, c2 = book.ordered()[0].rules
    assert a2 is a and c2 is c and b2 is not b
    # the new revision is in force
    assert process_rule_sets(book.ordered(), kernel("6")).output.labels == {"a": "true", "c": "true"}
    assert process_rule_sets(book.ordered(), kernel("8")).output.labels == {"a": "true", "b2": "true", "c": "true"}


def test_a_rule_at_another_index_is_recompiled() -> None:
    # a compiled rule carries its path (spec.rules[i]) in its errors: a moved rule is compiled anew
    book = RuleBook()
    broken = {"name": "t", "labelsTemplate": "{{ .x ", "matchFeatures": []}
    assert book.upsert(nfr("r", rule("a", "a"), broken)) is None
    assert [p for p, _ in book.ordered()[0].problems()] == ["spec.rules[1].labelsTemplate"]
    # moved: its problem has a new path, so the edit counts as breaking and is held back
    # (RuleBook's rule) -- which shows it was compiled at its new index, not reused
    msg = book.upsert(nfr("r", broken, rule("a", "a")))
    assert msg is not None and "spec.rules[0].labelsTemplate" in msg and "keeping its previous version" in msg
    # a valid rule moved is compiled anew too (its path is spec.rules[0] now)
    book = RuleBook()
    assert book.upsert(nfr("r", rule("a", "a"), rule("b", "b"))) is None
    a, b = book.ordered()[0].rules
    assert book.upsert(nfr("r", rule("b", "b"), rule("a", "a"))) is None
    b2, a2 = book.ordered()[0].rules
    assert a2 is not a and b2 is not b and (a2.path, b2.path) == ("spec.rules[1]", "spec.rules[0]")


def test_other_objects_and_deletes_share_nothing() -> None:
    book = RuleBook()
    assert book.upsert(nfr("x", rule("a", "a"))) is None
    assert book.upsert(nfr("y", rule("a", "a"))) is None
    x, y = book.ordered()
    assert x.rules[0] is not y.rules[0]
    kept = y.rules[0]
    book.remove("y")
    assert book.upsert(nfr("y", rule("a", "a"))) is None
    assert book.ordered()[1].rules[0] is not kept  # a re-created object is compiled anew
    assert process_rule_sets(book.ordered(), kernel("6")).output.labels == {"a": "true"}


def test_a_broken_edit_still_keeps_the_previous_revision() -> None:
    book = RuleBook()
    assert book.upsert(nfr("r", rule("a", "a"), rule("b", "b"))) is None
    bad = {**rule("b", "b"), "matchFeatures": [{"feature": "kernel.version",
                                                "matchExpressions": {"major": {"op": "InRegexp", "value": ["("]}}}]}
    msg = book.upsert(nfr("r", rule("a", "a"), bad))
    assert msg is not None and "keeping its previous version" in msg
    assert process_rule_sets(book.ordered(), kernel("6")).output.labels == {"a": "true", "b": "true"}
