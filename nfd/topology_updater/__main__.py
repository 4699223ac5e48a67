"""nfd-topology-updater: command line and process wiring (the logic is in updater.py)."""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Coroutine, Sequence
from typing import Any

from nfd import __version__
from nfd.common.goflags import GoFlagParser, klog_header_options, parse_duration
from nfd.common.logsetup import setup_logging
from nfd.common.signals import run_until_signal
from nfd.hostpaths import HostPaths

PROGRAM = "nfd-topology-updater"
SA_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

log = logging.getLogger("nfd.topology_updater")


def build_parser(paths: HostPaths) -> GoFlagParser:
    p = GoFlagParser(PROGRAM)
    p.add_bool("oneshot", default=False, help="Update once and exit")
    p.add_bool("no-publish", default=False, help="Do not create or update NodeResourceTopology objects.")
    p.add_flag("kubeconfig", default="", help="Kube config file.")
    p.add_flag("port", type=int, default=8080, help="Port which metrics and healthz endpoints are served on")
    p.add_flag(
        "sleep-interval",
        type=parse_duration,
        default=60.0,
        help="Time to sleep between CR updates. zero means no CR updates on interval basis. [Default: 60s]",
    )
    p.add_flag("watch-namespace", default="*", help="Namespace to watch pods. Use * for all namespaces.")
    p.add_flag(
        "kubelet-config-uri", default="", help="Kubelet config URI path. Default to kubelet configz endpoint."
    )
    p.add_flag(
        "api-auth-token-file",
        default="/var/run/secrets/kubernetes.io/serviceaccount/token",
        help="API auth token file path, used for the kubelet configz endpoint.",
    )
    p.add_flag(
        "podresources-socket",
        default=paths.path("/var/lib/kubelet/pod-resources/kubelet.sock"),
        help="Pod Resource Socket path to use.",
    )
    p.add_flag(
        "config",
        default="/etc/kubernetes/node-feature-discovery/nfd-topology-updater.conf",
        help="Config file to use.",
    )
    p.add_bool("pods-fingerprint", default=True, help="Compute and report the pod set fingerprint")
    p.add_flag(
        "kubelet-state-dir",
        default=paths.path("/var/lib/kubelet"),
        help="Kubelet state directory path for watching state and checkpoint files",
    )
    p.add_bool("version", default=False, help="Print version and exit.")
    return p


def own_namespace() -> str:
    try:
        with open(SA_NAMESPACE_FILE, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return os.environ.get("KUBERNETES_NAMESPACE", "")


async def run(opts: object, *, kubeconfig: str) -> int:
    from nfd.common import httpserver
    from nfd.k8s.client import ApiClient
    from nfd.topology_updater.kubelet import PodResourcesClient
    from nfd.topology_updater.sysfs import TopologyError, read_topology
    from nfd.topology_updater.updater import Metrics, Options, TopologyUpdater, wait_for_crd

    assert isinstance(opts, Options)
    log.info("Node Feature Discovery Topology Updater %s, node %s", __version__, opts.node_name)
    metrics = Metrics()
    # serve probes before initialization: we may wait a long time for the CRD
    server = await httpserver.serve(
        opts.port, {"/healthz": httpserver.healthz, "/metrics": httpserver.metrics_route(metrics.registry)}
    )
    api = await ApiClient.from_kubeconfig(kubeconfig or None, user_agent=f"{PROGRAM}/{__version__}")
    kubelet = PodResourcesClient(opts.podresources_socket)
    updater: TopologyUpdater | None = None
    try:
        if not opts.namespace:
            opts.namespace = api.namespace or ""
        await wait_for_crd(api)
        try:
            topology = read_topology(opts.paths)
        except TopologyError as e:
            log.error("failed to obtain node resource information: %s", e)
            return 1
        updater = TopologyUpdater(opts, api=api, kubelet=kubelet, topology=topology, metrics=metrics)
        if not await updater.start_pod_cache():
            log.error("timed out waiting for node-scoped Pod cache sync for node %q", opts.node_name)
            return 1
        return await updater.run()
    finally:
        if updater is not None and updater.pods is not None:
            await updater.pods.stop()
        if updater is not None:
            await updater.kubelet_config.close()
        await kubelet.close()
        await api.close()
        server.close()


def main(argv: Sequence[str] | None = None) -> int:
    paths = HostPaths.detect()
    args = build_parser(paths).parse_go(sys.argv[1:] if argv is None else argv)
    if args.version:
        print(PROGRAM, __version__)
        return 0
    setup_logging(args.v, **klog_header_options(args))

    from nfd.topology_updater import kubeletconfig
    from nfd.topology_updater.config import ConfigError, load_config
    from nfd.topology_updater.updater import Options

    node_name = os.environ.get("NODE_NAME", "")
    if not node_name:
        log.error("NODE_NAME environment variable is not set")
        return 1
    try:
        uri = args.kubelet_config_uri or kubeletconfig.default_uri(os.environ.get("NODE_ADDRESS"))
        kubeletconfig.check_uri(uri)
    except kubeletconfig.KubeletConfigError as e:
        print(e, file=sys.stderr)
        return 1
    try:
        config = load_config(args.config)
    except ConfigError as e:
        log.error("failed to configure Node Feature Discovery Topology Updater: %s", e)
        return 1
    opts = Options(
        node_name=node_name,
        kubelet_config_uri=uri,
        podresources_socket=args.podresources_socket,
        sleep_interval=args.sleep_interval,
        watch_namespace=args.watch_namespace,
        api_auth_token_file=args.api_auth_token_file,
        kubelet_state_dir=args.kubelet_state_dir,
        pods_fingerprint=bool(args.pods_fingerprint),
        no_publish=bool(args.no_publish),
        oneshot=bool(args.oneshot),
        port=args.port,
        namespace=own_namespace(),
        config=config,
        paths=paths,
    )
    return _run_until_signal(run(opts, kubeconfig=args.kubeconfig))


def _run_until_signal(coro: Coroutine[Any, Any, int]) -> int:
    import faulthandler

    try:  # SIGUSR1 dumps every thread's stack to stderr, for diagnosing a hang in the field
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    except (ValueError, OSError, AttributeError):
        pass
    return run_until_signal(coro)


if __name__ == "__main__":
    sys.exit(main())
