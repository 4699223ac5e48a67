"""Masterless workers spread their passes after a cluster-wide trigger (a rule change reaches
every worker at once; their writes arriving together draw API Priority and Fairness 429s)."""

from __future__ import annotations

import asyncio

from _master_fakeapi import FakeApi

from nfd.master.config import MasterConfig
from nfd.master.core import MasterCore
from nfd.master.options import MasterOptions, spread_delay


def test_spread_delay_is_fixed_per_node_and_within_the_window() -> None:
    names = [f"node-{i:04d}" for i in range(1000)]
    delays = [spread_delay(n, spread_s=1.0) for n in names]
    assert all(0.0 <= d < 1.0 for d in delays)
    assert delays == [spread_delay(n, spread_s=1.0) for n in names]  # deterministic
    assert spread_delay("node-0007", spread_s=2.0) == 2 * spread_delay("node-0007", spread_s=1.0)
    # spread, not bunched: every tenth of the window holds some nodes, none holds most
    buckets = [0] * 10
    for d in delays:
        buckets[int(d * 10)] += 1
    assert min(buckets) > 50 and max(buckets) < 150


def _master(**opts: object) -> MasterCore:
    m = MasterCore(FakeApi(), config=MasterConfig(resync_period=0),  # type: ignore[arg-type]
                  options=MasterOptions(namespace="nfd", **opts))  # type: ignore[arg-type]
    m.ready = True
    m.controller.node_informer.cache[("", "node-a")] = {"metadata": {"name": "node-a"}}
    return m


async def test_masterless_rule_change_waits_the_nodes_share() -> None:
    m = _master(only_node="node-a", spread_s=0.2)
    m.update_all_nodes("NodeFeatureRule r modified")
    delay = spread_delay("node-a", spread_s=0.2)
    assert delay > 0
    assert len(m.node_queue) == 0  # not yet
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    assert await asyncio.wait_for(m.node_queue.get(), timeout=2) == "node-a"
    assert loop.time() - t0 >= delay - 0.01


async def test_start_and_nfd_master_queue_at_once() -> None:
    m = _master(only_node="node-a", spread_s=5.0)
    m.update_all_nodes("became leader", spread=False)
    assert len(m.node_queue) == 1
    m2 = _master(spread_s=5.0)  # nfd-master: one process, nothing to spread
    m2.update_all_nodes("NodeFeatureRule r modified")
    assert len(m2.node_queue) == 1
    m3 = _master(only_node="node-a")  # spread 0 (the default of MasterOptions)
    m3.update_all_nodes("NodeFeatureRule r modified")
    assert len(m3.node_queue) == 1
