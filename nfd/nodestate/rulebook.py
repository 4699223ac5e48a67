"""The cluster's NodeFeatureRules compiled, as nfd-master keeps them (and the fleet report
replays them): an edit that breaks a rule keeps the revision in force.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from nfd.api.nodefeaturerule import unknown_field_message, unknown_field_problems
from nfd.common.jsoncodec import canonical
from nfd.rules.engine import compile_nodefeaturerule

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
    validates against the CRD schema, so this shows only where that schema is not enforced.
    Each field in kubectl's words, then the nearest valid name (as ``nfd rules validate``)."""
    try:
        problems = unknown_field_problems(obj, kind="NodeFeatureRule")
    except Exception:  # a malformed object is reported by the compile that follows
        return
    if not problems:
        return
    # the problem's text opens "unknown field"; kubectl's wording puts the path there
    shown = ", ".join(unknown_field_message(path) + msg.removeprefix("unknown field")
                      for path, msg in problems[:MAX_LOGGED_FIELDS])
    more = f" (and {len(problems) - MAX_LOGGED_FIELDS} more)" if len(problems) > MAX_LOGGED_FIELDS else ""
    rv = (obj.get("metadata") or {}).get("resourceVersion") or ""
    log.warning("NodeFeatureRule %s%s: %s%s; ignored", name, f" (resourceVersion {rv})" if rv else "", shown, more)


def _rule_keys(obj: dict[str, Any]) -> list[tuple[int, bytes]] | None:
    """Each rule's index and canonical JSON (a rule's compiled form embeds its index in paths)."""
    rules = (obj.get("spec") or {}).get("rules") if isinstance(obj.get("spec"), dict) else None
    if not isinstance(rules, list):
        return None
    try:
        return [(i, canonical(r)) for i, r in enumerate(rules)]
    except (TypeError, ValueError):
        return None


def _problem_set(compiled: Any) -> set[tuple[str, str]]:
    return {(p, m) for p, m in compiled.problems()}
