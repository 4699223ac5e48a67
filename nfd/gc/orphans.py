"""What nfd-gc may delete: a pure function of node names and object metadata.

- a NodeFeature whose ``nfd.node.kubernetes.io/node-name`` label is missing or names a node
  that does not exist;
- a NodeResourceTopology whose name is not an existing node.

The caller must pass a node-name set it has *positive evidence* for (a complete, successful
LIST); see collector.py for how that is ensured.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from nfd.api import NODE_NAME_LABEL

NODEFEATURE = "NodeFeature"
NODERESOURCETOPOLOGY = "NodeResourceTopology"


@dataclass(frozen=True, slots=True)
class Target:
    kind: str
    namespace: str
    name: str
    #: the node the object is for ("" when the NodeFeature has no node-name label)
    node: str
    uid: str = ""
    resource_version: str = ""

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def nodefeature_target(obj: dict[str, Any]) -> Target:
    m = _meta(obj)
    labels = m.get("labels") or {}
    return Target(
        kind=NODEFEATURE,
        namespace=m.get("namespace", ""),
        name=m.get("name", ""),
        node=labels.get(NODE_NAME_LABEL, "") if isinstance(labels, dict) else "",
        uid=m.get("uid", ""),
        resource_version=m.get("resourceVersion", ""),
    )


def nrt_target(obj: dict[str, Any]) -> Target:
    m = _meta(obj)
    return Target(
        kind=NODERESOURCETOPOLOGY,
        namespace="",
        name=m.get("name", ""),
        node=m.get("name", ""),
        uid=m.get("uid", ""),
        resource_version=m.get("resourceVersion", ""),
    )


def stale(targets: Iterable[Target], node_names: set[str] | frozenset[str]) -> list[Target]:
    """Targets whose node is not in ``node_names`` (an unlabelled NodeFeature is always stale)."""
    return [t for t in targets if not t.node or t.node not in node_names]
