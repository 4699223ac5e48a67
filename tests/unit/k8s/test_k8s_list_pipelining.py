"""list_objects: pages requested ahead of parsing, with the guessed token checked."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from nfd.k8s.fetching import list_objects, peek_continue
from nfd.k8s.resources import NODEFEATURES, NODES


def builtin_page(items: list[dict[str, Any]], cont: str | None) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": "7"}
    if cont:
        meta["continue"] = cont
    return json.dumps({"kind": "NodeList", "apiVersion": "v1", "metadata": meta, "items": items},
                      separators=(",", ":")).encode()


def custom_page(items: list[dict[str, Any]], cont: str | None) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": "7"}
    if cont:
        meta["continue"] = cont
    return json.dumps({"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "items": items, "kind": "NodeFeatureList",
                       "metadata": meta}, separators=(",", ":")).encode()


def test_peek_continue_reads_head_of_builtin_and_tail_of_custom_lists() -> None:
    decoy = {"metadata": {"name": "a", "annotations": {"continue": "decoy"}}}
    assert peek_continue(builtin_page([decoy], "tok1")) == "tok1"
    assert peek_continue(custom_page([decoy], "tok2")) == "tok2"
    assert peek_continue(builtin_page([decoy], None)) is None
    assert peek_continue(custom_page([decoy], None)) is None
    assert peek_continue(b"not json") is None


class PagedApi:
    def __init__(self, pages: dict[str | None, bytes], *, delay: float = 0.0) -> None:
        self.pages = pages
        self.delay = delay
        self.asked: list[str | None] = []
        self.cancelled: list[str | None] = []

    async def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                      decode: bool = True, started: asyncio.Event | None = None, **_: Any) -> Any:
        cont = (params or {}).get("continue")
        self.asked.append(cont)
        if started is not None:
            started.set()
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled.append(cont)
            raise
        raw = self.pages[cont]
        return raw if not decode else json.loads(raw)


def obj(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "managedFields": [{"manager": "x"}]}}


def test_pages_are_requested_ahead_and_all_items_returned() -> None:
    asyncio.run(_test_pages_are_requested_ahead_and_all_items_returned())


async def _test_pages_are_requested_ahead_and_all_items_returned() -> None:
    api = PagedApi({None: custom_page([obj("a")], "p2"), "p2": custom_page([obj("b")], "p3"),
                    "p3": custom_page([obj("c")], None)}, delay=0.01)
    items, rv = await list_objects(api, NODEFEATURES, page_size=1,  # type: ignore[arg-type]
                                   transform=lambda o: {"metadata": {"name": o["metadata"]["name"]}})
    assert [i["metadata"]["name"] for i in items] == ["a", "b", "c"]
    assert rv == "7"
    assert api.asked == [None, "p2", "p3"]
    assert api.cancelled == []


def test_a_wrong_guess_is_cancelled_and_the_real_token_fetched() -> None:
    asyncio.run(_test_a_wrong_guess_is_cancelled_and_the_real_token_fetched())


async def _test_a_wrong_guess_is_cancelled_and_the_real_token_fetched() -> None:
    # Valid JSON can only mislead the guess with a duplicate key (the parser keeps the last).
    first = (b'{"kind":"NodeList","apiVersion":"v1","metadata":{"continue":"bogus"},"items":'
             + json.dumps([obj("a")]).encode() + b',"metadata":{"continue":"real","resourceVersion":"7"}}')
    api = PagedApi({None: first, "real": builtin_page([obj("b")], None), "bogus": builtin_page([obj("z")], None)},
                   delay=0.05)
    items, _ = await list_objects(api, NODES, page_size=1)  # type: ignore[arg-type]
    assert [i["metadata"]["name"] for i in items] == ["a", "b"]
    assert api.asked == [None, "bogus", "real"]
    assert api.cancelled == ["bogus"]


def test_a_malformed_page_fails_the_list_and_leaves_no_request_running() -> None:
    asyncio.run(_test_a_malformed_page_fails_the_list_and_leaves_no_request_running())


async def _test_a_malformed_page_fails_the_list_and_leaves_no_request_running() -> None:
    bad = custom_page([obj("a")], "p2")[:-40] + b'"metadata":{"continue":"p2"}}'
    api = PagedApi({None: bad, "p2": custom_page([obj("b")], None)}, delay=0.05)
    with pytest.raises(ValueError):
        await list_objects(api, NODEFEATURES, page_size=1)  # type: ignore[arg-type]
    assert api.cancelled == ["p2"]
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []


class SizedApi:
    """Serves ``n`` objects of ``size`` bytes each, as many per page as the request's limit."""

    def __init__(self, n: int, size: int) -> None:
        self.objs = [{"metadata": {"name": f"o{i:05d}"}, "spec": {"pad": "x" * size}} for i in range(n)]
        self.limits: list[int] = []

    async def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                      decode: bool = True, started: asyncio.Event | None = None, **_: Any) -> Any:
        p = params or {}
        start = int(p.get("continue") or 0)
        limit = int(p["limit"])
        self.limits.append(limit)
        if started is not None:
            started.set()
        end = min(len(self.objs), start + limit)
        raw = custom_page(self.objs[start:end], str(end) if end < len(self.objs) else None)
        return raw if not decode else json.loads(raw)


@pytest.mark.parametrize(("size", "expect_max"), [(130_000, 40), (500, 200)])
def test_pages_stay_about_page_bytes_whatever_the_object_size(size: int, expect_max: int) -> None:
    """A page is decoded whole: heavy objects come in fewer per page (informerPageSize stays the
    most), small ones in full pages, and every object arrives once, in order."""
    from nfd.k8s.fetching import FIRST_PAGE_ITEMS, PAGE_BYTES

    api = SizedApi(600, size)
    items, _ = asyncio.run(list_objects(api, NODEFEATURES, page_size=200,  # type: ignore[arg-type]
                                        transform=lambda o: {"metadata": o["metadata"]}))
    assert [i["metadata"]["name"] for i in items] == [f"o{i:05d}" for i in range(600)]
    assert api.limits[0] == FIRST_PAGE_ITEMS
    assert max(api.limits[1:]) <= expect_max
    assert all(lim * size <= PAGE_BYTES * 1.1 or lim == 1 for lim in api.limits[1:])
    if size < 1000:
        assert api.limits[1:] and set(api.limits[1:]) == {200}
