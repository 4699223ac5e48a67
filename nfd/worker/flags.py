"""nfd-worker command line: upstream's single-dash Go flags, also accepted with two dashes and
``-flag=value``. Flags that map to ``core.*`` options override the config only when given."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

BOOL_FLAGS = {"oneshot", "no-publish", "no-owner-refs", "version", "logtostderr", "alsologtostderr",
              "skip_headers", "skip_log_headers", "add_dir_header"}
VALUE_FLAGS = {"config", "options", "kubeconfig", "port", "feature-sources", "label-sources",
               "no-publish-features", "owner-refs", "feature-gates", "host-root", "v", "vmodule",
               "log_dir", "log_file", "log_file_max_size", "stderrthreshold", "log_backtrace_at",
               "metrics", "grpc-health"}


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
    verbosity: int
    version: bool


def _normalize(argv: list[str]) -> list[str]:
    """``-flag``/``--flag`` -> ``--flag``; Go bools ``-oneshot=false`` -> dropped/kept."""
    out: list[str] = []
    for a in argv:
        if a.startswith("-") and a != "-" and not a.startswith("---"):
            name, sep, value = a.lstrip("-").partition("=")
            if name in BOOL_FLAGS:
                if sep and value.lower() in ("false", "0", "f"):
                    continue
                if sep and value.lower() not in ("true", "1", "t"):
                    raise SystemExit(f"nfd-worker: invalid boolean value {value!r} for -{name}")
                out.append("--" + name)
                continue
            if name in VALUE_FLAGS:
                out.append("--" + name + (sep + value if sep else ""))
                continue
        out.append(a)
    return out


def _list(v: str | None) -> list[str] | None:
    if v is None:
        return None
    return [x.strip() for x in v.split(",") if x.strip()]


def parse_flags(argv: list[str]) -> Flags:
    from nfd.worker.config import DEFAULT_CONFIG_PATH

    p = argparse.ArgumentParser(prog="nfd-worker", description="Node Feature Discovery worker")
    p.add_argument("--config", default=DEFAULT_CONFIG_PATH, help="config file")
    p.add_argument("--options", default=None, help="config options as a YAML/JSON string, overriding the file")
    p.add_argument("--kubeconfig", default=None, help="kubeconfig (default: in-cluster)")
    p.add_argument("--port", type=int, default=8080, help="port for /metrics and /healthz")
    p.add_argument("--oneshot", action="store_true", help="discover and publish once, then exit")
    p.add_argument("--no-publish", action="store_true", default=None, help="do not write the NodeFeature")
    p.add_argument("--feature-sources", default=None, help="comma-separated feature sources")
    p.add_argument("--label-sources", default=None, help="comma-separated label sources")
    p.add_argument("--no-publish-features", default=None, help="comma-separated feature keys not to publish")
    p.add_argument("--owner-refs", default=None, help="owner references of the NodeFeature: node,pod,ds")
    p.add_argument("--no-owner-refs", action="store_true", help="deprecated: no owner references")
    p.add_argument("--feature-gates", default=None, help="accepted for compatibility")
    p.add_argument("--host-root", default=None, help="read the host from DIR (also $NFD_HOST_ROOT)")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    p.add_argument("--v", "-v", dest="v", type=int, default=0, help="log verbosity")
    for name in ("vmodule", "log_dir", "log_file", "log_file_max_size", "stderrthreshold", "log_backtrace_at",
                 "metrics", "grpc-health"):
        p.add_argument("--" + name, default=None, help=argparse.SUPPRESS)
    for name in ("logtostderr", "alsologtostderr", "skip_headers", "skip_log_headers", "add_dir_header"):
        p.add_argument("--" + name, action="store_true", help=argparse.SUPPRESS)
    ns = p.parse_args(_normalize(argv))
    return Flags(
        config=ns.config,
        options=ns.options,
        kubeconfig=ns.kubeconfig,
        port=ns.port,
        oneshot=ns.oneshot,
        no_publish=ns.no_publish,
        feature_sources=_list(ns.feature_sources),
        label_sources=_list(ns.label_sources) if ns.label_sources is not None else None,
        no_publish_features=_list(ns.no_publish_features),
        owner_refs=_list(ns.owner_refs),
        no_owner_refs=ns.no_owner_refs,
        host_root=ns.host_root,
        verbosity=ns.v,
        version=ns.version,
    )
