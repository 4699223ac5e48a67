"""NodeFeature objects: kept compact, compared, and one node's merged as nfd-master merges them
(upstream §3.8 steps 1-2).

The one merge for every caller: nfd-master and masterless mode (over their informer cache
entries), ``nfd rules dryrun`` (over a file's objects), ``kubectl nfd test`` (over the objects
the API lists) and its fleet report, so that a rule tried outside the cluster sees the features
the master would.

NodeFeatures are tens of kB each and a cluster has one or more per node, so the informer keeps
them compressed (``compact_nodefeature``) and a node's objects are decoded only while that node
is merged; ``merge_node_features`` takes such entries or plain objects alike. Changes are
detected by a hash of the canonical spec (``spec_changed``); ``publish_metadata_changed`` tells
a new worker's publication.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from nfd.api import DEFAULT_LABEL_NS, NODE_NAME_LABEL, WORKER_POD_UID_ANNOTATION
from nfd.api.errors import ValidationError
from nfd.api.features import Features
from nfd.api.nodefeature import parse_spec
from nfd.common import jsoncodec
from nfd.rules.engine import add_ns

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
    """The spec of a compacted entry (decompressed) or of a plain object (as it is)."""
    if SPEC_Z in entry:
        return jsoncodec.loads(zlib.decompress(entry[SPEC_Z]))
    return entry.get("spec")


def node_name_of(entry: dict[str, Any]) -> str | None:
    """The node a NodeFeature is for: only its node-name label counts (upstream)."""
    return ((entry.get("metadata") or {}).get("labels") or {}).get(NODE_NAME_LABEL) or None


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


def _ns_name(entry: dict[str, Any]) -> tuple[str, str]:
    meta = entry.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def merge_node_features(
    entries: Iterable[dict[str, Any]],
    *,
    node_name: str,
    master_namespace: str,
    namespace_selected: Callable[[str], bool] | None = None,
    deny_third_party_labels: bool = False,
    auto_prefix: bool = True,
) -> MergedNodeFeatures:
    """Merge a node's NodeFeatures (compacted cache entries or plain objects) in upstream's order.

    Objects in the master's namespace first, then by name, then by namespace; later objects win
    for attributes and labels, instances append, flags union. Each object's labels get the
    default namespace (``auto_prefix``: off under DisableAutoPrefix), and are dropped for a
    third-party object (namespace != master namespace or name != node name) when
    ``deny_third_party_labels`` (``restrictions.denyNodeFeatureLabels``); its features still
    merge. ``namespace_selected(ns) -> bool`` applies ``restrictions.nodeFeatureNamespaceSelector``.
    A malformed object is skipped and reported in ``errors``; the other objects still count.
    The inputs are not modified.
    """
    entries = list(entries)
    out = MergedNodeFeatures(found=bool(entries))
    keyed = [(_ns_name(e), e) for e in entries]
    if namespace_selected is not None:
        keyed = [k for k in keyed if namespace_selected(k[0][0])]
    keyed.sort(key=lambda k: (k[0][0] != master_namespace, k[0][1], k[0][0]))
    for (ns, name), e in keyed:
        ref = f"{ns}/{name}"
        try:
            feats, labels = parse_spec(spec_of(e))
        except (ValidationError, ValueError, zlib.error) as err:
            out.errors.append(f"NodeFeature {ref}: {err}; object skipped")
            continue
        if deny_third_party_labels and (ns != master_namespace or name != node_name):
            labels = {}
        if auto_prefix:
            labels = add_ns(labels, DEFAULT_LABEL_NS)
        out.features.merge(feats)
        out.labels.update(labels)
        out.sources.append(ref)
    return out


def spec_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether two compacted entries hold different specs."""
    return old.get(SPEC_HASH) != new.get(SPEC_HASH)


def publish_metadata_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Owner references or the worker pod UID changed: a new worker published (upstream #2545)."""
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    if om.get("ownerReferences") != nm.get("ownerReferences"):
        return True
    oa = (om.get("annotations") or {}).get(WORKER_POD_UID_ANNOTATION)
    na = (nm.get("annotations") or {}).get(WORKER_POD_UID_ANNOTATION)
    return oa != na
