"""The controller and the node updater built from the narrow things they use, without a
MasterCore or NfdMaster (issue 41): the read and write clients, the config in force, the options,
the rule book, the evidence, the cost ledger, the queues, the desired-state cache and an Event sink,
as Kubernetes' controllers are built from listers, clients, a queue and a recorder."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from _master_fakeapi import FakeApi
from test_master_controller import AVX_RULE, NFD_NS, NS, node_obj, nodefeature, rule_obj

from nfd.master.config import MasterConfig
from nfd.master.controller import Controller
from nfd.master.evidence import Evidence
from nfd.master.fairness import CostLedger
from nfd.master.metrics import MasterMetrics
from nfd.master.nodeupdater import CachedDesired, NodeUpdater
from nfd.master.options import LiveConfig, MasterOptions
from nfd.master.workers import BackgroundTasks
from nfd.master.workqueue import WorkQueue
from nfd.nodestate import bookkeeping as bk
from nfd.nodestate.rulebook import RuleBook


class RecordingEvents:
    """An Event sink that keeps what it was told."""

    def __init__(self) -> None:
        self.rules: list[tuple[str, str, str]] = []
        self.nodes: list[tuple[str, str]] = []

    def rule_broken(self, obj: dict[str, Any], msg: str, *, reason: str = "InvalidRule") -> None:
        self.rules.append(((obj.get("metadata") or {}).get("name") or "", msg, reason))

    def node_updated(self, node_metadata: dict[str, Any], message: str) -> None:
        self.nodes.append((node_metadata.get("name") or "", message))


class Parts:
    """The parts, each given its inputs; ``ready`` is the switch the composition would own."""

    def __init__(self, api: FakeApi, config: MasterConfig | None = None) -> None:
        self.ready = False
        self.live = LiveConfig(config or MasterConfig(resync_period=0))
        self.opts = MasterOptions(namespace=NFD_NS, delete_grace_s=0.05, batch_s=0.0)
        self.rulebook = RuleBook()
        self.evidence = Evidence()
        self.ledger = CostLedger()
        self.node_queue: WorkQueue[str] = WorkQueue()
        self.group_queue: WorkQueue[str] = WorkQueue()
        self.desired: dict[str, CachedDesired] = {}
        self.events = RecordingEvents()
        self.tasks = BackgroundTasks()
        self.controller = Controller(
            api, live=self.live, opts=self.opts, rulebook=self.rulebook, evidence=self.evidence, ledger=self.ledger,
            node_queue=self.node_queue, group_queue=self.group_queue, desired_cache=self.desired,
            events=self.events, spawn=self.tasks.spawn, ready=lambda: self.ready,
        )
        self.updater = NodeUpdater(
            self.controller, live=self.live, opts=self.opts, rulebook=self.rulebook, evidence=self.evidence,
            ledger=self.ledger, node_queue=self.node_queue, desired_cache=self.desired, write_api=api,  # type: ignore[arg-type]
            events=self.events, metrics=MasterMetrics(),
        )

    async def start(self) -> None:
        await self.controller.start(watch_nodes=True, dra=False)

    async def stop(self) -> None:
        self.node_queue.shutdown()
        self.group_queue.shutdown()
        await self.controller.stop()
        self.tasks.cancel_all()


def _api() -> FakeApi:
    a = FakeApi()
    a.put("nodes", node_obj("n1"))
    a.put("nodes", node_obj("n2"))
    a.put("nodefeatures", nodefeature("n1", flags={"cpu.cpuid": ["AVX", "SSE"]}, labels={"worker-label": "1"}))
    a.put("nodefeatures", nodefeature("n2", flags={"cpu.cpuid": ["SSE"]}))
    a.put("nodefeaturerules", rule_obj("r1", [AVX_RULE]))
    return a


async def _drain(q: WorkQueue[str]) -> list[str]:
    out = []
    while len(q):
        item = await q.get()
        q.done(item)
        out.append(item)
    return sorted(out)


async def test_node_updater_writes_a_node_from_the_controllers_caches() -> None:
    api = _api()
    p = Parts(api)
    await p.start()
    assert p.rulebook.generation > 0 and "r1" in p.rulebook.sets  # the rule events compiled into it

    await p.updater.process_node("n1")
    labels = api.obj("nodes", "n1")["metadata"]["labels"]  # type: ignore[index]
    assert labels[f"{NS}/cpu-avx"] == "true" and labels[f"{NS}/worker-label"] == "1"
    assert api.obj("nodes", "n1")["metadata"]["annotations"][bk.FEATURE_LABELS] == "cpu-avx,worker-label"  # type: ignore[index]
    assert p.updater.counts["written"] == 1 and "n1" in p.desired
    # the answer went into the controller's cache: the same pass again writes nothing
    writes = len(api.writes())
    await p.updater.process_node("n1")
    assert len(api.writes()) == writes and p.updater.counts["noop"] == 1

    # a reload through the config view alone reaches the updater: noPublish writes nothing
    p.live.replace(replace(p.live.config, no_publish=True))
    api.put("nodefeatures", nodefeature("n1", flags={"cpu.cpuid": ["SSE"]}))
    await asyncio.sleep(0.05)  # the watch event
    await p.updater.process_node("n1")
    assert len(api.writes()) == writes
    # and back: the label nfd owned is removed, and the sink hears of it (no Event posted here)
    p.live.replace(replace(p.live.config, no_publish=False))
    await p.updater.process_node("n1")
    assert f"{NS}/cpu-avx" not in api.obj("nodes", "n1")["metadata"]["labels"]  # type: ignore[index]
    assert [n for n, _ in p.events.nodes] == ["n1"]
    assert not [w for w in api.writes() if "/events" in w[1]]
    await p.stop()


async def test_controller_queues_work_only_when_ready_and_reports_broken_rules() -> None:
    api = _api()
    p = Parts(api)
    await p.start()
    # not ready (a standby): events keep the caches, queue nothing
    api.put("nodefeaturerules", rule_obj("r1", [dict(AVX_RULE, labels={"cpu-avx": "yes"})]))
    await asyncio.sleep(0.05)
    assert len(p.node_queue) == 0 and p.rulebook.sets["r1"] is not None

    p.ready = True
    p.controller.queue_all_nodes("test")
    assert await _drain(p.node_queue) == ["n1", "n2"]
    # an edit that breaks a rule goes to the sink, named, and changes nothing (no work queued)
    api.put("nodefeaturerules", rule_obj("r1", [{"name": "bad", "labels": {"x": "1"}, "matchFeatures": [
        {"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Equals"}}}]}]))
    await asyncio.sleep(0.05)
    assert [(r, reason) for r, _, reason in p.events.rules] == [("r1", "InvalidRule")]
    assert len(p.node_queue) == 0
    # a new rule object queues every node
    api.put("nodefeaturerules", rule_obj("r2", [dict(AVX_RULE, name="avx2")]))
    await asyncio.sleep(0.05)
    assert await _drain(p.node_queue) == ["n1", "n2"]

    # a Node delete drops what is kept for it, in the caches it was given
    await p.updater.process_node("n2")
    assert "n2" in p.desired and "n2" in p.evidence.nodes()
    api.remove("nodes", "n2")
    await asyncio.sleep(0.05)
    assert "n2" not in p.desired and "n2" not in p.evidence.nodes()
    await p.stop()


async def test_a_change_made_between_the_read_and_an_unguarded_write_is_repaired_in_the_same_pass() -> None:
    """A prune (or a person) removes nfd's labels while the master plans against its cache: the
    label patch carries no resourceVersion, so it succeeds, and the watch event of that removal
    arrives later with an older resourceVersion than ours (dropped as our own echo). The
    write's answer shows the removal; the master plans again on it and puts the labels back."""
    import copy

    api = _api()
    p = Parts(api)
    p.ready = True
    await p.start()
    await p.updater.process_node("n1")
    want = {f"{NS}/cpu-avx", f"{NS}/worker-label"}
    assert want <= set(api.obj("nodes", "n1")["metadata"]["labels"])  # type: ignore[index]
    # the worker adds a label; its event reaches the master at once
    api.put("nodefeatures", nodefeature("n1", flags={"cpu.cpuid": ["AVX", "SSE"]},
                                        labels={"worker-label": "1", "worker-label2": "2"}))
    await asyncio.sleep(0.05)
    # from now on events lag behind responses, as over a network; someone prunes the node
    api.watch_lag = 5.0
    pruned = copy.deepcopy(api.obj("nodes", "n1"))
    assert pruned is not None
    pruned["metadata"]["labels"] = {k: v for k, v in pruned["metadata"]["labels"].items() if not k.startswith(NS)}
    pruned["metadata"]["annotations"].pop(bk.FEATURE_LABELS)
    api.put("nodes", pruned)
    await p.updater.process_node("n1")
    node = api.obj("nodes", "n1")
    assert node is not None
    assert want | {f"{NS}/worker-label2"} <= set(node["metadata"]["labels"]), node["metadata"]["labels"]
    assert node["metadata"]["annotations"][bk.FEATURE_LABELS] == "cpu-avx,worker-label,worker-label2"
    api.watch_lag = 0.0
    await p.stop()
