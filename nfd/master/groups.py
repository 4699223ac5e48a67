"""NodeFeatureGroup membership (gate NodeFeatureGroupAPI), as upstream computes it.

A node is a member when any group rule matches its merged features (vars fed back between the
group's rules). Nodes without any NodeFeature are skipped. The member name is the node's
``system.name.nodename`` feature as upstream reads it; where that feature is missing we use the
Node's name (upstream would list an empty name).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nfd.rules.nodefeatures import MergedNodeFeatures

if TYPE_CHECKING:
    from nfd.k8s.client import ApiClient

log = logging.getLogger(__name__)

# "namespace/name" -> (canonical spec, compiled rules) of each group seen; a deleted group's
# entry goes with it (forget), and the whole map is bounded in case deletes are missed.
_compiled: dict[str, tuple[str, Any]] = {}
COMPILED_MAX = 1024


def _key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def _compile(obj: dict[str, Any]) -> Any:
    from nfd.rules.engine import compile_group_rules

    meta = obj.get("metadata") or {}
    key = _key(meta.get("namespace", ""), meta.get("name", ""))
    spec_key = json.dumps(obj.get("spec"), sort_keys=True)
    hit = _compiled.get(key)
    if hit is not None and hit[0] == spec_key:
        return hit[1]
    group = compile_group_rules(obj)
    if key not in _compiled and len(_compiled) >= COMPILED_MAX:
        _compiled.clear()
    _compiled[key] = (spec_key, group)
    return group


def forget(namespace: str, name: str) -> None:
    """The group was deleted: drop its compiled rules."""
    _compiled.pop(_key(namespace, name), None)


def compute_membership(
    obj: dict[str, Any], *, nodes: list[str], merged_for: Callable[[str], MergedNodeFeatures]
) -> list[str]:
    from nfd.rules.groups import member_name, node_matches_group

    group = _compile(obj)
    members: list[str] = []
    seen: set[str] = set()
    for node in nodes:
        merged = merged_for(node)
        if not merged.sources:
            continue
        if not node_matches_group(group, merged.features, node_name=node):
            continue
        name = member_name(merged.features) or node
        if name not in seen:
            seen.add(name)
            members.append(name)
    return members


async def write_members(write_api: ApiClient, *, obj: dict[str, Any], members: list[str], namespace: str) -> bool:
    """Put ``members`` in the group's ``status.nodes`` (the status subresource, replaced whole);
    False when they are already there and nothing was written."""
    status_nodes = [{"name": m} for m in members]
    if ((obj.get("status") or {}).get("nodes") or []) == status_nodes:
        return False
    from nfd.k8s.resources import NODEFEATUREGROUPS
    from nfd.k8s.updating import replace

    body = json.loads(json.dumps(obj))
    body.setdefault("status", {})["nodes"] = status_nodes
    name = (obj.get("metadata") or {}).get("name") or ""
    await replace(write_api, NODEFEATUREGROUPS, body=body, name=name, namespace=namespace, subresource="status")
    return True
