"""Masterless mode (``-enable-node-update`` / ``core.enableNodeUpdate``): the worker updates its
own Node.

The worker runs nfd-master's node pipeline (nfd.master.core.MasterCore: caches, node updater,
one updater task, resync) without what only the cluster's master does (leader election, Events,
NodeFeatureGroups), its caches narrowed to one node (``MasterOptions.only_node``): the
NodeFeatureRules of the cluster, the NodeFeatures labelled for this node (its own and
third-party ones) and this Node, each a watch; the same merge, rule engine, policy, planner,
bookkeeping annotations and evidence model. So a cluster can move between the modes without a
label flapping: both read and write the same annotations the same way. The policy settings
(extraLabelNs, denyLabelNs, labelWhiteList, enableTaints, restrictions, resyncPeriod, noPublish)
come from the master's config file, so both modes share one ConfigMap.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import replace

from nfd.k8s.client import ApiClient
from nfd.master.config import ConfigError, FlagOverrides, MasterConfig, read_config
from nfd.master.core import MasterCore
from nfd.master.eventsink import NoEvents
from nfd.master.options import MasterOptions

log = logging.getLogger("nfd.worker")


class NodeUpdateConfigError(ValueError):
    """The master config file is invalid; the message names the field."""


def load_master_config(path: str) -> tuple[MasterConfig, str | None]:
    """The policy settings from nfd-master's config file (missing file: defaults, as nfd-master)."""
    try:
        cfg, warnings, text = read_config(path, "", FlagOverrides())
    except ConfigError as e:
        raise NodeUpdateConfigError(str(e)) from None
    for w in warnings:
        log.warning("node update config: %s", w)
    return cfg, text


class MasterlessNode:
    """Runs the node pipeline for one node inside the worker's event loop."""

    def __init__(
        self,
        api: ApiClient,
        *,
        node_name: str,
        namespace: str,
        master_config_path: str,
        instance: str = "",
        feature_gates: dict[str, bool] | None = None,
        delete_grace_s: float = 5.0,
        batch_s: float = 1.0,
        spread_s: float = 1.0,
    ) -> None:
        self.path = master_config_path
        cfg, self._text = load_master_config(master_config_path)
        self._sig = _signature(master_config_path)
        opts = MasterOptions(
            namespace=namespace,
            node_name=node_name,
            instance=instance,
            feature_gates=dict(feature_gates or {}),
            delete_grace_s=delete_grace_s,
            batch_s=batch_s,
            only_node=node_name,
            # a rule change reaches every worker at once: spread their writes (core.nodeUpdateSpread)
            spread_s=spread_s,
        )
        # nfdApiParallelism: one node needs one updater; no Events (thousands of workers would
        # each post the same one)
        self.core = MasterCore(api, config=_one_updater(cfg), options=opts, events=NoEvents())
        self._task: asyncio.Task[None] | None = None

    @property
    def spread_s(self) -> float:
        return self.core.opts.spread_s

    @spread_s.setter
    def spread_s(self, value: float) -> None:
        """A new window applies from the next cluster-wide trigger (config reload)."""
        self.core.opts.spread_s = value

    @property
    def node_name(self) -> str:
        return self.core.opts.only_node

    def start(self) -> None:
        log.info("node update enabled: this worker updates node %s itself (masterless mode)", self.node_name)
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        await self.core.start_caches()
        self.core.start_updaters("node update started")

    @property
    def processed(self) -> int:
        """Passes over the node that finished (written or found right)."""
        return self.core.updater.counts["written"] + self.core.updater.counts["noop"]

    def reload_config(self) -> None:
        """Re-read the master config file when it changed; an invalid one keeps the previous."""
        sig = _signature(self.path)
        if sig == self._sig:
            return
        self._sig = sig
        try:
            cfg, text = load_master_config(self.path)
        except NodeUpdateConfigError as e:
            log.error("invalid node update config, keeping the previous one: %s", e)
            return
        if text == self._text:
            return
        self._text = text
        cfg = _one_updater(cfg)
        if cfg != self.core.config:
            log.info("node update config reloaded from %s", self.path)
            self.core.set_config(cfg)

    async def stop(self) -> None:
        # the start first: one still starting informers would start them after the core stopped
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        await self.core.stop()


def _one_updater(cfg: MasterConfig) -> MasterConfig:
    return replace(cfg, nfd_api_parallelism=1)


def _signature(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)
