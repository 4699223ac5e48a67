"""nfd-gc decisions and safety: what is deleted, and what must never be."""

from __future__ import annotations

import asyncio

from gcfakeapi import NF, NODES, NRT, GcFakeApi

from nfd.gc import orphans
from nfd.gc.collector import GarbageCollector
from nfd.k8s.fetching import FIRST_PAGE_ITEMS


class NodeCache:
    """Stands in for the node Informer (cache + synced)."""

    def __init__(self, names: set[str], synced: bool = True) -> None:
        self.cache = {("", n): {"metadata": {"name": n}} for n in names}
        self.synced = synced

    async def stop(self) -> None:
        pass


def make(
    api: GcFakeApi, cached: set[str] | None = None, *, list_size: int = 200, synced: bool = True
) -> GarbageCollector:
    gc = GarbageCollector(api, list_size=list_size)
    gc.nodes = NodeCache(api.names(NODES) if cached is None else cached, synced)
    return gc


def seeded() -> GcFakeApi:
    api = GcFakeApi()
    for n in ("live-1", "live-2"):
        api.node(n)
        api.nodefeature("nfd", n, n)
        api.nrt(n)
    api.nodefeature("nfd", "gone-1", "gone-1")
    api.nodefeature("vendor", "gone-1-extra", "gone-1")
    api.nodefeature("nfd", "unlabelled", None)
    api.nrt("gone-1")
    return api


def test_orphans_stale() -> None:
    ts = [
        orphans.Target(orphans.NODEFEATURE, "a", "x", "n1"),
        orphans.Target(orphans.NODEFEATURE, "a", "y", ""),
        orphans.Target(orphans.NODERESOURCETOPOLOGY, "", "n2", "n2"),
    ]
    assert [t.name for t in orphans.stale(ts, {"n1", "n2"})] == ["y"]
    assert [t.name for t in orphans.stale(ts, set())] == ["x", "y", "n2"]
    nf = orphans.nodefeature_target(
        {"metadata": {"namespace": "a", "name": "b", "uid": "u", "resourceVersion": "3"}}
    )
    assert (nf.node, nf.uid, nf.resource_version, nf.ref) == ("", "u", "3", "a/b")


def test_sweep_deletes_stale_and_keeps_live() -> None:
    api = seeded()
    gc = make(api)
    report = asyncio.run(gc.sweep())
    assert api.names(NF) == {"live-1", "live-2"}
    assert api.names(NRT) == {"live-1", "live-2"}
    assert sorted(t.ref for t in report.deleted) == [
        "gone-1",
        "nfd/gone-1",
        "nfd/unlabelled",
        "vendor/gone-1-extra",
    ]
    assert gc.metrics.deleted.labels("NodeFeature")._value.get() == 3
    assert gc.metrics.deleted.labels("NodeResourceTopology")._value.get() == 1
    # deletes carry preconditions
    assert report.aborted == "" and report.failed == 0


def test_node_missing_from_stale_cache_is_confirmed_live_by_fresh_list() -> None:
    api = seeded()
    api.node("new-node")
    api.nodefeature("nfd", "new-node", "new-node")
    api.nrt("new-node")
    gc = make(api, cached={"live-1", "live-2"})  # the watch has not delivered new-node yet
    report = asyncio.run(gc.sweep())
    assert "new-node" in api.names(NF) and "new-node" in api.names(NRT)
    assert report.kept_live == 2


def test_outage_while_confirming_nodes_deletes_nothing() -> None:
    api = seeded()
    for i in range(10):
        api.node(f"n{i}")
    # the second page of the confirming node LIST fails
    api.fail = lambda m, p, q: p == NODES and q.get("continue") == "3"
    gc = make(api, list_size=3)
    before = (set(api.names(NF)), set(api.names(NRT)))
    report = asyncio.run(gc.sweep())
    assert report.aborted.startswith("confirming node list failed")
    assert (api.names(NF), api.names(NRT)) == before
    assert not [e for e in api.log if e[0] == "DELETE"]


def test_outage_while_listing_objects_deletes_nothing() -> None:
    api = seeded()
    api.fail = lambda m, p, q: p == NRT
    report = asyncio.run(make(api).sweep())
    assert report.aborted.startswith("listing failed")
    assert not [e for e in api.log if e[0] == "DELETE"]


def test_unsynced_node_cache_deletes_nothing() -> None:
    api = seeded()
    report = asyncio.run(make(api, cached=set(), synced=False).sweep())
    assert report.aborted == "node cache not synced"
    assert api.log == []


def test_object_changed_after_listing_is_not_deleted() -> None:
    api = seeded()
    gc = make(api)
    real = api.request

    async def racing(method, path, **kw):
        # the worker of a re-registered gone-1 updates its NodeFeature right before our delete
        if method == "DELETE" and path.endswith("/namespaces/nfd/nodefeatures/gone-1"):
            api.touch(NF, "nfd", "gone-1")
        return await real(method, path, **kw)

    api.request = racing  # type: ignore[method-assign]
    report = asyncio.run(gc.sweep())
    assert "gone-1" in api.names(NF)
    assert report.refused == 1
    assert gc.metrics.failures.labels("NodeFeature")._value.get() == 0


def test_missing_crd_is_skipped_quietly() -> None:
    api = seeded()
    api.missing_crds.add(NRT)
    report = asyncio.run(make(api).sweep())
    assert report.aborted == ""
    assert api.names(NF) == {"live-1", "live-2"}


def test_pagination_covers_thousands_of_objects() -> None:
    api = GcFakeApi()
    for i in range(300):
        api.node(f"live-{i}")
        api.nodefeature("nfd", f"live-{i}", f"live-{i}")
    for i in range(700):
        api.nodefeature("nfd", f"gone-{i}", f"gone-{i}")
        api.nrt(f"gone-{i}")
    gc = make(api, list_size=50)
    report = asyncio.run(gc.sweep())
    assert len(report.deleted) == 1400
    assert api.names(NF) == {f"live-{i}" for i in range(300)}
    assert api.names(NRT) == set()
    nf_lists = [e for e in api.log if e[0] == "LIST" and e[1] == NF]
    # -list-size is the most per page; the first page holds at most FIRST_PAGE_ITEMS (small
    # objects: every later page is full)
    limits = [int(e[2]["limit"]) for e in nf_lists]
    assert limits[0] == min(50, FIRST_PAGE_ITEMS) and set(limits[1:]) == {50}
    assert len(nf_lists) == 1 + -(-(1000 - limits[0]) // 50)


def test_node_delete_event_removes_its_objects_after_confirmation() -> None:
    api = seeded()
    api.nodefeature("other", "live-1-copy", "live-1")
    gc = make(api)
    del api.store[NODES][("", "live-1")]
    deleted = asyncio.run(gc.node_deleted("live-1"))
    assert sorted(t.ref for t in deleted) == ["live-1", "nfd/live-1", "other/live-1-copy"]
    assert "live-1" not in api.names(NRT)
    assert "gone-1" in api.names(NF)  # other nodes' objects are the sweep's business


def test_node_delete_event_for_recreated_node_keeps_objects() -> None:
    api = seeded()
    gc = make(api)
    assert asyncio.run(gc.node_deleted("live-1")) == []  # the confirming LIST finds it again
    assert "live-1" in api.names(NF) and "live-1" in api.names(NRT)


def test_node_delete_event_during_outage_deletes_nothing() -> None:
    api = seeded()
    del api.store[NODES][("", "live-1")]
    api.fail = lambda m, p, q: m == "GET" and p.startswith(NODES)
    assert not [e for e in api.log if e[0] == "GET" and e[1].startswith(NODES + "/")]
    assert asyncio.run(make(api).node_deleted("live-1")) == []
    assert "live-1" in api.names(NRT)


def test_incomplete_pass_is_retried_before_the_interval() -> None:
    api = seeded()
    broken = {"on": True}
    api.fail = lambda m, p, q: broken["on"] and p == NF
    gc = make(api)

    async def go() -> None:
        task = asyncio.create_task(gc.run(3600, retry_s=0.05))
        await asyncio.sleep(0.2)
        assert "gone-1" in api.names(NF)  # outage: nothing deleted, passes retried
        broken["on"] = False
        for _ in range(100):
            if "gone-1" not in api.names(NF):
                break
            await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(go())
    assert api.names(NF) == {"live-1", "live-2"}
    assert len([e for e in api.log if e[0] == "LIST" and e[1] == NF]) >= 3
