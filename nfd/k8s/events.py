"""Kubernetes Events (core/v1) about objects nfd acts on, e.g. labels set or removed on a Node."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from nfd.k8s.client import ApiClient
from nfd.k8s.creating import create
from nfd.k8s.errors import ApiError, ApiUnavailable
from nfd.k8s.lease import micro_time
from nfd.k8s.resources import EVENTS

log = logging.getLogger(__name__)


async def post_event(
    api: ApiClient,
    *,
    namespace: str,
    involved: dict[str, Any],
    reason: str,
    message: str,
    component: str,
    type_: str = "Normal",
) -> None:
    """Best effort: an event that cannot be written is logged, never raised."""
    meta = involved.get("metadata") or {}
    now = micro_time()[:19] + "Z"
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta.get('name', 'obj')}.{uuid.uuid4().hex[:12]}", "namespace": namespace},
        "involvedObject": {
            "apiVersion": involved.get("apiVersion", "v1"),
            "kind": involved.get("kind", ""),
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace") or None,
            "uid": meta.get("uid"),
        },
        "reason": reason,
        "message": message[:1024],
        "type": type_,
        "source": {"component": component},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    try:
        await create(api, EVENTS, body=body, namespace=namespace)
    except (ApiError, ApiUnavailable) as e:
        log.debug("event %s on %s not written: %s", reason, meta.get("name"), e)
