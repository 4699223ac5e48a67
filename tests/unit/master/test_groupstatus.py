"""NodeFeatureGroup status: representation (materializePolicy), the object size guard, and
groups in every namespace processed by the master."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from _master_fakeapi import FakeApi
from test_master_controller import node_obj, nodefeature, settle, start

from nfd.k8s import errors as kerr
from nfd.master import groupstatus

NFD_NS = "nfd"


def group(name: str = "g", namespace: str = "team-a", policy: str | None = None,
          status: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"featureGroupRules": [{"name": "avx", "matchFeatures": [
        {"feature": "cpu.cpuid", "matchExpressions": {"AVX": {"op": "Exists"}}}]}]}
    if policy is not None:
        spec["materializePolicy"] = policy
    obj: dict[str, Any] = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureGroup",
                           "metadata": {"name": name, "namespace": namespace, "resourceVersion": "7"},
                           "spec": spec}
    if status is not None:
        obj["status"] = status
    return obj


class Recorder:
    """An ApiClient that records requests and answers each with ``answer`` (or raises it)."""

    def __init__(self, answer: Any = None) -> None:
        self.requests: list[tuple[str, str, Any]] = []
        self.answer = answer

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        self.requests.append((method, path, body))
        if isinstance(self.answer, Exception):
            raise self.answer
        return body


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    groupstatus._refused.clear()
    groupstatus._compiled.clear()
    groupstatus._written.clear()
    yield
    groupstatus._refused.clear()
    groupstatus._compiled.clear()
    groupstatus._written.clear()


def test_desired_status_per_policy() -> None:
    assert groupstatus.desired_status("Full", ["a", "b"]) == {"nodes": [{"name": "a"}, {"name": "b"}], "nodeCount": 2}
    assert groupstatus.desired_status("CountOnly", ["a", "b"]) == {"nodes": [], "nodeCount": 2}
    assert groupstatus.policy_of(group()) == "Full"
    assert groupstatus.policy_of(group(policy="CountOnly")) == "CountOnly"


def test_status_current() -> None:
    full = groupstatus.desired_status("Full", ["a"])
    assert groupstatus.status_current(group(status={"nodes": [{"name": "a"}], "nodeCount": 1}), full)
    # a CRD without nodeCount prunes it: the right nodes are enough, no write on every pass
    assert groupstatus.status_current(group(status={"nodes": [{"name": "a"}]}), full)
    assert not groupstatus.status_current(group(status={"nodes": [{"name": "b"}], "nodeCount": 1}), full)
    count = groupstatus.desired_status("CountOnly", ["a"])
    assert groupstatus.status_current(group(status={"nodes": [], "nodeCount": 1}), count)
    assert not groupstatus.status_current(group(status={"nodes": [{"name": "a"}], "nodeCount": 1}), count)
    assert not groupstatus.status_current(group(status={"nodes": []}), count)
    assert not groupstatus.status_current(group(), groupstatus.desired_status("CountOnly", []))


def test_estimated_size_is_the_object_without_managed_fields() -> None:
    obj = group()
    body = json.loads(json.dumps(obj))
    body["status"] = groupstatus.desired_status("Full", [])
    empty = groupstatus.estimated_size(body)
    body["status"] = groupstatus.desired_status("Full", ["node-0001"])
    assert groupstatus.estimated_size(body) - empty == len('{"name":"node-0001"}') + len("1") - len("0")
    # 20,000 names of 100 characters: over the limit as a list, tiny as a count
    names = [f"node-{i:05d}".ljust(100, "x") for i in range(20000)]
    body["status"] = groupstatus.desired_status("Full", names)
    assert groupstatus.estimated_size(body) > groupstatus.STATUS_SIZE_LIMIT
    body["status"] = groupstatus.desired_status("Full", names[:12000])
    assert groupstatus.estimated_size(body) < groupstatus.STATUS_SIZE_LIMIT
    body["status"] = groupstatus.desired_status("CountOnly", names)
    assert groupstatus.estimated_size(body) < 2000


async def test_full_status_written_in_the_groups_namespace_without_managed_fields() -> None:
    api = Recorder()
    obj = group(status={"nodes": []})
    obj["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}]
    assert await groupstatus.write_status(api, obj=obj, members=["a", "b"])  # type: ignore[arg-type]
    ((method, path, body),) = api.requests
    assert method == "PUT"
    assert path == "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/team-a/nodefeaturegroups/g/status"
    assert body["status"] == {"nodes": [{"name": "a"}, {"name": "b"}], "nodeCount": 2}
    assert "managedFields" not in body["metadata"] and body["metadata"]["resourceVersion"] == "7"
    assert obj["metadata"]["managedFields"]  # the cached object is untouched
    # already current: nothing written
    api.requests.clear()
    assert not await groupstatus.write_status(api, obj=dict(obj, status=body["status"]), members=["a", "b"])  # type: ignore[arg-type]
    assert not api.requests


async def test_count_only_writes_the_count_and_no_list() -> None:
    api = Recorder()
    obj = group(policy="CountOnly", status={"nodes": [{"name": "a"}], "nodeCount": 1})
    assert await groupstatus.write_status(api, obj=obj, members=[f"n{i}" for i in range(50000)])  # type: ignore[arg-type]
    assert api.requests[0][2]["status"] == {"nodes": [], "nodeCount": 50000}


async def test_too_large_is_refused_once_and_the_last_status_kept(caplog: pytest.LogCaptureFixture) -> None:
    api = Recorder()
    obj = group(status={"nodes": [{"name": "a"}], "nodeCount": 1})
    members = [f"node-{i:05d}" for i in range(2000)]
    caplog.set_level(logging.INFO, logger="nfd.master.groupstatus")
    for _ in range(3):
        assert not await groupstatus.write_status(api, obj=obj, members=members, limit=20000)  # type: ignore[arg-type]
    assert not api.requests
    lines = [r for r in caplog.records if r.name == "nfd.master.groupstatus"]
    assert len(lines) == 1 and lines[0].levelno == logging.ERROR
    msg = lines[0].getMessage()
    assert "team-a/g" in msg and "20000 byte limit" in msg and "2000 nodes" in msg and "CountOnly" in msg
    # fits again (fewer members): written, and a later refusal is logged again
    assert await groupstatus.write_status(api, obj=obj, members=members[:10], limit=20000)  # type: ignore[arg-type]
    assert not await groupstatus.write_status(api, obj=obj, members=members, limit=20000)  # type: ignore[arg-type]
    assert len([r for r in caplog.records if r.name == "nfd.master.groupstatus" and r.levelno == logging.ERROR]) == 2


@pytest.mark.parametrize("error", [
    kerr.ApiError(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728"),
    kerr.ApiError(500, "InternalError", "etcdserver: request is too large"),
])
async def test_server_side_too_large_is_refused_not_retried(error: kerr.ApiError,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    api = Recorder(error)
    caplog.set_level(logging.INFO, logger="nfd.master.groupstatus")
    obj = group()
    assert not await groupstatus.write_status(api, obj=obj, members=["a"])  # type: ignore[arg-type]
    assert not await groupstatus.write_status(api, obj=obj, members=["a"])  # type: ignore[arg-type]
    lines = [r.getMessage() for r in caplog.records if r.name == "nfd.master.groupstatus"]
    assert len(lines) == 1 and "team-a/g" in lines[0] and "too large" in lines[0]


async def test_other_errors_still_raise_for_a_retry() -> None:
    api = Recorder(kerr.ApiError(409, "Conflict", "the object has been modified"))
    with pytest.raises(kerr.ApiError):
        await groupstatus.write_status(api, obj=group(), members=["a"])  # type: ignore[arg-type]


async def test_unsupported_policy_is_refused_out_loud(caplog: pytest.LogCaptureFixture) -> None:
    api = Recorder()
    caplog.set_level(logging.INFO, logger="nfd.master.groupstatus")
    obj = group(policy="Labels", status={"nodes": [{"name": "a"}]})
    for _ in range(2):
        assert not await groupstatus.write_status(api, obj=obj, members=["a", "b"])  # type: ignore[arg-type]
    assert not api.requests
    (line,) = [r.getMessage() for r in caplog.records if r.name == "nfd.master.groupstatus"]
    assert "team-a/g" in line and "spec.materializePolicy 'Labels'" in line


async def test_groups_in_every_namespace_get_their_status() -> None:
    api = FakeApi()
    for n, flags in (("n1", ["AVX"]), ("n2", ["AVX"]), ("n3", ["SSE"])):
        api.put("nodes", node_obj(n))
        api.put("nodefeatures", nodefeature(n, flags={"cpu.cpuid": flags}))
    api.put("nodefeaturegroups", group("here", NFD_NS))
    api.put("nodefeaturegroups", group("there", "team-a"))
    api.put("nodefeaturegroups", group("count", "team-b", policy="CountOnly"))
    m = await start(api, feature_gates={"NodeFeatureGroupAPI": True})
    try:
        for name, ns in (("here", NFD_NS), ("there", "team-a")):
            obj = api.obj("nodefeaturegroups", name, ns)
            assert obj is not None and obj["status"] == {"nodes": [{"name": "n1"}, {"name": "n2"}], "nodeCount": 2}
        obj = api.obj("nodefeaturegroups", "count", "team-b")
        assert obj is not None and obj["status"] == {"nodes": [], "nodeCount": 2}
        # a group created later in yet another namespace, then a membership change
        api.put("nodefeaturegroups", group("late", "team-c"))
        api.put("nodefeatures", nodefeature("n3", flags={"cpu.cpuid": ["AVX"]}))
        await asyncio.sleep(0.05)
        await settle(m, api)
        obj = api.obj("nodefeaturegroups", "late", "team-c")
        assert obj is not None and obj["status"]["nodeCount"] == 3
        obj = api.obj("nodefeaturegroups", "count", "team-b")
        assert obj is not None and obj["status"] == {"nodes": [], "nodeCount": 3}
        # switching the policy rewrites the status
        api.put("nodefeaturegroups", group("count", "team-b", policy="Full", status=obj["status"]))
        await asyncio.sleep(0.05)
        await settle(m, api)
        obj = api.obj("nodefeaturegroups", "count", "team-b")
        assert obj is not None and [n["name"] for n in obj["status"]["nodes"]] == ["n1", "n2", "n3"]
    finally:
        await m.stop()


async def test_a_status_someone_else_wrote_is_a_reason_to_recompute_our_echo_is_not() -> None:
    api = Recorder()
    old = group(status={"nodes": []})
    assert await groupstatus.write_status(api, obj=old, members=["a"])  # type: ignore[arg-type]
    echo = group(status={"nodes": [{"name": "a"}], "nodeCount": 1})
    assert not groupstatus.status_overwritten(echo, old)  # the echo of our own write
    assert not groupstatus.status_overwritten(echo, echo)  # status unchanged (a label edit, say)
    forged = group(status={"nodes": [{"name": "forged"}], "nodeCount": 1})
    assert groupstatus.status_overwritten(forged, echo)
    assert groupstatus.status_overwritten(group(), echo)  # cleared
    groupstatus.forget(groupstatus.group_key(echo))
    assert groupstatus.status_overwritten(echo, old)  # never written by us: recompute
