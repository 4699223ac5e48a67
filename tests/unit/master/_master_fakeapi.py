"""An in-memory stand-in for the Kubernetes API behind nfd.k8s.client.ApiClient.

Enough of the API for nfd-master unit tests: GET/LIST/POST/PUT/DELETE, JSON patch (strict, like
the apiserver: removing or replacing a missing key or a failing ``test`` is 422), merge patch with
a resourceVersion precondition (409), the ``status`` subresource, and watches fed from the store.
``down = True`` makes every request fail as if the server were unreachable.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

from nfd.common import jsoncodec
from nfd.k8s.errors import ApiUnavailable, error_for
from tests.support.fakeapi import RequestOptions, merge_patch

_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?$"
)


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "code": code, "reason": reason, "message": message}


class _Fail(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        self.code, self.reason, self.message = code, reason, message


def json_patch(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent: Any = out
        for p in parts[:-1]:
            if not isinstance(parent, dict) or p not in parent:
                raise _Fail(422, "Invalid", f"missing path {op['path']}")
            parent = parent[p]
        last = parts[-1]
        kind = op["op"]
        if kind == "test":
            if parent.get(last) != op.get("value"):
                raise _Fail(422, "Invalid", f"test failed on {op['path']}")
        elif kind == "add":
            parent[last] = copy.deepcopy(op["value"])
        elif kind == "replace":
            if last not in parent:
                raise _Fail(422, "Invalid", f"replace of missing {op['path']}")
            parent[last] = copy.deepcopy(op["value"])
        elif kind == "remove":
            if last not in parent:
                raise _Fail(422, "Invalid", f"remove of missing {op['path']}")
            del parent[last]
        else:
            raise _Fail(422, "Invalid", f"unsupported op {kind}")
    return out


def wire_event(ev: dict[str, Any]) -> dict[str, Any]:
    """The event in the API server's field order (Go's struct order), as its watch writes it."""
    obj = ev["object"]
    meta = obj.get("metadata") or {}
    first = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion")
    wire_meta = {k: meta[k] for k in first if k in meta} | {k: v for k, v in meta.items() if k not in first}
    head = {k: obj[k] for k in ("kind", "apiVersion") if k in obj}
    rest = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion", "metadata")}
    return {"type": ev["type"], "object": head | {"metadata": wire_meta} | rest}


class FakeApi(RequestOptions):
    namespace = "nfd"

    def __init__(self) -> None:
        self.store: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        self.rv = 100
        self.metrics: Counter[str] = Counter()
        self.log: list[tuple[str, str, Any]] = []  # (verb, path, body) of writes
        self.down = False
        self.forbidden: set[tuple[str, str]] = set()  # (verb, resource) denied by "RBAC"
        self.watch_lag = 0.0
        self.fail_writes = 0  # the next N writes answer 500
        self._watchers: list[tuple[str, str | None, asyncio.Queue[dict[str, Any] | None]]] = []
        self.history: list[tuple[str, dict[str, Any]]] = []  # (plural, event), for watch resumes
        self.watch_list = True  # False: sendInitialEvents is refused (422), as with WatchList off

    # -- test helpers --------------------------------------------------------------------------
    def put(self, plural: str, obj: dict[str, Any], *, event: str | None = None) -> dict[str, Any]:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        key = (meta.get("namespace") or "", meta["name"])
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        meta.setdefault("uid", str(uuid.uuid5(uuid.NAMESPACE_URL, f"{plural}/{key[0]}/{key[1]}")))  # as the server makes them
        existed = key in self.store.setdefault(plural, {})
        self.store[plural][key] = obj
        self._notify(plural, event or ("MODIFIED" if existed else "ADDED"), obj)
        return obj

    def remove(self, plural: str, name: str, namespace: str = "") -> None:
        obj = self.store.get(plural, {}).pop((namespace, name), None)
        if obj is not None:
            self.rv += 1
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self._notify(plural, "DELETED", obj)

    def obj(self, plural: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        return self.store.get(plural, {}).get((namespace, name))

    def writes(self) -> list[tuple[str, str, Any]]:
        return [w for w in self.log if w[0] != "GET"]

    def _notify(self, plural: str, etype: str, obj: dict[str, Any]) -> None:
        self.history.append((plural, {"type": etype, "object": copy.deepcopy(obj)}))
        for p, ns, q in list(self._watchers):
            if p == plural and (ns is None or ns == (obj["metadata"].get("namespace") or "")):
                ev = {"type": etype, "object": copy.deepcopy(obj)}
                if self.watch_lag > 0:  # events arrive after the response, as over a network
                    asyncio.get_running_loop().call_later(self.watch_lag, q.put_nowait, ev)
                else:
                    q.put_nowait(ev)

    def break_watches(self) -> None:
        for _, _, q in list(self._watchers):
            q.put_nowait(None)

    # -- ApiClient interface ---------------------------------------------------------------------
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
        await asyncio.sleep(0)
        self.metrics[verb or method] += 1
        if self.down:
            raise ApiUnavailable(f"{method} {path}: connection refused")
        if isinstance(body, bytes):
            body = json.loads(body)
        if method in ("PATCH", "PUT", "POST", "DELETE") and self.fail_writes > 0:
            self.fail_writes -= 1
            raise error_for(500, _status(500, "InternalError", "etcdserver: request timed out"))
        try:
            return self._handle(method, path, params or {}, body, content_type)
        except _Fail as f:
            raise error_for(f.code, _status(f.code, f.reason, f.message)) from None

    def _handle(self, method: str, path: str, params: dict[str, Any], body: Any, ctype: str) -> Any:
        m = _PATH.match(path)
        if not m:
            raise _Fail(404, "NotFound", path)
        plural, ns, name, sub = m["plural"], m["ns"] or "", m["name"], m["sub"]
        if plural == "selfsubjectaccessreviews":
            attrs = body["spec"]["resourceAttributes"]
            allowed = (attrs["verb"], attrs["resource"]) not in self.forbidden
            return dict(body, status={"allowed": allowed})
        objs = self.store.setdefault(plural, {})
        if method == "GET" and name is None:
            items = [copy.deepcopy(o) for (ons, _), o in sorted(objs.items()) if not m["ns"] or ons == ns]
            sel = params.get("labelSelector")
            if sel:
                k, _, v = sel.partition("=")
                items = [o for o in items if (o["metadata"].get("labels") or {}).get(k) == v]
            return {"items": items, "metadata": {"resourceVersion": str(self.rv)}}
        key = (ns, name or "")
        if method == "POST":
            meta = body.setdefault("metadata", {})
            k2 = (ns, meta.get("name", ""))
            if k2 in objs:
                raise _Fail(409, "AlreadyExists", f"{plural} {k2[1]} already exists")
            if ns:
                meta["namespace"] = ns
            self.log.append(("CREATE", path, body))
            return copy.deepcopy(self.put(plural, body))
        if key not in objs:
            raise _Fail(404, "NotFound", f"{plural} {name} not found")
        cur = objs[key]
        if method == "GET":
            return copy.deepcopy(cur)
        if method == "DELETE":
            self.log.append(("DELETE", path, None))
            self.remove(plural, key[1], ns)
            return _status(200, "", "")
        if method == "PUT":
            want_rv = (body.get("metadata") or {}).get("resourceVersion")
            if want_rv and want_rv != cur["metadata"]["resourceVersion"]:
                raise _Fail(409, "Conflict", "the object has been modified")
            new = copy.deepcopy(cur)
            if sub == "status":
                new["status"] = body.get("status")
            else:
                new = copy.deepcopy(body)
            self.log.append(("UPDATE", path, body))
            return copy.deepcopy(self.put(plural, new))
        if method == "PATCH":
            if ctype == "application/json-patch+json":
                new = json_patch(cur, body)
            else:
                want_rv = (body.get("metadata") or {}).get("resourceVersion")
                if want_rv and want_rv != cur["metadata"]["resourceVersion"]:
                    raise _Fail(409, "Conflict", "the object has been modified")
                new = merge_patch(cur, body)
            if sub == "status":
                merged = copy.deepcopy(cur)
                merged["status"] = new.get("status")
                new = merged
            else:
                new["status"] = cur.get("status")
            self.log.append(("PATCH", path + (f"[{sub}]" if sub else ""), body))
            return copy.deepcopy(self.put(plural, new))
        raise _Fail(405, "MethodNotAllowed", method)

    async def stream_lines(
        self, path: str, *, params: dict[str, Any] | None = None, accept: str = "", timeout_s: float = 600.0,
        peek: Any = None,
    ) -> AsyncIterator[dict[str, Any]]:
        self.metrics["WATCH"] += 1
        if self.down:
            raise ApiUnavailable(f"WATCH {path}: connection refused")
        m = _PATH.match(path)
        assert m
        q: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        entry = (m["plural"], m["ns"], q)
        since = int((params or {}).get("resourceVersion") or 0)
        if (params or {}).get("sendInitialEvents"):
            if not self.watch_list:
                raise error_for(422, _status(422, "Invalid", "sendInitialEvents is forbidden for watch "
                                             "unless the WatchList feature gate is enabled"))
            for (ns, _), obj in sorted(self.store.get(m["plural"], {}).items()):
                if m["ns"] is None or m["ns"] == ns:
                    q.put_nowait({"type": "ADDED", "object": copy.deepcopy(obj)})
            q.put_nowait({"type": "BOOKMARK", "object": {"metadata": {
                "resourceVersion": str(self.rv), "annotations": {"k8s.io/initial-events-end": "true"}}}})
            since = 1 << 62  # no history: later events reach the queue through _notify
        for plural, ev in self.history:
            ev_meta = ev["object"]["metadata"]
            same_ns = m["ns"] is None or m["ns"] == (ev_meta.get("namespace") or "")
            if plural == m["plural"] and int(ev_meta["resourceVersion"]) > since and same_ns:
                q.put_nowait(copy.deepcopy(ev))
        self._watchers.append(entry)
        try:
            while True:
                ev = await q.get()
                if ev is None:
                    raise ApiUnavailable(f"WATCH {path}: connection reset")
                stand_in = peek(jsoncodec.dumps(wire_event(ev))) if peek is not None else None
                self.metrics["peeked" if stand_in is not None else "decoded"] += 1
                yield ev if stand_in is None else stand_in
        finally:
            self._watchers.remove(entry)

    async def close(self) -> None:
        return None
