"""nfd-master's check of the served rule CRDs (nfd.master.crdcheck): what an older CRD lacks is
said once per change (log line, Warning Event while leading, gauge); the e2e test
tests/e2e/test_served_crds.py runs it against the real apiserver."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest

from nfd.api.crds import load_crds
from nfd.api.schema import missing_fields, object_schema, served_schema
from nfd.master.crdcheck import CrdCheck, crd_gaps
from nfd.master.metrics import MasterMetrics

RULES_CRD = "nodefeaturerules.nfd.k8s-sigs.io"


def crd(name: str, *, without: tuple[str, ...] = ()) -> dict[str, Any]:
    (c,) = [copy.deepcopy(c) for c in load_crds() if c["metadata"]["name"] == name]
    for v in c["spec"]["versions"]:
        spec = v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        for lf in ("rules", "featureGroupRules"):
            if lf in spec:
                for f in without:
                    spec[lf]["items"]["properties"].pop(f)
    c["metadata"]["uid"] = "u1"
    return c


def test_missing_fields() -> None:
    ours = object_schema("NodeFeatureRule")
    assert missing_fields(ours, served_schema(crd(RULES_CRD)) or {}) == []
    assert missing_fields(ours, served_schema(crd(RULES_CRD, without=("matchCEL", "matchAny"))) or {}) == [
        "spec.rules[].matchAny", "spec.rules[].matchCEL"]
    assert missing_fields(ours, {"type": "object", "x-kubernetes-preserve-unknown-fields": True}) == []
    assert crd_gaps(RULES_CRD, None) == ["v1alpha1"]
    other = crd(RULES_CRD)
    other["spec"]["versions"][0]["name"] = "v1beta9"
    assert crd_gaps(RULES_CRD, other) == ["v1alpha1"]


class Api:
    """Nothing is requested in these tests (no start()): the informers are never started."""


def make(leading: list[bool]) -> tuple[CrdCheck, MasterMetrics, list[Any]]:
    metrics = MasterMetrics()
    spawned: list[Any] = []

    def spawn(coro: Any) -> None:
        spawned.append(coro)
        coro.close()  # never awaited here: post_event's arguments are checked instead

    chk = CrdCheck(Api(), write_api=Api(), metrics=metrics, spawn=spawn, leading=lambda: leading[0])  # type: ignore[arg-type]
    return chk, metrics, spawned


def gauge(metrics: MasterMetrics, name: str) -> float | None:
    return metrics.registry.get_sample_value("nfd_master_crd_missing_fields", {"crd": name})


def test_said_once_per_change(caplog: pytest.LogCaptureFixture) -> None:
    leading = [False]
    chk, metrics, spawned = make(leading)
    caplog.set_level(logging.INFO, logger="nfd.master")
    old = crd(RULES_CRD, without=("matchCEL",))
    chk.check(RULES_CRD, old)
    chk.check(RULES_CRD, old)  # the same again (a relist, an unrelated edit): nothing new
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [f"the served CRD {RULES_CRD} lacks fields this nfd-master evaluates: spec.rules[].matchCEL; "
                     "the API server prunes them from every object it stores, so nfd-master never sees them (a rule "
                     "left without a match term matches every node); upgrade the CRDs: kubectl apply --server-side "
                     "--force-conflicts -k crds/ (docs/install.md)"]
    assert gauge(metrics, RULES_CRD) == 1.0
    assert spawned == []  # not leading: the Event waits
    leading[0] = True
    chk.post_pending()
    assert len(spawned) == 1
    chk.post_pending()
    assert len(spawned) == 1  # once
    caplog.clear()
    chk.check(RULES_CRD, crd(RULES_CRD))  # upgraded
    assert [r.getMessage() for r in caplog.records] == [
        f"the served CRD {RULES_CRD} now has every field this nfd-master evaluates"]
    assert gauge(metrics, RULES_CRD) == 0.0
    assert len(spawned) == 1


def test_the_event_is_a_warning_on_the_crd(monkeypatch: pytest.MonkeyPatch) -> None:
    posted: list[dict[str, Any]] = []

    async def post_event(api: Any, **kw: Any) -> None:
        posted.append(kw)

    monkeypatch.setattr("nfd.master.crdcheck.post_event", post_event)
    chk, _, spawned = make([True])
    chk.spawn = lambda coro: spawned.append(coro)  # type: ignore[method-assign]
    chk.check(RULES_CRD, crd(RULES_CRD, without=("matchCEL",)))
    (coro,) = spawned
    with pytest.raises(StopIteration):
        coro.send(None)
    (kw,) = posted
    assert kw["namespace"] == "default" and kw["reason"] == "OutdatedCRD" and kw["type_"] == "Warning"
    assert kw["involved"] == {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                              "metadata": {"name": RULES_CRD, "uid": "u1"}}
    assert "spec.rules[].matchCEL" in kw["message"]


def test_without_rbac_one_line_and_no_watch(caplog: pytest.LogCaptureFixture) -> None:
    """Under upstream's ClusterRole (no CRD grant) the check is skipped with one line."""
    import asyncio

    from nfd.k8s.errors import ApiError

    class Forbidden:
        async def request(self, method: str, path: str, **kw: Any) -> Any:
            raise ApiError(403, "Forbidden", "customresourcedefinitions is forbidden")

    metrics = MasterMetrics()
    chk = CrdCheck(Forbidden(), write_api=Forbidden(), metrics=metrics, spawn=lambda c: c.close(),  # type: ignore[arg-type]
                   leading=lambda: True)
    caplog.set_level(logging.INFO, logger="nfd.master")
    asyncio.run(chk.start())
    msgs = [r.getMessage() for r in caplog.records]
    assert len(msgs) == 1 and msgs[0].startswith(f"cannot read the CustomResourceDefinition {RULES_CRD} (403")
    assert msgs[0].endswith("the CRDs the cluster serves are not checked against this nfd-master's fields")
    assert all(inf._task is None for inf in chk.informers)
    assert gauge(metrics, RULES_CRD) is None
