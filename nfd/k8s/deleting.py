"""Deleting objects, optionally guarded by preconditions."""

from __future__ import annotations

from typing import Any

from nfd.k8s.client import ApiClient
from nfd.k8s.errors import NotFound
from nfd.k8s.resources import Resource


async def delete(
    api: ApiClient,
    res: Resource,
    *,
    name: str,
    namespace: str | None = None,
    uid: str | None = None,
    resource_version: str | None = None,
) -> bool:
    """Delete; False when already gone. With `uid`/`resource_version`, the server refuses (409)
    to delete an object that was replaced or changed since we decided to delete it."""
    body: dict[str, Any] | None = None
    if uid or resource_version:
        pre: dict[str, str] = {}
        if uid:
            pre["uid"] = uid
        if resource_version:
            pre["resourceVersion"] = resource_version
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": pre}
    try:
        await api.request("DELETE", res.path(namespace=namespace, name=name), body=body, verb="DELETE")
        return True
    except NotFound:
        return False
