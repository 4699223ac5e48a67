"""Publishing the worker's one NodeFeature: build the desired object (pure), write only on change.

The object is named after the node, lives in the worker's namespace, carries the node-name label,
the worker.version (and worker.pod.uid) annotations and the configured owner references; labels,
annotations and owner references are replaced wholesale on every write, as upstream does.

API traffic: one GET at start (or a create), then a ``replace`` only when the desired object
differs from the last one written; no steady-state reads. A Conflict re-reads and retries; a
NotFound on replace (object deleted behind our back) re-creates it.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from nfd import __version__
from nfd.api import API_VERSION, NODE_NAME_LABEL, WORKER_POD_UID_ANNOTATION, WORKER_VERSION_ANNOTATION
from nfd.api.features import Features
from nfd.common.logsetup import Dump, klogger, kobj
from nfd.k8s.creating import create
from nfd.k8s.errors import AlreadyExists, Conflict, NotFound
from nfd.k8s.fetching import get
from nfd.k8s.resources import NODEFEATURES, NODES, PODS
from nfd.k8s.updating import replace

log = logging.getLogger("nfd.worker")
klog = klogger("nfd.worker")



def desired_object(
    *,
    node_name: str,
    namespace: str,
    features: Features,
    labels: dict[str, str],
    owner_refs: list[dict[str, Any]],
    pod_uid: str | None,
) -> dict[str, Any]:
    annotations = {WORKER_VERSION_ANNOTATION: __version__}
    if pod_uid:
        annotations[WORKER_POD_UID_ANNOTATION] = pod_uid
    return {
        "apiVersion": API_VERSION,
        "kind": "NodeFeature",
        "metadata": {
            "name": node_name,
            "namespace": namespace,
            "labels": {NODE_NAME_LABEL: node_name},
            "annotations": annotations,
            "ownerReferences": owner_refs,
        },
        "spec": {"features": features.to_json(), "labels": dict(sorted(labels.items()))},
    }


def _norm_spec(spec: Any) -> Any:
    """Spec in canonical form so semantically equal specs compare equal."""
    if not isinstance(spec, dict):
        return None
    feats: Any
    try:
        feats = Features.from_json(spec.get("features")).to_json()
    except ValueError:
        feats = spec.get("features")
    return {"features": feats, "labels": dict(spec.get("labels") or {})}


def same_content(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Whether two NodeFeature objects agree on everything the worker owns."""
    if a is None or b is None:
        return False
    ma, mb = a.get("metadata") or {}, b.get("metadata") or {}
    for key in ("labels", "annotations", "ownerReferences"):
        if (ma.get(key) or ({} if key != "ownerReferences" else [])) != (
            mb.get(key) or ({} if key != "ownerReferences" else [])
        ):
            return False
    return _norm_spec(a.get("spec")) == _norm_spec(b.get("spec"))


class Publisher:
    """Keeps the node's NodeFeature equal to the desired object with the fewest API calls."""

    def __init__(self, api: Any, *, namespace: str, node_name: str) -> None:
        self.api = api
        self.namespace = namespace
        self.node_name = node_name
        self.current: dict[str, Any] | None = None  # last object read from / written to the server
        self.writes = 0

    async def _read(self) -> dict[str, Any] | None:
        return await get(self.api, NODEFEATURES, name=self.node_name, namespace=self.namespace)

    async def publish(self, desired: dict[str, Any]) -> bool:
        """Make the server object match ``desired``. Returns True if a write happened."""
        if self.current is None:
            self.current = await self._read()
        for _attempt in range(5):
            ref = kobj(self.namespace, self.node_name)
            if self.current is not None and same_content(self.current, desired):
                klog.info_s("no changes in NodeFeature object, not updating", v=1, nodefeature=ref)
                return False
            try:
                if self.current is None:
                    klog.info_s("creating NodeFeature object", nodefeature=ref)
                    self.current = await create(self.api, NODEFEATURES, body=desired, namespace=self.namespace)
                    klog.info_s("NodeFeature object created", v=4, nodeFeature=Dump(self.current))
                else:
                    klog.info_s("updating NodeFeature object", nodefeature=ref)
                    body = _with_server_meta(desired, self.current)
                    self.current = await replace(
                        self.api, NODEFEATURES, body=body, name=self.node_name, namespace=self.namespace
                    )
                    klog.info_s("NodeFeature object updated", v=4, nodeFeature=Dump(self.current))
                self.writes += 1
                return True
            except AlreadyExists:
                self.current = await self._read()
            except Conflict:
                log.info("NodeFeature %s/%s changed on the server, re-reading", self.namespace, self.node_name)
                self.current = await self._read()
            except NotFound:
                self.current = None
        raise RuntimeError(f"NodeFeature {self.namespace}/{self.node_name}: gave up after repeated conflicts")


def _with_server_meta(desired: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """Desired object plus the server fields an update must carry (resourceVersion, uid)."""
    body = dict(desired)
    meta = dict(desired["metadata"])
    cur_meta = current.get("metadata") or {}
    for key in ("resourceVersion", "uid"):
        if key in cur_meta:
            meta[key] = cur_meta[key]
    body["metadata"] = meta
    return body


async def owner_references(
    api: Any, kinds: list[str], *, node_name: str, namespace: str, env: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Owner references for kinds in (node, pod, ds), upstream's way; errors raise."""
    env = dict(os.environ) if env is None else env
    refs: list[dict[str, Any]] = []
    if "node" in kinds:
        node = await get(api, NODES, name=node_name)
        if node is None:
            raise RuntimeError(f"owner reference: node {node_name!r} not found")
        refs.append({"apiVersion": "v1", "kind": "Node", "name": node_name,
                     "uid": node["metadata"]["uid"], "blockOwnerDeletion": False})
    pod_name, pod_uid = env.get("POD_NAME"), env.get("POD_UID")
    if "pod" in kinds:
        if pod_name and pod_uid:
            refs.append({"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": pod_uid,
                         "blockOwnerDeletion": False})
        else:
            klog.info_s("Cannot resolve Pod owner reference, POD_NAME and POD_UID must be specified")
    if "ds" in kinds and not pod_name:
        klog.info_s("Cannot resolve DaemonSet owner reference, POD_NAME not specified")
    if "ds" in kinds and pod_name:
        pod = await get(api, PODS, name=pod_name, namespace=namespace)
        ds = [r for r in ((pod or {}).get("metadata") or {}).get("ownerReferences") or [] if r.get("kind") == "DaemonSet"]
        if len(ds) > 1:
            raise RuntimeError(f"owner reference: pod {pod_name} has more than one DaemonSet owner")
        if ds:
            refs.append({"apiVersion": ds[0].get("apiVersion", "apps/v1"), "kind": "DaemonSet",
                         "name": ds[0]["name"], "uid": ds[0]["uid"], "blockOwnerDeletion": False})
    return refs
