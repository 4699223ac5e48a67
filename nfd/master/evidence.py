"""When may nfd-master remove what it owns from a node? Only on evidence.

Evidence that a node's NodeFeatures are known (see docs/master.md, "Evidence model"):

1. the NodeFeature informer has completed a full list (the master does no node work before);
2. a NodeFeature for the node is in the cache (its features say what the node should carry); or
3. a NodeFeature delete for the node was observed (a watch DELETED event, or a complete relist
   that no longer contains it) - "pending delete"; or
4. the node was already processed successfully by this master since it started, so a missing
   NodeFeature has been missing for at least one full pass (upstream's "processed once").

Without any of 2-4 (a node with no NodeFeature in the cache, first time seen) the pass runs in
skip-removal mode: it adds and updates, never removes. A failed pass leaves the evidence state
as it was (upstream marks the node processed before trying, so a retry after an API error could
remove labels).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Resolution:
    pending_delete: bool
    already_processed: bool
    generation: int


@dataclass(slots=True)
class Evidence:
    _pending: dict[str, int] = field(default_factory=dict)
    _processed: set[str] = field(default_factory=set)
    _gen: int = 0

    def mark_deleted(self, node: str) -> None:
        self._gen += 1
        self._pending[node] = self._gen

    def resolve(self, node: str) -> Resolution:
        return Resolution(
            pending_delete=node in self._pending,
            already_processed=node in self._processed,
            generation=self._pending.get(node, 0),
        )

    def commit(self, node: str, res: Resolution) -> None:
        """The node was written (or found right): consume the delete it saw, mark it processed."""
        if res.pending_delete and self._pending.get(node) == res.generation:
            del self._pending[node]
        self._processed.add(node)

    def forget(self, node: str) -> None:
        """The Node is gone: drop its state so memory stays bounded."""
        self._pending.pop(node, None)
        self._processed.discard(node)

    def nodes(self) -> set[str]:
        """Every node with state here."""
        return set(self._pending) | self._processed

    def reset_processed(self) -> None:
        """A new term as leader: nothing has been processed by this leader yet."""
        self._processed.clear()

    def pending(self, node: str) -> bool:
        return node in self._pending


def skip_removal(*, has_features: bool, found_in_cache: bool, res: Resolution) -> bool:
    """Upstream's startup cache-miss protection, decided from the evidence above."""
    if has_features or res.pending_delete:
        return False
    return not found_in_cache and not res.already_processed
