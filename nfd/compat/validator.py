"""Evaluate a compatibility spec against this node, reporting every expression.

Upstream runs each set's group rules with fail-fast off so that the status of each expression
can be shown; this walks the rules compiled by the shared engine (``nfd.rules.engine``) the same
way: an expression is OK when it matched on a flag, an attribute or at least one instance of its
feature; a ``matchName`` is only tried when its term's ``matchExpressions`` matched; a feature
the node lacks fails all its expressions. Whether a rule matches, and its ``vars`` (fed back
into ``rule.matched`` for later rules and sets, as upstream), come from the engine itself.

Unlike upstream, an expression that cannot be evaluated (a value that is not a number for
``Gt``...) fails its rule with an ``error`` instead of aborting the whole run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from nfd.api.features import Features
from nfd.compat.spec import Spec
from nfd.rules.engine import BackrefWriter, BrokenRule, evaluate_rule, features_view
from nfd.rules.expression import RuleError, go_quote, go_quote_list

MATCH_EXPRESSION = "matchExpression"
MATCH_NAME = "matchName"


@dataclass(slots=True)
class MatchedExpression:
    feature: str
    name: str
    op: str
    values: list[str]
    type: str
    matcher_type: str
    is_match: bool

    def expression_string(self) -> str:
        """Upstream's MatchExpression.String(): ``{op: "In", value: ["a" "b"]}``."""
        if not self.values:
            return f"{{op: {go_quote(self.op)}}}"
        return f"{{op: {go_quote(self.op)}, value: {go_quote_list(self.values)}}}"

    def to_json(self) -> dict[str, Any]:
        expr: dict[str, Any] = {"op": self.op}
        if self.values:
            expr["value"] = list(self.values)
        if self.type:
            expr["type"] = self.type
        return {"feature": self.feature, "name": self.name, "expression": expr,
                "matcherType": self.matcher_type, "isMatch": self.is_match}


@dataclass(slots=True)
class RuleStatus:
    name: str
    is_match: bool
    matched_expressions: list[MatchedExpression] = field(default_factory=list)
    matched_any: list[list[MatchedExpression]] = field(default_factory=list)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "isMatch": self.is_match}
        if self.matched_expressions:
            out["matchedExpressions"] = [m.to_json() for m in self.matched_expressions]
        if self.matched_any:
            out["matchedAny"] = [{"matchedExpressions": [m.to_json() for m in elem] or None}
                                 for elem in self.matched_any]
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(slots=True)
class CompatibilityStatus:
    rules: list[RuleStatus]
    description: str = ""
    weight: int = 0
    tag: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rules": [r.to_json() for r in self.rules] or None}
        if self.description:
            out["description"] = self.description
        if self.weight:
            out["weight"] = self.weight
        if self.tag:
            out["tag"] = self.tag
        return out


def to_json_text(statuses: list[CompatibilityStatus]) -> str:
    """Go's json.Marshal of the result: compact, field order of upstream's structs, <>& escaped."""
    text = json.dumps([s.to_json() for s in statuses], separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


class _Errors:
    __slots__ = ("first",)

    def __init__(self) -> None:
        self.first: str | None = None

    def call(self, fn: Any, arg: Any) -> bool:
        try:
            return bool(fn(arg))
        except RuleError as e:
            if self.first is None:
                self.first = str(e)
            return False


def _term_statuses(term: Any, features: Features, errs: _Errors) -> tuple[bool, list[MatchedExpression]]:
    f = features.flags.get(term.lookup)
    a = features.attributes.get(term.lookup)
    insts = features.instances.get(term.lookup)
    exprs = term.exprs or []
    ok = [False] * len(exprs)
    name_ok = False
    present = f is not None or a is not None or insts is not None
    term_match = present
    if present and term.exprs is not None:
        is_match = f is not None or a is not None
        for n, e in enumerate(exprs):
            mk = mv = False
            if f is not None:
                mk = errs.call(e.on_flag, e.key in f)
                if not mk and e.is_dne:
                    is_match = False
                    ok[n] = mk
                    continue
            if a is not None:
                mv = errs.call(e.on_value, a)
                if not mv and e.is_dne:
                    is_match = False
            ok[n] = mk or mv
            if not mk and not mv:
                is_match = False
        any_instance = False
        for inst in insts or []:
            all_ok = True
            for n, e in enumerate(exprs):
                if errs.call(e.on_value, inst):
                    ok[n] = True
                else:
                    all_ok = False
            any_instance = any_instance or all_ok
        term_match = is_match or any_instance
    if present and term.name_expr is not None and term_match:
        test = term.name_expr.on_name
        names = [*(f or ()), *(a or {})] + [k for inst in insts or [] for k in inst]
        hits = [errs.call(test, k) for k in names]  # every name, so that an error surfaces
        name_ok = any(hits)
        term_match = name_ok
    out = [MatchedExpression(term.feature, e.key, e.op, list(e.values), e.type, MATCH_EXPRESSION, ok[n])
           for n, e in enumerate(exprs)]
    if term.name_expr is not None:
        ne = term.name_expr
        out.append(MatchedExpression(term.feature, "", ne.op, list(ne.values), ne.type, MATCH_NAME, name_ok))
    return term_match, out


def _matcher_statuses(matcher: Any, features: Features, errs: _Errors) -> tuple[bool, list[MatchedExpression]]:
    matched = True
    out: list[MatchedExpression] = []
    for term in matcher.terms:
        tm, st = _term_statuses(term, features, errs)
        matched = matched and tm
        out.extend(st)
    out.sort(key=lambda m: (m.feature, m.name, m.expression_string()))
    return matched, out


def rule_status(rule: Any, features: Features) -> tuple[RuleStatus, dict[str, str]]:
    """(status, vars to feed back) of one compiled group rule."""
    if isinstance(rule, BrokenRule):
        return RuleStatus(rule.name, False, error=rule.error), {}
    errs = _Errors()
    status = RuleStatus(rule.name, False)
    structural = True
    if rule.match_any:
        any_ok = False
        for m in rule.match_any:
            ok, st = _matcher_statuses(m, features, errs)
            any_ok = any_ok or ok
            status.matched_any.append(st)
        structural = any_ok
    if rule.match_features is not None:
        ok, status.matched_expressions = _matcher_statuses(rule.match_features, features, errs)
        structural = structural and ok
    res = evaluate_rule(rule, features)
    status.error = errs.first or res.error
    status.is_match = structural and res.matched and status.error is None
    return status, (dict(res.output.vars) if status.is_match else {})


def validate(spec: Spec, features: Features, *, tags: list[str] | None = None) -> list[CompatibilityStatus]:
    """Every compatibility set whose tag is in ``tags`` (all when empty), rule by rule."""
    view = features_view(features)
    backref = BackrefWriter(view)
    out: list[CompatibilityStatus] = []
    for c in spec.compatibilities:
        if tags and c.tag not in tags:
            continue
        cs = CompatibilityStatus(rules=[], description=c.description, weight=c.weight, tag=c.tag)
        for rule in c.rules:
            st, vars_ = rule_status(rule, view)
            cs.rules.append(st)
            backref.feed({}, vars_)
        out.append(cs)
    return out
