"""The master's NodeFeature cache entries and the per-node merge (upstream §3.8 steps 1-2).

NodeFeatures are tens of kB each and a cluster has one or more per node, so the informer keeps
them compressed (``compact_nodefeature``) and a node's objects are decoded only while that node
is processed. Changes are detected by a hash of the canonical spec.
"""

from __future__ import annotations

import hashlib
import logging
import zlib
from dataclasses import dataclass, field
from typing import Any

from nfd.api import DEFAULT_LABEL_NS, NODE_NAME_LABEL, WORKER_POD_UID_ANNOTATION
from nfd.api.errors import ValidationError
from nfd.api.features import Features
from nfd.common import jsoncodec
from nfd.rules.engine import add_ns

log = logging.getLogger(__name__)

SPEC_Z = "specZ"
SPEC_HASH = "specHash"


def compact_nodefeature(obj: dict[str, Any]) -> dict[str, Any]:
    """Informer transform: keep identity metadata, compress the spec. Never raises."""
    meta = obj.get("metadata") or {}
    anns = meta.get("annotations") or {}
    slim_meta: dict[str, Any] = {
        k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "labels", "ownerReferences") if k in meta
    }
    if WORKER_POD_UID_ANNOTATION in anns:
        slim_meta["annotations"] = {WORKER_POD_UID_ANNOTATION: anns[WORKER_POD_UID_ANNOTATION]}
    try:
        # The API server returns a stored object's keys in a stable order, so no sort is needed
        # to detect "unchanged"; a re-ordered but equal spec costs one re-evaluation, no write.
        raw = jsoncodec.dumps(obj.get("spec"))
    except (TypeError, ValueError):
        raw = b"null"
    return {
        "metadata": slim_meta,
        SPEC_Z: zlib.compress(raw, 1),
        SPEC_HASH: hashlib.blake2b(raw, digest_size=16).hexdigest(),
    }


def spec_of(entry: dict[str, Any]) -> Any:
    return jsoncodec.loads(zlib.decompress(entry[SPEC_Z]))


def node_name_of(entry: dict[str, Any]) -> str | None:
    """The node a NodeFeature is for: only its node-name label counts (upstream)."""
    return ((entry.get("metadata") or {}).get("labels") or {}).get(NODE_NAME_LABEL) or None


def spec_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return old.get(SPEC_HASH) != new.get(SPEC_HASH)


def publish_metadata_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Owner references or the worker pod UID changed: a new worker published (upstream #2545)."""
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    if om.get("ownerReferences") != nm.get("ownerReferences"):
        return True
    oa = (om.get("annotations") or {}).get(WORKER_POD_UID_ANNOTATION)
    na = (nm.get("annotations") or {}).get(WORKER_POD_UID_ANNOTATION)
    return oa != na


@dataclass(slots=True)
class MergedNodeFeatures:
    features: Features = field(default_factory=Features)
    labels: dict[str, str] = field(default_factory=dict)
    # Any NodeFeature for the node was in the cache (before namespace filtering): upstream's
    # "found in cache", evidence that the node's features are known.
    found: bool = False
    # The objects merged, as namespace/name, for logs.
    sources: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # The node's DRA devices (nfd.dra) as the CEL `devices` variable; their `dra.device`
    # instances are in `features`.
    devices: list[dict[str, Any]] = field(default_factory=list)

    @property
    def has_features(self) -> bool:
        """Upstream HasFeatures: any label or any feature set after merging."""
        return bool(self.labels) or not self.features.is_empty()


def merge_node_features(
    entries: list[dict[str, Any]],
    *,
    node_name: str,
    master_namespace: str,
    namespace_selected: Any = None,
    deny_third_party_labels: bool = False,
    auto_prefix: bool = True,
) -> MergedNodeFeatures:
    """Merge a node's NodeFeature cache entries in upstream's order.

    Objects in the master's namespace first, then by name, then by namespace; later objects win
    for attributes and labels, instances append, flags union. ``namespace_selected(ns) -> bool``
    applies ``restrictions.nodeFeatureNamespaceSelector``. A malformed object is skipped and
    reported in ``errors``; the other objects still count.
    """
    out = MergedNodeFeatures(found=bool(entries))

    def meta(e: dict[str, Any]) -> dict[str, Any]:
        m: dict[str, Any] = e.get("metadata") or {}
        return m

    selected = [e for e in entries if namespace_selected is None or namespace_selected(meta(e).get("namespace", ""))]
    selected.sort(
        key=lambda e: (
            meta(e).get("namespace") != master_namespace,
            meta(e).get("name", ""),
            meta(e).get("namespace", ""),
        )
    )
    for e in selected:
        ns, name = meta(e).get("namespace", ""), meta(e).get("name", "")
        ref = f"{ns}/{name}"
        try:
            spec = spec_of(e)
            if spec is None:
                spec = {}
            if not isinstance(spec, dict):
                raise ValidationError("spec", "must be an object")
            feats = Features.from_json(spec.get("features"), path="spec.features")
            raw_labels = spec.get("labels") or {}
            if not isinstance(raw_labels, dict):
                raise ValidationError("spec.labels", "must be an object")
            labels = {str(k): "" if v is None else str(v) for k, v in raw_labels.items()}
        except (ValidationError, ValueError, zlib.error) as err:
            msg = f"NodeFeature {ref}: {err}; object skipped"
            out.errors.append(msg)
            continue
        third_party = ns != master_namespace or name != node_name
        if deny_third_party_labels and third_party:
            labels = {}
        if auto_prefix:
            labels = add_ns(labels, DEFAULT_LABEL_NS)
        out.features.merge(feats)
        out.labels.update(labels)
        out.sources.append(ref)
    return out
