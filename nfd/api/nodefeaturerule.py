"""NodeFeatureRule (nfd.k8s-sigs.io/v1alpha1, cluster-scoped): models with upstream's JSON names.

Parsing is structural only (types and shapes, like Go's JSON decoding into the API structs, plus
our ``matchCEL`` extension); rule semantics (operators, value counts, regexps, templates) are
checked by the rule engine, which mirrors where upstream detects them. Every problem is reported
with its field path, e.g. ``spec.rules[2].matchFeatures[0].matchExpressions.vendor.value``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from nfd.api import API_VERSION
from nfd.api.errors import ValidationError, ValidationErrors


@dataclass(slots=True)
class MatchExpression:
    """One matchExpressions entry: an operator, its values and the value type."""
    op: str = ""
    value: list[str] = field(default_factory=list)
    type: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op}
        if self.value:
            out["value"] = list(self.value)
        if self.type:
            out["type"] = self.type
        return out


@dataclass(slots=True)
class FeatureMatcherTerm:
    """One matchFeatures term: a feature and its expressions on element names or values."""
    feature: str
    match_expressions: dict[str, MatchExpression] | None = None
    match_name: MatchExpression | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"feature": self.feature}
        if self.match_expressions is not None:
            out["matchExpressions"] = {k: e.to_json() for k, e in self.match_expressions.items()}
        if self.match_name is not None:
            out["matchName"] = self.match_name.to_json()
        return out


@dataclass(slots=True)
class MatchAnyElem:
    """One matchAny alternative: matchFeatures terms that must all match."""
    match_features: list[FeatureMatcherTerm] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"matchFeatures": [t.to_json() for t in self.match_features]}


@dataclass(slots=True)
class Taint:
    """A taint a rule puts on the node (key, effect, value)."""
    key: str
    effect: str = ""
    value: str = ""
    time_added: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        if self.time_added:
            out["timeAdded"] = self.time_added
        return out


@dataclass(slots=True)
class Rule:
    """One entry of ``spec.rules`` (and, without outputs, of NodeFeatureGroup featureGroupRules)."""

    name: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    labels_template: str = ""
    annotations: dict[str, str] = field(default_factory=dict)
    vars: dict[str, str] = field(default_factory=dict)
    vars_template: str = ""
    taints: list[Taint] = field(default_factory=list)
    extended_resources: dict[str, str] = field(default_factory=dict)
    match_features: list[FeatureMatcherTerm] = field(default_factory=list)
    match_any: list[MatchAnyElem] = field(default_factory=list)
    match_cel: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        for key, val in (
            ("labels", self.labels),
            ("labelsTemplate", self.labels_template),
            ("annotations", self.annotations),
            ("vars", self.vars),
            ("varsTemplate", self.vars_template),
            ("extendedResources", self.extended_resources),
        ):
            if val:
                out[key] = dict(val) if isinstance(val, dict) else val
        if self.taints:
            out["taints"] = [t.to_json() for t in self.taints]
        if self.match_features:
            out["matchFeatures"] = [t.to_json() for t in self.match_features]
        if self.match_any:
            out["matchAny"] = [m.to_json() for m in self.match_any]
        if self.match_cel:
            out["matchCEL"] = list(self.match_cel)
        return out


@dataclass(slots=True)
class NodeFeatureRule:
    """A NodeFeatureRule object: its name, rules and metadata."""
    name: str
    rules: list[Rule] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        meta = dict(self.metadata)
        meta["name"] = self.name
        return {
            "apiVersion": API_VERSION,
            "kind": "NodeFeatureRule",
            "metadata": meta,
            "spec": {"rules": [r.to_json() for r in self.rules]},
        }

    @classmethod
    def from_json(cls, obj: Any) -> NodeFeatureRule:
        """Parse a whole object; raises ValidationErrors listing every problem."""
        meta, rules_raw = parse_header(obj, kind="NodeFeatureRule", list_field="rules")
        rules, errs = parse_rules(rules_raw, path="spec.rules")
        if errs:
            raise ValidationErrors(errs)
        return cls(name=str(meta.get("name", "")), rules=rules, metadata=meta)


# -- structural parsing -------------------------------------------------------------------


def parse_header(obj: Any, *, kind: str, list_field: str) -> tuple[dict[str, Any], list[Any]]:
    """Check kind/metadata/spec and return (metadata, spec.<list_field>). Raises ValidationError."""
    if not isinstance(obj, dict):
        raise ValidationError("", f"{kind} must be an object")
    if obj.get("kind") != kind:
        raise ValidationError("kind", f"expected {kind!r}, got {obj.get('kind')!r}")
    meta = obj.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise ValidationError("metadata", "must be an object")
    spec = obj.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        raise ValidationError("spec", "must be an object")
    lst = spec.get(list_field)
    if lst is None:
        lst = []
    if not isinstance(lst, list):
        raise ValidationError(f"spec.{list_field}", "must be a list")
    return meta, lst


class _Errs:
    __slots__ = ("errors",)

    def __init__(self) -> None:
        self.errors: list[ValidationError] = []

    def add(self, path: str, msg: str) -> None:
        self.errors.append(ValidationError(path, msg))

    def string(self, v: Any, path: str) -> str:
        if v is None:
            return ""
        if not isinstance(v, str):
            self.add(path, f"must be a string, got {_tname(v)}")
            return ""
        return v

    def objects(self, v: Any, path: str) -> list[tuple[str, dict[str, Any]]]:
        """The (path, object) items of a list of objects; anything else is reported and skipped."""
        if v is None:
            return []
        if not isinstance(v, list):
            self.add(path, f"must be a list, got {_tname(v)}")
            return []
        out = []
        for i, item in enumerate(v):
            p = f"{path}[{i}]"
            if isinstance(item, dict):
                out.append((p, item))
            else:
                self.add(p, f"must be an object, got {_tname(item)}")
        return out

    def str_map(self, v: Any, path: str) -> dict[str, str]:
        if v is None:
            return {}
        if not isinstance(v, dict):
            self.add(path, f"must be a map of strings, got {_tname(v)}")
            return {}
        return {str(k): self.string(x, f"{path}.{k}") for k, x in v.items()}

    def str_list(self, v: Any, path: str) -> list[str]:
        if v is None:
            return []
        if not isinstance(v, list):
            self.add(path, f"must be a list of strings, got {_tname(v)}")
            return []
        return [self.string(x, f"{path}[{i}]") for i, x in enumerate(v)]


def _tname(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "list"
    if isinstance(v, str):
        return "string"
    return type(v).__name__


def _parse_expr(v: Any, path: str, e: _Errs) -> MatchExpression:
    if not isinstance(v, dict):
        e.add(path, f"must be an object with 'op', got {_tname(v)}")
        return MatchExpression()
    return MatchExpression(
        op=e.string(v.get("op"), f"{path}.op"),
        value=e.str_list(v.get("value"), f"{path}.value"),
        type=e.string(v.get("type"), f"{path}.type"),
    )


def _parse_terms(v: Any, path: str, e: _Errs) -> list[FeatureMatcherTerm]:
    terms = []
    for p, t in e.objects(v, path):
        feature = e.string(t.get("feature"), f"{p}.feature")
        me_raw = t.get("matchExpressions")
        me: dict[str, MatchExpression] | None = None
        if me_raw is not None:
            if not isinstance(me_raw, dict):
                e.add(f"{p}.matchExpressions", f"must be a map, got {_tname(me_raw)}")
            else:
                me = {str(k): _parse_expr(x, f"{p}.matchExpressions.{k}", e) for k, x in me_raw.items()}
        mn_raw = t.get("matchName")
        mn = None if mn_raw is None else _parse_expr(mn_raw, f"{p}.matchName", e)
        terms.append(FeatureMatcherTerm(feature=feature, match_expressions=me, match_name=mn))
    return terms


def _parse_match_any(v: Any, path: str, e: _Errs) -> list[MatchAnyElem]:
    return [MatchAnyElem(_parse_terms(m.get("matchFeatures"), f"{p}.matchFeatures", e)) for p, m in e.objects(v, path)]


def _parse_taints(v: Any, path: str, e: _Errs) -> list[Taint]:
    out = []
    for p, t in e.objects(v, path):
        ta = t.get("timeAdded")
        out.append(
            Taint(
                key=e.string(t.get("key"), f"{p}.key"),
                value=e.string(t.get("value"), f"{p}.value"),
                effect=e.string(t.get("effect"), f"{p}.effect"),
                time_added=None if ta is None else str(ta),
            )
        )
    return out


def parse_rules(raw: list[Any], *, path: str, group: bool = False) -> tuple[list[Rule], list[ValidationError]]:
    """Parse every rule of ``raw`` (``path[i]``): the good ones, and every problem of the others,
    so that one file check reports them all."""
    rules: list[Rule] = []
    errs: list[ValidationError] = []
    for i, r in enumerate(raw):
        try:
            rules.append(parse_rule(r, path=f"{path}[{i}]", group=group))
        except ValidationErrors as e:
            errs.extend(e.errors)
    return rules, errs


def parse_rule(obj: Any, *, path: str, group: bool = False) -> Rule:
    """Parse one rule; raises ValidationErrors with every structural problem found.

    ``group``: a NodeFeatureGroup rule, which has no labels/annotations/taints/ERs.
    """
    e = _Errs()
    if not isinstance(obj, dict):
        raise ValidationErrors([ValidationError(path, f"must be an object, got {_tname(obj)}")])
    # fields in upstream's declaration order, so problems are reported in document order
    r = Rule(name=e.string(obj.get("name"), f"{path}.name"))
    if not group:
        r.labels = e.str_map(obj.get("labels"), f"{path}.labels")
        r.labels_template = e.string(obj.get("labelsTemplate"), f"{path}.labelsTemplate")
        r.annotations = e.str_map(obj.get("annotations"), f"{path}.annotations")
    r.vars = e.str_map(obj.get("vars"), f"{path}.vars")
    r.vars_template = e.string(obj.get("varsTemplate"), f"{path}.varsTemplate")
    if not group:
        r.taints = _parse_taints(obj.get("taints"), f"{path}.taints", e)
        r.extended_resources = e.str_map(obj.get("extendedResources"), f"{path}.extendedResources")
    r.match_features = _parse_terms(obj.get("matchFeatures"), f"{path}.matchFeatures", e)
    r.match_any = _parse_match_any(obj.get("matchAny"), f"{path}.matchAny", e)
    r.match_cel = e.str_list(obj.get("matchCEL"), f"{path}.matchCEL")
    if e.errors:
        raise ValidationErrors(e.errors)
    return r


# -- unknown fields: the decoder ignores them (and the API server prunes them), so a typo such as
#    ``matchFeature:`` or ``values:`` silently changes a rule; they are named as warnings, as
#    ``kubectl apply`` does. The field sets are the CRD schema's (crds/; a unit test compares).

_TOP_FIELDS = {
    "NodeFeatureRule": frozenset({"apiVersion", "kind", "metadata", "spec"}),
    "NodeFeatureGroup": frozenset({"apiVersion", "kind", "metadata", "spec", "status"}),
}
_SPEC_FIELDS = {"NodeFeatureRule": ("rules", False), "NodeFeatureGroup": ("featureGroupRules", True)}
# spec fields besides the rule list (ours: NodeFeatureGroup's materializePolicy, #2548)
_SPEC_EXTRA = {"NodeFeatureRule": frozenset(), "NodeFeatureGroup": frozenset({"materializePolicy"})}
_RULE_FIELDS = frozenset(
    {
        "name",
        "labels",
        "labelsTemplate",
        "annotations",
        "vars",
        "varsTemplate",
        "taints",
        "extendedResources",
        "matchFeatures",
        "matchAny",
        "matchCEL",
    }
)
_GROUP_RULE_FIELDS = frozenset({"name", "vars", "varsTemplate", "matchFeatures", "matchAny", "matchCEL"})
_TERM_FIELDS = frozenset({"feature", "matchExpressions", "matchName"})
_EXPR_FIELDS = frozenset({"op", "value", "type"})
_TAINT_FIELDS = frozenset({"key", "value", "effect", "timeAdded"})


def unknown_field_message(path: str) -> str:
    """kubectl's wording of the warning: ``unknown field "spec.rules[0].matchFeature"``."""
    return f'unknown field "{path}"'


MATCH_TERMS = ("matchFeatures", "matchAny", "matchCEL")


def nearest_name(name: str, allowed: Iterable[str]) -> str | None:
    """The valid field name ``name`` was most likely meant to be (a typo, a wrong case, a
    missing or extra letter), or None when none is close."""
    names = sorted(allowed)
    low = {n.lower(): n for n in names}
    if name.lower() in low:
        return low[name.lower()]
    got = difflib.get_close_matches(name.lower(), list(low), n=1, cutoff=0.6)
    return low[got[0]] if got else None


def _walk_unknown(obj: Any, kind: str, path: str = "") -> list[tuple[str, str, frozenset[str]]]:
    """(path, field name, the names allowed there) of every field the schema does not define."""
    out: list[tuple[str, str, frozenset[str]]] = []

    def check(o: Any, allowed: frozenset[str], p: str) -> None:
        if isinstance(o, dict):
            out.extend((f"{p}.{k}" if p else str(k), str(k), allowed) for k in o if k not in allowed)

    def terms(ts: Any, p: str) -> None:
        if not isinstance(ts, list):
            return
        for i, t in enumerate(ts):
            tp = f"{p}[{i}]"
            check(t, _TERM_FIELDS, tp)
            if not isinstance(t, dict):
                continue
            me = t.get("matchExpressions")
            if isinstance(me, dict):
                for k, e in me.items():
                    check(e, _EXPR_FIELDS, f"{tp}.matchExpressions.{k}")
            check(t.get("matchName"), _EXPR_FIELDS, f"{tp}.matchName")

    def rule(r: Any, p: str, group: bool) -> None:
        check(r, _GROUP_RULE_FIELDS if group else _RULE_FIELDS, p)
        if not isinstance(r, dict):
            return
        terms(r.get("matchFeatures"), f"{p}.matchFeatures")
        ma = r.get("matchAny")
        if isinstance(ma, list):
            for i, m in enumerate(ma):
                check(m, frozenset({"matchFeatures"}), f"{p}.matchAny[{i}]")
                if isinstance(m, dict):
                    terms(m.get("matchFeatures"), f"{p}.matchAny[{i}].matchFeatures")
        tt = r.get("taints")
        if not group and isinstance(tt, list):
            for i, t in enumerate(tt):
                check(t, _TAINT_FIELDS, f"{p}.taints[{i}]")

    if kind == "rule" or kind == "group-rule":
        rule(obj, path, kind == "group-rule")
        return out
    list_field, group = _SPEC_FIELDS[kind]
    check(obj, _TOP_FIELDS[kind], "")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return out
    check(spec, frozenset({list_field}) | _SPEC_EXTRA[kind], "spec")
    rules = spec.get(list_field)
    if isinstance(rules, list):
        for i, r in enumerate(rules):
            rule(r, f"spec.{list_field}[{i}]", group)
    return out


def unknown_rule_fields(obj: Any, *, path: str, group: bool = False) -> list[str]:
    """The path of every field of one rule that the API does not define, in document order."""
    return [p for p, _, _ in _walk_unknown(obj, "group-rule" if group else "rule", path)]


def unknown_fields(obj: Any, *, kind: str | None = None) -> list[str]:
    """The path of every field of a NodeFeatureRule (or NodeFeatureGroup) object that its schema
    does not define: top level, ``spec`` and every rule. ``kind`` defaults to the object's own;
    an object of another kind has none reported. The one list that ``nfd rules``,
    ``kubectl-nfd`` and nfd-master's log all use."""
    return [p for p, _ in unknown_field_problems(obj, kind=kind)]


def unknown_field_problems(obj: Any, *, kind: str | None = None) -> list[tuple[str, str]]:
    """(path, message) of every field of a NodeFeatureRule or NodeFeatureGroup object that its
    schema does not define, as errors, the way ``kubectl apply``'s strict field validation
    refuses them, with the nearest valid name: ``spec.rules[0].matchFeature: unknown field;
    did you mean matchFeatures?``. A rule whose only match terms are misspelt says that it would
    match every node as written (the engine ignores the field, and a rule without a match term
    always matches)."""
    if not isinstance(obj, dict):
        return []
    kind = kind or obj.get("kind")
    if kind not in _SPEC_FIELDS:
        return []
    out: list[tuple[str, str]] = []
    for path, name, allowed in _walk_unknown(obj, kind):
        near = nearest_name(name, allowed)
        msg = f"unknown field; did you mean {near}?" if near else \
            f"unknown field (valid here: {', '.join(sorted(allowed))})"
        if _rule_left_without_terms(obj, path, name, near):
            msg += " (as written, the rule has no match term and matches every node)"
        out.append((path, msg))
    return out


_RULE_PATH = re.compile(r"spec\.(rules|featureGroupRules)\[(\d+)\]\.([^.\[]+)\Z")


def _rule_left_without_terms(obj: dict[str, Any], path: str, name: str, near: str | None) -> bool:
    """Whether ``path`` is a misspelt match term of a rule that has no valid one."""
    m = _RULE_PATH.match(path)
    if m is None or not (near in MATCH_TERMS or name.lower().startswith("match")):
        return False
    rules = (obj.get("spec") or {}).get(m.group(1))
    r = rules[int(m.group(2))] if isinstance(rules, list) and int(m.group(2)) < len(rules) else None
    return isinstance(r, dict) and not any(r.get(t) for t in MATCH_TERMS)
