"""An in-memory stand-in for nfd.k8s.client.ApiClient: records requests, stores applied NRTs."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from nfd.k8s.errors import ApiUnavailable, NotFound
from tests.support.fakeapi import RequestOptions


class FakeApi(RequestOptions):
    namespace = "nfd"

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, Any], Any, str]] = []
        self.metrics: Counter[str] = Counter()
        self.objects: dict[str, dict[str, Any]] = {}
        self.namespaces = {"nfd": {"metadata": {"name": "nfd", "uid": "ns-uid-1"}}}
        self.fail: Exception | None = None

    async def _request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        verb: str | None = None,
        timeout_s: float | None = None,
    ) -> Any:
        self.requests.append((method, path, dict(params or {}), body, content_type))
        self.metrics[verb or method] += 1
        if self.fail is not None:
            raise self.fail
        if method == "GET" and path.startswith("/api/v1/namespaces/"):
            ns = self.namespaces.get(path.rsplit("/", 1)[1])
            if ns is None:
                raise NotFound(404, "NotFound", "namespace not found")
            return ns
        if method == "PATCH" and "/noderesourcetopologies/" in path:
            obj = json.loads(body)
            self.objects[path.rsplit("/", 1)[1]] = obj
            return obj
        raise ApiUnavailable(f"FakeApi: unexpected {method} {path}")

    def writes(self) -> list[tuple[str, str, dict[str, Any], Any, str]]:
        return [r for r in self.requests if r[0] in ("PATCH", "PUT", "POST", "DELETE")]

    def gets(self) -> list[tuple[str, str, dict[str, Any], Any, str]]:
        return [r for r in self.requests if r[0] == "GET"]
