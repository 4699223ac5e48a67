from __future__ import annotations

import asyncio

from nfd.master.evidence import Evidence, skip_removal
from nfd.master.workqueue import WorkQueue


async def test_items_deduplicated_and_never_processed_twice_at_once():
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("a")
    q.add("b")
    assert len(q) == 2
    item = await q.get()
    assert item == "a"
    q.add("a")  # while processing: queued again only when done
    assert len(q) == 1
    q.done("a")
    assert len(q) == 2
    assert [await q.get(), await q.get()] == ["b", "a"]


async def test_rate_limited_backoff_doubles_and_forget_resets():
    q: WorkQueue[str] = WorkQueue(base_delay=0.01, max_delay=0.04)
    assert [q.add_rate_limited("x") for _ in range(4)] == [0.01, 0.02, 0.04, 0.04]
    assert q.num_requeues("x") == 4
    q.forget("x")
    assert q.num_requeues("x") == 0
    item = await asyncio.wait_for(q.get(), timeout=1)
    assert item == "x"


async def test_add_after_delays_and_clear_drops():
    q: WorkQueue[str] = WorkQueue()
    q.add_after("late", 0.05)
    assert len(q) == 0 and not q.idle()
    assert await asyncio.wait_for(q.get(), timeout=1) == "late"
    q.done("late")
    q.add_after("dropped", 0.01)
    q.clear()
    await asyncio.sleep(0.03)
    assert len(q) == 0 and q.idle()


def test_evidence_rules():
    ev = Evidence()
    r = ev.resolve("n")
    # first pass, nothing known: skip removal
    assert skip_removal(has_features=False, found_in_cache=False, res=r)
    # features present or found in cache: normal
    assert not skip_removal(has_features=True, found_in_cache=True, res=r)
    assert not skip_removal(has_features=False, found_in_cache=True, res=r)
    # an unsuccessful pass (no commit) keeps the protection
    assert skip_removal(has_features=False, found_in_cache=False, res=ev.resolve("n"))
    ev.commit("n", r)
    assert not skip_removal(has_features=False, found_in_cache=False, res=ev.resolve("n"))
    # a new leadership term starts without "processed" evidence
    ev.reset_processed()
    assert skip_removal(has_features=False, found_in_cache=False, res=ev.resolve("n"))
    # an observed delete is evidence, consumed by the pass that saw it
    ev.mark_deleted("n")
    r2 = ev.resolve("n")
    assert r2.pending_delete and not skip_removal(has_features=False, found_in_cache=False, res=r2)
    ev.mark_deleted("n")  # a second delete during the pass is not consumed by it
    ev.commit("n", r2)
    assert ev.pending("n")
    ev.forget("n")
    assert not ev.pending("n")


async def test_delayed_adds_coalesce():
    q: WorkQueue[str] = WorkQueue()
    for _ in range(5):
        q.add_after("n", 0.03)
    q.add_after("n", 0.01)  # an earlier due time wins
    assert len(q._delayed_at) == 1
    assert await asyncio.wait_for(q.get(), timeout=1) == "n"
    q.done("n")
    await asyncio.sleep(0.05)  # the superseded 0.03 s entry must not re-queue it
    assert len(q) == 0 and q.idle()
