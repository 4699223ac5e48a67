"""Patching objects: JSON patch, merge patch, strategic merge patch and server-side apply.

A 404 during a patch means the object was deleted after we decided to patch it: the caller
should drop the work item, not retry. A 409 on apply means another field manager owns a field
(use force=True where we are the rightful owner). A JSON patch with a `test` op that fails
answers 422 (Invalid): re-read and recompute.
"""

from __future__ import annotations

from typing import Any

from nfd.common import jsoncodec
from nfd.k8s.client import PATCH_TYPES, ApiClient
from nfd.k8s.resources import Resource


async def patch(
    api: ApiClient,
    res: Resource,
    *,
    name: str,
    body: Any,
    namespace: str | None = None,
    patch_type: str = "json",
    subresource: str | None = None,
    field_manager: str | None = None,
    force: bool = False,
    dry_run: bool = False,
) -> dict[str, Any]:
    ctype = PATCH_TYPES[patch_type]
    params: dict[str, Any] = {"fieldManager": field_manager, "dryRun": "All" if dry_run else None}
    if patch_type == "apply":
        params["force"] = force or None
        if not field_manager:
            raise ValueError("server-side apply needs a field_manager")
    payload = jsoncodec.dumps(body)
    obj: dict[str, Any] = await api.request(
        "PATCH",
        res.path(namespace=namespace, name=name, subresource=subresource),
        params=params,
        body=payload,
        content_type=ctype,
        verb="PATCH",
    )
    return obj


def escape_json_pointer(key: str) -> str:
    """RFC 6901: label keys contain '/', which becomes '~1' ('~' first becomes '~0')."""
    return key.replace("~", "~0").replace("/", "~1")
