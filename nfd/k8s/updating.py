"""Replacing objects (PUT). A Conflict means our resourceVersion is stale: re-read and retry."""

from __future__ import annotations

from typing import Any

from nfd.k8s.client import ApiClient
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
