"""The NodeFeatureRule engine: compile rules once, evaluate them per node like nfd-master.

Public API (nfd-master, the worker's custom source and ``nfd rules`` code against it):

- ``compile_rule(rule, path=...)`` -> ``CompiledRule`` (raises ValidationErrors on a malformed rule)
- ``compile_nodefeaturerule(obj)`` / ``compile_group_rules(obj)`` -> ``CompiledRuleSet`` whose
  ``rules`` hold ``CompiledRule`` or ``BrokenRule`` (a rule that failed to load reports its error at
  evaluation; the others proceed)
- ``evaluate_rule(rule, features, node_name=...)`` -> ``RuleResult``
- ``process_rule_sets(rule_sets, features, ...)`` -> ``ProcessResult``: rule sets sorted by name,
  rules in list order, each rule's raw labels and vars fed into ``rule.matched`` for later rules.

Semantics follow upstream's ``nodefeaturerule.Execute`` with fail-fast on (as the master runs
it); see ``nfd.rules.expression`` for where errors are raised. A rule error aborts that rule only:
it contributes nothing and is not fed back, later rules still run.
"""

from __future__ import annotations

import functools
import gc
import importlib
import time
from collections.abc import Callable, Collection, Generator, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from nfd.api import DEFAULT_LABEL_NS
from nfd.api.errors import ValidationError, ValidationErrors
from nfd.api.features import Features
from nfd.api.nodefeaturerule import (
    FeatureMatcherTerm,
    MatchExpression,
    Rule,
    parse_header,
    parse_rule,
)
from nfd.rules.devices import NODE_DEVICES
from nfd.rules.expression import Expr, Matcher, RuleError, Term, go_quote

RULE_BACKREF_FEATURE = "rule.matched"
MAX_TEMPLATE_SIZE = 64 * 1024

# Go's strings.TrimSpace set (unicode.IsSpace); str.strip() would also trim \x1c-\x1f.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


@dataclass(slots=True)
class RuleOutput:
    """What rules produce: labels, annotations, vars, taints and extended resources."""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    vars: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)
    extended_resources: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "labels": dict(sorted(self.labels.items())),
            "annotations": dict(sorted(self.annotations.items())),
            "vars": dict(sorted(self.vars.items())),
            "taints": [dict(t) for t in self.taints],
            "extendedResources": dict(sorted(self.extended_resources.items())),
        }


@dataclass(slots=True)
class RuleResult:
    """One rule's evaluation: whether it matched, its output, and why not."""
    name: str
    matched: bool
    output: RuleOutput
    reason: str | None = None  # why it did not match
    error: str | None = None  # the rule failed (it contributes nothing, or its previous output)
    rule_set: str = ""
    kept_previous: bool = False  # failed, and its output from the last evaluation was used
    # Its place among its set's rules of the same name (0 but for a repeated name): with rule_set
    # and name, the key of its previous output (RuleKey), so two rules that share a name (the CRD
    # allows it) keep each its own.
    occurrence: int = 0
    # The error is a budget's (its own or this node's, spent by this rule): what nfd-master's
    # cost ledger counts (nfd.master.fairness). A rule that did not run because others spent
    # the node's budget is not charged.
    over_budget: bool = False
    deferred: bool = False  # not run: its rule set is deferred (the previous output stands in)

    def key(self) -> RuleKey:
        return (self.rule_set, self.name, self.occurrence)


def _occurrences(rs: CompiledRuleSet) -> list[int]:
    """Each rule's place among the set's rules of its name (RuleResult.occurrence)."""
    seen: dict[str, int] = {}
    out = []
    for rule in rs.rules:
        n = seen.get(rule.name, 0)
        seen[rule.name] = n + 1
        out.append(n)
    return out


@dataclass(slots=True)
class BrokenRule:
    """A rule that could not be loaded; it reports ``error`` whenever it is evaluated."""

    name: str
    error: str
    path: str = ""


def _gotemplate() -> Any:
    """The Go template engine, imported only when a rule has a template."""
    return importlib.import_module("nfd.lang.gotemplate")


class _TemplateSlot:
    """A template compiled at load time; upstream parses at execution, so a parse error is
    raised only when the template would run (the rule matched)."""

    __slots__ = ("tmpl", "error", "path")

    def __init__(self, src: str, path: str) -> None:
        self.path = path
        self.tmpl: Any = None
        self.error: str | None = None
        if len(src.encode()) > MAX_TEMPLATE_SIZE:
            self.error = (
                f"{path}: failed to parse template: template exceeds maximum allowed size: "
                f"{len(src.encode())} bytes > {MAX_TEMPLATE_SIZE} limit"
            )
            return
        try:
            gt = _gotemplate()
        except ImportError:
            self.error = f"{path}: template engine (nfd.lang.gotemplate) is not available"
            return
        try:
            self.tmpl = gt.parse(src)
        except gt.TemplateError as e:
            self.error = f"{path}: failed to parse template: {e}"

    def expand(self, data: dict[str, Any], out: dict[str, str]) -> None:
        if self.error is not None:
            raise RuleError(self.error)
        box = _node_template_steps.get()
        try:
            if box is None:
                text = self.tmpl.execute(data)
            else:
                # what is left of this node's template steps (EvalBudget.template_steps)
                if box[0] <= 0:
                    raise RuleError(f"{self.path}: not expanded: this node's templates used their step budget "
                                    f"of {box[1]} steps")
                used: list[int] = []
                try:
                    text = self.tmpl.execute(data, max_steps=min(self.tmpl.max_steps, box[0]), steps_used=used)
                finally:
                    box[0] -= sum(used)
        except _gotemplate().TemplateError as e:
            raise RuleError(f"{self.path}: failed to expand template: {e}") from None
        for line in text.split("\n"):
            item = line.strip(_GO_SPACE)
            if not item:
                continue
            key, sep, value = item.partition("=")
            if not sep:
                raise RuleError(
                    f"{self.path}: failed to expand template: missing value in expanded template line "
                    f"{go_quote(item)}, (format must be '<key>=<value>')"
                )
            out[key] = value


class CompiledRule:
    """A rule ready for evaluation; nothing in it is re-parsed per node."""

    __slots__ = (
        "name",
        "path",
        "labels",
        "annotations",
        "vars",
        "taints",
        "extended_resources",
        "labels_template",
        "vars_template",
        "has_templates",
        "match_features",
        "match_any",
        "cel",
        "problems",
        "source",
        "reads_backrefs",
        "_static_output",
    )

    def __init__(self, rule: Rule, *, path: str) -> None:
        self._static_output: RuleOutput | None = None
        self.name = rule.name
        self.path = path
        self.source = rule
        self.labels = dict(rule.labels)
        self.annotations = dict(rule.annotations)
        self.vars = dict(rule.vars)
        self.extended_resources = dict(rule.extended_resources)
        self.taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in rule.taints]
        # static problems (path, message): reported by validation; evaluation raises them only
        # where upstream would
        self.problems: list[tuple[str, str]] = []
        if not rule.name:
            self.problems.append((f"{path}.name", "required"))
        for i, t in enumerate(rule.taints):
            if not t.key:
                self.problems.append((f"{path}.taints[{i}].key", "required"))
            if not t.effect:
                self.problems.append((f"{path}.taints[{i}].effect", "required"))
        self.labels_template = (
            _TemplateSlot(rule.labels_template, f"{path}.labelsTemplate") if rule.labels_template else None
        )
        self.vars_template = (
            _TemplateSlot(rule.vars_template, f"{path}.varsTemplate") if rule.vars_template else None
        )
        for slot in (self.labels_template, self.vars_template):
            if slot is not None and slot.error is not None:
                p, _, msg = slot.error.partition(": ")
                self.problems.append((p, msg))
        self.has_templates = self.labels_template is not None or self.vars_template is not None
        self.match_features = (
            self._matcher(rule.match_features, f"{path}.matchFeatures") if rule.match_features else None
        )
        self.match_any = [
            self._matcher(m.match_features, f"{path}.matchAny[{i}].matchFeatures")
            for i, m in enumerate(rule.match_any)
        ]
        self.cel: Any = None
        if rule.match_cel:
            # here, not at the top: the CEL compiler (~68 ms after this module, python -X
            # importtime) only for a rule with matchCEL
            from nfd.rules.cel import compile_expressions

            self.cel = compile_expressions(list(rule.match_cel), path=f"{path}.matchCEL")
        # Whether the result can depend on earlier rules' outputs (rule.matched), besides the
        # node's features: a rule.* term, or CEL (``attributes`` holds rule.matched).
        terms = list(rule.match_features) + [t for m in rule.match_any for t in m.match_features]
        self.reads_backrefs = self.cel is not None or any(t.feature.startswith("rule.") for t in terms)

    def _matcher(self, terms: list[FeatureMatcherTerm], path: str) -> Matcher:
        out = []
        for i, t in enumerate(terms):
            tp = f"{path}[{i}]"
            if not t.feature:
                self.problems.append((f"{tp}.feature", "required"))
            elif len(t.feature.split(".")) != 2:
                self.problems.append(
                    (f"{tp}.feature", f"invalid feature name {go_quote(t.feature)} (not <domain>.<feature>)")
                )
            exprs = None
            if t.match_expressions is not None:
                exprs = [
                    _expr(k, e, f"{tp}.matchExpressions.{k}", self.problems)
                    for k, e in t.match_expressions.items()
                ]
            name_expr = (
                _expr("", t.match_name, f"{tp}.matchName", self.problems)
                if t.match_name is not None
                else None
            )
            out.append(Term(t.feature, exprs, name_expr))
        return Matcher(out)

    def __repr__(self) -> str:
        return f"CompiledRule({self.name!r})"

    # -- evaluation ------------------------------------------------------------------------
    def execute(self, features: Features, node_name: str, explain: bool = True) -> RuleResult:
        """Evaluate; raises RuleError (and CelEvalError) like upstream's Execute errors.
        ``explain=False``: no ``reason`` when the rule does not match (cheaper)."""
        fl, at, ins = features.flags, features.attributes, features.instances
        collect = self.has_templates
        labels: dict[str, str] = {}
        vars_: dict[str, str] = {}
        if self.match_any:
            any_matched = False
            whys: list[str] = []
            for m in self.match_any:
                ok, data, why = m.evaluate(fl, at, ins, collect, explain)
                if ok:
                    any_matched = True
                    if not collect:
                        break
                    self._expand(data, labels, vars_)
                elif explain:
                    whys.append(why or "did not match")
            if not any_matched:
                if not explain:
                    return RuleResult(self.name, False, RuleOutput())
                detail = "; ".join(f"[{i}] {w}" for i, w in enumerate(whys))
                return RuleResult(self.name, False, RuleOutput(), f"matchAny: no element matched ({detail})")
        if self.match_features is not None:
            ok, data, why = self.match_features.evaluate(fl, at, ins, collect, explain)
            if not ok:
                return RuleResult(self.name, False, RuleOutput(), why)
            if collect:
                self._expand(data, labels, vars_)
        if self.cel is not None:
            ok, failed = self.cel.evaluate(features, node_name=node_name)
            if not ok:
                return RuleResult(self.name, False, RuleOutput(), f"matchCEL: {failed!r} is not true")
        if not collect:
            # no templates: the same output on every node, built once (callers only read it)
            if self._static_output is None:
                self._static_output = self._output(labels, vars_)
            return RuleResult(self.name, True, self._static_output)
        return RuleResult(self.name, True, self._output(labels, vars_))

    def _output(self, labels: dict[str, str], vars_: dict[str, str]) -> RuleOutput:
        labels.update(self.labels)
        vars_.update(self.vars)
        return RuleOutput(
            labels=labels,
            annotations=dict(self.annotations),
            vars=vars_,
            taints=[dict(t) for t in self.taints],
            extended_resources=dict(self.extended_resources),
        )

    def _expand(self, data: Any, labels: dict[str, str], vars_: dict[str, str]) -> None:
        data = go_typed_matches(data)
        if self.labels_template is not None:
            self.labels_template.expand(data, labels)
        if self.vars_template is not None:
            self.vars_template.expand(data, vars_)


@functools.cache
def _go_types() -> tuple[type, type, type, type, Any, Any]:
    """Upstream's template data types, built once (the template engine is imported lazily: ~102 ms
    after this module, python -X importtime, only for a rule with a template)."""
    from nfd.lang.gotemplate import TypedList, TypedMap

    elem_t = "nodefeaturerule.MatchedElement"

    class MatchedElement(TypedMap):
        __init__ = dict.__init__  # type: ignore[assignment]  # plain copy; the type is in the class
        go_type = elem_t
        zero = ""

    class MatchedElements(TypedList):
        go_type = f"[]{elem_t}"

    nil_elems = MatchedElements()
    nil_elems.go_nil = True  # type: ignore[attr-defined]

    class DomainMatchedFeatures(TypedMap):
        __init__ = dict.__init__  # type: ignore[assignment]  # plain copy; the type is in the class
        go_type = "nodefeaturerule.domainMatchedFeatures"
        zero = nil_elems

    nil_domain = DomainMatchedFeatures()
    nil_domain.go_nil = True

    class MatchedFeatures(TypedMap):
        __init__ = dict.__init__  # type: ignore[assignment]  # plain copy; the type is in the class
        go_type = "nodefeaturerule.matchedFeatures"
        zero = nil_domain

    return MatchedFeatures, DomainMatchedFeatures, MatchedElements, MatchedElement, nil_elems, nil_domain


def go_typed_matches(data: dict[str, dict[str, list[dict[str, str]]]]) -> Any:
    """Template data with upstream's Go types (matchedFeatures -> domainMatchedFeatures ->
    []MatchedElement -> MatchedElement), which templates can observe: ``typeOf``/``%T``, zero
    values of ``index`` on a missing key, Sprig map functions rejecting them, and a term that
    matched nothing being a nil slice (``toJson`` null)."""
    features_t, domain_t, elems_t, elem_t, nil_elems, _ = _go_types()
    return features_t(
        {
            dom: domain_t(
                {name: elems_t(map(elem_t, elems)) if elems else nil_elems for name, elems in feats.items()}
            )
            for dom, feats in data.items()
        }
    )


def _expr(key: str, e: MatchExpression, path: str, problems: list[tuple[str, str]]) -> Expr:
    x = Expr(key, e.op, list(e.value), e.type, path=path)
    for sub, msg in x.problems:
        problems.append((f"{path}.{sub}", msg))
    return x


@dataclass(slots=True)
class CompiledRuleSet:
    """One NodeFeatureRule (or NodeFeatureGroup) object, compiled."""

    name: str
    rules: list[CompiledRule | BrokenRule]
    kind: str = "NodeFeatureRule"
    namespace: str = ""

    def problems(self) -> list[tuple[str, str]]:
        """Every static problem: (field path, message), broken rules included."""
        out: list[tuple[str, str]] = []
        for r in self.rules:
            if isinstance(r, BrokenRule):
                p, sep, msg = r.error.partition(": ")
                out.append((p, msg) if sep else (r.path, r.error))
            else:
                out.extend(r.problems)
        return out


@dataclass(slots=True)
class ProcessResult:
    """The result of evaluating a set of rules against the features."""
    output: RuleOutput  # raw combined output: unprefixed names, '@' values unresolved
    results: list[RuleResult]
    errors: list[tuple[str, str]]  # (rule name, message)
    features: Features  # the input features plus rule.matched, for '@rule.matched.x' resolution
    master_output: RuleOutput  # combined as the master does it (names auto-prefixed per rule)
    deferred: list[str] = field(default_factory=list)  # rule sets not run (``deferred=``)


def compile_rule(rule: dict[str, Any] | Rule, *, path: str = "rule", group: bool = False) -> CompiledRule:
    """Compile one rule. Raises ValidationErrors (structure) or ValidationError (matchCEL)."""
    if isinstance(rule, Rule):
        return CompiledRule(rule, path=path)
    return CompiledRule(parse_rule(rule, path=path, group=group), path=path)


def _compile_set(
    obj: Any, *, kind: str, list_field: str, group: bool, reuse: Callable[[int], Any] | None = None
) -> CompiledRuleSet:
    meta, rules_raw = parse_header(obj, kind=kind, list_field=list_field)
    rules: list[CompiledRule | BrokenRule] = []
    for i, r in enumerate(rules_raw):
        kept = reuse(i) if reuse is not None else None
        if kept is not None:
            rules.append(kept)
            continue
        path = f"spec.{list_field}[{i}]"
        raw_name = r.get("name") if isinstance(r, dict) else None
        name = raw_name if isinstance(raw_name, str) else f"#{i}"
        try:
            rules.append(compile_rule(r, path=path, group=group))
        except ValidationErrors as e:
            rules.append(BrokenRule(name, "; ".join(str(x) for x in e.errors), path))
        except ValidationError as e:
            rules.append(BrokenRule(name, str(e), path))
    return CompiledRuleSet(
        name=str(meta.get("name", "")), rules=rules, kind=kind, namespace=str(meta.get("namespace", "") or "")
    )


def compile_nodefeaturerule(obj: Any, *, reuse: Callable[[int], Any] | None = None) -> CompiledRuleSet:
    """Compile a NodeFeatureRule object. Raises ValidationError only when it is not one at all.

    ``reuse(i)``: the compiled rule to take for ``spec.rules[i]`` unchanged (same spec at the
    same index in the object's previous version), or None to compile it; an edit to one rule of
    a large object then compiles that rule only (each masterless worker compiles every edit).
    """
    return _compile_set(obj, kind="NodeFeatureRule", list_field="rules", group=False, reuse=reuse)


def compile_group_rules(obj: Any) -> CompiledRuleSet:
    """Compile a NodeFeatureGroup's featureGroupRules (vars only, no labels/taints/ERs)."""
    return _compile_set(obj, kind="NodeFeatureGroup", list_field="featureGroupRules", group=True)


def evaluate_rule(
    rule: CompiledRule | BrokenRule, features: Features, *, node_name: str = "", explain: bool = True
) -> RuleResult:
    """Evaluate one rule against one node's features; errors come back in ``.error``.
    ``explain=False``: no ``reason`` for a rule that did not match."""
    if isinstance(rule, BrokenRule):
        return RuleResult(rule.name, False, RuleOutput(), None, bounded_message(rule.error))
    try:
        return rule.execute(features, node_name, explain)
    except RuleError as e:
        return RuleResult(rule.name, False, RuleOutput(), None, bounded_message(str(e)))
    except Exception as e:  # CelEvalError, or a template engine bug: fail this rule only
        msg = str(e)
        # a CelEvalError names its field (spec.rules[1].matchCEL[0]): the path once, not twice
        msg = msg if msg.startswith(f"{rule.path}.") else f"{rule.path}: {msg}"
        return RuleResult(rule.name, False, RuleOutput(), None, bounded_message(msg))


MAX_MESSAGE = 1000  # characters of one rule error (an operand can be megabytes of node data)


def bounded_message(msg: str) -> str:
    if len(msg) <= MAX_MESSAGE:
        return msg
    return f"{msg[: MAX_MESSAGE - 100]}... ({len(msg)} characters, cut)"


# What a rule's own allowance running out reads like: a template's steps or output
# (nfd.lang.gotemplate.budget.EXCEEDED), CEL's cost (nfd.lang.cel CostLimitExceeded).
_BUDGET_MARKERS = ("template execution budget exceeded", "evaluation step limit exceeded")


def is_budget_error(msg: str) -> bool:
    """Whether a rule error says that the rule ran out of an execution budget of its own."""
    return any(m in msg for m in _BUDGET_MARKERS)


class BackrefWriter:
    """Feeds rule outputs into ``rule.matched`` of a features view, copying any existing set
    on first use so that the caller's objects are never modified."""

    __slots__ = ("attrs", "cur")

    def __init__(self, view: Features) -> None:
        self.attrs = view.attributes
        self.cur: dict[str, str] | None = None

    def feed(self, labels: dict[str, str], vars_: dict[str, str]) -> None:
        cur = self.cur
        if cur is None:
            cur = self.cur = dict(self.attrs.get(RULE_BACKREF_FEATURE) or {})
            self.attrs[RULE_BACKREF_FEATURE] = cur
        if labels:
            cur.update(labels)
        if vars_:
            cur.update(vars_)


def features_view(features: Features) -> Features:
    """Features sharing the caller's element data, with its own attribute map (for rule.matched)."""
    return Features(flags=features.flags, attributes=dict(features.attributes), instances=features.instances)


def join_ns(ns: str, name: str) -> str:
    """Go's path.Join(ns, name) for an unprefixed name, as addNsToMapKeys builds names: the path
    is cleaned, so "" and "." give the bare namespace and ".." gives "." (both then fail
    validation instead of becoming "ns/")."""
    if name in ("", "."):
        return ns
    if name == "..":
        return "."
    return f"{ns}/{name}"


def add_ns(items: Mapping[str, str], ns: str | None) -> dict[str, str]:
    """Upstream addNsToMapKeys: unprefixed names get ``ns`` (joined as path.Join does); an
    explicitly prefixed twin wins. ``ns`` None copies names unchanged (DisableAutoPrefix)."""
    if ns is None:
        return dict(items)
    out: dict[str, str] = {}
    for k, v in items.items():
        if "/" in k:
            out[k] = v
        else:
            fq = join_ns(ns, k)
            if fq not in items:
                out[fq] = v
    return out


# Seconds this process spent in the cyclic GC (gc.callbacks): not charged to the rule that
# happened to allocate when a collection started (a full collection walks the whole heap).
_GC_S = [0.0]
_GC_T0 = [0.0]


def _gc_clock(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _GC_T0[0] = time.perf_counter()
    else:
        _GC_S[0] += time.perf_counter() - _GC_T0[0]


gc.callbacks.append(_gc_clock)


@dataclass(slots=True, frozen=True)
class EvalBudget:
    """Time limits on one node's evaluation (nfd-master; docs/reliability.md).

    A rule that runs longer than ``rule_s`` fails for that node; once the node's rules together
    have run ``node_s``, the rest fail for it without running. Each rule is also bounded from
    inside (template steps, CEL cost), so neither limit is passed by more than one rule's worth.
    A rule's time is wall-clock time less the garbage collector's, and at most the CPU time of
    the thread since the node's evaluation began: a process that is descheduled (throttled by
    its CPU limit, or on a loaded host) does not fail rules that did no more work.
    """

    rule_s: float = 0.5
    node_s: float = 2.0
    template_steps: int = 4_000_000  # template steps for all of a node's rules together


# A matched rule's labels, annotations and extended resources with the master's prefixes
_Prefixed = tuple[dict[str, str], dict[str, str], dict[str, str]]

# (rule set, rule name, occurrence): one rule of an evaluation, as RuleResult.key() gives it; what
# previous outputs are keyed by.
RuleKey = tuple[str, str, int]


def _merge(dst: RuleOutput, src: RuleOutput) -> None:
    dst.labels.update(src.labels)
    dst.annotations.update(src.annotations)
    dst.extended_resources.update(src.extended_resources)
    dst.vars.update(src.vars)
    dst.taints.extend(src.taints)


def _combine(out: RuleOutput, master: RuleOutput, o: RuleOutput, prefixed: _Prefixed) -> None:
    """Add one matched rule's output to the raw and the master's (prefixed) combined outputs."""
    _merge(out, o)
    master.labels.update(prefixed[0])
    master.annotations.update(prefixed[1])
    master.extended_resources.update(prefixed[2])
    master.vars.update(o.vars)
    master.taints.extend(o.taints)


@dataclass(slots=True)
class _MemoEntry:
    """A memoised rule evaluation, reused while its inputs are unchanged."""
    rule: CompiledRule  # held so that its id() is not reused while the entry lives
    backrefs: dict[str, str] | None  # rule.matched as the rule saw it, when it reads it
    result: RuleResult
    prefixed: _Prefixed


class RuleMemo:
    """One node's rule results from its last evaluation, for the next one on the same features.

    A rule's result is a function of the node's features, its name and DRA devices, and, for a
    rule that reads ``rule.matched`` (a ``rule.*`` term or matchCEL), the outputs of the rules
    before it. When only the rules change (one NodeFeatureRule edited), the unchanged rules
    (the same compiled objects, which the rulebook keeps across edits) need not run again: a
    masterless worker then evaluates the edited rule, not all of them. Failed rules are always
    run again (a time budget is not a property of the inputs). Holds one entry per rule.
    """

    __slots__ = ("features", "devices", "sig", "entries", "sets")

    def __init__(self) -> None:
        self.features: Features | None = None
        self.devices: Sequence[dict[str, Any]] | None = None
        self.sig: tuple[Any, ...] = ()
        self.entries: dict[tuple[str, int], _MemoEntry] = {}
        # whole rule sets whose rules all came out without an error: one lookup instead of one
        # per rule for the objects an edit did not touch (99 of 100 in a rule change)
        self.sets: dict[str, _SetEntry] = {}

    def begin(self, features: Features, devices: Sequence[dict[str, Any]], sig: tuple[Any, ...]
              ) -> tuple[dict[tuple[str, int], _MemoEntry], dict[str, _SetEntry]]:
        """A new evaluation: hands back the entries of the last one (none when the features,
        devices or settings differ) and starts empty ones for this evaluation to fill."""
        if self.features is not features or self.devices is not devices or self.sig != sig:
            self.entries = {}
            self.sets = {}
        hits, self.entries = self.entries, {}
        set_hits, self.sets = self.sets, {}
        self.features, self.devices, self.sig = features, devices, sig
        return hits, set_hits


@dataclass(slots=True)
class _SetEntry:
    """A memoised rule-set evaluation, reused while its inputs are unchanged."""
    rule_set: CompiledRuleSet  # the same compiled object (the rulebook keeps unchanged ones)
    backrefs: dict[str, str] | None  # rule.matched on entry, when a rule of the set reads it
    results: list[RuleResult]
    output: RuleOutput  # the matched rules' outputs combined in order (_combine's ``out``)
    master: RuleOutput  # the same with the master's prefixes (_combine's ``master``)
    fed: dict[str, str]  # what the set fed into rule.matched, combined in order
    entries: list[tuple[tuple[str, int], _MemoEntry]]


T = TypeVar("T")

# The running node evaluation's template steps, [left, budget] (set per rule by iter_process_rule_sets).
_node_template_steps: ContextVar[list[int] | None] = ContextVar("nfd_node_template_steps", default=None)


def process_rule_sets(
    rule_sets: Iterable[CompiledRuleSet],
    features: Features,
    *,
    node_name: str = "",
    feed_back: bool = True,
    auto_prefix: bool = True,
    explain: bool = True,
    budget: EvalBudget | None = None,
    previous: Mapping[RuleKey, RuleOutput] | None = None,
    deferred: Collection[str] = (),
) -> ProcessResult:
    """Run every rule like nfd-master's processNodeFeatureRule (caller's features untouched).

    ``auto_prefix``: how ``master_output`` names are built (False = DisableAutoPrefix gate).
    ``explain=False``: results carry no reason why a rule did not match (nfd-master).
    ``budget``, ``previous``, ``deferred``: see iter_process_rule_sets.
    """
    return run_to_end(iter_process_rule_sets(
        rule_sets, features, node_name=node_name, feed_back=feed_back, auto_prefix=auto_prefix,
        explain=explain, budget=budget, previous=previous, deferred=deferred,
    ))


def run_to_end(steps: Generator[None, None, T]) -> T:
    """Drive a pausing computation (iter_process_rule_sets, nfd.nodestate.desired.desired_state_steps) to its result."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            result: T = stop.value
            return result


@dataclass(slots=True)
class _SetRecording:
    """A rule set's evaluation as the RuleMemo keeps it (a _SetEntry once all its rules came out
    without an error): ``backrefs`` is rule.matched on entry when a rule of the set reads it,
    ``first`` the index of its first result."""

    backrefs: dict[str, str] | None
    first: int
    clean: bool = True
    out: RuleOutput = field(default_factory=RuleOutput)
    master: RuleOutput = field(default_factory=RuleOutput)
    fed: dict[str, str] = field(default_factory=dict)
    entries: list[tuple[tuple[str, int], _MemoEntry]] = field(default_factory=list)

    def add(self, key: tuple[str, int], entry: _MemoEntry | None, res: RuleResult, prefixed: _Prefixed, *,
            feed_back: bool) -> None:
        """One rule's result; ``entry`` None: not memoizable (an error kept its previous output)."""
        if entry is not None:
            self.entries.append((key, entry))
        else:
            self.clean = False
        if res.matched:
            _combine(self.out, self.master, res.output, prefixed)
        if feed_back:
            self.fed.update(res.output.labels)
            self.fed.update(res.output.vars)


def _keep_previous(rs: CompiledRuleSet, previous: Mapping[RuleKey, RuleOutput] | None, *,
                   results: list[RuleResult], out: RuleOutput, master: RuleOutput, ns: str | None,
                   backref: BackrefWriter | None) -> None:
    """A deferred rule set: each rule contributes its ``previous`` output (fed back into
    rule.matched through ``backref``), without running and without an error."""
    for rule, occ in zip(rs.rules, _occurrences(rs), strict=True):
        kept = previous.get((rs.name, rule.name, occ)) if previous is not None else None
        results.append(RuleResult(rule.name, kept is not None, kept or RuleOutput(), rule_set=rs.name,
                                  kept_previous=kept is not None, deferred=True, occurrence=occ))
        if kept is not None:
            _combine(out, master, kept, (add_ns(kept.labels, ns), add_ns(kept.annotations, ns),
                                         add_ns(kept.extended_resources, ns)))
            if backref is not None:
                backref.feed(kept.labels, kept.vars)


class _NodeSpending:
    """What a node's rules have spent of its EvalBudget (time, template steps), and the
    evaluation of one rule within it (no budget: just the evaluation)."""

    __slots__ = ("budget", "spent", "cpu0", "gc0", "slow", "steps")

    def __init__(self, budget: EvalBudget | None) -> None:
        self.budget = budget
        self.spent = 0.0  # the rules' time on this node, as budgeted (see EvalBudget)
        self.cpu0 = time.thread_time() if budget is not None else 0.0
        self.gc0 = _GC_S[0]
        self.slow: list[str] = []
        # [steps left, the budget]: what the node's templates may still run
        self.steps = [budget.template_steps, budget.template_steps] if budget is not None else None

    def evaluate(self, rule: Any, rule_set: str, view: Features, *, node_name: str, explain: bool,
                 devices: Sequence[dict[str, Any]]) -> RuleResult:
        budget = self.budget
        if budget is not None and self.spent > budget.node_s:
            return RuleResult(rule.name, False, RuleOutput(), None,
                              f"not evaluated: this node's rules used their time budget of {budget.node_s:g}s "
                              f"(slowest: {', '.join(self.slow[:3])})")
        steps_box = self.steps
        t0 = time.perf_counter()
        g0 = _GC_S[0]
        steps_before = steps_box[0] if steps_box is not None else 0
        token = _node_template_steps.set(steps_box)
        dev_token = NODE_DEVICES.set(devices)
        try:
            res = evaluate_rule(rule, view, node_name=node_name, explain=explain)
        finally:
            NODE_DEVICES.reset(dev_token)
            _node_template_steps.reset(token)
        took = time.perf_counter() - t0 - (_GC_S[0] - g0)
        if budget is None:
            self.spent += took
            return res
        if took > budget.rule_s:
            # not over budget if this thread has not even run that long since the node
            # began: the process was descheduled (a CPU limit, a loaded host)
            took = min(took, time.thread_time() - self.cpu0 - (_GC_S[0] - self.gc0))
        spent_before = self.spent
        self.spent += took
        if took > budget.rule_s:
            self.slow.append(f"{rule_set}/{rule.name} {took:.2f}s")
            if res.error is None:
                res = RuleResult(rule.name, False, RuleOutput(), None,
                                 f"took {took:.2f}s on this node, more than the rule time budget of {budget.rule_s:g}s")
        if (
            took > budget.rule_s
            or (res.error is not None and is_budget_error(res.error))
            or (self.spent > budget.node_s >= spent_before)  # this rule spent the node's time
            or (steps_box is not None and steps_box[0] <= 0 < steps_before)  # or its steps
        ):
            res.over_budget = True
        return res


def iter_process_rule_sets(
    rule_sets: Iterable[CompiledRuleSet],
    features: Features,
    *,
    node_name: str = "",
    feed_back: bool = True,
    auto_prefix: bool = True,
    explain: bool = True,
    budget: EvalBudget | None = None,
    previous: Mapping[RuleKey, RuleOutput] | None = None,
    devices: Sequence[dict[str, Any]] = (),
    memo: RuleMemo | None = None,
    deferred: Collection[str] = (),
) -> Generator[None, None, ProcessResult]:
    """process_rule_sets, pausing (yielding) after each rule so a caller can serve other work.

    ``budget``: time limits (EvalBudget); a rule past them fails for this node with a named error.
    ``previous``: the outputs of the rules that matched in this node's last evaluation, by
    (rule set, rule): a rule that fails now contributes those instead of nothing (a runtime
    error is not evidence that the node changed). Its error is still reported.
    ``devices``: the node's DRA devices, the ``devices`` variable of ``matchCEL`` (nfd.dra).
    ``memo``: this node's RuleMemo from its last evaluation on the same ``features`` object; a
    rule found there unchanged, with unchanged inputs, is not run again (and not paused after).
    ``deferred``: names of rule sets not to run now (nfd-master defers an object that spent its
    budget on many nodes, nfd.master.fairness): each of their rules contributes its ``previous``
    output, as a failing rule does, without an error; ``ProcessResult.deferred`` lists them.
    """
    hits: dict[tuple[str, int], _MemoEntry] = {}
    set_hits: dict[str, _SetEntry] = {}
    if memo is not None:
        hits, set_hits = memo.begin(features, devices, (node_name, explain, auto_prefix))
    view = features_view(features)
    backref = BackrefWriter(view)
    out = RuleOutput()
    master = RuleOutput()
    ns = DEFAULT_LABEL_NS if auto_prefix else None
    results: list[RuleResult] = []
    errors: list[tuple[str, str]] = []
    spending = _NodeSpending(budget)
    skipped: list[str] = []
    for rs in sorted(rule_sets, key=lambda r: r.name):
        if rs.name in deferred:
            skipped.append(rs.name)
            _keep_previous(rs, previous, results=results, out=out, master=master, ns=ns,
                           backref=backref if feed_back else None)
            if memo is not None:
                set_hits.pop(rs.name, None)
            continue
        rec: _SetRecording | None = None
        if memo is not None:
            if _replay_set(memo, set_hits.get(rs.name), rs, backref, results=results, out=out, master=master,
                           feed_back=feed_back):
                continue
            reads = any(isinstance(r, CompiledRule) and r.reads_backrefs for r in rs.rules)
            rec = _SetRecording(dict(backref.cur or {}) if reads else None, len(results))
        for rule, occ in zip(rs.rules, _occurrences(rs), strict=True):
            if memo is not None and rec is not None and hits and _replay_rule(
                memo, rec, hits.get((rs.name, id(rule))), (rs.name, id(rule)), rule, backref, results=results,
                out=out, master=master, feed_back=feed_back,
            ):
                continue
            before = (dict(backref.cur or {}) if memo is not None and isinstance(rule, CompiledRule)
                      and rule.reads_backrefs else None)
            res = spending.evaluate(rule, rs.name, view, node_name=node_name, explain=explain, devices=devices)
            res.rule_set = rs.name
            res.occurrence = occ
            results.append(res)
            if res.error is not None:
                errors.append((res.name, res.error))
                kept = previous.get((rs.name, rule.name, occ)) if previous is not None else None
                if kept is None:
                    if rec is not None:
                        rec.clean = False
                    yield
                    continue
                res.matched, res.output, res.kept_previous = True, kept, True
            o = res.output
            prefixed: _Prefixed = ({}, {}, {})
            if res.matched:
                prefixed = (add_ns(o.labels, ns), add_ns(o.annotations, ns), add_ns(o.extended_resources, ns))
                _combine(out, master, o, prefixed)
            if memo is not None and rec is not None:
                _record_rule(memo, rec, (rs.name, id(rule)), rule, before, res, prefixed, feed_back=feed_back)
            if feed_back:
                backref.feed(o.labels, o.vars)
            yield
        if memo is not None and rec is not None and rec.clean:
            memo.sets[rs.name] = _SetEntry(rs, rec.backrefs, results[rec.first:], rec.out, rec.master, rec.fed,
                                           rec.entries)
    return ProcessResult(output=out, results=results, errors=errors, features=view, master_output=master,
                         deferred=skipped)


# The RuleMemo's part in iter_process_rule_sets: replaying what it holds, recording what ran.


def _replay_set(memo: RuleMemo, se: _SetEntry | None, rs: CompiledRuleSet, backref: BackrefWriter, *,
                results: list[RuleResult], out: RuleOutput, master: RuleOutput, feed_back: bool) -> bool:
    """A rule set the memo holds (``se``), when it is the same compiled set and, where its rules
    read rule.matched, it holds as it did: its results and outputs again, kept for the next
    evaluation, without running a rule. False: the set must run."""
    if se is None or se.rule_set is not rs or (se.backrefs is not None and se.backrefs != (backref.cur or {})):
        return False
    memo.sets[rs.name] = se
    memo.entries.update(se.entries)
    results.extend(se.results)
    _merge(out, se.output)
    _merge(master, se.master)
    if feed_back and se.fed:
        backref.feed(se.fed, {})
    return True


def _replay_rule(memo: RuleMemo, rec: _SetRecording, hit: _MemoEntry | None, key: tuple[str, int], rule: Any,
                 backref: BackrefWriter, *, results: list[RuleResult], out: RuleOutput, master: RuleOutput,
                 feed_back: bool) -> bool:
    """One rule the memo holds (``hit``), when it is the same compiled rule and, where it reads
    rule.matched, it holds as it did: its result and output again, kept for the next evaluation
    and recorded in its set's ``rec``, without running it. False: the rule must run."""
    if hit is None or hit.rule is not rule or (hit.backrefs is not None and hit.backrefs != (backref.cur or {})):
        return False
    memo.entries[key] = hit
    results.append(hit.result)
    if hit.result.matched:
        _combine(out, master, hit.result.output, hit.prefixed)
    rec.add(key, hit, hit.result, hit.prefixed, feed_back=feed_back)
    if feed_back:
        backref.feed(hit.result.output.labels, hit.result.output.vars)
    return True


def _record_rule(memo: RuleMemo, rec: _SetRecording, key: tuple[str, int], rule: Any,
                 before: dict[str, str] | None, res: RuleResult, prefixed: _Prefixed, *, feed_back: bool) -> None:
    """A rule that ran, into its set's ``rec`` and, when it ran without an error, into the memo
    for the next evaluation (``before``: rule.matched as it read it, when it reads it)."""
    entry = None
    if res.error is None and isinstance(rule, CompiledRule):
        entry = _MemoEntry(rule, before, res, prefixed)
        memo.entries[key] = entry
    rec.add(key, entry, res, prefixed, feed_back=feed_back)
