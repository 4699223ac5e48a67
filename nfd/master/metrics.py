"""nfd-master Prometheus metrics, upstream's names, on a private registry (no process collectors)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector


class _ApiRequests(Collector):
    """``nfd_master_api_requests_total{verb}`` read from the API client's own counter (ours)."""

    def __init__(self, counts: Mapping[str, int]) -> None:
        self.counts = counts

    def collect(self) -> Iterator[CounterMetricFamily]:
        fam = CounterMetricFamily("nfd_master_api_requests", "Kubernetes API requests issued, by verb.", labels=["verb"])
        for verb, n in sorted(self.counts.items()):
            fam.add_metric([verb], float(n))
        yield fam


class MasterMetrics:
    def __init__(self, *, version: str = "") -> None:
        r = self.registry = CollectorRegistry()
        self.build_info = Gauge("nfd_master_build_info", "Build information of nfd-master", ["version"], registry=r)
        self.build_info.labels(version=version).set(time.time())
        self.node_update_requests = Counter(
            "nfd_master_node_update_requests", "Number of node update requests processed by the master.", registry=r
        )
        self.node_updates = Counter("nfd_master_node_updates", "Number of nodes updated by the master.", registry=r)
        self.node_update_failures = Counter(
            "nfd_master_node_update_failures", "Number of nodes update failures.", registry=r
        )
        self.node_labels_rejected = Counter(
            "nfd_master_node_labels_rejected", "Number of node labels that were rejected by nfd-master.", registry=r
        )
        self.node_ers_rejected = Counter(
            "nfd_master_node_extendedresources_rejected",
            "Number of node extended resources that were rejected by nfd-master.",
            registry=r,
        )
        self.node_taints_rejected = Counter(
            "nfd_master_node_taints_rejected", "Number of node taints that were rejected by nfd-master.", registry=r
        )
        self.nfr_processing_time = Histogram(
            "nfd_master_nodefeaturerule_processing_duration_seconds",
            "Time taken to process NodeFeatureRule objects.",
            ["name", "node"],
            buckets=[0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01],
            registry=r,
        )
        self.nfr_processing_errors = Counter(
            "nfd_master_nodefeaturerule_processing_errors",
            "Number of errors encountered while processing NodeFeatureRule objects.",
            registry=r,
        )
        # Upstream defines but never registers this one; we export it.
        self.nfg_update_requests = Counter(
            "nfd_master_node_feature_group_update_requests",
            "Number of NodeFeatureGroup update requests processed by the master.",
            registry=r,
        )
        # Ours: writes skipped because the node was already right.
        self.node_noop_updates = Counter(
            "nfd_master_node_noop_updates", "Node updates that needed no write.", registry=r
        )
        self.is_leader = Gauge("nfd_master_is_leader", "1 while this instance holds the lease.", registry=r)
        # Ours: fields this nfd-master evaluates that the served CRD lacks (the API server prunes
        # them from every object); 0 when the CRD is current (nfd.master.crdcheck).
        self.crd_missing_fields = Gauge(
            "nfd_master_crd_missing_fields",
            "Fields this nfd-master evaluates that the served CRD lacks (pruned from every object).",
            ["crd"], registry=r,
        )

    def bind_api_counts(self, counts: Mapping[str, int]) -> None:
        self.registry.register(_ApiRequests(counts))
