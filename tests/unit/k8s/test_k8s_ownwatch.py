"""nfd.k8s.ownwatch: what counts as our own object's echo, and the 403 fallback."""

from __future__ import annotations

import asyncio
import logging

from nfd.k8s.ownwatch import OwnObjectWatch, contains
from nfd.k8s.resources import NODERESOURCETOPOLOGIES


def test_contains_ignores_what_the_server_adds_and_sees_what_was_changed() -> None:
    sent = {"metadata": {"name": "n", "ownerReferences": [{"kind": "Namespace", "name": "nfd"}]},
            "zones": [{"name": "node-0", "resources": [{"name": "cpu", "available": "4"}]}]}
    server = {"metadata": {"name": "n", "resourceVersion": "9", "labels": {"x": "y"},
                           "ownerReferences": [{"kind": "Namespace", "name": "nfd"}]},
              "zones": [{"name": "node-0", "type": "Node", "resources": [{"name": "cpu", "available": "4"}]}]}
    assert contains(server, sent)
    assert not contains({**server, "zones": []}, sent)
    assert not contains({**server, "zones": [{"name": "node-0", "resources": [{"name": "cpu", "available": "3"}]}]},
                        sent)
    assert not contains({"metadata": {"name": "n"}}, sent)


def test_a_refused_watch_is_stopped_once_with_one_line(caplog) -> None:
    w = OwnObjectWatch(object(), NODERESOURCETOPOLOGIES, name="n", on_change=lambda _o: None)  # type: ignore[arg-type]
    assert w.informer.field_selector == "metadata.name=n"
    w.informer.forbidden = True

    async def go() -> list[bool]:
        return [await w.check("re-applying it"), await w.check("re-applying it")]

    with caplog.at_level(logging.WARNING):
        assert asyncio.run(go()) == [False, False]
    lines = [r.getMessage() for r in caplog.records if "cannot watch" in r.getMessage()]
    assert lines == ["cannot watch NodeResourceTopology n (RBAC: list and watch on noderesourcetopologies "
                     "are not granted): re-applying it"]


def test_events_of_the_object_reach_the_owner() -> None:
    seen: list[object] = []
    w = OwnObjectWatch(object(), NODERESOURCETOPOLOGIES, name="n", on_change=seen.append)  # type: ignore[arg-type]
    obj = {"metadata": {"name": "n", "resourceVersion": "1"}}
    w.informer._apply("ADDED", obj)
    w.informer._apply("DELETED", obj)
    assert seen == [obj, None]
