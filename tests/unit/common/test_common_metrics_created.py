"""No *_created series, as upstream's Go Prometheus client (gc and topology-updater exported them)."""

from __future__ import annotations

from prometheus_client import generate_latest

from nfd.gc.collector import Metrics as GcMetrics
from nfd.topology_updater.updater import Metrics as TopologyMetrics


def test_no_created_series() -> None:
    for metrics in (GcMetrics(), TopologyMetrics()):
        text = generate_latest(metrics.registry).decode()  # type: ignore[arg-type]
        assert "_total" in text or "_build_info" in text
        assert "_created" not in text, text
