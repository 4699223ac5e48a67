"""In-memory API for nfd-gc unit tests: paginated lists, label selectors, delete preconditions
and injectable failures, behind the same ``request`` signature as nfd.k8s.client.ApiClient."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from nfd.k8s.errors import ApiUnavailable, Conflict, NotFound
from tests.support.fakeapi import RequestOptions

NODES = "/api/v1/nodes"
NF = "/apis/nfd.k8s-sigs.io/v1alpha1/nodefeatures"
NRT = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
_rv = itertools.count(100)


class GcFakeApi(RequestOptions):
    def __init__(self) -> None:
        # collection path -> (namespace, name) -> object
        self.store: dict[str, dict[tuple[str, str], dict[str, Any]]] = {NODES: {}, NF: {}, NRT: {}}
        self.metrics: Counter[str] = Counter()
        self.log: list[tuple[str, str, dict[str, Any]]] = []
        self.fail: Callable[[str, str, dict[str, Any]], bool] = lambda m, p, q: False
        self.missing_crds: set[str] = set()

    # --- seeding -----------------------------------------------------------------------------

    def _put(self, coll: str, ns: str, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "name": name,
            "uid": f"uid-{name}-{next(_rv)}",
            "resourceVersion": str(next(_rv)),
        }
        if ns:
            meta["namespace"] = ns
        if labels is not None:
            meta["labels"] = labels
        obj = {"metadata": meta}
        self.store[coll][(ns, name)] = obj
        return obj

    def node(self, name: str) -> dict[str, Any]:
        return self._put(NODES, "", name)

    def nodefeature(self, ns: str, name: str, node: str | None) -> dict[str, Any]:
        labels = {"nfd.node.kubernetes.io/node-name": node} if node is not None else {}
        return self._put(NF, ns, name, labels)

    def nrt(self, name: str) -> dict[str, Any]:
        return self._put(NRT, "", name)

    def touch(self, coll: str, ns: str, name: str) -> None:
        self.store[coll][(ns, name)]["metadata"]["resourceVersion"] = str(next(_rv))

    def names(self, coll: str) -> set[str]:
        return {n for (_ns, n) in self.store[coll]}

    # --- API ---------------------------------------------------------------------------------

    def _split(self, path: str) -> tuple[str, str, str | None]:
        for coll in (NODES, NF, NRT):
            if path == coll:
                return coll, "", None
            if path.startswith(coll + "/"):
                return coll, "", path[len(coll) + 1 :]
        # namespaced NodeFeature paths
        pre = "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/"
        if path.startswith(pre):
            ns, _, rest = path[len(pre) :].partition("/")
            _, _, name = rest.partition("/")
            return NF, ns, name or None
        raise NotFound(404, "NotFound", f"no route {path}")

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
        q = dict(params or {})
        self.log.append((verb or method, path, q))
        self.metrics[verb or method] += 1
        if self.fail(method, path, q):
            raise ApiUnavailable(f"injected failure: {method} {path}")
        coll, ns, name = self._split(path)
        if coll in self.missing_crds:
            raise NotFound(404, "NotFound", "the server could not find the requested resource")
        objs = self.store[coll]
        if method == "GET" and name is None:
            return self._list(objs, ns, q)
        if method == "GET":
            obj = objs.get((ns, name))
            if obj is None:
                raise NotFound(404, "NotFound", f"{name} not found")
            return obj
        if method == "DELETE":
            obj = objs.get((ns, name))
            if obj is None:
                raise NotFound(404, "NotFound", f"{name} not found")
            pre = (json.loads(body) if isinstance(body, bytes) else body or {}).get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != obj["metadata"]["uid"]:
                raise Conflict(409, "Conflict", "Precondition failed: UID in precondition")
            if pre.get("resourceVersion") and pre["resourceVersion"] != obj["metadata"]["resourceVersion"]:
                raise Conflict(409, "Conflict", "Precondition failed: ResourceVersion in precondition")
            del objs[(ns, name)]
            return {"kind": "Status", "status": "Success"}
        raise NotFound(404, "NotFound", f"unsupported {method} {path}")

    def _list(
        self, objs: dict[tuple[str, str], dict[str, Any]], ns: str, q: dict[str, Any]
    ) -> dict[str, Any]:
        items = [o for (ons, _n), o in sorted(objs.items()) if not ns or ons == ns]
        fsel = q.get("fieldSelector")
        if fsel:
            k, _, v = fsel.partition("=")
            assert k == "metadata.name", fsel
            items = [o for o in items if o["metadata"]["name"] == v]
        sel = q.get("labelSelector")
        if sel:
            k, _, v = sel.partition("=")
            items = [o for o in items if (o["metadata"].get("labels") or {}).get(k) == v]
        start = int(q.get("continue") or 0)
        limit = int(q.get("limit") or 0) or len(items) or 1
        page = items[start : start + limit]
        meta: dict[str, Any] = {"resourceVersion": str(next(_rv))}
        if start + limit < len(items):
            meta["continue"] = str(start + limit)
        return {"kind": "List", "metadata": meta, "items": [json.loads(json.dumps(o)) for o in page]}
