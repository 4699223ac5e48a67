"""nfd-gc: command line and process wiring (the logic is in collector.py)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from nfd import __version__
from nfd.common import httpserver
from nfd.common.goflags import FlagValues, GoFlagSet, add_klog_flags, klog_header_options, verbosity
from nfd.common.logsetup import klogger, setup_logging
from nfd.common.signals import run_until_signal
from nfd.gc.collector import GarbageCollector, Metrics
from nfd.k8s.client import ApiClient
from nfd.k8s.config import ConfigError

PROGRAM = "nfd-gc"

log = logging.getLogger("nfd.gc")
klog = klogger("nfd.gc")


def build_parser() -> GoFlagSet:
    p = GoFlagSet(PROGRAM, description="Node Feature Discovery garbage collector: deletes the NodeFeature "
                  "and NodeResourceTopology objects of nodes that no longer exist.")
    p.bool("version", False, "Print version and exit.")
    p.duration("gc-interval", 3600.0, "interval between cleanup of obsolete api objects")
    p.string("kubeconfig", "", "Kubeconfig to use")
    p.int("port", 8080, "Port which metrics and healthz endpoints are served on")
    p.string("bind-address", "", "Address the metrics and healthz endpoints listen on (an IP address; empty: every address).")
    p.int("list-size", 200, "the pagination size used when listing node features")
    add_klog_flags(p, wrapped=False)
    # not in upstream (client-go's defaults there are 5/10): bounded API load, documented in docs/gc.md
    p.float("kube-api-qps", 50.0, "API request rate limit")
    p.int("kube-api-burst", 100, "API request burst")
    return p


async def run(a: FlagValues) -> int:
    metrics = Metrics()
    server = await httpserver.serve(
        a.port,
        {"/healthz": httpserver.healthz, "/metrics": httpserver.metrics_route(metrics.registry)},
        host=a.bind_address or None,
    )
    klog.info_s("starting HTTP server", port=a.port)

    try:
        api = await ApiClient.from_kubeconfig(
            a.kubeconfig or None,
            qps=a.kube_api_qps,
            burst=a.kube_api_burst,
            user_agent=f"{PROGRAM}/{__version__}",
        )
    except ConfigError as e:  # one error line and exit 1, as upstream (not a traceback)
        server.close()
        log.error("failed to create the Kubernetes client: %s", e)
        return 1
    gc = GarbageCollector(api, list_size=a.list_size, metrics=metrics)
    try:
        klog.info_s("Node Feature Discovery Garbage Collector", version=__version__)
        if not await gc.start(sync_timeout_s=None):
            return 1
        await gc.run(a.gc_interval)
        return 0
    finally:
        await gc.stop()
        await api.close()
        server.close()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_go(sys.argv[1:] if argv is None else argv)
    if args.version:
        print(PROGRAM, __version__)
        return 0
    setup_logging(verbosity(args), **klog_header_options(args))
    if args.gc_interval <= 0:
        print("-gc-interval must be positive", file=sys.stderr)
        return 2

    return run_until_signal(run(args))


if __name__ == "__main__":
    sys.exit(main())
