"""A rule object that runs out of its budget on several nodes is deferred: the other objects'
results land first, its outputs come from the background lane, nothing of it is removed
meanwhile, and an edit of it starts the count over (nfd.master.fairness)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from _master_fakeapi import FakeApi
from test_master_controller import AVX_RULE, NS, node_obj, nodefeature, removed_paths, rule_obj, settle, start

from nfd.master.config import MasterConfig

# fails at once with the template budget's error (a 2,000,000-element list is refused)
BOOM = "{{ range until 2000000 }}{{ end }}x=y"
AVX = [{"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Exists"}}}]
NODES = [f"n{i}" for i in range(6)]


def costly(value: str) -> dict[str, Any]:
    return rule_obj("a-costly", [{"name": "static", "labels": {"costly-static": value}, "matchFeatures": AVX},
                                 {"name": "boom", "labelsTemplate": BOOM, "matchFeatures": AVX}])


async def until(cond: Any, what: str, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise AssertionError(f"timed out: {what}")
        await asyncio.sleep(0.02)


def label(api: FakeApi, node: str, key: str) -> str | None:
    obj = api.obj("nodes", node) or {}
    return ((obj.get("metadata") or {}).get("labels") or {}).get(f"{NS}/{key}")


async def test_costly_object_is_deferred_and_its_outputs_come_from_the_background(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="nfd.master")
    api = FakeApi()
    for n in NODES:
        api.put("nodes", node_obj(n))
        api.put("nodefeatures", nodefeature(n, flags={"cpu.cpuid": ["AVX"]}))
    api.put("nodefeaturerules", costly("v1"))
    api.put("nodefeaturerules", rule_obj("b-base", [AVX_RULE]))
    m = await start(api, MasterConfig(resync_period=0, nfd_api_parallelism=1))
    try:
        assert m.updater.ledger.deferred() == {"a-costly"}
        deferrals = [r for r in caplog.records if "ran out of its evaluation budget" in r.getMessage()]
        assert len(deferrals) == 1 and "on 3 nodes" in deferrals[0].getMessage()
        # every node has the other object's label; the deferred object's come from the background
        assert all(label(api, n, "cpu-avx") == "true" for n in NODES)
        await until(lambda: all(label(api, n, "costly-static") == "v1" for n in NODES), "background lane labels")

        # another object changes: it lands everywhere, the deferred object's labels stay
        api.put("nodefeaturerules", rule_obj("b-base", [dict(AVX_RULE, labels={"cpu-avx": "v2"})]))
        await settle(m, api)
        assert all(label(api, n, "cpu-avx") == "v2" for n in NODES)
        assert all(label(api, n, "costly-static") == "v1" for n in NODES)
        assert not [p for p in removed_paths(api) if "costly-static" in p]

        # an edit of the costly object: counted again from zero, deferred again (once), and
        # its new output reaches every node
        api.put("nodefeaturerules", costly("v3"))
        await until(lambda: all(label(api, n, "costly-static") == "v3" for n in NODES), "the edit everywhere")
        deferrals = [r for r in caplog.records if "ran out of its evaluation budget" in r.getMessage()]
        assert len(deferrals) == 2
        assert m.updater.ledger.deferred() == {"a-costly"}
        assert not [p for p in removed_paths(api) if "costly-static" in p]
    finally:
        await m.stop()

    # a restarted master knows no previous outputs: on the nodes after the third, the deferred
    # object has never run when the other objects' results are written, and that write removes
    # nothing (its labels stay until the background lane has evaluated it there)
    api.put("nodefeaturerules", rule_obj("b-base", [dict(AVX_RULE, labels={"cpu-avx": "v4"})]))
    m = await start(api, MasterConfig(resync_period=0, nfd_api_parallelism=1))
    try:
        assert all(label(api, n, "cpu-avx") == "v4" for n in NODES)
        await until(lambda: m.updater.deferred_queue.idle() and m.updater._background is None, "background lane done")
        assert all(label(api, n, "costly-static") == "v3" for n in NODES)
        assert not [p for p in removed_paths(api) if "costly-static" in p]
    finally:
        await m.stop()
