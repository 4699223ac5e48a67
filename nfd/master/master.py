"""nfd-master: the shared node pipeline (nfd.master.core) plus what only the cluster's master does.

The caches (informers, nfd.master.controller) of NodeFeatures (compressed), NodeFeatureRules (compiled), NodeFeatureGroups,
Nodes (slim) and, with a namespace selector, Namespaces run on every replica, leader or not, so a
standby takes over with warm caches. Only the leader runs the updaters. Work is a node name (or a
group name) on a de-duplicating queue; ``nfdApiParallelism`` workers take items, compute the
desired state (cached per node while its inputs are unchanged), plan the patches against the
cached Node and write only when the plan is not empty. On top of the core, nfd-master elects a
leader, keeps NodeFeatureGroup status, posts Events for broken rules and cleans up its own Node.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Any

from nfd.common.logsetup import klogger
from nfd.k8s import errors as kerr
from nfd.k8s.client import ApiClient
from nfd.k8s.fetching import get
from nfd.k8s.patching import patch
from nfd.k8s.resources import NODES
from nfd.master.config import MasterConfig
from nfd.master.core import MasterCore
from nfd.master.crdcheck import CrdCheck
from nfd.master.eventsink import ApiEvents, NoEvents
from nfd.master.groupstatus import process_group
from nfd.master.leadership import elect_until
from nfd.master.metrics import MasterMetrics
from nfd.master.options import MasterOptions
from nfd.master.workers import BackgroundTasks
from nfd.nodestate import bookkeeping as bk

log = logging.getLogger("nfd.master")
klog = klogger("nfd.master")  # upstream's structured lines (docs/logging.md)


class NfdMaster(MasterCore):
    def __init__(
        self,
        api: ApiClient,
        *,
        config: MasterConfig,
        options: MasterOptions,
        metrics: MasterMetrics | None = None,
        write_api: ApiClient | None = None,
    ) -> None:
        self.is_leader = False
        self._stop = asyncio.Event()
        # groups need every node: only a master that sees the whole cluster keeps them
        groups = options.node_feature_groups and not options.only_node
        tasks = BackgroundTasks()
        # Warning Events on broken rules from the leader only; none at all for one node
        events = NoEvents() if options.only_node else ApiEvents(write_api or api, spawn=tasks.spawn,
                                                                leading=lambda: self.is_leader)
        super().__init__(api, config=config, options=options, metrics=metrics, write_api=write_api,
                         process_group=self.process_group if groups else None, events=events, tasks=tasks)
        # the CRDs the cluster serves, against the fields this master evaluates (not for one node)
        self.crdcheck = None if options.only_node else CrdCheck(
            api, write_api=self.write_api, metrics=self.metrics, spawn=self.spawn, leading=lambda: self.is_leader)

    async def process_group(self, key: str) -> None:
        informer = self.controller.nfg_informer
        assert informer is not None
        await process_group(key, groups=informer, node_names=self.controller.node_names,
                            merged_for=self.updater.merged_for, write_api=self.write_api, metrics=self.metrics)

    # -- leadership and lifecycle ------------------------------------------------------------------
    async def become_leader(self) -> None:
        klog.info_s("starting the NFD master updater pool", parallelism=self.config.nfd_api_parallelism)
        self.is_leader = True
        self.metrics.is_leader.set(1)
        # Evidence of this term only: a standby has processed nothing.
        self.evidence.reset_processed()
        self.start_updaters("became leader")
        self.controller.all_groups()
        if self.crdcheck is not None:
            self.crdcheck.post_pending()
        for name, msg in sorted(self.rulebook.broken.items()):
            log.error("NodeFeatureRule %s is invalid: %s", name, msg)

    async def step_down(self) -> None:
        log.warning("lost leadership: stopping updaters, keeping caches warm")
        self.is_leader = False
        self.metrics.is_leader.set(0)
        await self.stop_updaters()

    async def stop(self) -> None:
        self._stop.set()
        await self.step_down() if self.is_leader else None
        if self.crdcheck is not None:
            await self.crdcheck.stop()
        await super().stop()

    async def run(self, *, elector_factory: Callable[[], Any] | None = None) -> None:
        """Sync caches, then lead (or stand by with warm caches until leading) until stopped.

        ``elector_factory()`` returns a fresh nfd.k8s.lease.LeaderElector wired to
        become_leader/step_down; after losing the lease we stand by again instead of exiting.
        """
        if self.crdcheck is not None:
            await self.crdcheck.start()
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
