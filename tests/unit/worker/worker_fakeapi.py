"""An in-memory stand-in for nfd.k8s.client.ApiClient: enough REST for GET/POST/PUT of objects."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from nfd.k8s.errors import error_for
from tests.support.fakeapi import RequestOptions


class FakeApi(RequestOptions):
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.metrics: Counter[str] = Counter()
        self.rv = 0
        #: (method or "*", status, reason): raised by the next matching calls, in order
        self.fail_next: list[tuple[str, int, str]] = []

    def _err(self, status: int, reason: str = "", message: str = "") -> Exception:
        return error_for(status, {"reason": reason, "message": message or reason})

    def put_object(self, path: str, obj: dict[str, Any]) -> None:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        obj["metadata"].setdefault("uid", f"uid-{self.rv}")
        self.objects[path] = obj

    async def _request(self, method: str, path: str, *, body: Any = None, verb: str | None = None, **_: Any) -> Any:
        self.calls.append((method, path))
        self.metrics[verb or method] += 1
        if self.fail_next and self.fail_next[0][0] in ("*", method):
            _, status, reason = self.fail_next.pop(0)
            raise self._err(status, reason)
        if method == "GET":
            if path not in self.objects:
                raise self._err(404, "NotFound")
            return copy.deepcopy(self.objects[path])
        if method == "POST":
            full = f"{path}/{body['metadata']['name']}"
            if full in self.objects:
                raise self._err(409, "AlreadyExists")
            self.put_object(full, body)
            return copy.deepcopy(self.objects[full])
        if method == "PUT":
            cur = self.objects.get(path)
            if cur is None:
                raise self._err(404, "NotFound")
            if body["metadata"].get("resourceVersion") != cur["metadata"]["resourceVersion"]:
                raise self._err(409, "Conflict")
            self.put_object(path, body)
            return copy.deepcopy(self.objects[path])
        raise self._err(405, "MethodNotAllowed")

    async def close(self) -> None:
        pass
