"""nfd-topology-updater: command line and process wiring (the logic is in updater.py)."""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
from collections.abc import Coroutine, Sequence
from typing import Any

from nfd import __version__
from nfd.common import httpserver
from nfd.common.goflags import GoFlagSet, add_klog_flags, klog_header_options, verbosity
from nfd.common.logsetup import klogger, setup_logging
from nfd.common.podenv import pod_namespace
from nfd.common.signals import run_until_signal
from nfd.hostpaths import HostPaths
from nfd.k8s.client import ApiClient
from nfd.k8s.config import ConfigError as KubeconfigError
from nfd.topology_updater import kubeletconfig, sysfs, updater
from nfd.topology_updater.config import ConfigError, load_config
from nfd.topology_updater.kubelet import EndpointError, PodResourcesClient, socket_path
from nfd.topology_updater.updater import Metrics, Options

PROGRAM = "nfd-topology-updater"

log = logging.getLogger("nfd.topology_updater")
klog = klogger("nfd.topology_updater")


def build_parser(paths: HostPaths) -> GoFlagSet:
    p = GoFlagSet(PROGRAM, description="Node Feature Discovery topology updater: publishes this node's "
                  "NUMA zones and their allocatable resources as a NodeResourceTopology object.")
    p.bool("oneshot", False, "Update once and exit")
    p.bool("no-publish", False, "Do not create or update NodeResourceTopology objects.")
    p.string("kubeconfig", "", "Kube config file.")
    p.int("port", 8080, "Port which metrics and healthz endpoints are served on")
    p.string("bind-address", "", "Address the metrics and healthz endpoints listen on (an IP address; empty: every address).")
    p.duration("sleep-interval", 60.0,
               "Time to sleep between CR updates. zero means no CR updates on interval basis. [Default: 60s]")
    p.string("watch-namespace", "*",
             "Namespace to watch pods (for testing/debugging purpose). Use * for all namespaces.")
    p.string("kubelet-config-uri", "", "Kubelet config URI path. Default to kubelet configz endpoint.")
    p.string("api-auth-token-file", "/var/run/secrets/kubernetes.io/serviceaccount/token",
             "API auth token file path. It is used to request kubelet configz endpoint, only takes effect when "
             "kubelet-config-uri is https. Default to /var/run/secrets/kubernetes.io/serviceaccount/token.")
    p.string("podresources-socket", paths.path("/var/lib/kubelet/pod-resources/kubelet.sock"),
             "Pod Resource Socket path to use.")
    p.string("config", "/etc/kubernetes/node-feature-discovery/nfd-topology-updater.conf", "Config file to use.")
    p.bool("pods-fingerprint", True, "Compute and report the pod set fingerprint")
    p.string("kubelet-state-dir", paths.path("/var/lib/kubelet"),
             "Kubelet state directory path for watching state and checkpoint files")
    add_klog_flags(p, wrapped=False)
    p.bool("version", False, "Print version and exit.")
    return p


async def run(opts: Options, *, kubeconfig: str) -> int:
    klog.info_s("Node Feature Discovery Topology Updater", version=__version__, nodeName=opts.node_name)
    metrics = Metrics()
    # serve probes before initialization: we may wait a long time for the CRD
    server = await httpserver.serve(
        opts.port, {"/healthz": httpserver.healthz, "/metrics": httpserver.metrics_route(metrics.registry)},
        host=opts.bind_address or None,
    )
    klog.info_s("http server starting", port=f":{opts.port}")
    try:
        api = await ApiClient.from_kubeconfig(kubeconfig or None, user_agent=f"{PROGRAM}/{__version__}")
    except KubeconfigError as e:  # one error line and exit 1, as nfd-gc and nfd-master
        server.close()
        log.error("failed to create the Kubernetes client: %s", e)
        return 1
    kubelet = PodResourcesClient(opts.podresources_socket)
    # the parts are looked up in their modules when called (tests stand in for them there)
    tu: updater.TopologyUpdater | None = None
    try:
        if not opts.namespace:
            opts.namespace = api.namespace or ""
        if not opts.no_publish:  # the CRD is needed only to publish
            await updater.wait_for_crd(api)
        try:
            topology = sysfs.read_topology(opts.paths)
        except sysfs.TopologyError as e:
            log.error("failed to obtain node resource information: %s", e)
            return 1
        tu = updater.TopologyUpdater(opts, api=api, kubelet=kubelet, topology=topology, metrics=metrics)
        if not await tu.start_pod_cache():
            log.error('timed out waiting for node-scoped Pod cache sync for node "%s"', opts.node_name)
            return 1
        return await tu.run()
    finally:
        if tu is not None and tu.pods is not None:
            await tu.pods.stop()
        if tu is not None:
            await tu.kubelet_config.close()
        await kubelet.close()
        await api.close()
        server.close()


def main(argv: Sequence[str] | None = None) -> int:
    paths = HostPaths.detect()
    args = build_parser(paths).parse_go(sys.argv[1:] if argv is None else argv)
    if args.version:
        print(PROGRAM, __version__)
        return 0
    setup_logging(verbosity(args), **klog_header_options(args))

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
    try:  # a path or a unix:// URL, as upstream (its e2e pods pass the URL)
        podresources_socket = socket_path(args.podresources_socket)
    except EndpointError as e:
        log.error("%s", e)
        return 1
    try:
        config = load_config(args.config)
    except ConfigError as e:
        log.error("failed to configure Node Feature Discovery Topology Updater: %s", e)
        return 1
    opts = Options(
        node_name=node_name,
        kubelet_config_uri=uri,
        podresources_socket=podresources_socket,
        sleep_interval=args.sleep_interval,
        watch_namespace=args.watch_namespace,
        api_auth_token_file=args.api_auth_token_file,
        kubelet_state_dir=args.kubelet_state_dir,
        pods_fingerprint=bool(args.pods_fingerprint),
        no_publish=bool(args.no_publish),
        oneshot=bool(args.oneshot),
        port=args.port,
        bind_address=args.bind_address or "",
        namespace=pod_namespace(default=""),
        config=config,
        paths=paths,
    )
    return _run_until_signal(run(opts, kubeconfig=args.kubeconfig))


def _run_until_signal(coro: Coroutine[Any, Any, int]) -> int:
    try:  # SIGUSR1 dumps every thread's stack to stderr, for diagnosing a hang in the field
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    except (ValueError, OSError, AttributeError):
        pass
    return run_until_signal(coro)


if __name__ == "__main__":
    sys.exit(main())
