"""nfd-worker command line: upstream's single-dash Go flags, also accepted with two dashes and
``-flag=value``. Flags that map to ``core.*`` options override the config only when given."""

from __future__ import annotations

import argparse
from dataclasses import dataclass


@dataclass
class Flags:
    config: str
    options: str | None
    kubeconfig: str | None
    port: int
    oneshot: bool
    no_publish: bool | None
    feature_sources: list[str] | None
    label_sources: list[str] | None
    no_publish_features: list[str] | None
    owner_refs: list[str] | None
    no_owner_refs: bool
    host_root: str | None
    verbosity: int | None  # None: not given (core.klog.v may set it)
    version: bool
    skip_headers: bool | None = None
    add_dir_header: bool | None = None
    # masterless mode (ours, see docs/masterless.md)
    enable_node_update: bool | None = None
    node_update_spread: float | None = None
    master_config: str = ""
    instance: str = ""
    feature_gates: str | None = None


def _list(v: str | None) -> list[str] | None:
    if v is None:
        return None
    return [x.strip() for x in v.split(",") if x.strip()]


def parse_flags(argv: list[str]) -> Flags:
    from nfd.common.goflags import GoFlagParser, parse_duration
    from nfd.worker.config import DEFAULT_CONFIG_PATH

    p = GoFlagParser("nfd-worker", description="Node Feature Discovery worker", verbosity_default=None)
    p.add_flag("config", default=DEFAULT_CONFIG_PATH, help="config file")
    p.add_flag("options", default=None, help="config options as a YAML/JSON string, overriding the file")
    p.add_flag("kubeconfig", default=None, help="kubeconfig (default: in-cluster)")
    p.add_flag("port", type=int, default=8080, help="port for /metrics and /healthz")
    p.add_bool("oneshot", default=False, help="discover and publish once, then exit")
    p.add_bool("no-publish", default=None, help="do not write the NodeFeature")
    p.add_flag("feature-sources", default=None, help="comma-separated feature sources")
    p.add_flag("label-sources", default=None, help="comma-separated label sources")
    p.add_flag("no-publish-features", default=None, help="comma-separated feature keys not to publish")
    p.add_flag("owner-refs", default=None, help="owner references of the NodeFeature: node,pod,ds")
    p.add_bool("no-owner-refs", default=False, help="deprecated: no owner references")
    p.add_flag("feature-gates", default=None, help="feature gates of the node update (DisableAutoPrefix, DRAResourceSlices)")
    p.add_bool("enable-node-update", default=None, help="update this node's labels, annotations, extended "
               "resources and taints from NodeFeatureRules here, without nfd-master (core.enableNodeUpdate)")
    p.add_flag("node-update-spread", type=parse_duration, default=None,
               help="with -enable-node-update: spread this node's write after a rule or config change over "
               "a window this long, e.g. 30s (core.nodeUpdateSpread, default 1s; size it in docs/masterless.md)")
    p.add_flag("master-config", default="/etc/kubernetes/node-feature-discovery/nfd-master.conf",
               help="with -enable-node-update: nfd-master's config file (extraLabelNs, restrictions, ...)")
    p.add_flag("instance", default="", help="with -enable-node-update: instance name, as nfd-master's -instance")
    p.add_flag("host-root", default=None, help="read the host from DIR (also $NFD_HOST_ROOT)")
    p.add_bool("version", default=False, help="print the version and exit")
    for name in ("metrics", "grpc-health"):  # deprecated upstream, accepted and ignored
        p.add_flag(name, default=None, help=argparse.SUPPRESS)
    ns = p.parse_go(argv)
    return Flags(
        config=ns.config,
        options=ns.options,
        kubeconfig=ns.kubeconfig,
        port=ns.port,
        oneshot=ns.oneshot,
        # -no-publish=false leaves the config's core.noPublish in charge, as before
        no_publish=ns.no_publish or None,
        feature_sources=_list(ns.feature_sources),
        label_sources=_list(ns.label_sources) if ns.label_sources is not None else None,
        no_publish_features=_list(ns.no_publish_features),
        owner_refs=_list(ns.owner_refs),
        no_owner_refs=ns.no_owner_refs,
        host_root=ns.host_root,
        verbosity=ns.v,
        version=ns.version,
        skip_headers=ns.skip_headers,
        add_dir_header=ns.add_dir_header,
        enable_node_update=ns.enable_node_update,
        node_update_spread=ns.node_update_spread,
        master_config=ns.master_config,
        instance=ns.instance,
        feature_gates=ns.feature_gates,
    )
