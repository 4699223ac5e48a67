"""One shared object per distinct value among the nodes' cached states.

Thousands of nodes of a few hardware profiles get the same desired state and the same rule
outputs; the desired-state cache holds them once each instead of once per node (at 5,000 nodes
and 100 rules, ~20 kB a node). Every value shared here is read-only once computed: the
planner, the policy and the rule engine's ``previous`` only read them.

The pool is bounded: past ``limit`` distinct values it starts again (what nodes already hold
stays theirs), so node-specific outputs cost no more than unshared ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from nfd.rules.engine import RuleKey

T = TypeVar("T")


def _output_key(o: Any) -> tuple[Any, ...]:
    return (tuple(o.labels.items()), tuple(o.annotations.items()), tuple(o.vars.items()),
            tuple(tuple(t.items()) for t in o.taints), tuple(o.extended_resources.items()))


class SharedValues:
    def __init__(self, *, limit: int = 8192) -> None:
        self.limit = limit
        self._pool: dict[Any, Any] = {}

    def _get(self, key: Any, value: T) -> T:
        hit = self._pool.get(key)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        if len(self._pool) >= self.limit:
            self._pool.clear()
        self._pool[key] = value
        return value

    def names(self, value: frozenset[str]) -> frozenset[str]:
        """A set of rule object names."""
        if not value:
            return frozenset()
        return self._get(value, value)

    def desired(self, d: Any) -> Any:
        """A node's desired state (nfd.nodestate.desired.Desired)."""
        key = ("desired", tuple(d.labels.items()), tuple(d.annotations.items()),
               tuple(d.extended_resources.items()), tuple(d.taints))
        return self._get(key, d)

    def outputs(self, outputs: Mapping[RuleKey, Any]) -> Mapping[RuleKey, Any]:
        """The matched rules' outputs by RuleKey (nfd.rules.engine.RuleOutput values).

        The mapping's key is made of the shared outputs' identities: a mapping in the pool holds
        its outputs, so an identity in its key cannot be reused by another object meanwhile.
        """
        shared = {self._get(("rule", k), k): self._get(("output", k, _output_key(o)), o) for k, o in outputs.items()}
        return self._get(("outputs", tuple((k, id(o)) for k, o in shared.items())), shared)
