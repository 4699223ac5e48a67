"""Replacing objects (PUT). A Conflict means our resourceVersion is stale: re-read and retry."""

from __future__ import annotations

from typing import Any

from nfd.k8s.client import ApiClient
from nfd.k8s.creating import create
from nfd.k8s.errors import Conflict, NotFound
from nfd.k8s.fetching import get
from nfd.k8s.resources import Resource


async def replace(
    api: ApiClient,
    res: Resource,
    *,
    body: dict[str, Any],
    name: str,
    namespace: str | None = None,
    subresource: str | None = None,
) -> dict[str, Any]:
    obj: dict[str, Any] = await api.request(
        "PUT", res.path(namespace=namespace, name=name, subresource=subresource), body=body, verb="UPDATE"
    )
    return obj


async def create_or_replace(
    api: ApiClient,
    res: Resource,
    *,
    name: str,
    desired: dict[str, Any],
    namespace: str | None = None,
    is_current: Any = None,
    attempts: int = 5,
) -> dict[str, Any] | None:
    """Make the server's object ``desired`` with get, then create or update (PUT with the read
    resourceVersion): for writers whose RBAC grants no patch. Metadata the server or someone
    else keeps (labels, annotations, uid, resourceVersion) is carried over; every other
    top-level field is ``desired``'s. ``is_current(obj)`` true: nothing is written, None is
    returned. A conflict (someone wrote between our read and our write) or a lost create race
    re-reads and retries, ``attempts`` times at most; then the Conflict is raised."""
    for attempt in range(attempts):
        current = await get(api, res, name=name, namespace=namespace)
        if current is not None and is_current is not None and is_current(current):
            return None
        try:
            if current is None:
                return await create(api, res, body=desired, namespace=namespace)  # NotFound: no CRD
            try:
                return await replace(api, res, body=_over(desired, current), name=name, namespace=namespace)
            except NotFound:  # deleted between our read and our PUT: create it on the next try
                if attempt == attempts - 1:
                    raise
        except Conflict:  # AlreadyExists included
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def _over(desired: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in (current.get("metadata") or {}).items() if k != "managedFields"}
    meta.update(desired.get("metadata") or {})
    return {**desired, "metadata": meta}
