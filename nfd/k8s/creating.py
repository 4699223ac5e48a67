"""Creating objects."""

from __future__ import annotations

from typing import Any

from nfd.k8s.client import ApiClient
from nfd.k8s.resources import Resource


async def create(
    api: ApiClient, res: Resource, *, body: dict[str, Any], namespace: str | None = None, dry_run: bool = False
) -> dict[str, Any]:
    """Create; raises AlreadyExists when another writer won the race."""
    obj: dict[str, Any] = await api.request(
        "POST",
        res.path(namespace=namespace),
        body=body,
        params={"dryRun": "All" if dry_run else None},
        verb="CREATE",
    )
    return obj
