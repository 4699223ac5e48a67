"""nfd-master's process: the API client, the master, its config reload, probes, leader election
and ``-prune``, from flags already parsed (nfd.master.__main__)."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
from typing import TYPE_CHECKING

from prometheus_client import disable_created_metrics

from nfd import __version__
from nfd.common import httpserver
from nfd.common.logsetup import Dump, klogger
from nfd.common.podenv import pod_namespace
from nfd.common.probes import Heartbeat, ProbeServer, liveness_route
from nfd.k8s.client import ApiClient
from nfd.master.config import ConfigError, FlagOverrides, MasterConfig, config_dump, read_config
from nfd.master.leadership import lease_electors, lease_identity
from nfd.master.master import NfdMaster
from nfd.master.metrics import MasterMetrics
from nfd.master.options import MasterOptions
from nfd.master.prune import prune

if TYPE_CHECKING:
    from nfd.common.goflags import FlagValues

log = logging.getLogger("nfd.master")
klog = klogger("nfd.master")


def log_config(path: str, text: str | None, cfg: MasterConfig) -> None:
    """Upstream's lines for a (re)loaded config: the file's state, then the effective config."""
    if text is None:
        klog.info_s("config file not found, using defaults", path=path)
    else:
        klog.info_s("configuration file parsed", path=path)
    klog.info_s("configuration successfully updated", configuration=Dump(config_dump(cfg)))


async def serve(args: FlagValues, cfg: MasterConfig, gates: dict[str, bool], cfg_text: str | None,
                overrides: FlagOverrides) -> int:
    """Run nfd-master with the parsed flags ``args`` and the config read at start (``cfg``,
    ``cfg_text``) until SIGTERM/SIGINT; ``overrides`` (the flags given) apply to every reload."""
    api = await ApiClient.from_kubeconfig(
        args.kubeconfig or None, qps=cfg.kube_api_qps, burst=cfg.kube_api_burst, user_agent=f"nfd-master/{__version__}"
    )
    ns = api.namespace or pod_namespace()
    if os.environ.get("KUBERNETES_NAMESPACE"):
        ns = os.environ["KUBERNETES_NAMESPACE"]
    klog.info_s("Node Feature Discovery Master", version=__version__, nodeName=os.environ.get("NODE_NAME", ""),
                namespace=ns)
    if args.instance:
        klog.info_s("Master instance", instance=args.instance)
    opts = MasterOptions(
        namespace=ns,
        node_name=os.environ.get("NODE_NAME", ""),
        instance=args.instance,
        enable_leader_election=bool(args.enable_leader_election),
        feature_gates=gates,
        delete_grace_s=args.delete_grace_period,
    )
    if args.prune:
        try:
            return await prune(api, config=cfg, instance=args.instance)
        finally:
            await api.close()

    disable_created_metrics()  # upstream's Go client exports no *_created series
    metrics = MasterMetrics(version=__version__)
    metrics.bind_api_counts(api.metrics)
    master = NfdMaster(api, config=cfg, options=opts, metrics=metrics)
    master.on_synced = _freeze_heap
    heartbeat, server = _start_probes(args, metrics)

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    reload_now = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, reload_now.set)
    # Ours: SIGUSR1 forces a full re-evaluation of every node (what resyncPeriod does).
    loop.add_signal_handler(signal.SIGUSR1, lambda: master.update_all_nodes("forced resync (SIGUSR1)"))

    elector_factory = None
    if args.enable_leader_election:
        elector_factory = lease_electors(master.write_api, namespace=ns, identity=lease_identity(),
                                         timings=lambda: master.config.leader_election,
                                         on_started_leading=master.become_leader, on_stopped_leading=master.step_down)

    await master.update_own_node()
    cfg_task = asyncio.create_task(watch_config(args, overrides, cfg_text, master, reload_now))
    run_task = asyncio.create_task(master.run(elector_factory=elector_factory))
    stop_task = asyncio.create_task(stop.wait())
    await asyncio.wait({run_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
    klog.info_s("shutting down nfd-master")
    rc = 0
    if run_task.done() and run_task.exception() is not None:
        log.error("nfd-master failed: %s", run_task.exception())
        rc = 1
    await master.stop()
    if not run_task.done():
        try:
            async with asyncio.timeout(5):
                await run_task
        except (TimeoutError, asyncio.CancelledError, Exception):
            pass
    cfg_task.cancel()
    stop_task.cancel()
    heartbeat.stop()
    server.close()
    await api.close()
    return rc


def _start_probes(args: FlagValues, metrics: MasterMetrics) -> tuple[Heartbeat, ProbeServer]:
    """/healthz and /metrics, answered from a thread of their own (nfd.common.probes): whatever
    the loop is evaluating, /healthz answers in milliseconds, and fails once the loop's
    heartbeat stops."""
    heartbeat = Heartbeat()
    heartbeat.start()
    server = ProbeServer(
        args.port,
        {"/healthz": liveness_route(heartbeat), "/metrics": httpserver.metrics_route(metrics.registry)},
        host=args.bind_address or "0.0.0.0",
    )
    klog.info_s("http server starting", port=f":{server.port}")
    return heartbeat, server


async def watch_config(args: FlagValues, overrides: FlagOverrides, cfg_text: str | None, master: NfdMaster,
                       reload_now: asyncio.Event) -> None:
    """Re-read the config every ``-config-poll-interval`` (or at once on ``reload_now``, SIGHUP)
    and hand a changed, valid one to ``master``; an invalid one is logged once and the last
    good one stays."""
    last = cfg_text
    last_error: str | None = None
    while True:
        try:
            async with asyncio.timeout(max(0.2, args.config_poll_interval)):
                await reload_now.wait()
        except TimeoutError:
            pass
        reload_now.clear()
        try:
            new_cfg, warnings, text = read_config(args.config, args.options, overrides)
        except ConfigError as e:
            msg = str(e)
            if msg != last_error:
                log.error("invalid configuration, keeping the previous one: %s", msg)
            last_error = msg
            continue
        last_error = None
        if text == last:
            continue
        last = text
        for w in warnings:
            log.warning("config: %s", w)
        if new_cfg != master.config:
            log_config(args.config, text, new_cfg)
            master.set_config(new_cfg)


def _freeze_heap() -> None:
    """The synced caches live as long as the process: keep them out of the cyclic collector's
    full passes, which otherwise walk all of them again (~90 ms each at 5,000 nodes)."""
    gc.collect()
    gc.freeze()
