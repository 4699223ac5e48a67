"""The node pipeline that nfd-master and masterless mode share.

``MasterCore`` composes the caches (nfd.master.controller), the node updater
(nfd.master.nodeupdater) and its worker pool (nfd.master.workers) over one config, rule book,
evidence record and node queue, and owns what moves work through them: queueing every node,
a config reload, the resync period. It neither elects a leader, nor posts Events, nor keeps
NodeFeatureGroups: nfd-master (nfd.master.master.NfdMaster) adds those, and a masterless
worker (nfd.worker.masterless) runs the core alone, its caches narrowed to its own node.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from nfd.common.logsetup import klogger
from nfd.k8s import errors as kerr
from nfd.k8s.client import ApiClient
from nfd.k8s.resources import NODES
from nfd.master.access import allowed, dra_available
from nfd.master.config import MasterConfig
from nfd.master.controller import Controller
from nfd.master.evidence import Evidence
from nfd.master.metrics import MasterMetrics
from nfd.master.nodeupdater import NodeUpdater
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
    # NodeFeature and Node caches are narrowed to it by selectors.
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
    return spread_s * (zlib.crc32(node.encode()) % 1000) / 1000.0


class MasterCore:
    """Caches, node updater and worker pool over one config; ``ready`` while the updaters run.

    ``process_group`` (nfd-master with the NodeFeatureGroupAPI gate) adds the group cache and
    the group updaters; without it nothing about groups is watched or queued.
    """

    def __init__(
        self,
        api: ApiClient,
        *,
        config: MasterConfig,
        options: MasterOptions,
        metrics: MasterMetrics | None = None,
        write_api: ApiClient | None = None,
        process_group: Callable[[str], Coroutine[Any, Any, None]] | None = None,
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
        self.ready = False
        self.rulebook: Any = None
        self.on_synced: Callable[[], None] | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._resync_task: asyncio.Task[None] | None = None
        self.controller = Controller(self, api, groups=process_group is not None)
        self.updater = NodeUpdater(self)
        self.pool = WorkerPool(
            node_queue=self.node_queue,
            process_node=self.updater.process_node,
            node_failed=self.metrics.node_update_failures.inc,
            background=self.updater.background_worker,
            group_queue=self.group_queue,
            process_group=process_group,
        )

    def report_broken_rule(self, obj: dict[str, Any], msg: str, *, reason: str = "InvalidRule") -> None:
        """A rule object is invalid or over its budget (already logged by the caller). The core
        posts nothing: thousands of masterless workers would each post the same Event."""

    # -- work ---------------------------------------------------------------------------------
    def update_all_nodes(self, reason: str, *, spread: bool = True) -> None:
        if not self.ready:
            return
        if not self.controller.watch_nodes:
            # No Node watch allowed (upstream's RBAC): list instead.
            self.spawn(self._list_and_queue(reason))
            return
        klog.info_s("will process all nodes in the cluster", nodeCount=len(self.controller.node_informer.cache), reason=reason)
        if self.controller.node_informer.synced:
            self.controller.forget_absent_nodes({name for _, name in self.controller.node_informer.cache})
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
        names = [(obj.get("metadata") or {}).get("name") or "" for obj in items]
        self.controller.forget_absent_nodes(set(names))
        for name in names:
            self.node_queue.add(name)

    def set_config(self, config: MasterConfig) -> None:
        """Live reload: a new (already validated) config; every node is re-evaluated."""
        old = self.config
        self.config = config
        self.controller.nf_informer.page_size = config.informer_page_size  # used by the next relist
        limiter = getattr(self.write_api, "limiter", None)
        if limiter is not None and (old.kube_api_qps, old.kube_api_burst) != (config.kube_api_qps, config.kube_api_burst):
            limiter.qps, limiter.burst = config.kube_api_qps, max(1, config.kube_api_burst)
        if self.ready and old.nfd_api_parallelism != config.nfd_api_parallelism:
            self.spawn(self.pool.resize(lambda: self.config.nfd_api_parallelism if self.ready else None))
        self.config_generation += 1
        self.controller.ensure_ns_informer()
        if self.controller.ns_informer is not None:
            self.spawn(self.controller.ns_informer.start())
        if self.ready:
            self.update_all_nodes("configuration changed")
            self._restart_resync()

    def spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.append(t)
        t.add_done_callback(lambda x: self._tasks.remove(x) if x in self._tasks else None)

    # -- lifecycle ----------------------------------------------------------------------------
    async def start_caches(self) -> None:
        """Start the informers and wait until they have synced."""
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

    def start_updaters(self, reason: str) -> None:
        """Start ``nfdApiParallelism`` updaters (and the background lane) and queue every node."""
        self.ready = True
        self.pool.start(self.config.nfd_api_parallelism)
        self.update_all_nodes(reason, spread=False)
        self._restart_resync()

    async def stop_updaters(self) -> None:
        """Stop the updaters; queued work is dropped (the next start queues every node)."""
        self.ready = False
        if self._resync_task is not None:
            self._resync_task.cancel()
            self._resync_task = None
        await self.pool.stop()
        self.node_queue.clear()
        self.group_queue.clear()
        self.updater.deferred_queue.clear()

    def _restart_resync(self) -> None:
        if self._resync_task is not None:
            self._resync_task.cancel()
            self._resync_task = None
        if self.config.resync_period > 0 and self.ready:
            self._resync_task = asyncio.create_task(self._resync_loop(self.config.resync_period))

    async def _resync_loop(self, period: float) -> None:
        while True:
            await asyncio.sleep(period)
            self.update_all_nodes("periodic resync")
            self.controller.all_groups()

    async def stop(self) -> None:
        if self.ready:
            await self.stop_updaters()
        self.node_queue.shutdown()
        self.group_queue.shutdown()
        self.updater.deferred_queue.shutdown()
        await self.controller.stop()
        for t in list(self._tasks):
            t.cancel()
