"""``nfd-master``: command line, config file (with live reload), leader election, ``-prune``."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import signal
import sys
import uuid
from typing import Any

from nfd.common.goflags import GoFlagParser, klog_header_options, parse_duration
from nfd.common.logsetup import setup_logging
from nfd.common.masterflags import parse_feature_gates
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

LEASE_NAME = "nfd-master.nfd.kubernetes.io"
KLOG_FLAGS = (
    "vmodule",
    "logtostderr",
    "alsologtostderr",
    "log_dir",
    "log_file",
    "log_file_max_size",
    "skip_headers",
    "skip_log_headers",
    "stderrthreshold",
    "add_dir_header",
    "log_backtrace_at",
    "one_output",
    "legacy_stderr_threshold_behavior",
    "alsologtostderrthreshold",
)


def build_parser() -> GoFlagParser:
    # -v unset (None) lets the config's klog.v decide; klog's other flags are added below
    p = GoFlagParser("nfd-master", description="Node Feature Discovery master", verbosity_default=None, klog=False)
    opt = p.add_flag

    def flag(name: str, help: str) -> None:
        p.add_bool(name, default=None, help=help)

    opt("config", default=DEFAULT_CONFIG_PATH, help="config file (missing file = defaults)")
    opt("options", default="", help="config options in YAML, override the config file")
    opt("kubeconfig", default="", help="kubeconfig file (empty: $KUBECONFIG, ~/.kube/config or in-cluster)")
    opt("port", type=int, default=8080, help="port for /metrics and /healthz")
    opt("metrics", type=int, default=None, help=argparse.SUPPRESS)  # deprecated upstream
    opt("instance", default="", help="instance name, prefixes the bookkeeping annotations")
    flag("prune", "remove all NFD-managed node properties and exit")
    flag("enable-leader-election", "use a coordination.k8s.io Lease to elect one active replica")
    opt("feature-gates", default="", help="Name=bool,... (NodeFeatureGroupAPI, DisableAutoPrefix, DRAResourceSlices)")
    p.add_argument("-version", "--version", action="store_true", help="print version and exit")
    flag("no-publish", "do not write anything to nodes")
    opt("extra-label-ns", default=None, help="comma-separated extra label namespaces to allow")
    opt("deny-label-ns", default=None, help="comma-separated label namespaces to deny")
    opt("label-whitelist", default=None, help="regexp on label names")
    flag("enable-taints", "apply taints from NodeFeatureRules")
    opt("resync-period", type=parse_duration, default=None, help="full re-evaluation period (0 disables)")
    opt("nfd-api-parallelism", type=int, default=None, help="number of concurrent node updaters")
    opt("informer-page-size", type=int, default=None, help="page size of the initial NodeFeature list")
    # Ours (upstream hides the client rate limits).
    opt("kube-api-qps", type=float, default=None, help="API client requests per second")
    opt("kube-api-burst", type=int, default=None, help="API client burst")
    opt("delete-grace-period", type=parse_duration, default=5.0,
        help="wait this long after a NodeFeature delete before removing what it provided")
    opt("config-poll-interval", type=parse_duration, default=5.0, help="how often to check the config file for changes")
    # klog compatibility (more lenient than GoFlagParser's: any of them may go without a value)
    for k in KLOG_FLAGS:  # accepted for compatibility; logging goes to stderr
        opt(k, nargs="?", const="true", default=None, help=argparse.SUPPRESS)
    return p


def overrides_from(args: argparse.Namespace) -> FlagOverrides:
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


def master_namespace() -> str:
    try:
        with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace", encoding="utf-8") as f:
            ns = f.read().strip()
            if ns:
                return ns
    except OSError:
        pass
    return os.environ.get("KUBERNETES_NAMESPACE", "default")


async def amain(args: argparse.Namespace, cfg: MasterConfig, gates: dict[str, bool], cfg_text: str | None) -> int:
    from nfd import __version__
    from nfd.common import httpserver
    from nfd.k8s.client import ApiClient
    from nfd.master.master import MasterOptions, NfdMaster
    from nfd.master.metrics import MasterMetrics

    api = await ApiClient.from_kubeconfig(
        args.kubeconfig or None, qps=cfg.kube_api_qps, burst=cfg.kube_api_burst, user_agent=f"nfd-master/{__version__}"
    )
    ns = api.namespace or master_namespace()
    if os.environ.get("KUBERNETES_NAMESPACE"):
        ns = os.environ["KUBERNETES_NAMESPACE"]
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
    server = await httpserver.serve(
        args.port,
        {"/healthz": httpserver.healthz, "/metrics": httpserver.metrics_route(metrics.registry)},
        host="0.0.0.0",
    )
    port = server.sockets[0].getsockname()[1]
    log.info("nfd-master %s: namespace %s, http server on port %d", __version__, ns, port)

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
                log.info("configuration reloaded from %s", args.config)
                master.set_config(new_cfg)

    elector_factory = None
    if args.enable_leader_election:
        from nfd.k8s.lease import LeaderElector

        identity = f"{os.environ.get('NODE_NAME', '') or os.uname().nodename}_{uuid.uuid4()}"

        def elector_factory() -> Any:
            le = master.config.leader_election
            return LeaderElector(
                master.write_api,
                name=LEASE_NAME,
                namespace=ns,
                identity=identity,
                lease_duration_s=le.lease_duration,
                renew_deadline_s=le.renew_deadline,
                retry_period_s=le.retry_period,
                on_started_leading=master.become_leader,
                on_stopped_leading=master.step_down,
            )

    await master.update_own_node()
    cfg_task = asyncio.create_task(watch_config())
    run_task = asyncio.create_task(master.run(elector_factory=elector_factory))
    stop_task = asyncio.create_task(stop.wait())
    await asyncio.wait({run_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
    log.info("shutting down nfd-master")
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
    server.close()
    await server.wait_closed()
    await api.close()
    return rc


def _freeze_heap() -> None:
    """The synced caches live as long as the process: keep them out of the cyclic collector's
    full passes, which otherwise walk all of them again (~90 ms each at 5,000 nodes)."""
    gc.collect()
    gc.freeze()


def main(argv: list[str] | None = None) -> int:
    raw = [a for a in (sys.argv[1:] if argv is None else argv) if a != ""]
    args = build_parser().parse_args(raw)
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
    try:
        gates = parse_feature_gates(args.feature_gates)
        cfg, warnings, text = read_config(args.config, args.options, overrides_from(args))
    except (ValueError, ConfigError) as e:
        print(f"nfd-master: {e}", file=sys.stderr)
        return 2
    klog_v = cfg.klog.get("v", "0") or "0"
    verbosity = args.v if args.v is not None else (int(klog_v) if klog_v.isdigit() else 0)
    setup_logging(verbosity, **klog_header_options(args, cfg.klog))
    # Decoding tens of thousands of API objects allocates in bursts: with the default gen-0
    # threshold (700) the collector ran ~6,000 times in a 5,000-node first pass (2.3 s of CPU).
    gc.set_threshold(20_000, 20, 50)
    # big values (a hostile NodeFeature's) go back to the system when freed (nfd/common/memory.py)
    from nfd.common.memory import pin_mmap_threshold

    pin_mmap_threshold()
    for w in warnings:
        log.warning("config: %s", w)
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
