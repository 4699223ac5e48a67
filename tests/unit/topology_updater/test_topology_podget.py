"""PodsByGet: the listed pods read one by one (the updater under a role granting pods get only).
A narrow client stub: the e2e test (tests/e2e/test_restore.py) runs it on the real apiserver."""

from __future__ import annotations

import asyncio
from typing import Any

from nfd.k8s.errors import ApiUnavailable, NotFound
from nfd.topology_updater.podget import PodsByGet
from nfd.topology_updater.podqos import compact_pod


def _pod(ns: str, name: str, cpu: str, uid: str = "u1") -> dict[str, Any]:
    res = {"cpu": cpu, "memory": "1Gi"}
    return {"metadata": {"namespace": ns, "name": name, "uid": uid},
            "spec": {"containers": [{"name": "c", "resources": {"requests": res, "limits": res}}]}}


class Stub:
    def __init__(self, pods: dict[tuple[str, str], Any]) -> None:
        self.pods = pods
        self.gets: list[str] = []

    async def request(self, method: str, path: str, **kw: Any) -> Any:
        self.gets.append(path)
        ns, name = path.split("/namespaces/")[1].split("/pods/")
        got = self.pods.get((ns, name))
        if got is None:
            raise NotFound(404, "NotFound", "gone")
        if isinstance(got, Exception):
            raise got
        return got


def test_reads_each_listed_pod_forgets_unlisted_and_says_what_changed() -> None:
    changes: list[int] = []
    api = Stub({("a", "p1"): _pod("a", "p1", "2"), ("a", "p2"): _pod("a", "p2", "500m")})
    pods = PodsByGet(api, transform=compact_pod, on_change=lambda: changes.append(1))

    asyncio.run(pods.refresh([("a", "p1"), ("a", "p2"), ("a", "p1")]))
    assert sorted(api.gets) == ["/api/v1/namespaces/a/pods/p1", "/api/v1/namespaces/a/pods/p2"]
    assert pods.get("p1", "a")["exclusiveCPUs"] is True and pods.get("p2", "a")["guaranteed"] is True
    assert pods.get("p2", "a")["exclusiveCPUs"] is False and changes == [1]

    asyncio.run(pods.refresh([("a", "p1"), ("a", "p2")]))  # every scan reads again, as upstream
    assert len(api.gets) == 4 and changes == [1]  # nothing changed

    asyncio.run(pods.refresh([("a", "p1")]))
    assert pods.get("p2", "a") is None and changes == [1, 1]


def test_a_missing_pod_is_none_and_a_failed_read_keeps_the_last_form() -> None:
    api = Stub({("a", "p1"): _pod("a", "p1", "2")})
    pods = PodsByGet(api, transform=compact_pod, on_change=lambda: None)
    asyncio.run(pods.refresh([("a", "p1"), ("a", "gone")]))
    assert pods.get("gone", "a") is None and pods.get("p1", "a") is not None
    api.pods[("a", "p1")] = ApiUnavailable("connect: refused")
    asyncio.run(pods.refresh([("a", "p1")]))
    assert pods.get("p1", "a") is not None and pods.get("p1", "a")["exclusiveCPUs"] is True
