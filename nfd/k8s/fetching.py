"""Reading objects: single GETs and paginated LISTs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from nfd.k8s.client import ApiClient
from nfd.k8s.errors import ApiUnavailable, NotFound, ServerError
from nfd.k8s.resources import Resource

METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"


async def get(
    api: ApiClient, res: Resource, *, name: str, namespace: str | None = None, subresource: str | None = None
) -> dict[str, Any] | None:
    """The object, or None when it does not exist (404 is an answer here, not an error)."""
    try:
        obj: dict[str, Any] = await api.request(
            "GET", res.path(namespace=namespace, name=name, subresource=subresource), verb="GET"
        )
        return obj
    except NotFound:
        return None


async def list_objects(
    api: ApiClient,
    res: Resource,
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    page_size: int = 500,
    metadata_only: bool = False,
    transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], str]:
    """All objects, following `continue` tokens, and the list's resourceVersion.

    ``transform`` is applied to each item as its page arrives, so a caller that keeps only a
    slim form of large objects never holds the whole list at full size.

    Either the whole list is returned or an error is raised: callers never see a partial list,
    so "absent from the list" can be trusted as evidence that an object does not exist.
    """
    items: list[dict[str, Any]] = []
    cont: str | None = None
    rv = ""
    while True:
        params: dict[str, Any] = {
            "limit": page_size if page_size > 0 else None,
            "continue": cont,
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
        }
        page = await _page(
            api, res.path(namespace=namespace), params, METADATA_LIST if metadata_only else "application/json"
        )
        page_items = page.get("items") or []
        if transform is not None:
            page_items = [transform(o) for o in page_items]
        items.extend(page_items)
        meta = page.get("metadata") or {}
        rv = meta.get("resourceVersion", rv)
        cont = meta.get("continue")
        if not cont:
            return items, rv


#: A failed continuation page is retried this often before the whole list fails.
PAGE_RETRIES = 5


async def _page(api: ApiClient, path: str, params: dict[str, Any], accept: str) -> Any:
    """One list page. A continuation page that fails with a server-side error (e.g. 504 "Too
    large resource version" while the watch cache catches up after mass creation) is retried
    with the same token, so thousands of objects already read are not listed again."""
    delay = 0.2
    for attempt in range(PAGE_RETRIES + 1):
        try:
            return await api.request("GET", path, params=params, accept=accept, verb="LIST")
        except (ServerError, ApiUnavailable):
            if not params.get("continue") or attempt == PAGE_RETRIES:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 3.0)
    raise AssertionError("unreachable")
