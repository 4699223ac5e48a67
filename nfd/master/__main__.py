"""``nfd-master``: command line, config file (with live reload), leader election, ``-prune``."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import signal
import sys

from nfd.common.goflags import (
    FEATURE_GATES_USAGE,
    GoFlagSet,
    add_klog_flags,
    go_duration_value,
    klog_header_options,
    parse_feature_gates,
    verbosity,
)
from nfd.common.logsetup import klogger, setup_logging
from nfd.common.podenv import pod_namespace
from nfd.master.config import (
    DEFAULT_CONFIG_PATH,
    INSTANCE_RE,
    ConfigError,
    FlagOverrides,
    MasterConfig,
    parse_ns_list,
    read_config,
)

log = logging.getLogger("nfd.master")
klog = klogger("nfd.master")
def build_parser() -> GoFlagSet:
    """Upstream's flags with upstream's help texts, then ours. Flags overriding config options
    are read only when given (``ns.given``), as upstream's flags.Visit."""
    p = GoFlagSet("nfd-master", description="Node Feature Discovery master: labels, annotates and taints "
                  "nodes from their NodeFeature objects and the NodeFeatureRules.")
    p.bool("version", False, "Print version and exit.")
    p.value("feature-gates", FEATURE_GATES_USAGE, parse=parse_feature_gates)
    p.string("instance", "", "Instance name. Used to separate annotation namespaces for multiple parallel deployments.")
    p.string("config", DEFAULT_CONFIG_PATH, "Config file to use.")
    p.string("kubeconfig", "", "Kubeconfig to use")
    p.int("port", 8080, "Port which metrics and healthz endpoints are served on")
    p.bool("prune", False, "Prune all NFD related attributes from all nodes of the cluster and exit.")
    p.string("options", "", "Specify config options from command line. Config options are specified "
             "in the same format as in the config file (i.e. json or yaml). These options")
    p.bool("enable-leader-election", False,
           "Enables a leader election. Enable this when running more than one replica on nfd master.")
    add_klog_flags(p, wrapped=True)
    p.value("extra-label-ns", "Comma separated list of allowed extra label namespaces", parse=str)
    p.value("label-whitelist", "Regular expression to filter label names to publish to the Kubernetes API "
            "server. NB: the label namespace is omitted i.e. the filter is only applied to the name part after '/'.",
            parse=str)
    p.bool("enable-taints", False, "Enable node tainting feature")
    p.bool("no-publish", False, "Do not publish feature labels")
    p.value("deny-label-ns", "Comma separated list of denied label namespaces", parse=str)
    p.value("resync-period", "Specify the NFD API controller resync period.", parse=go_duration_value,
            def_text="1h0m0s", zero_text="0s")
    p.int("nfd-api-parallelism", 10, "Defines the maximum number of goroutines responsible of updating nodes. "
          "Can be used for the throttling mechanism.")
    p.int("informer-page-size", 200, "The list size to use when listing NodeFeature objects to sync informer cache.")
    # ours
    p.string("bind-address", "", "Address the metrics and healthz endpoints listen on (an IP address; empty: every address).")
    p.float("kube-api-qps", None, "API client requests per second (default: the config's kubeApiQPS).")
    p.int("kube-api-burst", None, "API client burst (default: the config's kubeApiBurst).")
    p.duration("delete-grace-period", 5.0,
               "Wait this long after a NodeFeature is deleted before removing what it provided from its node.")
    p.duration("config-poll-interval", 5.0, "How often to check the config file for changes.")
    p.int("metrics", None, "", hidden=True)  # removed upstream; accepted, warned about
    return p


def overrides_from(args: argparse.Namespace) -> FlagOverrides:
    """The config overrides of the flags given on the command line."""
    given = getattr(args, "given", None)
    if given is not None:
        args = argparse.Namespace(**{k: (v if k.replace("_", "-") in given else None) for k, v in vars(args).items()})
    return FlagOverrides(
        no_publish=args.no_publish,
        extra_label_ns=parse_ns_list(args.extra_label_ns) if args.extra_label_ns is not None else None,
        deny_label_ns=parse_ns_list(args.deny_label_ns) if args.deny_label_ns is not None else None,
        label_whitelist=args.label_whitelist,
        enable_taints=args.enable_taints,
        resync_period=args.resync_period,
        nfd_api_parallelism=args.nfd_api_parallelism,
        informer_page_size=args.informer_page_size,
        kube_api_qps=args.kube_api_qps,
        kube_api_burst=args.kube_api_burst,
    )


def log_config(path: str, text: str | None, cfg: MasterConfig) -> None:
    """Upstream's lines for a (re)loaded config: the file's state, then the effective config."""
    from nfd.common.logsetup import Dump
    from nfd.master.config import config_dump

    if text is None:
        klog.info_s("config file not found, using defaults", path=path)
    else:
        klog.info_s("configuration file parsed", path=path)
    klog.info_s("configuration successfully updated", configuration=Dump(config_dump(cfg)))


async def amain(args: argparse.Namespace, cfg: MasterConfig, gates: dict[str, bool], cfg_text: str | None) -> int:
    from nfd import __version__
    from nfd.common import httpserver
    from nfd.common.probes import Heartbeat, ProbeServer, liveness_route
    from nfd.k8s.client import ApiClient
    from nfd.master.master import MasterOptions, NfdMaster
    from nfd.master.metrics import MasterMetrics

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
        from nfd.master.prune import prune

        try:
            return await prune(api, config=cfg, instance=args.instance)
        finally:
            await api.close()

    from prometheus_client import disable_created_metrics

    disable_created_metrics()  # upstream's Go client exports no *_created series
    metrics = MasterMetrics(version=__version__)
    metrics.bind_api_counts(api.metrics)
    master = NfdMaster(api, config=cfg, options=opts, metrics=metrics)
    master.on_synced = _freeze_heap
    # Probes and scrapes are answered from a thread of their own (nfd.common.probes): whatever
    # the loop is evaluating, /healthz answers in milliseconds, and fails once the loop's
    # heartbeat stops.
    heartbeat = Heartbeat()
    heartbeat.start()
    server = ProbeServer(
        args.port,
        {"/healthz": liveness_route(heartbeat), "/metrics": httpserver.metrics_route(metrics.registry)},
        host=args.bind_address or "0.0.0.0",
    )
    port = server.port
    klog.info_s("http server starting", port=f":{port}")

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    reload_now = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, reload_now.set)
    # Ours: SIGUSR1 forces a full re-evaluation of every node (what resyncPeriod does).
    loop.add_signal_handler(signal.SIGUSR1, lambda: master.update_all_nodes("forced resync (SIGUSR1)"))

    async def watch_config() -> None:
        last = cfg_text
        while True:
            try:
                await asyncio.wait_for(reload_now.wait(), timeout=max(0.2, args.config_poll_interval))
            except TimeoutError:
                pass
            reload_now.clear()
            try:
                new_cfg, warnings, text = read_config(args.config, args.options, overrides_from(args))
            except ConfigError as e:
                msg = str(e)
                if msg != getattr(watch_config, "last_error", None):
                    log.error("invalid configuration, keeping the previous one: %s", msg)
                watch_config.last_error = msg  # type: ignore[attr-defined]
                continue
            watch_config.last_error = None  # type: ignore[attr-defined]
            if text == last:
                continue
            last = text
            for w in warnings:
                log.warning("config: %s", w)
            if new_cfg != master.config:
                log_config(args.config, text, new_cfg)
                master.set_config(new_cfg)

    elector_factory = None
    if args.enable_leader_election:
        from nfd.master.leadership import lease_electors, lease_identity

        elector_factory = lease_electors(master, namespace=ns, identity=lease_identity())

    await master.update_own_node()
    cfg_task = asyncio.create_task(watch_config())
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
            await asyncio.wait_for(run_task, timeout=5)
        except (TimeoutError, asyncio.CancelledError, Exception):
            pass
    cfg_task.cancel()
    stop_task.cancel()
    heartbeat.stop()
    server.close()
    await api.close()
    return rc


def _freeze_heap() -> None:
    """The synced caches live as long as the process: keep them out of the cyclic collector's
    full passes, which otherwise walk all of them again (~90 ms each at 5,000 nodes)."""
    gc.collect()
    gc.freeze()


def main(argv: list[str] | None = None) -> int:
    raw = [a for a in (sys.argv[1:] if argv is None else argv) if a != ""]  # upstream drops empty ones
    try:
        args = build_parser().parse(raw)
    except SystemExit as e:  # -h (0) or a refused flag (2), already reported as Go's flag package does
        return int(e.code or 0)
    if args.version:
        from nfd import __version__

        print(f"nfd-master {__version__}")
        return 0
    if args.instance and not INSTANCE_RE.match(args.instance):
        print(
            f"nfd-master: invalid -instance {args.instance!r}: instance name must start and end with an "
            "alphanumeric character and may only contain alphanumerics, `-`, `_` or `.`",
            file=sys.stderr,
        )
        return 2
    gates = args.feature_gates or {}  # checked by the flag parser
    try:
        cfg, warnings, text = read_config(args.config, args.options, overrides_from(args))
    except (ValueError, ConfigError) as e:
        print(f"nfd-master: {e}", file=sys.stderr)
        return 2
    setup_logging(verbosity(args, cfg.klog), **klog_header_options(args, cfg.klog))
    # Decoding tens of thousands of API objects allocates in bursts: with the default gen-0
    # threshold (700) the collector ran ~6,000 times in a 5,000-node first pass (2.3 s of CPU).
    gc.set_threshold(20_000, 20, 50)
    # big values (a hostile NodeFeature's) go back to the system when freed (nfd/common/memory.py)
    from nfd.common.memory import pin_mmap_threshold

    pin_mmap_threshold()
    for w in warnings:
        log.warning("config: %s", w)
    log_config(args.config, text, cfg)
    if args.metrics is not None:
        log.warning("-metrics is deprecated; /metrics is served on -port")
    from nfd.k8s.config import ConfigError as KubeconfigError

    try:
        return asyncio.run(amain(args, cfg, gates, text))
    except KeyboardInterrupt:
        return 0
    except KubeconfigError as e:
        log.error("cannot connect to the API server: %s", e)
        return 1
    except OSError as e:
        log.error("cannot start: %s", e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
