"""``nfd-master -prune``: remove everything nfd owns from every node, then its annotations."""

from __future__ import annotations

import logging

from nfd.api import NFD_ANNOTATION_NS
from nfd.k8s import errors as kerr
from nfd.k8s.client import ApiClient
from nfd.k8s.fetching import get, list_objects
from nfd.k8s.patching import escape_json_pointer, patch
from nfd.k8s.resources import NODES
from nfd.master.config import MasterConfig
from nfd.nodestate.bookkeeping import instance_annotation
from nfd.nodestate.desired import Desired
from nfd.nodestate.nodeplan import NodeState, plan_node_update

log = logging.getLogger("nfd.master")


def prune_annotation_ops(node: NodeState, *, instance: str) -> list[dict[str, object]]:
    prefix = instance_annotation(NFD_ANNOTATION_NS, instance)
    return [
        {"op": "remove", "path": f"/metadata/annotations/{escape_json_pointer(k)}"}
        for k in sorted(node.annotations)
        if k.startswith(prefix)
    ]


async def prune_node(api: ApiClient, name: str, *, instance: str) -> None:
    """Remove what nfd owns from one node, then its annotations. The JSON patches name each key
    they remove, so one that someone else removed after our read fails (422): read the node
    again and plan anew, a few times, then give up with that error."""
    node: NodeState | None = None
    last: kerr.ApiError | None = None
    for _ in range(8):
        if node is None:
            obj = await get(api, NODES, name=name)
            if obj is None:
                return
            node = NodeState.from_obj(obj)
        plan = plan_node_update(node, Desired(), instance=instance)
        try:
            if plan.noop:
                ops = prune_annotation_ops(node, instance=instance)
                if ops:
                    await patch(api, NODES, name=name, body=ops)
                return
            if plan.status_ops:
                obj = await patch(api, NODES, name=name, body=plan.status_ops, subresource="status")
            elif plan.metadata_ops:
                obj = await patch(api, NODES, name=name, body=plan.metadata_ops)
            else:
                obj = await patch(api, NODES, name=name, body=plan.taints_patch, patch_type="strategic")
            node = NodeState.from_obj(obj)
        except (kerr.Invalid, kerr.Conflict) as e:
            log.info("node %s changed while pruning (%s); reading it again", name, e.reason or e.status)
            node, last = None, e
    if last is not None:
        raise last


async def prune(api: ApiClient, *, config: MasterConfig, instance: str) -> int:
    if config.no_publish:
        log.info("skipping pruning of nodes as noPublish config option is set")
        return 0
    nodes, _ = await list_objects(api, NODES, page_size=500)
    failed = 0
    for obj in nodes:
        name = (obj.get("metadata") or {}).get("name") or ""
        log.info("pruning node %s", name)
        try:
            await prune_node(api, name, instance=instance)
        except (kerr.ApiError, kerr.ApiUnavailable) as e:
            log.error("failed to prune node %s: %s", name, e)
            failed += 1
    return 1 if failed else 0
