"""``nfd-master``: the command line. Flags are parsed and checked, the config file read, then
nfd.master.daemon serves (config reload, leader election, probes, ``-prune``)."""

from __future__ import annotations

import asyncio
import gc
import logging
import sys

from nfd import __version__
from nfd.common.goflags import (
    FEATURE_GATES_USAGE,
    FlagValues,
    GoFlagSet,
    add_klog_flags,
    go_duration_value,
    klog_header_options,
    parse_feature_gates,
    verbosity,
)
from nfd.common.logsetup import setup_logging
from nfd.common.mmapthreshold import pin_mmap_threshold
from nfd.k8s.config import ConfigError as KubeconfigError
from nfd.master.config import (
    DEFAULT_CONFIG_PATH,
    INSTANCE_RE,
    ConfigError,
    FlagOverrides,
    parse_ns_list,
    read_config,
)
from nfd.master.daemon import log_config, serve

log = logging.getLogger("nfd.master")


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


def overrides_from(args: FlagValues) -> FlagOverrides:
    """The config overrides of the flags given on the command line."""
    given = getattr(args, "given", None)
    if given is not None:
        args = FlagValues(**{k: (v if k.replace("_", "-") in given else None) for k, v in vars(args).items()})
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


def main(argv: list[str] | None = None) -> int:
    raw = [a for a in (sys.argv[1:] if argv is None else argv) if a != ""]  # upstream drops empty ones
    try:
        args = build_parser().parse(raw)
    except SystemExit as e:  # -h (0) or a refused flag (2), already reported as Go's flag package does
        return int(e.code or 0)
    if args.version:
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
    overrides = overrides_from(args)
    try:
        cfg, warnings, text = read_config(args.config, args.options, overrides)
    except (ValueError, ConfigError) as e:
        print(f"nfd-master: {e}", file=sys.stderr)
        return 2
    setup_logging(verbosity(args, cfg.klog), **klog_header_options(args, cfg.klog))
    # Decoding tens of thousands of API objects allocates in bursts: with the default gen-0
    # threshold (700) the collector ran ~6,000 times in a 5,000-node first pass (2.3 s of CPU).
    gc.set_threshold(20_000, 20, 50)
    # big values (a hostile NodeFeature's) go back to the system when freed (nfd/common/mmapthreshold.py)
    pin_mmap_threshold()
    for w in warnings:
        log.warning("config: %s", w)
    log_config(args.config, text, cfg)
    if args.metrics is not None:
        log.warning("-metrics is deprecated; /metrics is served on -port")

    try:
        return asyncio.run(serve(args, cfg, gates, text, overrides))
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
