"""Rules and policy for one node: merged NodeFeatures -> the Desired node state (pure).

The NodeFeatureRule engine and the policy function are shared with ``nfd rules dryrun``
(nfd.rules.engine / nfd.rules.policy); this module only wires them to the master's config and
keeps the compiled NodeFeatureRules.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nfd.api.features import Features
from nfd.master.bookkeeping import Taint
from nfd.master.config import MasterConfig
from nfd.master.nodeplan import Desired
from nfd.rules.nodefeatures import MergedNodeFeatures

if TYPE_CHECKING:
    from nfd.rules.engine import RuleKey

log = logging.getLogger(__name__)


@dataclass(slots=True)
class RuleSetEntry:
    name: str
    compiled: Any  # nfd.rules.engine.CompiledRuleSet
    spec_key: bytes  # canonical JSON of the spec, to skip no-op updates
    # (index, canonical JSON) of each rule -> its compiled rule, for the next edit to reuse
    by_rule: dict[tuple[int, bytes], Any] = field(default_factory=dict)


class RuleBook:
    """The compiled NodeFeatureRules of the cluster; ``generation`` changes when they do.

    An object that cannot be compiled, or whose new revision has a problem the one in force has
    not (an invalid regexp, a CEL or template syntax error), keeps its last good version: a typo
    in an edit must not strip labels from every node. A new object with invalid rules is taken
    with those rules failing, as upstream (there is nothing older to keep).
    """

    def __init__(self) -> None:
        self.sets: dict[str, RuleSetEntry] = {}
        self.generation = 0
        self.broken: dict[str, str] = {}
        self._ordered: list[Any] | None = None

    def upsert(self, obj: dict[str, Any]) -> str | None:
        """Compile and store; returns an error message when the object is rejected."""
        from nfd.common.jsoncodec import canonical
        from nfd.rules.engine import compile_nodefeaturerule

        name = (obj.get("metadata") or {}).get("name") or ""
        spec_key = canonical(obj.get("spec"))
        cur = self.sets.get(name)
        if cur is not None and cur.spec_key == spec_key:
            return None
        _warn_unknown_fields(obj, name)  # once per revision: an unchanged spec returned above
        keys = _rule_keys(obj)
        reuse = None
        if cur is not None and keys is not None:
            prev, ks = cur.by_rule, keys

            def reuse(i: int) -> Any:
                return prev.get(ks[i]) if i < len(ks) else None

        try:
            compiled = compile_nodefeaturerule(obj, reuse=reuse)
        except Exception as e:  # ValidationError(s) or anything a bad object provokes
            msg = " ".join(str(e).split())
            self.broken[name] = msg
            if cur is not None:
                return f"NodeFeatureRule {name}: {msg}; keeping its previous version"
            return f"NodeFeatureRule {name}: {msg}; object skipped"
        problems = _problem_set(compiled)
        if cur is not None and problems - _problem_set(cur.compiled):
            # An edit that breaks a rule is not evidence that any node changed: the last good
            # revision stays in force until the object is fixed (or deleted).
            new = sorted(problems - _problem_set(cur.compiled))
            msg = "; ".join(f"{path}: {text}" for path, text in new[:5])
            self.broken[name] = msg
            return f"NodeFeatureRule {name}: {msg}; keeping its previous version"
        self.broken.pop(name, None)
        for r in compiled.rules:
            err = getattr(r, "error", None)
            if isinstance(err, str):
                log.error("NodeFeatureRule %s: rule %s is invalid and skipped: %s", name, r.name, err)
        by_rule = dict(zip(keys, compiled.rules, strict=True)) if keys and len(keys) == len(compiled.rules) else {}
        self.sets[name] = RuleSetEntry(name, compiled, spec_key, by_rule)
        self.generation += 1
        self._ordered = None
        return None

    def remove(self, name: str) -> None:
        self.broken.pop(name, None)
        if self.sets.pop(name, None) is not None:
            self.generation += 1
            self._ordered = None

    def ordered(self) -> list[Any]:
        if self._ordered is None:
            self._ordered = [self.sets[n].compiled for n in sorted(self.sets)]
        return self._ordered


MAX_LOGGED_FIELDS = 10


def _warn_unknown_fields(obj: dict[str, Any], name: str) -> None:
    """Name the fields of a new revision that the rule engine ignores (a typo such as
    ``matchFeature:`` makes a rule match every node); the API server prunes them from objects it
    validates against the CRD schema, so this shows only where that schema is not enforced."""
    from nfd.api.nodefeaturerule import unknown_field_message, unknown_fields

    try:
        paths = unknown_fields(obj, kind="NodeFeatureRule")
    except Exception:  # a malformed object is reported by the compile that follows
        return
    if not paths:
        return
    shown = ", ".join(unknown_field_message(p) for p in paths[:MAX_LOGGED_FIELDS])
    more = f" (and {len(paths) - MAX_LOGGED_FIELDS} more)" if len(paths) > MAX_LOGGED_FIELDS else ""
    rv = (obj.get("metadata") or {}).get("resourceVersion") or ""
    log.warning("NodeFeatureRule %s%s: %s%s; ignored", name, f" (resourceVersion {rv})" if rv else "", shown, more)


def _rule_keys(obj: dict[str, Any]) -> list[tuple[int, bytes]] | None:
    """Each rule's index and canonical JSON (a rule's compiled form embeds its index in paths)."""
    from nfd.common.jsoncodec import canonical

    rules = (obj.get("spec") or {}).get("rules") if isinstance(obj.get("spec"), dict) else None
    if not isinstance(rules, list):
        return None
    try:
        return [(i, canonical(r)) for i, r in enumerate(rules)]
    except (TypeError, ValueError):
        return None


def _problem_set(compiled: Any) -> set[tuple[str, str]]:
    return {(p, m) for p, m in compiled.problems()}


def policy_config(cfg: MasterConfig, *, disable_auto_prefix: bool = False) -> Any:
    from nfd.rules.policy import PolicyConfig

    r = cfg.restrictions
    return PolicyConfig(
        extra_label_ns=frozenset(cfg.extra_label_ns),
        deny_label_ns=frozenset(cfg.deny_label_ns),
        label_whitelist=cfg.label_whitelist,
        enable_taints=cfg.enable_taints,
        disable_auto_prefix=disable_auto_prefix,
        disable_labels=r.disable_labels,
        disable_annotations=r.disable_annotations,
        disable_extended_resources=r.disable_extended_resources,
        deny_node_feature_labels=r.deny_node_feature_labels,
        allow_overwrite=r.allow_overwrite,
    )


@dataclass(slots=True)
class NodeReport:
    """What happened while computing one node's state, for logs and metrics."""

    rule_errors: list[tuple[str, str]] = field(default_factory=list)  # ("<nfr>/<rule>", message)
    rejected: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, key, reason)
    duration_s: float = 0.0  # rules and policy, not counting the pauses
    outputs: dict[RuleKey, Any] = field(default_factory=dict)  # matched rules' outputs
    # rule set -> "rule: error" of its first rule that ran out of a budget on this node
    over_budget: dict[str, str] = field(default_factory=dict)
    deferred: list[str] = field(default_factory=list)  # rule sets not run (``deferred=``)


def compute_desired_steps(
    merged: MergedNodeFeatures,
    *,
    rule_sets: list[Any],
    policy: Any,
    node_name: str,
    budget: Any = None,
    previous: Mapping[RuleKey, Any] | None = None,
    memo: Any = None,
    deferred: frozenset[str] = frozenset(),
) -> Generator[None, None, tuple[Desired, NodeReport]]:
    """Rules and policy for one node, pausing after each rule (nfd-master serves probes, lease
    renewal and other nodes meanwhile; ``engine.run_to_end`` computes it at once).
    ``budget``/``previous``/``memo``: see iter_process_rule_sets; ``NodeReport.outputs`` is this
    evaluation's ``previous`` for the next one. ``deferred``: rule sets not run now, their
    previous outputs standing in (nfd.master.fairness)."""
    from nfd.rules.engine import iter_process_rule_sets
    from nfd.rules.policy import apply_policy

    rep = NodeReport()
    features: Features = merged.features
    auto_prefix = not policy.disable_auto_prefix
    rules = iter_process_rule_sets(
        rule_sets, features, node_name=node_name, feed_back=True, auto_prefix=auto_prefix, explain=False,
        budget=budget, previous=previous, devices=merged.devices, memo=memo, deferred=deferred,
    )
    busy = 0.0  # time working, not paused
    t0 = time.perf_counter()
    while True:
        try:
            next(rules)
        except StopIteration as stop:
            result = stop.value
            break
        busy += time.perf_counter() - t0
        yield
        t0 = time.perf_counter()
    # "<NodeFeatureRule>/<rule>": the log names both, as upstream's "failed to process rule"
    rep.rule_errors = [(f"{r.rule_set}/{r.name}", r.error) for r in result.results if r.error is not None]
    rep.outputs = {r.key(): r.output for r in result.results if r.matched}
    rep.deferred = list(result.deferred)
    for r in result.results:
        if r.over_budget and r.rule_set not in rep.over_budget:
            rep.over_budget[r.rule_set] = f"{r.name}: {r.error or 'spent the node budget'}"
    # master_output is combined per rule with auto-prefixing, as upstream; dynamic
    # @rule.matched.* values resolve against the features after feedback.
    pol = apply_policy(
        nodefeature_labels=merged.labels,
        rule_output=result.master_output,
        features=result.features,
        config=policy,
    )
    for rj in pol.rejected:
        rep.rejected.append((str(getattr(rj, "kind", "")), str(getattr(rj, "key", "")), str(getattr(rj, "reason", ""))))
    taints = [
        t if isinstance(t, Taint) else Taint(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
        for t in pol.taints
    ]
    desired = Desired(
        labels=dict(pol.labels),
        annotations=dict(pol.annotations),
        extended_resources=dict(pol.extended_resources),
        taints=taints,
    )
    rep.duration_s = busy + time.perf_counter() - t0
    return desired, rep
