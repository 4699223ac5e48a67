"""Reading objects: single GETs and paginated LISTs."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from nfd.common import jsoncodec
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
    transform: Callable[[dict[str, Any]], Any] | None = None,
) -> tuple[list[dict[str, Any]], str]:
    """All objects, following `continue` tokens, and the list's resourceVersion.

    ``transform`` is applied to each item as its page arrives, so a caller that keeps only a
    slim form of large objects never holds the whole list at full size.

    The next page is requested before the current one is parsed (its token is read from the
    bytes around the list's metadata, then checked), so the API server encodes page N+1 while
    this process decodes page N: a large list takes about the longer of the two, not the sum.

    Either the whole list is returned or an error is raised: callers never see a partial list,
    so "absent from the list" can be trusted as evidence that an object does not exist.
    """
    path = res.path(namespace=namespace)
    accept = METADATA_LIST if metadata_only else "application/json"
    limit = min(page_size, FIRST_PAGE_ITEMS)

    async def fetch(cont: str | None, started: asyncio.Event | None = None) -> bytes:
        params: dict[str, Any] = {
            "limit": limit if page_size > 0 else None,
            "continue": cont,
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
        }
        raw: bytes = await _page(api, path, params, accept, started=started)
        return raw

    items: list[dict[str, Any]] = []
    raw = await fetch(None)
    while True:
        guess = peek_continue(raw)
        if page_size > 0:
            limit = next_limit(len(raw), limit, page_size)
        ahead = None
        if guess:
            started = asyncio.Event()
            ahead = asyncio.ensure_future(fetch(guess, started))
            await _until_started(ahead, started)
        try:
            page = jsoncodec.loads(raw)
            if not isinstance(page, dict):
                raise ValueError(f"LIST {path}: the answer is not a JSON object")
            page_items = page.get("items") or []
            if transform is not None:
                page_items = [transform(o) for o in page_items]
            items.extend(page_items)
            meta = page.get("metadata") or {}
            rv = meta.get("resourceVersion", "")
            cont = meta.get("continue") or None
        except BaseException:
            await _discard(ahead)
            raise
        if not cont:
            await _discard(ahead)
            return items, rv
        if ahead is None or guess != cont:
            await _discard(ahead)
            raw = await fetch(cont)
        else:
            raw = await ahead


#: A page is decoded whole (its items and all they hold at once), so its size is what a list
#: costs in memory: after the first page of at most FIRST_PAGE_ITEMS, each page asks for as many
#: items as fit in PAGE_BYTES by the size of the last one, up to ``page_size``. 200 NodeFeatures
#: of 130 kB are a 26 MB page and ~250 MB decoded; 4 MB pages keep a list under ~40 MB.
PAGE_BYTES = 4 * 2**20
FIRST_PAGE_ITEMS = 25


def next_limit(page_bytes: int, limit: int, page_size: int) -> int:
    """The next page's limit after a page of ``page_bytes`` asked with ``limit`` (see PAGE_BYTES)."""
    per_item = page_bytes / max(1, limit)
    return max(1, min(page_size, int(PAGE_BYTES // max(1.0, per_item))))


_HEAD_META = re.compile(rb'\{"kind":"[^"]*","apiVersion":"[^"]*","metadata":(\{[^{}]*\})')
_TAIL_META = re.compile(rb'"metadata":(\{[^{}]*\})\}\s*$')


def peek_continue(raw: bytes) -> str | None:
    """A list's continue token, read without parsing its items: the API server writes a list's
    metadata first for built-in kinds and last for custom resources (sorted keys). A guess:
    the caller compares it with the parsed page."""
    for m in (_HEAD_META.match(raw, 0, 4096), _TAIL_META.search(raw, max(0, len(raw) - 4096))):
        if m is None:
            continue
        try:
            meta = jsoncodec.loads(m.group(1))
        except ValueError:
            continue
        if isinstance(meta, dict) and isinstance(meta.get("continue"), str):
            return meta["continue"] or None
    return None


async def _until_started(task: asyncio.Future[Any], started: asyncio.Event) -> None:
    """Wait until the request is on the server (its answer has begun) or has ended."""
    waiter = asyncio.ensure_future(started.wait())
    try:
        await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()


async def _discard(task: asyncio.Future[Any] | None) -> None:
    if task is None:
        return
    task.cancel()
    await asyncio.wait([task])
    if not task.cancelled():
        task.exception()  # retrieved: a speculative request's failure is not an error


#: A failed continuation page is retried this often before the whole list fails.
PAGE_RETRIES = 5


async def _page(
    api: ApiClient, path: str, params: dict[str, Any], accept: str, *, started: asyncio.Event | None = None
) -> Any:
    """One list page. A continuation page that fails with a server-side error (e.g. 504 "Too
    large resource version" while the watch cache catches up after mass creation) is retried
    with the same token, so thousands of objects already read are not listed again."""
    delay = 0.2
    for attempt in range(PAGE_RETRIES + 1):
        try:
            return await api.request(
                "GET", path, params=params, accept=accept, verb="LIST", decode=False, started=started
            )
        except (ServerError, ApiUnavailable):
            if not params.get("continue") or attempt == PAGE_RETRIES:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 3.0)
    raise AssertionError("unreachable")
