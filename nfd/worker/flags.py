"""nfd-worker command line: upstream's single-dash Go flags, also accepted with two dashes and
``-flag=value``. Flags that map to ``core.*`` options override the config only when given."""

from __future__ import annotations

from typing import Any

from nfd.common.goflags import FEATURE_GATES_USAGE, GoFlagSet, add_klog_flags, parse_feature_gates
from nfd.common.valuerecord import Record
from nfd.worker.config import DEFAULT_CONFIG_PATH


class Flags(Record):
    """nfd-worker's command-line flags, parsed.

    Written out as a dataclass would generate it (``__init__``, ``__eq__``, ``__repr__``): the
    one-shot worker does not load ``dataclasses`` (docs/worker.md, "The one-shot wall")."""

    _FIELDS = ("config", "options", "kubeconfig", "port", "oneshot", "no_publish", "feature_sources",
               "label_sources", "no_publish_features", "owner_refs", "no_owner_refs", "host_root", "verbosity",
               "version", "skip_headers", "add_dir_header", "enable_node_update", "node_update_spread",
               "master_config", "instance", "bind_address", "feature_gates", "given")

    def __init__(
        self,
        config: str,
        options: str | None,
        kubeconfig: str | None,
        port: int,
        oneshot: bool,
        no_publish: bool | None,
        feature_sources: list[str] | None,
        label_sources: list[str] | None,
        no_publish_features: list[str] | None,
        owner_refs: list[str] | None,
        no_owner_refs: bool,
        host_root: str | None,
        verbosity: int | None,
        version: bool,
        skip_headers: bool | None = None,
        add_dir_header: bool | None = None,
        enable_node_update: bool | None = None,
        node_update_spread: float | None = None,
        master_config: str = "",
        instance: str = "",
        bind_address: str = "",
        feature_gates: dict[str, bool] | None = None,
        given: frozenset[str] = frozenset(),
    ) -> None:
        self.config = config
        self.options = options
        self.kubeconfig = kubeconfig
        self.port = port
        self.oneshot = oneshot
        self.no_publish = no_publish
        self.feature_sources = feature_sources
        self.label_sources = label_sources
        self.no_publish_features = no_publish_features
        self.owner_refs = owner_refs
        self.no_owner_refs = no_owner_refs
        self.host_root = host_root
        self.verbosity = verbosity  # None: not given (core.klog.v may set it)
        self.version = version
        self.skip_headers = skip_headers
        self.add_dir_header = add_dir_header
        # masterless mode (ours, see docs/masterless.md)
        self.enable_node_update = enable_node_update
        self.node_update_spread = node_update_spread
        self.master_config = master_config
        self.instance = instance
        self.bind_address = bind_address  # metrics/healthz listen address; empty: every address
        self.feature_gates = feature_gates
        self.given = given  # flags set on the command line


def _list(v: str | None) -> list[str] | None:
    if v is None:
        return None
    return [x.strip() for x in v.split(",") if x.strip()]


def build_parser() -> GoFlagSet:
    """Upstream's flags with upstream's help texts, then ours (masterless mode, -host-root)."""
    p = GoFlagSet("nfd-worker", description="Node Feature Discovery worker: discovers this node's features "
                  "and labels and publishes them as its NodeFeature object.")
    p.bool("version", False, "Print version and exit.")
    p.value("feature-gates", FEATURE_GATES_USAGE, parse=parse_feature_gates)
    p.string("config", DEFAULT_CONFIG_PATH, "Config file to use.")
    p.string("kubeconfig", None, "Kubeconfig to use")
    p.bool("oneshot", False, "Do not publish feature labels")
    p.int("port", 8080, "Port on which to metrics and healthz endpoints are served")
    p.string("options", None, "Specify config options from command line. Config options are specified "
             "in the same format as in the config file (i.e. json or yaml). These options")
    add_klog_flags(p, wrapped=True)
    p.bool("no-publish", False, "Do not publish discovered features, disable connection to nfd-master and "
           "don't create NodeFeature object.")
    p.bool("no-owner-refs", False, "Do not set owner references for NodeFeature object (deprecated: use -owner-refs=).")
    p.value("owner-refs", "Comma separated list of NodeFeature owner reference sources: node, pod, ds. "
            "An empty value disables owner references.", parse=str, def_text="pod,ds")
    p.value("feature-sources", "Comma separated list of feature sources. Special value 'all' enables all "
            "sources. Prefix the source name with '-' to disable it.", parse=str)
    p.value("label-sources", "Comma separated list of label sources. Special value 'all' enables all "
            "sources. Prefix the source name with '-' to disable it.", parse=str)
    p.value("no-publish-features", "Comma separated list of feature keys to discover but omit from the "
            "published NodeFeature object (e.g. 'pci.device'). Suffix a key with '*' for a prefix match "
            "(e.g. 'pci.*'). Reduces object size; only use for features that no NodeFeatureRule or "
            "NodeFeatureGroup consumes.", parse=str)
    # ours
    p.bool("enable-node-update", None, "Update this node's labels, annotations, extended resources and taints "
           "from NodeFeatureRules here, without nfd-master (core.enableNodeUpdate; docs/masterless.md).")
    p.duration("node-update-spread", None, "With -enable-node-update: spread this node's write after a rule or "
               "config change over a window this long, e.g. 30s (core.nodeUpdateSpread, default 1s).")
    p.string("master-config", "/etc/kubernetes/node-feature-discovery/nfd-master.conf",
             "With -enable-node-update: nfd-master's config file (extraLabelNs, restrictions, ...).")
    p.string("instance", "", "With -enable-node-update: instance name, as nfd-master's -instance.")
    p.string("bind-address", "", "Address the metrics and healthz endpoints listen on (an IP address; empty: every address).")
    p.string("host-root", None, "Read the host's /proc, /sys, /etc, ... under this directory (also $NFD_HOST_ROOT).")
    for name in ("metrics", "grpc-health"):  # removed upstream; accepted and ignored
        p.string(name, None, "", hidden=True)
    return p


def parse_flags(argv: list[str]) -> Flags:
    ns = build_parser().parse(argv)
    given = ns.given

    def over(name: str) -> Any:
        """A flag that overrides a config option: its value if given, else None."""
        return getattr(ns, name.replace("-", "_")) if name in given else None

    no_publish = over("no-publish")
    return Flags(
        config=ns.config,
        options=ns.options,
        kubeconfig=ns.kubeconfig,
        port=ns.port,
        bind_address=ns.bind_address or "",
        oneshot=ns.oneshot,
        # -no-publish=false leaves the config's core.noPublish in charge, as before
        no_publish=no_publish or None,
        feature_sources=_list(over("feature-sources")),
        label_sources=_list(over("label-sources")),
        no_publish_features=_list(over("no-publish-features")),
        owner_refs=_list(over("owner-refs")),
        no_owner_refs=bool(over("no-owner-refs")),
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
        given=given,
    )
