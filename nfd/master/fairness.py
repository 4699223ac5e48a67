"""Which NodeFeatureRule objects are too costly to evaluate with the others (pure).

The per-node budgets (nfd.rules.engine.EvalBudget) bound what one rule costs on one node. A
rule object that spends its budget on every node still costs that much on every node, one node
after another, and a rule change in another object waits behind it. The ledger counts, per rule
object and revision, the nodes on which one of its rules ran out of a budget; from
``threshold`` nodes on, the revision is *deferred*: nfd-master evaluates the other objects for
each node first, with the deferred object's previous outputs standing in (as for any failing
rule: nothing is removed without evidence), and evaluates the deferred object afterwards in its
background lane, one node at a time and only while no other node work waits
(nfd.master.evalsched). A new revision of the object starts over.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Nodes on which a rule object's rules ran out of a budget, in one revision, before the
#: object is deferred cluster-wide.
DEFER_AFTER_NODES = 3


@dataclass(slots=True)
class Deferral:
    """A rule object found too costly: what the log line and the Event say."""

    rule_set: str
    count: int  # nodes so far
    nodes: list[str]  # the first few
    example: str  # "rule: error" on the first node

    def message(self) -> str:
        shown = ", ".join(self.nodes[:3])
        nodes = "1 node" if self.count == 1 else f"{self.count} nodes"
        return (f"NodeFeatureRule {self.rule_set} ran out of its evaluation budget on {nodes} "
                f"({shown}; {self.example}); it is evaluated after the other rules from now on, in the "
                f"background, until it changes, and its outputs from before stay on the nodes meanwhile")


@dataclass(slots=True)
class _Entry:
    revision: bytes
    # the nodes counted, up to the threshold: once the revision is deferred no more are kept, so
    # the entry stays small however many nodes come and go while the revision is in force
    nodes: set[str] = field(default_factory=set)
    first: list[str] = field(default_factory=list)  # the first nodes, in order (for the message)
    example: str = ""
    deferred: bool = False


class CostLedger:
    """Budget failures per (rule object, revision), and the deferred objects."""

    def __init__(self, *, threshold: int = DEFER_AFTER_NODES) -> None:
        self.threshold = max(1, threshold)
        self._entries: dict[str, _Entry] = {}
        self._deferred: frozenset[str] = frozenset()

    def deferred(self) -> frozenset[str]:
        """The rule objects (by name) to evaluate after the others."""
        return self._deferred

    def record(self, *, rule_set: str, revision: bytes, node: str, example: str) -> Deferral | None:
        """One node on which ``rule_set`` (at ``revision``) ran out of a budget. Returns the
        Deferral when this node makes it deferred (once per revision), else None."""
        e = self._entries.get(rule_set)
        if e is None or e.revision != revision:
            e = self._entries[rule_set] = _Entry(revision)
            self._set_deferred(rule_set, False)
        if e.deferred:
            return None  # counted enough: the names of further nodes (churn brings new ones) are not kept
        if node not in e.nodes:
            e.nodes.add(node)
            if len(e.first) < 3:
                e.first.append(node)
            if not e.example:
                e.example = example
        if len(e.nodes) < self.threshold:
            return None
        e.deferred = True
        self._set_deferred(rule_set, True)
        return Deferral(rule_set, len(e.nodes), list(e.first), e.example)

    def revised(self, rule_set: str, revision: bytes | None) -> None:
        """The object changed (``revision``) or was deleted (None): its count starts over."""
        e = self._entries.get(rule_set)
        if e is not None and e.revision != revision:
            del self._entries[rule_set]
            self._set_deferred(rule_set, False)

    def node_count(self, rule_set: str) -> int:
        e = self._entries.get(rule_set)
        return len(e.nodes) if e is not None else 0

    def _set_deferred(self, rule_set: str, on: bool) -> None:
        if on:
            self._deferred = self._deferred | {rule_set}
        elif rule_set in self._deferred:
            self._deferred = self._deferred - {rule_set}
