"""nfd-master: the asyncio shell around the pure pieces.

The caches (informers, nfd.master.controller) of NodeFeatures (compressed), NodeFeatureRules (compiled), NodeFeatureGroups,
Nodes (slim) and, with a namespace selector, Namespaces run on every replica, leader or not, so a
standby takes over with warm caches. Only the leader runs the updaters. Work is a node name (or a
group name) on a de-duplicating queue; ``nfdApiParallelism`` workers take items, compute the
desired state (cached per node while its inputs are unchanged), plan the patches against the
cached Node and write only when the plan is not empty.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nfd.common.logsetup import klogger
from nfd.k8s import errors as kerr
from nfd.k8s.client import ApiClient
from nfd.k8s.fetching import get
from nfd.k8s.patching import patch
from nfd.k8s.resources import (
    NODES,
)
from nfd.master import bookkeeping as bk
from nfd.master.access import allowed, dra_available
from nfd.master.config import MasterConfig
from nfd.master.controller import Controller
from nfd.master.evidence import Evidence
from nfd.master.leadership import elect_until
from nfd.master.metrics import MasterMetrics
from nfd.master.updater import NodeUpdater
from nfd.master.workers import WorkerPool
from nfd.master.workqueue import WorkQueue

log = logging.getLogger("nfd.master")
klog = klogger("nfd.master")  # upstream's structured lines (docs/logging.md)

@dataclass(slots=True)
class MasterOptions:
    """Process-level settings (flags that are not part of the config file)."""

    namespace: str = "node-feature-discovery"
    node_name: str = ""
    instance: str = ""
    enable_leader_election: bool = False
    feature_gates: dict[str, bool] = field(default_factory=dict)
    # Ours: how long a NodeFeature delete waits for a re-create before the node is re-processed.
    delete_grace_s: float = 5.0
    # Ours: re-process a node when its labels/annotations/taints/capacity change on the API side.
    react_to_node_changes: bool = True
    # NodeFeature changes of one node within this period are handled in one pass (upstream
    # flushes its event batch once per second).
    batch_s: float = 1.0
    # Ours (masterless mode, nfd-worker -enable-node-update): work on this one node only. The
    # NodeFeature and Node caches are narrowed to it by selectors, no leader election, and no
    # Events (thousands of workers would each post the same InvalidRule event).
    only_node: str = ""
    # Ours (masterless): a cluster-wide trigger (a rule or config change, a resync) reaches every
    # worker at once; each delays its pass by a fixed per-node fraction of this many seconds so
    # the writes do not arrive together (all workers share one API Priority and Fairness flow,
    # whose 429s cost each worker a second exchange). 0: no spread.
    spread_s: float = 0.0

    @property
    def node_feature_groups(self) -> bool:
        return self.feature_gates.get("NodeFeatureGroupAPI", False)

    @property
    def disable_auto_prefix(self) -> bool:
        return self.feature_gates.get("DisableAutoPrefix", False)

    @property
    def dra_resource_slices(self) -> bool:
        """Ours, on by default: the ``dra`` feature source (docs/dra.md). It changes nothing on
        a cluster without ResourceSlices or without rules that read ``dra.device``/``devices``.
        Off by default for a masterless worker (``only_node``): its RBAC has no cluster-wide
        read of ResourceSlices, and thousands of workers should not each try and warn."""
        return self.feature_gates.get("DRAResourceSlices", not self.only_node)


def spread_delay(node: str, *, spread_s: float) -> float:
    """A node's fixed share of ``spread_s`` (a hash of its name): the same node waits the same
    time after every trigger, and a thousand nodes spread evenly over the window."""
    import zlib

    return spread_s * (zlib.crc32(node.encode()) % 1000) / 1000.0


class NfdMaster:
    def __init__(
        self,
        api: ApiClient,
        *,
        config: MasterConfig,
        options: MasterOptions,
        metrics: MasterMetrics | None = None,
        write_api: ApiClient | None = None,
    ) -> None:
        self.api = api
        self.write_api = write_api or api
        self.config = config
        self.opts = options
        self.metrics = metrics or MasterMetrics()
        self.config_generation = 0
        self.evidence = Evidence()
        self.node_queue: WorkQueue[str] = WorkQueue()
        self.group_queue: WorkQueue[str] = WorkQueue()
        self.is_leader = False
        self.ready = False
        self.rulebook: Any = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._stop = asyncio.Event()
        self._resync_task: asyncio.Task[None] | None = None
        self.on_synced: Callable[[], None] | None = None
        self.controller = Controller(self, api)
        self.updater = NodeUpdater(self)
        self.pool = WorkerPool(
            node_queue=self.node_queue,
            process_node=self.updater.process_node,
            node_failed=self.metrics.node_update_failures.inc,
            background=self.updater.background_worker,
            group_queue=self.group_queue,
            process_group=self.process_group if self.controller.nfg_informer is not None else None,
        )

    def report_broken_rule(self, obj: dict[str, Any], msg: str, *, reason: str = "InvalidRule") -> None:
        if not self.is_leader or self.opts.only_node:
            return
        from nfd.k8s.events import post_event

        involved = dict(obj)
        involved.setdefault("apiVersion", "nfd.k8s-sigs.io/v1alpha1")
        involved.setdefault("kind", "NodeFeatureRule")
        self.spawn(
            post_event(
                self.write_api,
                # NodeFeatureRules are cluster-scoped: the API server takes their Events in
                # "default" only ("involvedObject.namespace ... does not match event.namespace")
                namespace="default",
                involved=involved,
                reason=reason,
                message=msg,
                component="nfd-master",
                type_="Warning",
            )
        )

    # -- work ---------------------------------------------------------------------------------
    def update_all_nodes(self, reason: str, *, spread: bool = True) -> None:
        if not self.ready:
            return
        if not self.controller.watch_nodes:
            # No Node watch allowed (upstream's RBAC): list instead.
            self.spawn(self._list_and_queue(reason))
            return
        klog.info_s("will process all nodes in the cluster", nodeCount=len(self.controller.node_informer.cache), reason=reason)
        spread_s = self.opts.spread_s if (spread and self.opts.only_node) else 0.0
        for _, name in list(self.controller.node_informer.cache):
            if spread_s > 0:
                self.node_queue.add_after(name, spread_delay(name, spread_s=spread_s))
            else:
                self.node_queue.add(name)

    async def _list_and_queue(self, reason: str) -> None:
        from nfd.k8s.backoff import Backoff
        from nfd.k8s.fetching import list_objects

        retry = Backoff("listing nodes", log=log)
        while True:
            try:
                items, _ = await list_objects(self.api, NODES, page_size=500, metadata_only=True)
                retry.ok()
                break
            except (kerr.ApiError, kerr.ApiUnavailable) as e:
                await asyncio.sleep(retry.failed(e))
        klog.info_s("will process all nodes in the cluster", nodeCount=len(items), reason=reason)
        for obj in items:
            self.node_queue.add((obj.get("metadata") or {}).get("name") or "")

    def set_config(self, config: MasterConfig) -> None:
        """Live reload: a new (already validated) config; every node is re-evaluated."""
        old = self.config
        self.config = config
        self.controller.nf_informer.page_size = config.informer_page_size  # used by the next relist
        limiter = getattr(self.write_api, "limiter", None)
        if limiter is not None and (old.kube_api_qps, old.kube_api_burst) != (config.kube_api_qps, config.kube_api_burst):
            limiter.qps, limiter.burst = config.kube_api_qps, max(1, config.kube_api_burst)
        if self.is_leader and old.nfd_api_parallelism != config.nfd_api_parallelism:
            self.spawn(self.pool.resize(lambda: self.config.nfd_api_parallelism if self.is_leader else None))
        self.config_generation += 1
        self.controller.ensure_ns_informer()
        if self.controller.ns_informer is not None:
            self.spawn(self.controller.ns_informer.start())
        if self.ready:
            self.update_all_nodes("configuration changed")
            self._restart_resync()

    async def process_group(self, key: str) -> None:
        from nfd.master.groups import process_group

        await process_group(self, key)

    # -- leadership and lifecycle ------------------------------------------------------------------
    async def _stop_workers(self) -> None:
        await self.pool.stop()
        self.node_queue.clear()
        self.group_queue.clear()
        self.updater.deferred_queue.clear()

    async def become_leader(self) -> None:
        klog.info_s("starting the NFD master updater pool", parallelism=self.config.nfd_api_parallelism)
        self.is_leader = True
        self.metrics.is_leader.set(1)
        # Evidence of this term only: a standby has processed nothing.
        self.evidence.reset_processed()
        self.ready = True
        self.pool.start(self.config.nfd_api_parallelism)
        self.update_all_nodes("became leader", spread=False)
        self.controller.all_groups()
        self._restart_resync()
        for name, msg in sorted((self.rulebook.broken if self.rulebook is not None else {}).items()):
            log.error("NodeFeatureRule %s is invalid: %s", name, msg)

    async def step_down(self) -> None:
        log.warning("lost leadership: stopping updaters, keeping caches warm")
        self.is_leader = False
        self.ready = False
        self.metrics.is_leader.set(0)
        if self._resync_task is not None:
            self._resync_task.cancel()
            self._resync_task = None
        await self._stop_workers()

    def _restart_resync(self) -> None:
        if self._resync_task is not None:
            self._resync_task.cancel()
            self._resync_task = None
        if self.config.resync_period > 0 and self.is_leader:
            self._resync_task = asyncio.create_task(self._resync_loop(self.config.resync_period))

    async def _resync_loop(self, period: float) -> None:
        while True:
            await asyncio.sleep(period)
            self.update_all_nodes("periodic resync")
            self.controller.all_groups()

    def spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.append(t)
        t.add_done_callback(lambda x: self._tasks.remove(x) if x in self._tasks else None)

    async def start_caches(self) -> None:
        from nfd.master.pipeline import RuleBook

        if self.rulebook is None:
            self.rulebook = RuleBook()
        self.controller.ensure_ns_informer()
        watch_nodes = await allowed(self.api, verb="watch", resource="nodes")
        if not watch_nodes:
            log.warning("RBAC does not allow watching nodes: reading each Node before updating it")
        dra = self.opts.dra_resource_slices and await dra_available(self.api)
        await self.controller.start(watch_nodes=watch_nodes, dra=dra)
        if self.on_synced is not None:
            self.on_synced()

    async def stop(self) -> None:
        self._stop.set()
        await self.step_down() if self.is_leader else None
        self.node_queue.shutdown()
        self.group_queue.shutdown()
        self.updater.deferred_queue.shutdown()
        await self.controller.stop()
        for t in list(self._tasks):
            t.cancel()

    async def run(self, *, elector_factory: Callable[[], Any] | None = None) -> None:
        """Sync caches, then lead (or stand by with warm caches until leading) until stopped.

        ``elector_factory()`` returns a fresh nfd.k8s.lease.LeaderElector wired to
        become_leader/step_down; after losing the lease we stand by again instead of exiting.
        """
        await self.start_caches()
        if elector_factory is None:
            await self.become_leader()
            await self._stop.wait()
            return
        await elect_until(self._stop, elector_factory=elector_factory, is_leader=lambda: self.is_leader,
                          step_down=self.step_down, retry_period=lambda: self.config.leader_election.retry_period)

    async def update_own_node(self) -> None:
        """Remove the deprecated master.version annotation from the node we run on (upstream)."""
        name = self.opts.node_name or os.environ.get("NODE_NAME", "")
        if not name or self.config.no_publish:
            return
        key = bk.instance_annotation(bk.MASTER_VERSION, self.opts.instance)
        try:
            obj = await get(self.write_api, NODES, name=name)
            if obj is None or key not in ((obj.get("metadata") or {}).get("annotations") or {}):
                return
            ptr = key.replace("~", "~0").replace("/", "~1")
            await patch(self.write_api, NODES, name=name, body=[{"op": "remove", "path": f"/metadata/annotations/{ptr}"}])
        except (kerr.ApiError, kerr.ApiUnavailable) as e:
            log.warning("could not clean up %s on node %s: %s", key, name, e)


