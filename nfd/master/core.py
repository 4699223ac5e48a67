"""The node pipeline that nfd-master and masterless mode share.

``MasterCore`` composes the caches (nfd.master.controller), the node updater
(nfd.master.nodeupdater) and its worker pool (nfd.master.workers) over one config, rule book,
evidence record and node queue, and owns what moves work through them: queueing every node,
a config reload, the resync period. It is the one place that knows them all: each part is
handed the narrow things it uses (the config in force, the caches, the queues, the write
client, the Event sink) and knows nothing of the core. It neither elects a leader, nor posts Events, nor keeps
NodeFeatureGroups: nfd-master (nfd.master.master.NfdMaster) adds those, and a masterless
worker (nfd.worker.masterless) runs the core alone, its caches narrowed to its own node.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from nfd.common.logsetup import klogger
from nfd.k8s.client import ApiClient
from nfd.master.access import allowed, dra_available
from nfd.master.config import MasterConfig
from nfd.master.controller import Controller
from nfd.master.eventsink import ApiEvents, EventSink, NoEvents
from nfd.master.evidence import Evidence
from nfd.master.fairness import CostLedger
from nfd.master.metrics import MasterMetrics
from nfd.master.nodeupdater import CachedDesired, NodeUpdater
from nfd.master.options import LiveConfig, MasterOptions
from nfd.master.workers import BackgroundTasks, WorkerPool
from nfd.master.workqueue import WorkQueue
from nfd.nodestate.rulebook import RuleBook

log = logging.getLogger("nfd.master")
klog = klogger("nfd.master")  # upstream's structured lines (docs/logging.md)


class MasterCore:
    """Caches, node updater and worker pool over one config; ``ready`` while the updaters run.

    ``process_group`` (nfd-master with the NodeFeatureGroupAPI gate) adds the group cache and
    the group updaters; without it nothing about groups is watched or queued. ``events``: where
    broken rules and node updates are reported (default: nothing in masterless mode, a node's
    FeaturesUpdated Event otherwise); ``tasks``: where background coroutines run.
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
        events: EventSink | None = None,
        tasks: BackgroundTasks | None = None,
    ) -> None:
        self.api = api
        self.write_api = write_api or api
        self.live = LiveConfig(config)
        self.opts = options
        self.metrics = metrics or MasterMetrics()
        self.tasks = tasks or BackgroundTasks()
        if events is None:
            events = NoEvents() if options.only_node else ApiEvents(self.write_api, spawn=self.spawn,
                                                                    leading=lambda: False)
        self.events = events
        self.evidence = Evidence()
        self.node_queue: WorkQueue[str] = WorkQueue()
        self.group_queue: WorkQueue[str] = WorkQueue()
        self.ready = False
        self.rulebook = RuleBook()
        # A masterless worker has one node: its own failures are all there is to count.
        ledger = CostLedger(threshold=1) if options.only_node else CostLedger()
        desired_cache: dict[str, CachedDesired] = {}
        self.on_synced: Callable[[], None] | None = None
        self._resync_task: asyncio.Task[None] | None = None
        self.controller = Controller(
            api, live=self.live, opts=options, rulebook=self.rulebook, evidence=self.evidence, ledger=ledger,
            node_queue=self.node_queue, group_queue=self.group_queue, desired_cache=desired_cache,
            events=events, spawn=self.spawn, ready=lambda: self.ready, groups=process_group is not None,
        )
        self.updater = NodeUpdater(
            self.controller, live=self.live, opts=options, rulebook=self.rulebook, evidence=self.evidence,
            ledger=ledger, node_queue=self.node_queue, desired_cache=desired_cache, write_api=self.write_api,
            events=events, metrics=self.metrics,
        )
        self.pool = WorkerPool(
            node_queue=self.node_queue,
            process_node=self.updater.process_node,
            node_failed=self.metrics.node_update_failures.inc,
            background=self.updater.background_worker,
            group_queue=self.group_queue,
            process_group=process_group,
        )

    @property
    def config(self) -> MasterConfig:
        """The config in force."""
        return self.live.config

    @property
    def config_generation(self) -> int:
        return self.live.generation

    # -- work ---------------------------------------------------------------------------------
    def update_all_nodes(self, reason: str, *, spread: bool = True) -> None:
        """Queue every node (nothing while not ``ready``); see Controller.queue_all_nodes."""
        self.controller.queue_all_nodes(reason, spread=spread)

    def set_config(self, config: MasterConfig) -> None:
        """Live reload: a new (already validated) config; every node is re-evaluated."""
        old = self.live.config
        self.live.replace(config)
        self.controller.nf_informer.page_size = config.informer_page_size  # used by the next relist
        limiter = getattr(self.write_api, "limiter", None)
        if limiter is not None and (old.kube_api_qps, old.kube_api_burst) != (config.kube_api_qps, config.kube_api_burst):
            limiter.qps, limiter.burst = config.kube_api_qps, max(1, config.kube_api_burst)
        if self.ready and old.nfd_api_parallelism != config.nfd_api_parallelism:
            self.spawn(self.pool.resize(lambda: self.config.nfd_api_parallelism if self.ready else None))
        self.controller.ensure_ns_informer()
        if self.controller.ns_informer is not None:
            self.spawn(self.controller.ns_informer.start())
        if self.ready:
            self.update_all_nodes("configuration changed")
            self._restart_resync()

    def spawn(self, coro: Any) -> None:
        self.tasks.spawn(coro)

    # -- lifecycle ----------------------------------------------------------------------------
    async def start_caches(self) -> None:
        """Start the informers and wait until they have synced."""
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
        self.tasks.cancel_all()
