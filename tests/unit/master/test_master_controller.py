"""NfdMaster against an in-memory API: pipeline, triggers, evidence and fault handling."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import orjson
import pytest
from _master_fakeapi import FakeApi, wire_event

from nfd.master.config import MasterConfig, Restrictions
from nfd.master.master import NfdMaster
from nfd.master.options import MasterOptions
from nfd.nodestate import bookkeeping as bk

NS = "feature.node.kubernetes.io"
NFD_NS = "nfd"


def nodefeature(node: str, *, name: str | None = None, namespace: str = NFD_NS, flags=None, attrs=None, labels=None):
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeature",
        "metadata": {
            "name": name or node,
            "namespace": namespace,
            "labels": {"nfd.node.kubernetes.io/node-name": node},
        },
        "spec": {
            "features": {
                "flags": {k: {"elements": {e: {} for e in v}} for k, v in (flags or {}).items()},
                "attributes": {k: {"elements": v} for k, v in (attrs or {}).items()},
                "instances": {},
            },
            "labels": labels or {},
        },
    }


def rule_obj(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureRule",
        "metadata": {"name": name},
        "spec": {"rules": rules},
    }


AVX_RULE = {
    "name": "avx",
    "labels": {"cpu-avx": "true"},
    "matchFeatures": [{"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Exists"}}}],
}


def node_obj(name: str, labels=None, annotations=None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {"kubernetes.io/hostname": name}, "annotations": annotations or {}},
        "status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "4"}},
    }


async def settle(master: NfdMaster, api: FakeApi, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    quiet = 0
    while loop.time() < end:
        await asyncio.sleep(0.01)
        if master.node_queue.idle() and master.group_queue.idle():
            quiet += 1
            if quiet >= 5:
                return
        else:
            quiet = 0
    raise AssertionError("master did not settle")


async def start(api: FakeApi, config: MasterConfig | None = None, **opts: Any) -> NfdMaster:
    options = MasterOptions(namespace=NFD_NS, delete_grace_s=opts.pop("grace", 0.05), batch_s=0.02, **opts)
    m = NfdMaster(api, config=config or MasterConfig(resync_period=0), options=options)  # type: ignore[arg-type]
    await m.start_caches()
    await asyncio.sleep(0.02)  # let the watches open
    await m.become_leader()
    await settle(m, api)
    return m


def removed_paths(api: FakeApi) -> list[str]:
    """Every removal the master's patches asked for, as JSON pointers: ``remove`` ops of JSON
    patches and ``null`` map entries of merge/strategic patches (labels, annotations, status)."""
    out = []
    for verb, _, body in api.writes():
        if verb != "PATCH":
            continue
        if isinstance(body, list):
            out += [op["path"] for op in body if op["op"] == "remove"]
            continue
        for section in ("metadata", "status"):
            for field, entries in (body.get(section) or {}).items():
                if isinstance(entries, dict):
                    out += [f"/{section}/{field}/" + k.replace("~", "~0").replace("/", "~1")
                            for k, v in entries.items() if v is None]
    return out


@pytest.fixture
def api() -> FakeApi:
    a = FakeApi()
    a.put("nodes", node_obj("n1"))
    a.put("nodes", node_obj("n2"))
    a.put("nodefeatures", nodefeature("n1", flags={"cpu.cpuid": ["AVX", "SSE"]}, labels={"worker-label": "1"}))
    a.put("nodefeatures", nodefeature("n2", flags={"cpu.cpuid": ["SSE"]}))
    a.put("nodefeaturerules", rule_obj("r1", [AVX_RULE]))
    return a


async def test_rules_and_nodefeature_labels_applied_then_noop(api: FakeApi) -> None:
    m = await start(api)
    n1 = api.obj("nodes", "n1")
    assert n1 is not None
    assert n1["metadata"]["labels"][f"{NS}/cpu-avx"] == "true"
    assert n1["metadata"]["labels"][f"{NS}/worker-label"] == "1"
    assert n1["metadata"]["annotations"][bk.FEATURE_LABELS] == "cpu-avx,worker-label"
    n2 = api.obj("nodes", "n2")
    assert n2 is not None and f"{NS}/cpu-avx" not in n2["metadata"]["labels"]
    # a full resync with nothing changed writes nothing
    before = len(api.writes())
    m.update_all_nodes("test")
    await settle(m, api)
    assert len(api.writes()) == before
    await m.stop()


async def test_rule_change_and_delete_propagate(api: FakeApi) -> None:
    m = await start(api)
    api.put("nodefeaturerules", rule_obj("r1", [dict(AVX_RULE, labels={"cpu-avx": "yes"})]))
    await settle(m, api)
    assert api.obj("nodes", "n1")["metadata"]["labels"][f"{NS}/cpu-avx"] == "yes"  # type: ignore[index]
    api.remove("nodefeaturerules", "r1")
    await settle(m, api)
    labels = api.obj("nodes", "n1")["metadata"]["labels"]  # type: ignore[index]
    assert f"{NS}/cpu-avx" not in labels
    assert labels[f"{NS}/worker-label"] == "1"
    await m.stop()


async def test_invalid_rule_skipped_others_work(api: FakeApi) -> None:
    api.put(
        "nodefeaturerules",
        rule_obj(
            "r0-bad",
            [
                {"name": "bad", "labels": {"x": "1"},
                 "matchFeatures": [{"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Equals"}}}]},
                {"name": "static", "labels": {"static": "1"}},
            ],
        ),
    )
    m = await start(api)
    labels = api.obj("nodes", "n1")["metadata"]["labels"]  # type: ignore[index]
    assert labels[f"{NS}/cpu-avx"] == "true"
    assert labels[f"{NS}/static"] == "1"
    assert f"{NS}/x" not in labels
    assert m.metrics.nfr_processing_errors._value.get() >= 1  # type: ignore[attr-defined]
    await m.stop()


async def test_first_pass_without_nodefeature_removes_nothing(api: FakeApi) -> None:
    # n3 carries labels from an earlier master run; its NodeFeature is not (yet) known
    api.put(
        "nodes",
        node_obj("n3", labels={f"{NS}/old": "1", "keep": "x"}, annotations={bk.FEATURE_LABELS: "old"}),
    )
    m = await start(api)
    n3 = api.obj("nodes", "n3")
    assert n3["metadata"]["labels"][f"{NS}/old"] == "1"  # type: ignore[index]
    assert f"/metadata/labels/{NS.replace('/', '~1')}~1old" not in removed_paths(api)
    assert m.updater.counts["skipped_removal"] >= 1
    # the next full pass has the evidence of one complete pass: a genuinely absent NodeFeature
    m.update_all_nodes("resync")
    await settle(m, api)
    assert f"{NS}/old" not in api.obj("nodes", "n3")["metadata"]["labels"]  # type: ignore[index]
    await m.stop()


async def test_nodefeature_delete_removes_exactly_its_labels(api: FakeApi) -> None:
    api.put(
        "nodefeatures",
        nodefeature("n1", name="vendor-n1", namespace="vendor", labels={"vendor.io/gpu": "true"}),
    )
    m = await start(api)
    assert api.obj("nodes", "n1")["metadata"]["labels"]["vendor.io/gpu"] == "true"  # type: ignore[index]
    api.remove("nodefeatures", "vendor-n1", "vendor")
    await asyncio.sleep(0.1)
    await settle(m, api)
    labels = api.obj("nodes", "n1")["metadata"]["labels"]  # type: ignore[index]
    assert "vendor.io/gpu" not in labels
    assert labels[f"{NS}/cpu-avx"] == "true"
    assert labels["kubernetes.io/hostname"] == "n1"
    # deleting the last NodeFeature removes everything it implied
    api.remove("nodefeatures", "n1", NFD_NS)
    await asyncio.sleep(0.1)
    await settle(m, api)
    labels = api.obj("nodes", "n1")["metadata"]["labels"]  # type: ignore[index]
    assert labels == {"kubernetes.io/hostname": "n1"}
    assert bk.FEATURE_LABELS not in api.obj("nodes", "n1")["metadata"]["annotations"]  # type: ignore[index]
    await m.stop()


async def test_worker_delete_and_recreate_removes_nothing(api: FakeApi) -> None:
    m = await start(api, grace=0.3)
    mark = len(api.writes())
    nf = api.obj("nodefeatures", "n1", NFD_NS)
    api.remove("nodefeatures", "n1", NFD_NS)
    await asyncio.sleep(0.05)
    api.put("nodefeatures", nf)  # type: ignore[arg-type]
    await asyncio.sleep(0.4)
    await settle(m, api)
    assert api.writes()[mark:] == []
    assert api.obj("nodes", "n1")["metadata"]["labels"][f"{NS}/cpu-avx"] == "true"  # type: ignore[index]
    await m.stop()


async def test_api_outage_retries_and_removes_nothing(api: FakeApi) -> None:
    m = await start(api)
    api.down = True
    api.break_watches()
    api.put("nodefeaturerules", rule_obj("r2", [{"name": "s", "labels": {"static": "1"}}]))
    m.update_all_nodes("resync during outage")
    await asyncio.sleep(0.3)
    assert api.obj("nodes", "n1")["metadata"]["labels"][f"{NS}/cpu-avx"] == "true"  # type: ignore[index]
    api.down = False
    # the informers relist after the outage and pick up r2
    for _ in range(200):
        await asyncio.sleep(0.02)
        if "r2" in m.rulebook.sets:
            break
    await settle(m, api)
    labels = api.obj("nodes", "n1")["metadata"]["labels"]  # type: ignore[index]
    assert labels[f"{NS}/cpu-avx"] == "true" and labels[f"{NS}/static"] == "1"
    assert not [p for p in removed_paths(api) if p.startswith("/metadata/labels")]
    await m.stop()


async def test_a_write_planned_on_a_stale_cache_still_lands_right(api: FakeApi) -> None:
    m = await start(api)
    # someone removed an nfd-owned label and the cache has not seen it yet (no event sent)
    node = api.obj("nodes", "n1")
    assert node is not None
    del node["metadata"]["labels"][f"{NS}/cpu-avx"]
    m.rulebook.remove("r1")
    assert m.controller.node_informer.get("n1")["metadata"]["labels"][f"{NS}/cpu-avx"] == "true"  # type: ignore[index]
    reads = api.metrics["GET"]
    # plans a removal of the vanished label: as a merge it is a no-op, not a failure to re-read on
    await m.updater.process_node("n1")
    assert api.metrics["GET"] == reads
    n1 = api.obj("nodes", "n1")
    assert n1 is not None
    assert f"{NS}/cpu-avx" not in n1["metadata"]["labels"]
    assert n1["metadata"]["annotations"][bk.FEATURE_LABELS] == "worker-label"
    await m.stop()


async def test_leader_handover_keeps_state_and_skips_writes(api: FakeApi) -> None:
    m = await start(api)
    await m.step_down()
    assert not m.is_leader
    mark = len(api.writes())
    api.put("nodefeaturerules", rule_obj("r2", [{"name": "s", "labels": {"static": "1"}}]))
    await asyncio.sleep(0.05)
    assert api.writes()[mark:] == []  # a standby writes nothing
    assert "r2" in m.rulebook.sets  # but keeps its caches warm
    await m.become_leader()
    await settle(m, api)
    assert api.obj("nodes", "n2")["metadata"]["labels"][f"{NS}/static"] == "1"  # type: ignore[index]
    assert not [p for p in removed_paths(api) if p.startswith("/metadata/labels")]
    await m.stop()


async def test_taints_and_extended_resources(api: FakeApi) -> None:
    api.put(
        "nodefeaturerules",
        rule_obj(
            "r2",
            [
                {
                    "name": "t",
                    "taints": [{"key": "example.com/avx", "value": "x", "effect": "NoSchedule"}],
                    "extendedResources": {"avx-units": "4"},
                    "annotations": {"note": "hello"},
                    "matchFeatures": [{"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Exists"}}}],
                }
            ],
        ),
    )
    m = await start(api, MasterConfig(resync_period=0, enable_taints=True))
    n1 = api.obj("nodes", "n1")
    assert n1 is not None
    assert n1["spec"]["taints"] == [{"key": "example.com/avx", "value": "x", "effect": "NoSchedule"}]
    assert n1["metadata"]["annotations"][bk.TAINTS] == "example.com/avx=x:NoSchedule"
    assert n1["status"]["capacity"][f"{NS}/avx-units"] == "4"
    assert n1["status"]["allocatable"][f"{NS}/avx-units"] == "4"
    assert n1["metadata"]["annotations"][bk.EXTENDED_RESOURCES] == "avx-units"
    assert n1["metadata"]["annotations"][f"{NS}/note"] == "hello"
    # switching taints off removes the nfd taint (upstream), config reload re-evaluates all
    m.set_config(MasterConfig(resync_period=0, enable_taints=False))
    await settle(m, api)
    n1 = api.obj("nodes", "n1")
    assert n1 is not None and n1["spec"]["taints"] == []
    assert bk.TAINTS not in n1["metadata"]["annotations"]
    await m.stop()


async def test_restrictions_disable_labels_and_no_publish(api: FakeApi) -> None:
    cfg = MasterConfig(resync_period=0, no_publish=True)
    m = await start(api, cfg)
    assert api.writes() == []
    m.set_config(replace(cfg, no_publish=False, restrictions=Restrictions(disable_labels=True)))
    await settle(m, api)
    assert f"{NS}/cpu-avx" not in api.obj("nodes", "n1")["metadata"]["labels"]  # type: ignore[index]
    await m.stop()


async def test_hand_removed_managed_label_is_restored_hand_labels_kept(api: FakeApi) -> None:
    m = await start(api)
    node = api.obj("nodes", "n1")
    assert node is not None
    node = dict(node)
    node["metadata"] = dict(node["metadata"], labels={"kubernetes.io/hostname": "n1", "admin": "mine"})
    api.put("nodes", node)
    await asyncio.sleep(0.05)
    await settle(m, api)
    labels = api.obj("nodes", "n1")["metadata"]["labels"]  # type: ignore[index]
    assert labels["admin"] == "mine"
    assert labels[f"{NS}/cpu-avx"] == "true"
    await m.stop()


async def test_node_feature_group_membership(api: FakeApi) -> None:
    api.put(
        "nodefeaturegroups",
        {
            "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
            "kind": "NodeFeatureGroup",
            "metadata": {"name": "avx-nodes", "namespace": NFD_NS},
            "spec": {
                "featureGroupRules": [
                    {"name": "avx", "matchFeatures": [
                        {"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Exists"}}}]}
                ]
            },
        },
    )
    m = await start(api, feature_gates={"NodeFeatureGroupAPI": True})
    grp = api.obj("nodefeaturegroups", "avx-nodes", NFD_NS)
    assert grp is not None and grp["status"]["nodes"] == [{"name": "n1"}]
    api.put("nodefeatures", nodefeature("n2", flags={"cpu.cpuid": ["AVX"]}))
    await asyncio.sleep(0.05)
    await settle(m, api)
    grp = api.obj("nodefeaturegroups", "avx-nodes", NFD_NS)
    assert grp is not None and grp["status"]["nodes"] == [{"name": "n1"}, {"name": "n2"}]
    await m.stop()


async def test_without_node_watch_permission_reads_nodes_like_upstream(api: FakeApi) -> None:
    api.forbidden.add(("watch", "nodes"))
    m = await start(api)
    assert not m.controller.watch_nodes
    n1 = api.obj("nodes", "n1")
    assert n1 is not None and n1["metadata"]["labels"][f"{NS}/cpu-avx"] == "true"
    writes = len(api.writes())
    m.update_all_nodes("resync")
    await asyncio.sleep(0.05)
    await settle(m, api)
    assert len(api.writes()) == writes  # still no writes when nothing changed
    await m.stop()


async def test_namespace_selector_restricts_nodefeatures(api: FakeApi) -> None:
    api.put("namespaces", {"metadata": {"name": NFD_NS, "labels": {"trusted": "yes"}}})
    api.put("namespaces", {"metadata": {"name": "vendor", "labels": {}}})
    api.put("nodefeatures", nodefeature("n1", name="vendor-n1", namespace="vendor", labels={"vendor.io/gpu": "1"}))
    sel = {"matchLabels": {"trusted": "yes"}}
    m = await start(api, MasterConfig(resync_period=0, restrictions=Restrictions(node_feature_namespace_selector=sel)))
    labels = api.obj("nodes", "n1")["metadata"]["labels"]  # type: ignore[index]
    assert "vendor.io/gpu" not in labels and labels[f"{NS}/cpu-avx"] == "true"
    # labelling the namespace selects it: every node is re-evaluated
    api.put("namespaces", {"metadata": {"name": "vendor", "labels": {"trusted": "yes"}}})
    await asyncio.sleep(0.05)
    await settle(m, api)
    assert api.obj("nodes", "n1")["metadata"]["labels"]["vendor.io/gpu"] == "1"  # type: ignore[index]
    await m.stop()


async def test_parallelism_reload_resizes_updaters(api: FakeApi) -> None:
    m = await start(api, MasterConfig(resync_period=0, nfd_api_parallelism=2))
    assert len(m.pool.tasks) == 2
    m.set_config(MasterConfig(resync_period=0, nfd_api_parallelism=5))
    await asyncio.sleep(0.05)
    await settle(m, api)
    assert len(m.pool.tasks) == 5
    await m.stop()


async def test_prune_removes_owned_items_and_nfd_annotations(api: FakeApi) -> None:
    from nfd.master.prune import prune

    m = await start(api)
    await m.stop()
    node = api.obj("nodes", "n1")
    assert node is not None
    node["metadata"]["annotations"]["nfd.node.kubernetes.io/extra"] = "x"
    node["metadata"]["annotations"]["other.io/keep"] = "y"
    rc = await prune(api, config=MasterConfig(), instance="")  # type: ignore[arg-type]
    assert rc == 0
    n1 = api.obj("nodes", "n1")
    assert n1 is not None
    assert n1["metadata"]["labels"] == {"kubernetes.io/hostname": "n1"}
    assert n1["metadata"]["annotations"] == {"other.io/keep": "y"}


async def test_delete_grace_not_shortened_by_other_events(api: FakeApi) -> None:
    api.put("nodefeatures", nodefeature("n1", name="vendor-n1", namespace="vendor", labels={"vendor.io/gpu": "1"}))
    m = await start(api, grace=0.4)
    mark = len(api.writes())
    nf = api.obj("nodefeatures", "n1", NFD_NS)
    api.remove("nodefeatures", "n1", NFD_NS)
    # another producer updates its object for the same node right away
    api.put("nodefeatures", nodefeature("n1", name="vendor-n1", namespace="vendor", labels={"vendor.io/gpu": "2"}))
    await asyncio.sleep(0.1)
    api.put("nodefeatures", nf)  # type: ignore[arg-type]  # the worker re-creates its object
    await asyncio.sleep(0.5)
    await settle(m, api)
    labels = api.obj("nodes", "n1")["metadata"]["labels"]  # type: ignore[index]
    assert labels["vendor.io/gpu"] == "2" and labels[f"{NS}/cpu-avx"] == "true"
    assert not [p for p in removed_paths(api)[:] if p.startswith("/metadata/labels")]
    assert len(api.writes()) > mark
    await m.stop()


@pytest.mark.parametrize("peek", [True, False], ids=["echoes-peeked", "echoes-decoded"])
async def test_echoes_of_own_writes_queue_nothing(api: FakeApi, peek: bool) -> None:
    # two requests for n1 (status for the extended resource, then metadata): two echoes
    api.put("nodefeaturerules", rule_obj("r1", [dict(AVX_RULE, extendedResources={"avx": "1"})]))
    m = await start(api)
    skipped_at_start = m.controller.echoes_skipped
    if not peek:  # as for a line the peek does not recognise: the echo is decoded and dropped
        m.controller.node_informer.peek = None
    api.watch_lag = 0.05
    m.update_all_nodes("resync")  # nothing to write: a no-op pass
    await settle(m, api)
    assert m.updater.counts["noop"] == 3  # n2 at start, then both nodes
    api.put("nodefeaturerules", rule_obj("r1", [dict(AVX_RULE, labels={"cpu-avx": "v2"}, extendedResources={"avx": "2"})]))
    await asyncio.sleep(0.2)
    await settle(m, api)
    # two nodes, each processed once: the watch events of our writes re-queue neither
    # 3 passes per node (start, resync, rule change); the lagging echoes of n1's two writes
    # per change re-queued nothing
    assert m.metrics.node_update_requests._value.get() == 6  # type: ignore[attr-defined]
    assert m.updater.counts["written"] == 2 and m.updater.counts["noop"] == 4
    # the cache holds what our last write returned
    n1 = api.obj("nodes", "n1")
    assert n1 is not None
    cached = m.controller.node_informer.get("n1")
    assert cached is not None and cached["metadata"]["resourceVersion"] == n1["metadata"]["resourceVersion"]
    if peek:  # both echoes of each write were taken from their first bytes, not decoded
        assert m.controller.echoes_skipped == api.metrics["peeked"] >= 4
    else:
        assert m.controller.echoes_decoded >= 2 and m.controller.echoes_skipped == skipped_at_start
    await m.stop()


def _node_line(name: str, rv: int, *, etype: str = "MODIFIED", labels: dict[str, str] | None = None) -> bytes:
    obj = {"kind": "Node", "apiVersion": "v1",
           "metadata": {"labels": labels or {}, "resourceVersion": str(rv), "uid": "0f9e-11", "name": name}}
    return orjson.dumps(wire_event({"type": etype, "object": obj}))


async def test_only_the_echo_of_our_newest_write_to_a_cached_node_is_skipped(api: FakeApi) -> None:
    m = NfdMaster(api, config=MasterConfig(), options=MasterOptions(namespace=NFD_NS))  # type: ignore[arg-type]
    m.controller.node_informer.cache[("", "n1")] = {"metadata": {"name": "n1", "resourceVersion": "40"}}
    m.controller.own_rv["n1"] = 50
    m.controller.own_slim["n1"] = {"metadata": {"name": "n1", "resourceVersion": "50"}}
    m.controller.own_rv["n9"] = 50  # written, but not in the cache: its event must be seen
    peek = m.controller.peek_node_line
    assert peek(_node_line("n1", 45)) == {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "45"}}}
    assert "n1" in m.controller.own_slim  # kept until the echo of the newest write
    assert peek(_node_line("n1", 50)) is not None and "n1" not in m.controller.own_slim
    assert peek(_node_line("n1", 51)) is None  # newer than our write: someone else's
    assert peek(_node_line("n9", 50)) is None
    assert peek(_node_line("n2", 5)) is None  # never written by us
    assert peek(_node_line("n1", 45, etype="ADDED")) is None
    # a label named resourceVersion comes after metadata.resourceVersion on the wire
    assert peek(_node_line("n1", 51, labels={"resourceVersion": "1"})) is None
    # anything not in the API server's exact shape is decoded
    odd = _node_line("n1", 45).replace(b'"kind":"Node",', b"")
    assert peek(odd) is None
    assert peek(b'{"type":"MODIFIED","object":{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1",'
                b'"uid":"x","resourceVersion":"45"') is None
    assert peek(b"garbage") is None and peek(b"") is None
    assert m.controller.echoes_skipped == 2


async def test_server_errors_on_writes_are_retried_with_backoff(api: FakeApi) -> None:
    m = await start(api)
    api.fail_writes = 3
    api.put("nodefeaturerules", rule_obj("r1", [dict(AVX_RULE, labels={"cpu-avx": "v2"})]))
    await asyncio.sleep(0.6)  # 50 ms, 100 ms, 200 ms backoff
    await settle(m, api)
    assert api.fail_writes == 0
    labels = api.obj("nodes", "n1")["metadata"]["labels"]  # type: ignore[index]
    assert labels[f"{NS}/cpu-avx"] == "v2" and labels[f"{NS}/worker-label"] == "1"
    assert not [p for p in removed_paths(api) if p.startswith("/metadata/labels")]
    await m.stop()


async def test_echoes_of_own_writes_requeue_nothing_but_a_change_meanwhile_does(api: FakeApi) -> None:
    m = await start(api, react_to_node_changes=True)
    processed: list[str] = []
    inner = m.updater._process_node

    async def counting(name: str, **kw: Any) -> None:
        processed.append(name)
        await inner(name, **kw)

    m.updater._process_node = counting  # type: ignore[method-assign]
    # A new NodeFeature for n2 needs a write; someone removes the managed label right after it.
    real_request = api._request

    async def meddling(method: str, path: str, **kw: Any) -> Any:
        out = await real_request(method, path, **kw)
        if method == "PATCH" and "/nodes/" in path:
            if path.endswith("/nodes/n2") and not getattr(api, "meddled", False):
                api.meddled = True  # type: ignore[attr-defined]
                n2 = api.obj("nodes", "n2")
                assert n2 is not None
                n2 = dict(n2, metadata=dict(n2["metadata"], labels={"kubernetes.io/hostname": "n2"}))
                api.put("nodes", n2)
            await asyncio.sleep(0.01)  # the watch delivers before the answer, as it may over a network
        return out

    api._request = meddling  # type: ignore[method-assign]
    api.put("nodefeatures", nodefeature("n2", flags={"cpu.cpuid": ["AVX"]}))
    await settle(m, api)
    assert api.obj("nodes", "n2")["metadata"]["labels"][f"{NS}/cpu-avx"] == "true"  # type: ignore[index]
    assert processed.count("n2") == 2  # the change meanwhile, not the echo, brought it back
    processed.clear()
    api.put("nodefeatures", nodefeature("n1", flags={"cpu.cpuid": ["SSE"]}, labels={"worker-label": "2"}))
    await settle(m, api)
    assert processed == ["n1"]  # the echo of its write did not queue it again
    await m.stop()


async def test_unknown_rule_fields_are_logged_once_per_revision(api: FakeApi, caplog: pytest.LogCaptureFixture) -> None:
    """A typo (``matchFeature:``) makes a rule match every node: the master names the field, once
    per revision of the object (not on every evaluation or unchanged resync), and applies the
    rule as the decoder reads it (the field ignored), as upstream."""
    import logging

    typo = {"name": "typo", "labels": {"typo": "1"},
            "matchFeature": [{"feature": "cpu.cpuid", "matchExpressions": {"AVX512F": {"op": "Exists"}}}]}
    api.put("nodefeaturerules", rule_obj("r2", [typo]))
    caplog.set_level(logging.WARNING, logger="nfd.master")

    def warned() -> list[str]:
        return [r.getMessage() for r in caplog.records if "unknown field" in r.getMessage()]

    m = await start(api)
    assert len(warned()) == 1
    assert warned()[0].startswith('NodeFeatureRule r2 (resourceVersion ')
    assert 'unknown field "spec.rules[0].matchFeature"; did you mean matchFeatures? (as written, the rule has no ' \
           'match term and matches every node)' in warned()[0]
    assert api.obj("nodes", "n2")["metadata"]["labels"][f"{NS}/typo"] == "1"  # type: ignore[index]
    # node passes and an unchanged re-delivery of the object: no new line
    m.update_all_nodes("test")
    api.put("nodefeaturerules", api.obj("nodefeaturerules", "r2"))  # type: ignore[arg-type]
    await settle(m, api)
    assert len(warned()) == 1
    # a new revision with the typo still there: one more
    api.put("nodefeaturerules", rule_obj("r2", [dict(typo, labels={"typo": "2"})]))
    await settle(m, api)
    assert len(warned()) == 2
    # fixed: nothing more
    fixed = {k: v for k, v in typo.items() if k != "matchFeature"}
    api.put("nodefeaturerules", rule_obj("r2", [dict(fixed, matchFeatures=typo["matchFeature"])]))
    await settle(m, api)
    assert len(warned()) == 2
    await m.stop()


async def test_prune_reads_the_node_again_when_a_key_it_removes_is_already_gone(api: FakeApi) -> None:
    """A master still running changes the node between the prune's read and its JSON patch:
    the patch names a key that is gone (422); the prune reads again and finishes."""
    import copy

    from nfd.master.prune import prune

    m = await start(api)
    await m.stop()
    real = api._request
    raced = []

    async def racing(method: str, path: str, **kw: Any) -> Any:
        if method == "PATCH" and not raced:
            raced.append(path)
            node = copy.deepcopy(api.obj("nodes", "n1"))
            assert node is not None
            node["metadata"]["labels"].pop(f"{NS}/cpu-avx")  # someone else removes one first
            api.put("nodes", node)
        return await real(method, path, **kw)

    api._request = racing  # type: ignore[method-assign]
    rc = await prune(api, config=MasterConfig(), instance="")  # type: ignore[arg-type]
    assert raced and rc == 0
    n1 = api.obj("nodes", "n1")
    assert n1 is not None
    assert n1["metadata"]["labels"] == {"kubernetes.io/hostname": "n1"}
    assert not [k for k in n1["metadata"]["annotations"] if k.startswith("nfd.node.kubernetes.io/")]
