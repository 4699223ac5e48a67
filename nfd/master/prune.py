"""``nfd-master -prune``: remove everything nfd owns from every node, then its annotations."""

from __future__ import annotations

import logging

from nfd.api import NFD_ANNOTATION_NS
from nfd.k8s import errors as kerr
from nfd.k8s.client import ApiClient
from nfd.k8s.fetching import get, list_objects
from nfd.k8s.patching import escape_json_pointer, patch
from nfd.k8s.resources import NODES
from nfd.master.bookkeeping import instance_annotation
from nfd.master.config import MasterConfig
from nfd.master.nodeplan import Desired, NodeState, plan_node_update

log = logging.getLogger("nfd.master")


def prune_annotation_ops(node: NodeState, *, instance: str) -> list[dict[str, object]]:
    prefix = instance_annotation(NFD_ANNOTATION_NS, instance)
    return [
        {"op": "remove", "path": f"/metadata/annotations/{escape_json_pointer(k)}"}
        for k in sorted(node.annotations)
        if k.startswith(prefix)
    ]


async def prune_node(api: ApiClient, name: str, *, instance: str) -> None:
    obj = await get(api, NODES, name=name)
    if obj is None:
        return
    node = NodeState.from_obj(obj)
    for _ in range(4):
        plan = plan_node_update(node, Desired(), instance=instance)
        if plan.noop:
            break
        if plan.status_ops:
            obj = await patch(api, NODES, name=name, body=plan.status_ops, subresource="status")
        elif plan.metadata_ops:
            obj = await patch(api, NODES, name=name, body=plan.metadata_ops)
        else:
            obj = await patch(api, NODES, name=name, body=plan.taints_patch, patch_type="strategic")
        node = NodeState.from_obj(obj)
    ops = prune_annotation_ops(node, instance=instance)
    if ops:
        await patch(api, NODES, name=name, body=ops)


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
