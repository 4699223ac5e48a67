"""nfd-master's NodeFeatureGroup pass (gate NodeFeatureGroupAPI): each group's members computed
(nfd.nodestate.groups) and its status written.

Groups in every namespace are processed (upstream: only the master's, #2558); the queue holds
``namespace/name``. ``spec.materializePolicy`` (proposed upstream in #2548) picks what the status
holds: ``Full`` (default) lists the members in ``status.nodes``, ``CountOnly`` writes only
``status.nodeCount``; both write ``status.nodeCount`` (#2550's name). A ``Full`` status that
would not fit etcd's object size limit is not written: one log line, the last status stays.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from nfd.k8s import errors as kerr
from nfd.k8s.resources import NODEFEATUREGROUPS
from nfd.k8s.updating import replace
from nfd.nodestate.groups import (
    COUNT_ONLY,
    POLICIES,
    desired_status,
    group_members,
    policy_of,
    status_current,
)
from nfd.nodestate.nodefeatures import MergedNodeFeatures
from nfd.rules.engine import compile_group_rules

if TYPE_CHECKING:
    from nfd.k8s.client import ApiClient
    from nfd.k8s.watching import Informer
    from nfd.master.metrics import MasterMetrics

log = logging.getLogger(__name__)

# etcd's default --max-request-bytes is 1.5 MiB per write; keep 64 KiB of it for the key, the
# request framing and the error of our estimate.
ETCD_REQUEST_LIMIT = 3 * 1024 * 1024 // 2
STATUS_SIZE_LIMIT = ETCD_REQUEST_LIMIT - 64 * 1024

# "namespace/name" -> (canonical spec, compiled rules) of each group seen; a deleted group's
# entry goes with it (forget), and the whole map is bounded in case deletes are missed.
_compiled: dict[str, tuple[str, Any]] = {}
COMPILED_MAX = 1024
# Groups refused (policy or size) since their last write: logged once, until that changes.
_refused: dict[str, str] = {}
# The status each group was last written with: the echo of that write is no reason to recompute;
# any other status change (someone cleared or overwrote it) is, and the status is written again.
_written: dict[str, dict[str, Any]] = {}


def group_key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def _compile(obj: dict[str, Any]) -> Any:
    key = group_key(obj)
    spec_key = json.dumps(obj.get("spec"), sort_keys=True)
    hit = _compiled.get(key)
    if hit is not None and hit[0] == spec_key:
        return hit[1]
    group = compile_group_rules(obj)
    if key not in _compiled and len(_compiled) >= COMPILED_MAX:
        _compiled.clear()
    _compiled[key] = (spec_key, group)
    return group


def compute_membership(
    obj: dict[str, Any], *, nodes: list[str], merged_for: Callable[[str], MergedNodeFeatures]
) -> list[str]:
    return group_members(_compile(obj), nodes=nodes, merged_for=merged_for)


def estimated_size(body: dict[str, Any]) -> int:
    """Bytes the object takes in etcd after ``body`` is written, without managedFields: the API
    server stores an object without them when they alone push it past etcd's limit (kubernetes
    #87508; a status list costs as much again there, one entry per node)."""
    return len(json.dumps(body, separators=(",", ":")))


def _refuse(key: str, why: str, message: str) -> None:
    if _refused.get(key) != why:
        _refused[key] = why
        log.error("NodeFeatureGroup %s: %s", key, message)


def forget(key: str) -> None:
    """The group ``namespace/name`` was deleted: drop its compiled rules and refusal."""
    _compiled.pop(key, None)
    _refused.pop(key, None)
    _written.pop(key, None)


def status_overwritten(obj: dict[str, Any], old: dict[str, Any]) -> bool:
    """Whether an update of the group changed its status to something this master did not write."""
    if (obj.get("status") or {}) == (old.get("status") or {}):
        return False
    ours = _written.get(group_key(obj))
    return ours is None or not status_current(obj, ours)


async def write_status(
    write_api: ApiClient, *, obj: dict[str, Any], members: list[str], limit: int = STATUS_SIZE_LIMIT
) -> bool:
    """Write the group's status (the status subresource, replaced whole) as its
    materializePolicy says; False when nothing was written (already current, or refused)."""
    key = group_key(obj)
    policy = policy_of(obj)
    if policy not in POLICIES:
        _refuse(key, f"policy {policy}", f"spec.materializePolicy {policy!r} is not supported "
                f"(one of {', '.join(POLICIES)}); status left as it was")
        return False
    want = desired_status(policy, members)
    if status_current(obj, want):
        _refused.pop(key, None)
        return False
    body = json.loads(json.dumps(obj))
    body.setdefault("metadata", {}).pop("managedFields", None)  # the server keeps its own
    body.setdefault("status", {}).update(want)
    size = estimated_size(body)
    too_large = (f"status.nodes of {len(members)} nodes would make the object about {size} bytes, "
                 f"over the {limit} byte limit (etcd's request size limit); status left as it was "
                 f"(spec.materializePolicy: {COUNT_ONLY} publishes the count only)")
    if size > limit:
        _refuse(key, "size", too_large)
        return False
    meta = obj.get("metadata") or {}
    try:
        await replace(write_api, NODEFEATUREGROUPS, body=body, name=meta.get("name") or "",
                      namespace=meta.get("namespace") or "", subresource="status")
    except kerr.ApiError as e:
        # 413 from the API server, "request is too large" from etcd: retrying cannot help
        if e.status == 413 or "too large" in str(e).lower():
            _refuse(key, "size", too_large.replace(f"about {size} bytes", f"too large ({e})"))
            return False
        raise
    _refused.pop(key, None)
    if key not in _written and len(_written) >= COMPILED_MAX:
        _written.clear()
    _written[key] = want
    return True


async def process_group(
    key: str,
    *,
    groups: Informer,
    node_names: Callable[[], Awaitable[list[str]]],
    merged_for: Callable[[str], MergedNodeFeatures],
    write_api: ApiClient,
    metrics: MasterMetrics,
) -> None:
    """Recompute one group (``namespace/name``, read from the ``groups`` cache) over every
    node (``node_names()``, each node's features by ``merged_for``) and write its status in its
    own namespace."""
    metrics.nfg_update_requests.inc()
    namespace, _, name = key.partition("/")
    obj = groups.get(name, namespace)
    if obj is None:
        forget(key)
        return
    nodes = await node_names()
    members = compute_membership(obj, nodes=nodes, merged_for=merged_for)
    if await write_status(write_api, obj=obj, members=members):
        log.info("NodeFeatureGroup %s: %d member nodes (%s)", key, len(members), policy_of(obj))
