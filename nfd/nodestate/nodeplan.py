"""What to write to a Node so it carries exactly the wanted nfd state: a pure function.

``plan_node_update(node, desired, ...)`` returns the patches (or none at all when the node is
already right). Ownership is read from and written to the bookkeeping annotations only
(nfd.nodestate.bookkeeping), so stale items are removed whichever master (upstream's or ours) put
them there, and nothing nfd does not own is ever removed.

The requests, in upstream's order (planned as JSON patch operations; nfd-master sends the map
changes as strategic merge patches, ``ops_to_strategic``):
1. ``status`` subresource: extended resources in capacity/allocatable;
2. labels and annotations (including the bookkeeping annotations);
3. when the taint list changes, instead of 2: one patch of ``spec.taints``, the ``taints``
   annotation and the label/annotation changes, guarded by the node's resourceVersion (upstream
   sends taints and their annotation in two more requests; one request cannot leave a taint
   unrecorded, and saves two requests).

Deliberate differences from upstream (docs/compatibility.md, "nfd-master"):
- ``allowOverwrite: false`` means "do not take over keys nfd does not own": such keys are left
  alone and not recorded as owned; keys nfd owns are always kept up to date (upstream inverts
  this and freezes its own labels).
- In skip-removal mode the ownership annotations keep the old owned names that are still on the
  node, so a later normal pass can still remove them (upstream forgets them).
- Extended resource values are compared as quantities, so ``1k`` on the node equals ``1000``.
"""

from __future__ import annotations

import functools
import logging
import sys
from dataclasses import dataclass, field
from typing import Any

from nfd.api.quantity import same_quantity
from nfd.nodestate import bookkeeping as bk
from nfd.nodestate.desired import Desired

log = logging.getLogger(__name__)


def _ptr(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


@dataclass(slots=True)
class NodeState:
    """The parts of a Node nfd-master reads; everything else is dropped on ingest."""

    name: str
    resource_version: str = ""
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, Any]] = field(default_factory=list)
    capacity: dict[str, str] | None = None
    allocatable: dict[str, str] | None = None

    @classmethod
    def from_obj(cls, obj: dict[str, Any]) -> NodeState:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        cap = status.get("capacity")
        alloc = status.get("allocatable")
        return cls(
            name=meta.get("name") or "",
            resource_version=meta.get("resourceVersion") or "",
            uid=meta.get("uid") or "",
            labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}),
            taints=[dict(t) for t in spec.get("taints") or []],
            capacity=dict(cap) if isinstance(cap, dict) else None,
            allocatable=dict(alloc) if isinstance(alloc, dict) else None,
        )


def _shared_strings(m: Any) -> Any:
    """A string map whose keys and values are the interpreter's one copy of each string: the
    nodes of a fleet carry the same label names, values and bookkeeping annotations (a
    ``feature-labels`` list is ~2 kB), and the Node cache then holds each once."""
    if not isinstance(m, dict):
        return m
    intern = sys.intern
    return {intern(k) if type(k) is str else k: intern(v) if type(v) is str else v for k, v in m.items()}


def slim_node(obj: dict[str, Any]) -> dict[str, Any]:
    """Informer transform: keep only what NodeState needs (nodes carry images, conditions, ...)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    slim_meta = {k: meta[k] for k in ("name", "uid", "resourceVersion") if k in meta}
    for k in ("labels", "annotations"):
        if k in meta:
            slim_meta[k] = _shared_strings(meta[k])
    out: dict[str, Any] = {"metadata": slim_meta}
    if spec.get("taints"):
        out["spec"] = {"taints": [_shared_strings(t) for t in spec["taints"]]}
    st = {k: _shared_strings(status[k]) for k in ("capacity", "allocatable") if k in status}
    if st:
        out["status"] = st
    return out


_CHANGE_KINDS = ("labels_added", "labels_updated", "labels_removed", "annotations_added", "annotations_updated",
                 "annotations_removed", "resources_set", "resources_removed", "taints_set", "taints_removed")


@dataclass(slots=True)
class Changes:
    """Human-readable summary of a plan, for logs, events and tests."""

    labels_added: list[str] = field(default_factory=list)
    labels_updated: list[str] = field(default_factory=list)
    labels_removed: list[str] = field(default_factory=list)
    not_taken_over: list[str] = field(default_factory=list)
    annotations_added: list[str] = field(default_factory=list)
    annotations_updated: list[str] = field(default_factory=list)
    annotations_removed: list[str] = field(default_factory=list)
    resources_set: list[str] = field(default_factory=list)
    resources_removed: list[str] = field(default_factory=list)
    taints_set: list[str] = field(default_factory=list)
    taints_removed: list[str] = field(default_factory=list)

    def removed_anything(self) -> bool:
        return bool(self.labels_removed or self.annotations_removed or self.resources_removed or self.taints_removed)

    def counts(self) -> dict[str, int]:
        """The non-zero counts, keyed as the "node updated" log line writes them (labelsAdded=2)."""
        out = {}
        for name in _CHANGE_KINDS:
            n = len(getattr(self, name))
            if n:
                head, *rest = name.split("_")
                out[head + "".join(w.capitalize() for w in rest)] = n
        return out

    def describe(self) -> str:
        parts = []
        for name in _CHANGE_KINDS:
            v = sorted(getattr(self, name))
            if v:
                # Removals are listed in full; additions and updates are capped for readable logs.
                shown = v if name.endswith("removed") else v[:8]
                more = f" (+{len(v) - len(shown)} more)" if len(v) > len(shown) else ""
                parts.append(f"{name.replace('_', ' ')}: {', '.join(shown)}{more}")
        return "; ".join(parts)


@dataclass(slots=True)
class NodePlan:
    status_ops: list[dict[str, Any]] = field(default_factory=list)
    metadata_ops: list[dict[str, Any]] = field(default_factory=list)
    # When the taint list changes: one resourceVersion-guarded merge patch with the taints, their
    # annotation and all label/annotation changes (metadata_ops is then empty).
    taints_patch: dict[str, Any] | None = None
    changes: Changes = field(default_factory=Changes)

    @property
    def noop(self) -> bool:
        return not (self.status_ops or self.metadata_ops or self.taints_patch)


def _map_ops(
    *,
    path: str,
    current: dict[str, str],
    want: dict[str, str],
    remove: set[str],
    resource_version: str,
) -> list[dict[str, Any]]:
    """JSON patch ops turning ``current`` into ``current - remove + want``."""
    ops: list[dict[str, Any]] = []
    for key in sorted(remove):
        if key in current and key not in want:
            ops.append({"op": "remove", "path": f"{path}/{_ptr(key)}"})
    adds = {k: v for k, v in want.items() if k not in current}
    if adds and not current:
        # The map is absent from the object (the API omits empty maps): create it whole, guarded
        # so a stale cache cannot replace a map that has appeared meanwhile.
        ops.append({"op": "test", "path": "/metadata/resourceVersion", "value": resource_version})
        ops.append({"op": "add", "path": path, "value": dict(sorted(adds.items()))})
    else:
        for key in sorted(adds):
            ops.append({"op": "add", "path": f"{path}/{_ptr(key)}", "value": adds[key]})
    for key in sorted(want):
        if key in current and current[key] != want[key]:
            ops.append({"op": "replace", "path": f"{path}/{_ptr(key)}", "value": want[key]})
    return ops


def _owned_items(
    *,
    current: dict[str, str],
    desired: dict[str, str],
    old_owned: set[str],
    allow_overwrite: bool,
    not_taken: list[str],
) -> dict[str, str]:
    """The desired items nfd may write: all, except unowned pre-existing keys without allowOverwrite."""
    out: dict[str, str] = {}
    for k, v in desired.items():
        if k in current and k not in old_owned and not allow_overwrite:
            not_taken.append(k)
            continue
        out[k] = v
    return out


def plan_node_update(
    node: NodeState,
    desired: Desired,
    *,
    skip_removal: bool = False,
    allow_overwrite: bool = True,
    instance: str = "",
) -> NodePlan:
    plan = NodePlan()
    ch = plan.changes
    ann = node.annotations
    a_labels = bk.instance_annotation(bk.FEATURE_LABELS, instance)
    a_annots = bk.instance_annotation(bk.FEATURE_ANNOTATIONS, instance)
    a_ers = bk.instance_annotation(bk.EXTENDED_RESOURCES, instance)
    a_taints = bk.TAINTS

    labels, kept_labels, label_ops = _plan_labels(
        node, desired, old_labels=set(bk.decode_names(ann.get(a_labels))), skip_removal=skip_removal,
        allow_overwrite=allow_overwrite, ch=ch,
    )

    # -- feature annotations --------------------------------------------------------------
    old_annots = set(bk.decode_names(ann.get(a_annots)))
    feat_annots = _owned_items(
        current=ann,
        desired=desired.annotations,
        old_owned=old_annots,
        allow_overwrite=allow_overwrite,
        not_taken=ch.not_taken_over,
    )
    kept_annots = {k for k in old_annots if k in ann and k not in feat_annots} if skip_removal else set()

    plan.status_ops, kept_ers = _plan_extended_resources(
        node, desired, old_ers=set(bk.decode_names(ann.get(a_ers))), skip_removal=skip_removal, ch=ch,
    )
    new_list, changed, taints_value = _plan_taints(node, desired, skip_removal=skip_removal, ch=ch)

    # -- bookkeeping + annotation patch -----------------------------------------------------
    want_annots = dict(feat_annots)
    book = {
        a_labels: bk.encode_names(set(labels) | kept_labels),
        a_annots: bk.encode_names(set(feat_annots) | kept_annots),
        a_ers: bk.encode_names(set(desired.extended_resources) | kept_ers),
    }
    for k, v in book.items():
        if v:
            want_annots[k] = v
    ann_remove = set() if skip_removal else set(old_annots)
    # Bookkeeping annotations are always ours: empty ones go, even in skip-removal mode.
    ann_remove |= {k for k, v in book.items() if not v}
    if not skip_removal:
        ann_remove |= {
            bk.instance_annotation(bk.MASTER_VERSION, instance),
            bk.instance_annotation(bk.WORKER_VERSION, instance),
        }
    if taints_value and not changed:
        want_annots[a_taints] = taints_value
    elif not skip_removal and not changed:
        ann_remove.add(a_taints)
    ann_ops = _map_ops(
        path="/metadata/annotations",
        current=ann,
        want=want_annots,
        remove=ann_remove,
        resource_version=node.resource_version,
    )
    for op in ann_ops:
        key = _key_of(op)
        if key is None or key in book or key == a_taints:
            continue
        if op["op"] == "add":
            ch.annotations_added.append(key)
        elif op["op"] == "replace":
            ch.annotations_updated.append(key)
        elif op["op"] == "remove" and key in old_annots:
            ch.annotations_removed.append(key)
    if changed:
        # One request, guarded by the resourceVersion: taints, their annotation, labels and
        # annotations together (so a taint is never on the node without its record).
        anns_patch = _ops_to_merge(ann_ops)
        anns_patch[a_taints] = taints_value or None
        meta: dict[str, Any] = {"resourceVersion": node.resource_version, "annotations": anns_patch}
        labels_patch = _ops_to_merge(label_ops)
        if labels_patch:
            meta["labels"] = labels_patch
        plan.taints_patch = {"metadata": meta, "spec": {"taints": new_list}}
        return plan
    if label_ops and ann_ops and label_ops[0]["op"] == "test" and ann_ops[0]["op"] == "test":
        ann_ops = ann_ops[1:]
    plan.metadata_ops = label_ops + ann_ops
    return plan


def _plan_labels(
    node: NodeState, desired: Desired, *, old_labels: set[str], skip_removal: bool, allow_overwrite: bool,
    ch: Changes,
) -> tuple[dict[str, str], set[str], list[dict[str, Any]]]:
    """The labels nfd writes, the owned ones kept on the node in skip-removal mode, and the
    JSON patch ops of the label map (recorded in ``ch``)."""
    labels = _owned_items(
        current=node.labels,
        desired=desired.labels,
        old_owned=old_labels,
        allow_overwrite=allow_overwrite,
        not_taken=ch.not_taken_over,
    )
    label_remove = set() if skip_removal else old_labels
    kept_labels = {k for k in old_labels if k in node.labels and k not in labels} if skip_removal else set()
    label_ops = _map_ops(
        path="/metadata/labels",
        current=node.labels,
        want=labels,
        remove=label_remove,
        resource_version=node.resource_version,
    )
    for op in label_ops:
        key = _key_of(op)
        if op["op"] == "add":
            if key is None:
                ch.labels_added.extend(op["value"])
            else:
                ch.labels_added.append(key)
        elif op["op"] == "replace" and key:
            ch.labels_updated.append(key)
        elif op["op"] == "remove" and key:
            ch.labels_removed.append(key)
    return labels, kept_labels, label_ops


def _plan_extended_resources(
    node: NodeState, desired: Desired, *, old_ers: set[str], skip_removal: bool, ch: Changes,
) -> tuple[list[dict[str, Any]], set[str]]:
    """The ``status`` subresource ops for the extended resources in capacity/allocatable, and
    the owned ones kept in skip-removal mode (recorded in ``ch``)."""
    cap = node.capacity or {}
    alloc = node.allocatable or {}
    st_ops: list[dict[str, Any]] = []
    if not skip_removal:
        for r in sorted(old_ers):
            if r in cap and r not in desired.extended_resources:
                st_ops.append({"op": "remove", "path": f"/status/capacity/{_ptr(r)}"})
                if r in alloc:
                    st_ops.append({"op": "remove", "path": f"/status/allocatable/{_ptr(r)}"})
                ch.resources_removed.append(r)
    kept_ers = {r for r in old_ers if r in cap and r not in desired.extended_resources} if skip_removal else set()
    new_cap: dict[str, str] = {}
    new_alloc: dict[str, str] = {}
    for r in sorted(desired.extended_resources):
        v = desired.extended_resources[r]
        if r in cap:
            if not same_quantity(cap[r], v):
                st_ops.append({"op": "replace", "path": f"/status/capacity/{_ptr(r)}", "value": v})
                verb = "replace" if r in alloc else "add"
                if node.allocatable is not None:
                    st_ops.append({"op": verb, "path": f"/status/allocatable/{_ptr(r)}", "value": v})
                else:
                    new_alloc[r] = v
                ch.resources_set.append(r)
            elif r not in alloc:
                # No kubelet copied it yet (or none runs): make it schedulable as the kubelet would.
                if node.allocatable is not None:
                    st_ops.append({"op": "add", "path": f"/status/allocatable/{_ptr(r)}", "value": v})
                else:
                    new_alloc[r] = v
        else:
            if node.capacity is not None:
                st_ops.append({"op": "add", "path": f"/status/capacity/{_ptr(r)}", "value": v})
            else:
                new_cap[r] = v
            if node.allocatable is not None:
                st_ops.append({"op": "add", "path": f"/status/allocatable/{_ptr(r)}", "value": v})
            else:
                new_alloc[r] = v
            ch.resources_set.append(r)
    if new_cap or new_alloc:
        guard: list[dict[str, Any]] = [{"op": "test", "path": "/metadata/resourceVersion", "value": node.resource_version}]
        if new_cap:
            guard.append({"op": "add", "path": "/status/capacity", "value": new_cap})
        if new_alloc:
            guard.append({"op": "add", "path": "/status/allocatable", "value": new_alloc})
        st_ops = guard + st_ops
    return st_ops, kept_ers


def _plan_taints(
    node: NodeState, desired: Desired, *, skip_removal: bool, ch: Changes,
) -> tuple[list[dict[str, Any]], bool, str]:
    """The node's new taint list, whether it changed, and the value of the ``taints``
    bookkeeping annotation (recorded in ``ch``)."""
    a_taints = bk.TAINTS
    try:
        old_taints = bk.decode_taints(node.annotations.get(a_taints))
    except bk.TaintSpecError as e:
        log.warning("node %s: ignoring unparsable %s annotation: %s", node.name, a_taints, e)
        old_taints = []
    want_ids = {(t.key, t.effect) for t in desired.taints}
    new_list = [dict(t) for t in node.taints]
    changed = False
    if not skip_removal:
        for t in old_taints:
            if (t.key, t.effect) in want_ids:
                continue
            before = len(new_list)
            new_list = [x for x in new_list if not (x.get("key") == t.key and x.get("effect") == t.effect)]
            if len(new_list) != before:
                changed = True
                ch.taints_removed.append(t.to_string())
    for t in desired.taints:
        idx = next(
            (i for i, x in enumerate(new_list) if x.get("key") == t.key and x.get("effect") == t.effect), None
        )
        if idx is None:
            new_list.append(t.to_json())
            changed = True
            ch.taints_set.append(t.to_string())
        elif (new_list[idx].get("value") or "") != t.value:
            new_list[idx] = t.to_json()
            changed = True
            ch.taints_set.append(t.to_string())
    if skip_removal:
        strs: list[str] = []
        for s in [t.to_string() for t in old_taints] + [t.to_string() for t in desired.taints]:
            if s not in strs:
                strs.append(s)
        taints_value = ",".join(strs)
    else:
        taints_value = bk.encode_taints(desired.taints)
    return new_list, changed, taints_value


def _ops_to_merge(ops: list[dict[str, Any]]) -> dict[str, Any]:
    """The same map changes as a JSON merge patch fragment (null removes)."""
    out: dict[str, Any] = {}
    for op in ops:
        key = _key_of(op)
        if op["op"] == "test":
            continue
        if key is None:
            out.update(op["value"])
        elif op["op"] == "remove":
            out[key] = None
        else:
            out[key] = op["value"]
    return out


def ops_to_strategic(ops: list[dict[str, Any]]) -> dict[str, Any]:
    """A plan's map operations (``/metadata/labels/<key>``, ``/status/capacity``...) as one strategic
    merge patch body, each map's changes as ``_ops_to_merge`` gives them; ``test`` guards are
    dropped (a merge needs none: see NodeUpdater._execute in nfd/master/nodeupdater.py)."""
    body: dict[str, Any] = {}
    for op in ops:
        if op["op"] == "test":
            continue
        _, section, field = op["path"].split("/", 3)[:3]
        body.setdefault(section, {}).setdefault(field, []).append(op)
    return {section: {field: _ops_to_merge(g) for field, g in maps.items()} for section, maps in body.items()}


def _key_of(op: dict[str, Any]) -> str | None:
    return _key_of_path(op["path"])


@functools.lru_cache(maxsize=1 << 14)
def _key_of_path(path: str) -> str | None:
    """The map key a ``/section/map/<key>`` JSON pointer names (cached: every node repeats the
    same few hundred label and annotation paths)."""
    parts = path.split("/")
    if len(parts) < 4:
        return None
    return parts[3].replace("~1", "/").replace("~0", "~")


def prune_desired() -> Desired:
    """``-prune``: want nothing, so every owned item and bookkeeping annotation goes."""
    return Desired()
