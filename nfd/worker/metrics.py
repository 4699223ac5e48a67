"""The worker's Prometheus metrics and its tiny ``/metrics`` + ``/healthz`` HTTP server.

Hand-rolled text exposition (no prometheus_client import) to keep the per-node agent small.
Upstream names: ``nfd_worker_build_info`` and ``nfd_worker_feature_discovery_duration_seconds``;
the other series are ours.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from nfd import __version__

if TYPE_CHECKING:
    from nfd.common.probes import ProbeServer

log = logging.getLogger("nfd.worker")

DISCOVERY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Histogram:
    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.total = 0
        self.sum = 0.0

    def observe(self, v: float) -> None:
        self.total += 1
        self.sum += v
        for i, b in enumerate(self.buckets):
            if v <= b:
                self.counts[i] += 1


class WorkerMetrics:
    def __init__(self, node_name: str) -> None:
        self.node_name = node_name
        self.started = time.time()
        self.discovery = Histogram(DISCOVERY_BUCKETS)
        self.source_errors: Counter[str] = Counter()
        self.publishes = 0
        self.publish_errors = 0
        self.config_reload_errors = 0
        self.api_requests: Callable[[], dict[str, int]] = dict
        #: NVML errors of the nvml source (None: the source is not loaded, no series)
        self.nvml_errors: Callable[[], int | None] = lambda: None

    def render(self) -> str:
        node = _esc(self.node_name)
        out = [
            "# HELP nfd_worker_build_info Build information of the worker (value: start time).",
            "# TYPE nfd_worker_build_info gauge",
            f'nfd_worker_build_info{{version="{_esc(__version__)}"}} {self.started:.3f}',
            "# HELP nfd_worker_feature_discovery_duration_seconds Time taken by one discovery pass.",
            "# TYPE nfd_worker_feature_discovery_duration_seconds histogram",
        ]
        h = self.discovery
        for b, c in zip(h.buckets, h.counts, strict=True):
            out.append(f'nfd_worker_feature_discovery_duration_seconds_bucket{{node="{node}",le="{b}"}} {c}')
        out.append(f'nfd_worker_feature_discovery_duration_seconds_bucket{{node="{node}",le="+Inf"}} {h.total}')
        out.append(f'nfd_worker_feature_discovery_duration_seconds_sum{{node="{node}"}} {h.sum}')
        out.append(f'nfd_worker_feature_discovery_duration_seconds_count{{node="{node}"}} {h.total}')
        out += [
            "# HELP nfd_worker_source_errors_total Failed discovery runs per feature source.",
            "# TYPE nfd_worker_source_errors_total counter",
        ]
        out += [f'nfd_worker_source_errors_total{{source="{_esc(s)}"}} {n}' for s, n in sorted(self.source_errors.items())]
        out += [
            "# HELP nfd_worker_nodefeature_writes_total NodeFeature creates and updates.",
            "# TYPE nfd_worker_nodefeature_writes_total counter",
            f"nfd_worker_nodefeature_writes_total {self.publishes}",
            "# HELP nfd_worker_publish_errors_total Failed attempts to publish the NodeFeature.",
            "# TYPE nfd_worker_publish_errors_total counter",
            f"nfd_worker_publish_errors_total {self.publish_errors}",
            "# HELP nfd_worker_config_reload_errors_total Config reloads rejected as invalid.",
            "# TYPE nfd_worker_config_reload_errors_total counter",
            f"nfd_worker_config_reload_errors_total {self.config_reload_errors}",
            "# HELP nfd_worker_api_requests_total Kubernetes API requests by verb.",
            "# TYPE nfd_worker_api_requests_total counter",
        ]
        out += [f'nfd_worker_api_requests_total{{verb="{_esc(v)}"}} {n}' for v, n in sorted(self.api_requests().items())]
        nvml = self.nvml_errors()
        if nvml is not None:
            out += [
                "# HELP nfd_nvml_errors_total NVML errors in the nvml feature source (the last good GPU features are kept).",
                "# TYPE nfd_nvml_errors_total counter",
                f"nfd_nvml_errors_total {nvml}",
            ]
        return "\n".join(out) + "\n"


async def serve_http(port: int, render: Callable[[], str], *, host: str = "0.0.0.0") -> ProbeServer:
    """GET /metrics and /healthz (also /readyz, /livez) on one port, answered from a thread of
    their own (nfd.common.probes): a masterless worker evaluating a costly rule still answers
    at once, and fails them once its event loop has stopped beating."""
    # here, not at the top: the server's asyncio and ssl (~25 ms and 58 modules after a one-shot
    # run, python -X importtime), which a one-shot run serves nothing with
    from nfd.common.httpserver import text_route
    from nfd.common.probes import Heartbeat, ProbeServer, liveness_route

    heartbeat = Heartbeat()
    heartbeat.start()
    routes = {"/metrics": text_route(render, "text/plain; version=0.0.4; charset=utf-8")}
    routes.update(dict.fromkeys(("/healthz", "/readyz", "/livez"), liveness_route(heartbeat)))
    return ProbeServer(port, routes, host=host, heartbeat=heartbeat)
