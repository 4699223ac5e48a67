"""Informer over a streaming list (sendInitialEvents), and its fallback to paginated LISTs."""

from __future__ import annotations

import asyncio
from typing import Any

from _master_fakeapi import FakeApi

from nfd.k8s.resources import NODES
from nfd.k8s.watching import Informer


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def recorder(inf: Informer) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    inf.on_event(lambda etype, obj, old: seen.append((etype, obj["metadata"]["name"])))
    return seen


async def until(cond: Any, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


async def test_streaming_list_syncs_without_list_requests_and_keeps_watching() -> None:
    api = FakeApi()
    api.put("nodes", node("a"))
    api.put("nodes", node("b"))
    inf = Informer(api, NODES)  # type: ignore[arg-type]
    seen = recorder(inf)
    await inf.start()
    assert await inf.wait_synced(5)
    assert sorted(seen) == [("ADDED", "a"), ("ADDED", "b")]
    assert api.metrics["LIST"] == 0 and api.metrics["WATCH"] == 1
    assert inf.resource_version == str(api.rv)
    api.put("nodes", node("c"))
    api.remove("nodes", "a")
    await until(lambda: ("DELETED", "a") in seen)
    assert set(k[1] for k in inf.cache) == {"b", "c"}
    assert api.metrics["WATCH"] == 1  # the same stream carried the list and the changes
    await inf.stop()


async def test_server_without_watchlist_gets_paginated_lists() -> None:
    api = FakeApi()
    api.watch_list = False
    api.put("nodes", node("a"))
    inf = Informer(api, NODES)  # type: ignore[arg-type]
    await inf.start()
    assert await inf.wait_synced(5)
    assert set(k[1] for k in inf.cache) == {"a"}
    assert api.metrics["LIST"] == 1
    assert inf.watch_list is False
    await inf.stop()


async def test_a_relist_after_an_outage_removes_only_what_the_complete_list_lacks() -> None:
    api = FakeApi()
    for n in ("a", "b", "c"):
        api.put("nodes", node(n))
    inf = Informer(api, NODES, max_backoff_s=0.05)  # type: ignore[arg-type]
    seen = recorder(inf)
    await inf.start()
    assert await inf.wait_synced(5)
    # While the watch is down, "b" goes away without an event reaching us.
    api.down = True
    api.break_watches()
    await until(lambda: not inf.healthy)
    api.store["nodes"].pop(("", "b"))
    assert set(k[1] for k in inf.cache) == {"a", "b", "c"}  # an outage removes nothing
    api.down = False
    inf.resource_version = "1"  # force a relist, as a 410 would
    api.history.clear()
    await inf.stop()
    await inf.start()
    await until(lambda: ("DELETED", "b") in seen)
    assert set(k[1] for k in inf.cache) == {"a", "c"}
    await inf.stop()


class CutStreamApi(FakeApi):
    """Ends a streaming list after its first object, without the end marker (as an old server
    ignoring sendInitialEvents would, at its timeout), or fails it mid-way."""

    def __init__(self, *, fail: bool) -> None:
        super().__init__()
        self.fail = fail
        self.cuts = 0

    async def stream_lines(self, path: str, *, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        if not (params or {}).get("sendInitialEvents"):
            async for ev in super().stream_lines(path, params=params, **kw):
                yield ev
            return
        self.cuts += 1
        first = sorted(self.store["nodes"].values(), key=lambda o: o["metadata"]["name"])[0]
        yield {"type": "ADDED", "object": first}
        if self.fail:
            from nfd.k8s.errors import ApiUnavailable

            raise ApiUnavailable("WATCH: connection reset")


async def test_an_incomplete_streaming_list_is_never_used_as_evidence() -> None:
    for fail in (False, True):  # ends quietly before the marker (server timeout), or breaks
        api = CutStreamApi(fail=fail)
        for n in ("a", "b"):
            api.put("nodes", node(n))
        inf = Informer(api, NODES, max_backoff_s=0.05)  # type: ignore[arg-type]
        inf.cache[("", "b")] = node("b")  # known from before
        seen = recorder(inf)
        await inf.start()
        # Each cut stream is retried with backoff; nothing from a partial list reaches the cache.
        await until(lambda: api.cuts >= 3)  # noqa: B023 - awaited in this iteration
        assert not inf.synced and seen == [] and set(inf.cache) == {("", "b")}
        assert inf.watch_list is True and api.metrics["LIST"] == 0
        await inf.stop()


class OldServerApi(FakeApi):
    async def server_minor(self) -> int | None:
        return 26


async def test_a_server_before_1_27_gets_paginated_lists() -> None:
    api = OldServerApi()
    api.put("nodes", node("a"))
    inf = Informer(api, NODES)  # type: ignore[arg-type]
    await inf.start()
    assert await inf.wait_synced(5)
    assert inf.watch_list is False and api.metrics["LIST"] == 1
    await inf.stop()


async def test_a_broken_stream_after_the_list_resumes_the_watch_without_listing_again() -> None:
    api = FakeApi()
    api.put("nodes", node("a"))
    inf = Informer(api, NODES, max_backoff_s=0.05)  # type: ignore[arg-type]
    seen = recorder(inf)
    await inf.start()
    assert await inf.wait_synced(5)
    api.break_watches()
    await until(lambda: api.metrics["WATCH"] >= 2)
    api.put("nodes", node("b"))
    await until(lambda: ("ADDED", "b") in seen)
    assert inf.relists == 1  # the second stream was a plain watch from the last resourceVersion
    await inf.stop()
