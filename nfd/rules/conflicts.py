"""Conflicts between rules: two rules writing one label, annotation, extended resource or taint
with different values, and two rules of one object with the same name.

nfd-master (upstream's processNodeFeatureRule) runs the NodeFeatureRule objects sorted by
``metadata.name`` and each object's rules in list order, and merges every matched rule's output
into one map (``maps.Copy``): where two rules write one key, the one that runs last wins. Taints
are appended and then set on the node one by one (``AddOrUpdateTaint``), which matches a taint by
key and effect and overwrites its value, so the last one wins there too. Names are compared as
the master writes them, after auto-prefixing.

``find_conflicts`` reads rule outputs in the master's order: the rules' literal outputs
(``nfd rules validate``, nfd.rules.lint: where both rules match a node) or those of the rules
that matched one node (``result_conflicts``: ``nfd rules dryrun``; ``kubectl nfd test -A``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nfd.api import DEFAULT_LABEL_NS
from nfd.lang.gostd.strconv import quote as go_quote
from nfd.rules.engine import CompiledRuleSet, add_ns

ORDER = "NodeFeatureRules by name, then rules in order; the last one wins"
KINDS = ("label", "annotation", "extendedResource", "taint")


@dataclass(frozen=True, slots=True)
class Writer:
    rule_set: str
    rule: str
    value: str

    @property
    def rule_ref(self) -> str:
        return f"{self.rule_set}/{self.rule}"


@dataclass(slots=True)
class Conflict:
    """One key written with different values; ``writers`` in nfd-master's order, so the last
    one's value is what the master applies."""

    kind: str  # label, annotation, extendedResource or taint (key ``key:Effect``)
    key: str
    writers: list[Writer] = field(default_factory=list)

    @property
    def applied(self) -> Writer:
        return self.writers[-1]

    def message(self) -> str:
        who = ", ".join(f"{w.rule_ref} ({go_quote(w.value)})" for w in self.writers)
        a = self.applied
        return (f"{self.kind} {go_quote(self.key)} is written with different values by {who}; "
                f"nfd-master applies {go_quote(a.value)} from {a.rule_ref} ({ORDER})")

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "writers": [{"rule": w.rule_ref, "value": w.value} for w in self.writers],
            "applied": {"rule": self.applied.rule_ref, "value": self.applied.value},
        }


# (rule set, rule, labels, annotations, extended resources, taints) in the master's order
RuleOutputs = tuple[str, str, Mapping[str, str], Mapping[str, str], Mapping[str, str], Iterable[Mapping[str, str]]]


def find_conflicts(outputs: Iterable[RuleOutputs], *, auto_prefix: bool = True) -> list[Conflict]:
    """Every key that two of ``outputs`` write with different values."""
    ns = DEFAULT_LABEL_NS if auto_prefix else None
    seen: dict[tuple[str, str], list[Writer]] = {}
    for rs, rule, labels, annots, resources, taints in outputs:
        for kind, items in (("label", labels), ("annotation", annots), ("extendedResource", resources)):
            for k, v in add_ns(items, ns).items():
                seen.setdefault((kind, k), []).append(Writer(rs, rule, v))
        for t in taints:
            key = f"{t.get('key', '')}:{t.get('effect', '')}"
            seen.setdefault(("taint", key), []).append(Writer(rs, rule, str(t.get("value") or "")))
    out = [Conflict(kind, key, ws) for (kind, key), ws in seen.items() if len({w.value for w in ws}) > 1]
    out.sort(key=lambda c: (KINDS.index(c.kind), c.key))
    return out


def result_conflicts(results: Iterable[Any], *, auto_prefix: bool = True) -> list[Conflict]:
    """Conflicts between the rules that matched one node (RuleResults in evaluation order)."""
    return find_conflicts(
        ((r.rule_set, r.name, r.output.labels, r.output.annotations, r.output.extended_resources, r.output.taints)
         for r in results if r.matched and r.error is None),
        auto_prefix=auto_prefix,
    )


def duplicate_rule_names(rule_set: CompiledRuleSet, *, list_field: str = "rules") -> list[tuple[str, str]]:
    """(field path, message) for each rule whose name an earlier rule of the object has: logs,
    metrics and ``kubectl nfd`` name rules by it."""
    first: dict[str, int] = {}
    out: list[tuple[str, str]] = []
    for i, r in enumerate(rule_set.rules):
        if not r.name or r.name.startswith("#"):
            continue
        j = first.setdefault(r.name, i)
        if j != i:
            out.append((f"spec.{list_field}[{i}].name",
                        f"{go_quote(r.name)} is also the name of spec.{list_field}[{j}]"))
    return out
