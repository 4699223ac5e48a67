"""nfd-gc: delete NodeFeatures and NodeResourceTopologies of nodes that no longer exist.

Safety rules (stronger than upstream, which trusts its informer cache):

- A periodic sweep picks *candidates* from the node informer cache, then confirms them against
  a fresh, complete, paginated LIST of nodes. If that LIST fails at any page (API outage,
  expired continue token), the sweep deletes nothing.
- Every delete carries ``uid`` and ``resourceVersion`` preconditions from the listing, so an
  object that was recreated or updated since (e.g. by the worker of a node that just joined)
  is refused by the API server (409) and left alone.
- A node DELETED event is confirmed with a LIST of that node name (empty answer required)
  before its objects are deleted, so a node deleted and re-registered under the same name keeps its objects.
- Nothing is deleted before the node cache has synced, and an API outage only postpones work.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from prometheus_client import CollectorRegistry, Counter, Gauge, disable_created_metrics

from nfd import __version__
from nfd.api import NODE_NAME_LABEL
from nfd.common.logsetup import GoDuration, klogger
from nfd.gc import orphans
from nfd.gc.orphans import Target
from nfd.k8s import deleting, fetching
from nfd.k8s.errors import ApiError, ApiUnavailable, Conflict, NotFound
from nfd.k8s.resources import NODEFEATURES, NODERESOURCETOPOLOGIES, NODES, Resource
from nfd.k8s.watching import Informer

log = logging.getLogger("nfd.gc")
klog = klogger("nfd.gc")  # upstream's structured lines (docs/logging.md)

RESOURCES: dict[str, Resource] = {
    orphans.NODEFEATURE: NODEFEATURES,
    orphans.NODERESOURCETOPOLOGY: NODERESOURCETOPOLOGIES,
}


def _metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """Keep only what GC looks at (lists are metadata-only already; this trims the rest): the
    identity and preconditions, and of the labels only the node-name label (a Node carries a
    hundred labels nfd-gc never reads; ~40 MiB at 4,000 nodes)."""
    m = obj.get("metadata") or {}
    keep = {k: m[k] for k in ("name", "namespace", "uid", "resourceVersion") if k in m}
    labels = m.get("labels")
    if isinstance(labels, dict) and NODE_NAME_LABEL in labels:
        keep["labels"] = {NODE_NAME_LABEL: labels[NODE_NAME_LABEL]}
    return {"metadata": keep}


class Metrics:
    def __init__(self) -> None:
        disable_created_metrics()  # upstream's Go client exports no *_created series
        self.registry = CollectorRegistry(auto_describe=True)
        build_info = Gauge(
            "nfd_gc_build_info",
            "Version from which Node Feature Discovery was built.",
            ["version"],
            registry=self.registry,
        )
        build_info.labels(__version__).set_to_current_time()
        self.deleted = Counter(
            "nfd_gc_objects_deleted",
            "Number of NodeFeature and NodeResourceTopology objects garbage collected.",
            ["kind"],
            registry=self.registry,
        )
        self.failures = Counter(
            "nfd_gc_object_delete_failures",
            "Number of errors in deleting NodeFeature and NodeResourceTopology objects.",
            ["kind"],
            registry=self.registry,
        )


@dataclass(slots=True)
class SweepReport:
    candidates: int = 0
    deleted: list[Target] = field(default_factory=list)
    kept_live: int = 0
    refused: int = 0
    failed: int = 0
    aborted: str = ""


class GarbageCollector:
    def __init__(self, api: Any, *, list_size: int = 200, metrics: Metrics | None = None) -> None:
        self.api = api
        self.list_size = list_size
        self.metrics = metrics or Metrics()
        self.nodes: Any = None  # metadata-only Informer
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()

    # --- node cache ---------------------------------------------------------------------------

    async def start(self, *, sync_timeout_s: float | None = None) -> bool:
        self.nodes = Informer(
            self.api, NODES, metadata_only=True, page_size=self.list_size, transform=_metadata
        )
        self.nodes.on_event(self._on_node_event)
        t0 = time.monotonic()
        await self.nodes.start()
        ok: bool = await self.nodes.wait_synced(sync_timeout_s)
        if ok:
            klog.info_s("node informer cache synced", duration=GoDuration(time.monotonic() - t0),
                        nodes=len(self.nodes.cache))
        return ok

    async def stop(self) -> None:
        if self.nodes is not None:
            await self.nodes.stop()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def cached_node_names(self) -> set[str]:
        return {name for (_ns, name) in self.nodes.cache} if self.nodes is not None else set()

    def _on_node_event(self, etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if etype != "DELETED":
            return
        name = (obj.get("metadata") or {}).get("name", "")
        if name:
            t = asyncio.get_running_loop().create_task(self._node_deleted_logged(name))
            self._tasks.add(t)
            t.add_done_callback(self._tasks.discard)

    async def _node_deleted_logged(self, node: str) -> None:
        try:
            await self.node_deleted(node)
        except Exception:
            log.exception("handling deletion of node %s failed; the next sweep retries", node)

    # --- listing -----------------------------------------------------------------------------

    async def _list(self, res: Resource, *, label_selector: str | None = None) -> list[dict[str, Any]] | None:
        """Complete metadata list, or None when the resource type does not exist (404)."""
        try:
            items, _rv = await fetching.list_objects(
                self.api,
                res,
                label_selector=label_selector,
                page_size=self.list_size,
                metadata_only=True,
                transform=_metadata,
            )
        except NotFound:
            log.debug("resource %s does not exist, skipped", res.plural)
            return None
        return items

    async def _list_candidates(
        self, res: Resource, to_target: Callable[[dict[str, Any]], Target], cached: set[str]
    ) -> tuple[list[Target], int] | None:
        """The objects of ``res`` whose node is not in ``cached`` (orphans.stale), and how many
        were listed; None when the resource type does not exist. Each page is reduced to these
        as it arrives: a sweep of 20,000 objects holds no more than its candidates."""
        count = 0

        def candidate(obj: dict[str, Any]) -> Any:
            nonlocal count
            count += 1
            t = to_target(obj)
            if t.kind == orphans.NODEFEATURE and not t.node:
                klog.info_s("node name label missing from NodeFeature object", nodefeature=t.ref)
            return t if orphans.stale((t,), cached) else None

        try:
            items, _rv = await fetching.list_objects(
                self.api, res, page_size=self.list_size, metadata_only=True, transform=candidate
            )
        except NotFound:
            log.debug("resource %s does not exist, skipped", res.plural)
            return None
        # the transform made the items Targets (or None)
        return cast("list[Target]", [t for t in items if t is not None]), count

    async def live_node_names(self) -> set[str]:
        """Node names from a fresh complete LIST; raises on any failure (never partial)."""
        items = await self._list(NODES)
        return {(o.get("metadata") or {}).get("name", "") for o in items or []}

    # --- deleting ----------------------------------------------------------------------------

    async def _delete(self, t: Target, report: SweepReport | None = None) -> None:
        res = RESOURCES[t.kind]
        try:
            gone = await deleting.delete(
                self.api,
                res,
                name=t.name,
                namespace=t.namespace or None,
                uid=t.uid or None,
                resource_version=t.resource_version or None,
            )
        except Conflict as e:
            # changed or recreated since we listed it: someone is using it, leave it be
            log.info("%s %s changed since listed, not deleted: %s", t.kind, t.ref, e.message or e)
            if report is not None:
                report.refused += 1
            return
        except (ApiError, ApiUnavailable) as e:
            klog.error_s(e, f"failed to delete {t.kind} object", **_gc_keys(t))
            self.metrics.failures.labels(t.kind).inc()
            if report is not None:
                report.failed += 1
            return
        if not gone:
            klog.info_s(f"{t.kind} not found, omitting deletion", v=2, **_gc_keys(t))
            return
        klog.info_s(f"{t.kind} object has been deleted", **_gc_keys(t))
        self.metrics.deleted.labels(t.kind).inc()
        if report is not None:
            report.deleted.append(t)

    # --- periodic sweep ----------------------------------------------------------------------

    async def sweep(self) -> SweepReport:
        """One garbage-collection pass."""
        async with self._lock:
            return await self._sweep()

    async def _sweep(self) -> SweepReport:
        report = SweepReport()
        if self.nodes is None or not self.nodes.synced:
            report.aborted = "node cache not synced"
            log.info("garbage collection skipped: %s", report.aborted)
            return report
        klog.info_s("performing garbage collection")
        cached = self.cached_node_names()
        candidates: list[Target] = []
        try:
            for kind, res, to_target in (
                (orphans.NODEFEATURE, NODEFEATURES, orphans.nodefeature_target),
                (orphans.NODERESOURCETOPOLOGY, NODERESOURCETOPOLOGIES, orphans.nrt_target),
            ):
                listed = await self._list_candidates(res, to_target, cached)
                if listed is None:
                    continue
                candidates += listed[0]
                log.debug("listed %d %s objects", listed[1], kind)
        except (ApiError, ApiUnavailable) as e:
            report.aborted = f"listing failed: {e}"
            log.error("garbage collection aborted, nothing deleted: %s", report.aborted)
            return report
        report.candidates = len(candidates)
        if not candidates:
            return report
        try:
            live = await self.live_node_names()
        except (ApiError, ApiUnavailable) as e:
            report.aborted = f"confirming node list failed: {e}"
            log.error("garbage collection aborted, nothing deleted: %s", report.aborted)
            return report
        confirmed = orphans.stale(candidates, live | self.cached_node_names())
        report.kept_live = len(candidates) - len(confirmed)
        for t in confirmed:
            await self._delete(t, report)
        return report

    # --- node deletion events ----------------------------------------------------------------

    async def node_deleted(self, node: str) -> list[Target]:
        """Delete the NRT and NodeFeatures of a deleted node once the deletion is confirmed."""
        async with self._lock:
            try:
                # a LIST with a name field selector: nfd-gc may list nodes but not get them
                items, _rv = await fetching.list_objects(
                    self.api,
                    NODES,
                    field_selector=f"metadata.name={node}",
                    metadata_only=True,
                    transform=_metadata,
                )
            except (ApiError, ApiUnavailable) as e:
                log.error(
                    "cannot confirm deletion of node %s, its objects are left to the next sweep: %s", node, e
                )
                return []
            if items:
                log.info("node %s was deleted and exists again: its objects are kept", node)
                return []
            report = SweepReport()
            await self._delete(Target(orphans.NODERESOURCETOPOLOGY, "", node, node), report)
            try:
                nfs = await self._list(NODEFEATURES, label_selector=f"{NODE_NAME_LABEL}={node}")
            except (ApiError, ApiUnavailable) as e:
                log.error("failed to list NodeFeature objects of deleted node %s: %s", node, e)
                return report.deleted
            for t in map(orphans.nodefeature_target, nfs or []):
                if t.node == node:
                    await self._delete(t, report)
            return report.deleted

    async def run(self, interval_s: float, *, retry_s: float = 5.0, max_retry_s: float = 300.0) -> None:
        """Initial pass, then one every ``interval_s`` (node events are handled meanwhile).

        A pass that could not complete (API outage, RBAC not effective yet) is retried sooner,
        with backoff from ``retry_s``, instead of waiting a whole interval (1h by default).
        """
        backoff = retry_s
        while True:
            try:
                report = await self.sweep()
                failed = bool(report.aborted)
            except Exception:  # a bug must not stop the daemon; the next pass retries
                log.exception("garbage collection pass failed")
                failed = True
            if failed and backoff < interval_s:
                wait = backoff * (0.8 + 0.4 * random.random())  # jitter: gc replicas do not retry together
                log.info("garbage collection pass incomplete, retrying in %.0fs", wait)
                await asyncio.sleep(wait)
                backoff = min(backoff * 2, max_retry_s)
            else:
                backoff = retry_s
                await asyncio.sleep(interval_s)


def _gc_keys(t: Target) -> dict[str, Any]:
    """upstream's keys: the NodeFeature by namespace/name, a NodeResourceTopology by its node."""
    return {"nodefeature": t.ref} if t.kind == orphans.NODEFEATURE else {"nodeName": t.name}
