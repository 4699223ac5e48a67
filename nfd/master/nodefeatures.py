"""The master's informer-side view of NodeFeatures: which changes need the node processed again.

The cache entries themselves and the per-node merge are shared with the CLIs and masterless
mode and live in ``nfd.rules.nodefeatures``.
"""

from __future__ import annotations

from typing import Any

from nfd.api import WORKER_POD_UID_ANNOTATION
from nfd.rules.nodefeatures import SPEC_HASH


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
