"""Node churn leaves no state behind: what nfd-master keeps per node follows the nodes there are.

Nodes come and go for the life of a master (autoscaling replaces them under new names); state
kept per node name that is not dropped when its node goes grows without bound (upstream's
long-running master grew 1.2 GiB a day, #1841; every standby leaked until OOM, #2063).
"""

from __future__ import annotations

import asyncio
from typing import Any

from _master_fakeapi import FakeApi
from test_master_controller import AVX_RULE, NFD_NS, node_obj, nodefeature, rule_obj, settle, start

from nfd.master import groupstatus
from nfd.master.fairness import CostLedger
from nfd.master.master import NfdMaster


def per_node_state(m: NfdMaster) -> dict[str, set[str]]:
    c = m.controller
    return {
        "evidence": set(m.evidence._pending) | m.evidence._processed,
        "desired_cache": set(m.updater.desired_cache),
        "recent_deletes": set(c.recent_deletes),
        "own_rv": set(c.own_rv),
        "own_slim": set(c.own_slim),
        "nf_index": set(c.nf_index),
        "busy": set(c.busy),
    }


def assert_only(m: NfdMaster, live: set[str]) -> None:
    extra = {k: v - live for k, v in per_node_state(m).items() if v - live}
    assert not extra, extra


def fresh_api() -> FakeApi:
    a = FakeApi()
    a.put("nodefeaturerules", rule_obj("r1", [AVX_RULE]))
    for n in ("n1", "n2"):
        a.put("nodes", node_obj(n))
        a.put("nodefeatures", nodefeature(n, flags={"cpu.cpuid": ["AVX"]}))
    return a


async def test_nodes_replaced_by_new_ones_leave_no_state_behind() -> None:
    api = fresh_api()
    m = await start(api)
    live = {"n1", "n2"}
    for i in range(12):
        new = f"churn-{i}"
        api.put("nodes", node_obj(new))
        api.put("nodefeatures", nodefeature(new, flags={"cpu.cpuid": ["AVX"]}))
        live.add(new)
        await asyncio.sleep(0.05)
        await settle(m, api)
        old = f"churn-{i - 1}" if i else "n2"
        # both orders: nfd-gc deletes a NodeFeature after its Node; a drained node's worker
        # goes first
        if i % 2:
            api.remove("nodes", old)
            api.remove("nodefeatures", old, NFD_NS)
        else:
            api.remove("nodefeatures", old, NFD_NS)
            api.remove("nodes", old)
        live.discard(old)
        await asyncio.sleep(0.1)  # past the delete grace
        await settle(m, api)
    m.update_all_nodes("resync")
    await settle(m, api)
    assert_only(m, live)
    assert api.obj("nodes", "churn-11")["metadata"]["labels"]["feature.node.kubernetes.io/cpu-avx"] == "true"  # type: ignore[index]
    await m.stop()


async def test_a_standby_keeps_nothing_for_a_node_deleted_before_its_nodefeature() -> None:
    api = fresh_api()
    m = await start(api)
    await m.step_down()
    api.remove("nodes", "n2")
    await asyncio.sleep(0.05)
    api.remove("nodefeatures", "n2", NFD_NS)  # nfd-gc, after the Node
    await asyncio.sleep(0.05)
    assert_only(m, {"n1"})
    # a NodeFeature deleted while its Node stays is evidence the next leader needs
    api.remove("nodefeatures", "n1", NFD_NS)
    await asyncio.sleep(0.05)
    assert m.evidence.pending("n1")
    await m.become_leader()
    await settle(m, api)
    assert "feature.node.kubernetes.io/cpu-avx" not in api.obj("nodes", "n1")["metadata"]["labels"]  # type: ignore[index]
    assert_only(m, {"n1"})
    await m.stop()


async def test_a_node_deleted_while_processed_leaves_no_state() -> None:
    api = fresh_api()
    m = await start(api)
    # the Node goes between the pass's planning (on the cached Node) and its write: the write
    # answers 404, and the delete's watch event was handled before the pass stored its result
    api.store["nodes"].pop(("", "n2"))
    api.put("nodefeatures", nodefeature("n2", flags={"cpu.cpuid": ["SSE"]}))
    await asyncio.sleep(0.05)
    await settle(m, api)
    assert "n2" not in m.updater.desired_cache and "n2" not in m.evidence._processed
    await m.stop()


def leave_state(m: NfdMaster, name: str) -> None:
    """What a pass on a node deleted meanwhile can leave behind after the delete event was
    handled: its result, its evidence, the answer of its last write."""
    m.updater.desired_cache[name] = m.updater.desired_cache["n1"]
    m.evidence.commit(name, m.evidence.resolve(name))
    m.controller.own_rv[name] = 10**9
    m.controller.own_slim[name] = {"metadata": {"name": name}}
    m.controller.recent_deletes[name] = {("nfd", name): 0.0}


async def test_a_full_pass_drops_the_state_of_nodes_that_are_gone() -> None:
    api = fresh_api()
    m = await start(api)
    leave_state(m, "gone")
    m.update_all_nodes("resync")
    await settle(m, api)
    assert_only(m, {"n1", "n2"})
    await m.stop()


async def test_a_full_pass_without_node_watch_drops_the_state_of_nodes_that_are_gone() -> None:
    api = fresh_api()
    api.forbidden.add(("watch", "nodes"))
    m = await start(api)
    assert not m.controller.watch_nodes
    leave_state(m, "gone")
    m.update_all_nodes("resync")
    await asyncio.sleep(0.05)
    await settle(m, api)
    assert_only(m, {"n1", "n2"})
    await m.stop()


def group(name: str) -> dict[str, Any]:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureGroup",
            "metadata": {"name": name, "namespace": NFD_NS},
            "spec": {"featureGroupRules": [{"name": "avx", "matchFeatures": [
                {"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Exists"}}}]}]}}


async def test_a_deleted_group_leaves_no_compiled_rules() -> None:
    api = fresh_api()
    api.put("nodefeaturegroups", group("g1"))
    m = await start(api, feature_gates={"NodeFeatureGroupAPI": True})
    assert api.obj("nodefeaturegroups", "g1", NFD_NS)["status"]["nodes"] == [{"name": "n1"}, {"name": "n2"}]  # type: ignore[index]
    assert f"{NFD_NS}/g1" in groupstatus._compiled
    api.remove("nodefeaturegroups", "g1", NFD_NS)
    await asyncio.sleep(0.05)
    await settle(m, api)
    assert f"{NFD_NS}/g1" not in groupstatus._compiled
    await m.stop()


def test_compiled_groups_are_bounded() -> None:
    for i in range(groupstatus.COMPILED_MAX + 10):
        groupstatus._compile(group(f"bounded-{i}"))
    assert len(groupstatus._compiled) <= groupstatus.COMPILED_MAX
    groupstatus._compiled.clear()


def test_a_deferred_revision_keeps_no_names_of_further_nodes() -> None:
    ledger = CostLedger(threshold=3)
    deferrals = [ledger.record(rule_set="h", revision=b"1", node=f"n{i}", example="x") for i in range(1000)]
    assert sum(d is not None for d in deferrals) == 1
    assert ledger.deferred() == frozenset({"h"})
    assert len(ledger._entries["h"].nodes) == 3
