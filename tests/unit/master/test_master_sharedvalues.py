"""Nodes with the same inputs share one desired state and one set of rule outputs in the
master's cache, and the Node cache holds each label and annotation string once
(nfd.master.sharedvalues, nfd.nodestate.nodeplan.slim_node)."""

from __future__ import annotations

import orjson
from _master_fakeapi import FakeApi
from test_master_controller import AVX_RULE, NS, node_obj, nodefeature, rule_obj, start

from nfd.master.sharedvalues import SharedValues
from nfd.nodestate.nodeplan import slim_node
from nfd.rules.engine import RuleOutput


def test_equal_outputs_are_one_object_and_different_ones_are_not() -> None:
    pool = SharedValues()
    a = pool.outputs({("r", "x", 0): RuleOutput(labels={"a": "1"}), ("r", "y", 0): RuleOutput(vars={"v": "2"})})
    b = pool.outputs({("r", "x", 0): RuleOutput(labels={"a": "1"}), ("r", "y", 0): RuleOutput(vars={"v": "2"})})
    c = pool.outputs({("r", "x", 0): RuleOutput(labels={"a": "2"}), ("r", "y", 0): RuleOutput(vars={"v": "2"})})
    assert a is b and a == b
    assert c is not a and c[("r", "x", 0)].labels == {"a": "2"}
    assert c[("r", "y", 0)] is a[("r", "y", 0)]  # the equal output inside a different mapping
    # a taint list is part of an output's identity
    t1 = pool.outputs({("r", "t", 0): RuleOutput(taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])})
    t2 = pool.outputs({("r", "t", 0): RuleOutput(taints=[{"key": "k", "value": "v", "effect": "NoExecute"}])})
    assert t1 is not t2


def test_the_pool_is_bounded_and_keeps_answers_right() -> None:
    pool = SharedValues(limit=10)
    held = [pool.outputs({("r", "x", 0): RuleOutput(labels={"n": str(i)})}) for i in range(50)]
    assert len(pool._pool) <= 10
    assert [h[("r", "x", 0)].labels["n"] for h in held] == [str(i) for i in range(50)]
    again = pool.outputs({("r", "x", 0): RuleOutput(labels={"n": "49"})})
    assert again == held[49]


async def test_nodes_with_the_same_features_share_their_cached_state() -> None:
    api = FakeApi()
    for n in ("n1", "n2", "n3"):
        api.put("nodes", node_obj(n))
    api.put("nodefeatures", nodefeature("n1", flags={"cpu.cpuid": ["AVX", "SSE"]}, labels={"w": "1"}))
    api.put("nodefeatures", nodefeature("n2", flags={"cpu.cpuid": ["AVX", "SSE"]}, labels={"w": "1"}))
    api.put("nodefeatures", nodefeature("n3", flags={"cpu.cpuid": ["SSE"]}, labels={"w": "1"}))
    api.put("nodefeaturerules", rule_obj("r1", [AVX_RULE, {"name": "all", "labels": {"every": "node"}}]))
    m = await start(api)
    try:
        cache = m.updater.desired_cache
        assert cache["n1"].desired is cache["n2"].desired
        assert cache["n1"].outputs is cache["n2"].outputs
        assert cache["n3"].desired is not cache["n1"].desired
        assert cache["n3"].outputs[("r1", "all", 0)] is cache["n1"].outputs[("r1", "all", 0)]
        for n, avx in (("n1", True), ("n2", True), ("n3", False)):
            labels = api.obj("nodes", n)["metadata"]["labels"]
            assert (f"{NS}/cpu-avx" in labels) is avx and labels[f"{NS}/every"] == "node"
    finally:
        await m.stop()


def test_slim_nodes_hold_each_string_once() -> None:
    def decoded(name: str) -> dict:
        obj = node_obj(name, labels={"feature.node.kubernetes.io/cpu-cpuid.AVX512F": "true", "kubernetes.io/hostname": name},
                       annotations={"nfd.node.kubernetes.io/feature-labels": ",".join(f"label-{i}" for i in range(200))})
        obj["spec"] = {"taints": [{"key": "example.com/gpu", "value": "true", "effect": "NoSchedule"}]}
        return slim_node(orjson.loads(orjson.dumps(obj)))

    a, b = decoded("node-a"), decoded("node-b")
    ann_a = a["metadata"]["annotations"]["nfd.node.kubernetes.io/feature-labels"]
    ann_b = b["metadata"]["annotations"]["nfd.node.kubernetes.io/feature-labels"]
    assert ann_a == ann_b and ann_a is ann_b
    assert a["metadata"]["labels"]["feature.node.kubernetes.io/cpu-cpuid.AVX512F"] is \
        b["metadata"]["labels"]["feature.node.kubernetes.io/cpu-cpuid.AVX512F"]
    assert a["spec"]["taints"][0]["key"] is b["spec"]["taints"][0]["key"]
    assert a["status"]["capacity"] == {"cpu": "4"} and a["metadata"]["labels"]["kubernetes.io/hostname"] == "node-a"
