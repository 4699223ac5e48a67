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
