"""``nfd export features|labels``: run the feature sources on this machine, print the result.

No cluster, no kubernetes library. ``--host-root DIR`` reads another root (fixtures, a mounted
host). Sources default to every source enabled by default (``all``), as upstream's export.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import Any

from nfd.common.fileargs import FileArgError, write_text_arg
from nfd.common.logsetup import KlogFormatter
from nfd.hostpaths import HostPaths
from nfd.sources import registry
from nfd.sources.base import DiscoveryContext
from nfd.sources.discovery import compute_labels, discover, parse_source_configs


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nfd export", description="print this machine's features or labels")
    p.add_argument("what", choices=("features", "labels"), nargs="?", help="what to print")
    p.add_argument("--sources", "-sources", default="all",
                   help="comma-separated sources (upstream syntax: all, -name, name); default all")
    p.add_argument("--host-root", "-host-root", default=None, help="read the host from DIR instead of /")
    p.add_argument("--config", "-config", default=None,
                   help="worker config file whose sources.* and core.labelWhiteList apply")
    p.add_argument("--node-name", "-node-name", default=None, help="node name (default: $NODE_NAME or hostname)")
    p.add_argument("-o", "--output", default=None, help="features: json|yaml (json); labels: text|json (text)")
    p.add_argument("--path", "-p", default=None, help="write to this file instead of stdout")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="warnings are always logged; -v adds info, -vv debug")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.what is None:  # the group alone: its help, as cobra
        parser.print_help()
        return 0
    # warnings at the default verbosity, as upstream's klog: an unknown source, a bad
    # NFD_NVML_PROFILE or a missing --config file must not pass in silence
    level = logging.WARNING if args.verbose == 0 else logging.INFO if args.verbose == 1 else logging.DEBUG
    # klog's text format, as the daemons write it (docs/logging.md): V(n) records are I lines
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KlogFormatter())
    logging.basicConfig(level=level, handlers=[handler])

    out_fmt = args.output or ("json" if args.what == "features" else "text")
    allowed = ("json", "yaml") if args.what == "features" else ("text", "json")
    if out_fmt not in allowed:
        print(f"nfd export {args.what}: -o must be one of {', '.join(allowed)}", file=sys.stderr)
        return 2
    if args.host_root and not os.path.isdir(args.host_root):
        print(f"nfd export: --host-root {args.host_root}: not a directory", file=sys.stderr)
        return 2

    raw_sources: Any = None
    whitelist = None
    if args.config:
        # here, not at the top: the worker config's parser (~4 ms of imports, python -X
        # importtime) and the PyYAML it reads the file with (~13 ms), which `nfd export labels`
        # without --config does not load (tests/unit/worker/test_worker_imports.py)
        from nfd.worker.config import load_config_file

        try:
            cfg = load_config_file(args.config)
        except (OSError, ValueError) as e:
            print(f"nfd export: {e}", file=sys.stderr)
            return 2
        raw_sources = cfg.raw_sources
        whitelist = cfg.label_whitelist
    try:
        configs = parse_source_configs(raw_sources)
    except ValueError as e:
        print(f"nfd export: {args.config}: {e}", file=sys.stderr)
        return 2

    spec = [s for s in args.sources.split(",")]
    feature_names = registry.resolve(spec, kind="feature")
    ctx = DiscoveryContext(
        paths=HostPaths.detect(args.host_root),
        node_name=args.node_name or os.environ.get("NODE_NAME") or os.uname().nodename,
    )
    # label-only sources (custom) need every feature source's output, as in the worker
    if args.what == "labels":
        label_names = registry.resolve(spec, kind="label")
        needs_all = any(n not in feature_names for n in label_names)
        run = registry.resolve(["all"], kind="feature") if needs_all else feature_names
        feats = discover(ctx, run, configs).merged()
        labels = compute_labels(feats, label_names, configs, ctx, whitelist=whitelist)
        if out_fmt == "json":
            text = json.dumps(dict(sorted(labels.items())), indent=2) + "\n"
        else:
            text = "".join(f"{k}={v}\n" for k, v in sorted(labels.items()))
    else:
        result = discover(ctx, feature_names, configs)
        obj = result.merged().to_json()
        if out_fmt == "yaml":
            import yaml  # only for -o yaml (see load_config_file above)

            text = yaml.safe_dump(obj, sort_keys=True, default_flow_style=False)
        else:
            text = json.dumps(obj, indent=2) + "\n"

    try:
        write_text_arg(args.path or "-", text, flag="--path")
    except FileArgError as e:
        print(f"nfd export: {e}", file=sys.stderr)
        return 2
    return 0
