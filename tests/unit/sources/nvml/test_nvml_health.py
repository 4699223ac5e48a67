"""GPU health (nvml.health, nvml.health_summary): set and cleared by evidence, never sticky, never flapping."""

from __future__ import annotations

import time
from typing import Any

import pytest

from nfd.hostpaths import HostPaths
from nfd.sources.base import DiscoveryContext
from nfd.sources.nvml.health import HealthSettings, HealthTracker, Reading
from nfd.sources.nvml.source import NvmlSource
from tests.unit.sources.nvml.nvml_help import make_fake


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def source_of(profile: str, **health: Any) -> tuple[NvmlSource, Any, dict[str, Any], Clock]:
    fake = make_fake(profile)
    clock = Clock()
    src = NvmlSource(backend=fake, host=fake.host, health_clock=clock)
    cfg = src.parse_config({"health": health}, path="sources.nvml")
    return src, fake, cfg, clock


def health_of(src: NvmlSource, cfg: dict[str, Any]) -> tuple[list[dict[str, str]], dict[str, str]]:
    f = src.discover(DiscoveryContext(paths=HostPaths.detect()), cfg)
    return [dict(i) for i in f.instances.get("nvml.health", [])], f.attributes["nvml.health_summary"]


def wait_for(pred: Any, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached")


def test_a_healthy_node() -> None:
    src, _, cfg, _ = source_of("h100x8", xidEvents=False)
    gpus, summary = health_of(src, cfg)
    assert summary == {"gpu_count": "8", "healthy_count": "8", "unhealthy_count": "0", "degraded_count": "0",
                       "healthy": "true", "reasons": "", "reason": "none", "unhealthy_gpus": ""}
    assert [g["uuid"] for g in gpus] == [f"GPU-1a2b3c4d-0000-4000-8000-00000000000{i}" for i in range(8)]
    assert gpus[4]["pci_bus_id"] == "00000000:9A:00.0" and gpus[4]["numa_node"] == "1"


def test_not_supported_is_not_unhealthy() -> None:
    src, _, cfg, _ = source_of("rtx4090", xidEvents=False)
    (g,), summary = health_of(src, cfg)
    assert summary["healthy"] == "true"
    for key in ("ecc_uncorrected_volatile", "retired_pages_pending", "row_remap_pending", "nvlink_active"):
        assert key not in g


def test_each_signal_sets_and_a_reset_clears_it() -> None:
    src, fake, cfg, _ = source_of("h100x8-unhealthy", xidEvents=False)
    gpus, summary = health_of(src, cfg)
    assert summary["unhealthy_gpus"] == "1,2,3,4,6" and summary["reason"] == "row-remap-failed"
    for i in (1, 2, 3, 4, 6):  # the GPU reset: counters zeroed, remaps applied, links trained
        fake.set_health(i, eccUncorrectedVolatile=0, retiredPagesPending=False, remappedRows={},
                        nvlinks=[1] * 18)
    gpus, summary = health_of(src, cfg)
    assert summary["healthy"] == "true" and summary["reason"] == "none" and summary["healthy_count"] == "8"


def test_nvlink_against_the_expected_count() -> None:
    src, _, cfg, _ = source_of("h100x8-unhealthy", xidEvents=False, nvlinkExpected=18)
    gpus, _ = health_of(src, cfg)
    assert (gpus[6]["nvlink_active"], gpus[6]["nvlink_expected"], gpus[6]["nvlink_down"]) == ("16", "18", "2")
    src, _, cfg, _ = source_of("h100x8", xidEvents=False, nvlinkExpected=18)  # no NVLink answers at all
    gpus, summary = health_of(src, cfg)
    assert gpus[0]["nvlink_down"] == "18" and summary["reason"] == "nvlink-down"


def test_fabric_health_mask() -> None:
    fake = make_fake("gb200-nvl")
    fake.gpus[2].spec["fabric"] = {**fake.gpus[2].model["fabric"], "healthMask": 1}  # degraded bandwidth
    src = NvmlSource(backend=fake, host=fake.host)
    cfg = src.parse_config({"health": {"xidEvents": False}}, path="sources.nvml")
    gpus, summary = health_of(src, cfg)
    assert gpus[2]["fabric_health_mask"] == "1" and gpus[2]["reasons"] == "fabric"
    assert summary["unhealthy_gpus"] == "2"


def test_a_lost_gpu_clears_when_it_answers_again() -> None:
    src, fake, cfg, _ = source_of("h100x8", xidEvents=False)
    health_of(src, cfg)
    lost = fake.inject("*", "GPU_IS_LOST", device=3)
    gpus, summary = health_of(src, cfg)
    assert gpus[3]["lost"] == "true" and gpus[3]["uuid"].endswith("0003") and summary["reason"] == "gpu-lost"
    fake.faults.remove(lost)
    _, summary = health_of(src, cfg)
    assert summary["healthy"] == "true"


def test_degraded_needs_passes_in_a_row_both_ways() -> None:
    """Clock events and the PCIe link come and go: a reading seen in fewer than degradedPasses
    passes in a row changes nothing; degraded is never a reason to be unhealthy."""
    src, fake, cfg, _ = source_of("h100x8", xidEvents=False, degradedPasses=3)
    seq = [0x8, 0, 0x8, 0x8, 0x8, 0, 0x8, 0, 0, 0]
    got = []
    for clocks in seq:
        fake.set_health(5, clocksEventReasons=clocks)
        gpus, summary = health_of(src, cfg)
        got.append(gpus[5]["degraded"])
        assert summary["healthy"] == "true"
    assert got == ["", "", "", "", "clocks-hw-slowdown", "clocks-hw-slowdown", "clocks-hw-slowdown",
                   "clocks-hw-slowdown", "clocks-hw-slowdown", ""]


def test_xids_through_the_event_api_age_out_or_wait_for_a_reset() -> None:
    src, fake, cfg, clock = source_of("h100x8", xidWindow=600)
    _, summary = health_of(src, cfg)  # starts the watcher
    assert src._watcher is not None and src._watcher.running
    wait_for(lambda: src._watcher.registered == 8)
    fake.emit_xid(1, 31)   # an application XID: ignored (the device plugin's default list)
    fake.emit_xid(2, 62)   # internal micro-controller halt: ages out
    fake.emit_xid(3, 79)   # fallen off the bus: needs a reset
    wait_for(lambda: src._tracker is not None and len(src._tracker._pending) == 3)
    gpus, summary = health_of(src, cfg)
    assert [g["xids"] for g in gpus[1:4]] == ["", "62", "79"]
    assert summary["unhealthy_gpus"] == "2,3" and summary["reason"] == "xid"
    clock.now += 599
    assert health_of(src, cfg)[1]["unhealthy_gpus"] == "2,3"
    clock.now += 2
    gpus, summary = health_of(src, cfg)
    assert summary["unhealthy_gpus"] == "3" and gpus[3]["xids"] == "79"
    clock.now += 86400
    assert health_of(src, cfg)[1]["unhealthy_gpus"] == "3"  # still: no reset seen
    fake.hidden = {3}  # the reset: the GPU leaves enumeration ...
    health_of(src, cfg)
    fake.hidden = set()  # ... and comes back
    gpus, summary = health_of(src, cfg)
    assert summary["healthy"] == "true" and gpus[3]["xids"] == ""
    src.close()


def test_ignored_xids_are_configurable() -> None:
    t = HealthTracker(clock=lambda: 100.0)
    t.record_xid("GPU-a", 13)
    s = HealthSettings(ignored_xids=frozenset())
    (g,), _ = t.update([Reading(index=0, uuid="GPU-a")], s)
    assert g["xids"] == "13" and g["healthy"] == "false"


def test_a_driver_reload_clears_reset_xids() -> None:
    src, fake, cfg, clock = source_of("h100x8", xidEvents=False)
    health_of(src, cfg)
    src._tracker.record_xid("GPU-1a2b3c4d-0000-4000-8000-000000000000", 48)
    assert health_of(src, cfg)[1]["reason"] == "xid"
    fake.inject("nvmlInit", "DRIVER_NOT_LOADED", times=1)
    health_of(src, cfg)
    assert health_of(src, cfg)[1]["healthy"] == "true"


def test_the_watcher_survives_nvml_errors() -> None:
    src, fake, cfg, _ = source_of("h100x8")
    fake.inject("nvmlEventSetWait", "UNKNOWN", times=1)
    fake.inject("nvmlEventSetCreate", "GPU_IS_LOST", times=1)
    health_of(src, cfg)
    w = src._watcher
    w_backoff = 3.5  # 1 s + 2 s of back-off, then it registers
    wait_for(lambda: w.errors == 2 and w.registered == 8 and w.sessions == 3, timeout=w_backoff + 3)
    fake.emit_xid(0, 48)
    wait_for(lambda: len(src._tracker._pending) == 1)
    assert health_of(src, cfg)[1]["reason"] == "xid"
    src.close()


def test_health_off_reads_nothing() -> None:
    src, fake, cfg, _ = source_of("h100x8", enabled=False)
    f = src.discover(DiscoveryContext(paths=HostPaths.detect()), cfg)
    assert "nvml.health" not in f.instances and "nvml.health_summary" not in f.attributes
    assert fake.calls["nvmlDeviceGetRemappedRows"] == 0 and src._watcher is None


@pytest.mark.parametrize("bad", [{"ignoredXids": ["x"]}, {"xidWindow": -1}, {"enabled": "yes"}])
def test_bad_health_config(bad: dict[str, Any]) -> None:
    from nfd.api.errors import ValidationError

    with pytest.raises(ValidationError):
        NvmlSource().parse_config({"health": bad}, path="sources.nvml")
