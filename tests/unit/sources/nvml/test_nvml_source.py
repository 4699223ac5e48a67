"""The nvml source's failure policy: never crash, never wipe GPU labels on a transient error."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
from nvml_help import make_fake

from nfd.api.errors import ValidationError
from nfd.sources.base import DiscoveryContext
from nfd.sources.nvml import NvmlSource


def fresh(f):
    """Features without the stale marker, to compare a kept result with the good one."""
    g = f.copy()
    g.attributes.get("nvml.system", {}).pop("stale", None)
    return g


def source_for(fake, **kw) -> NvmlSource:
    return NvmlSource(backend=fake, host=fake.host, **kw)


def cfg(src: NvmlSource, **raw) -> dict:
    """The config; GPU health off (its features, its XID watcher's own NVML session: test_nvml_health.py)."""
    raw.setdefault("health", {"enabled": False})
    return src.parse_config(raw, path="sources.nvml")


def info_lines(caplog, text: str) -> int:
    return sum(text in r.getMessage() for r in caplog.records)


def test_real_pynvml_without_gpu_is_off_with_one_log_line(caplog) -> None:
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this machine has NVML")
    src = NvmlSource(env={})
    ctx = DiscoveryContext()
    caplog.set_level(logging.INFO, logger="nfd.sources.nvml")
    for _ in range(3):
        f = src.discover(ctx, cfg(src))
        assert f.is_empty()
        assert src.labels(f, cfg(src), ctx) == {}
    assert info_lines(caplog, "no usable NVML") == 1
    assert src.errors_total == 0


def test_driver_arriving_later_is_picked_up(caplog) -> None:
    fake = make_fake("h100x8")
    fake.inject("nvmlInit", "DRIVER_NOT_LOADED", times=2)
    src = source_for(fake)
    ctx = DiscoveryContext()
    caplog.set_level(logging.INFO, logger="nfd.sources.nvml")
    assert src.discover(ctx, cfg(src)).is_empty()
    assert src.discover(ctx, cfg(src)).is_empty()
    f = src.discover(ctx, cfg(src))
    assert len(f.instances["nvml.gpu"]) == 8
    assert info_lines(caplog, "no usable NVML") == 1
    assert info_lines(caplog, "NVML driver 550.54.15, 8 GPU(s)") == 1
    assert src.errors_total == 0
    assert fake.init_count == 0  # every pass shuts NVML down again


def test_gpu_lost_mid_run_keeps_last_good_and_recovers(caplog) -> None:
    fake = make_fake("h100x8")
    src = source_for(fake)
    ctx = DiscoveryContext()
    caplog.set_level(logging.INFO, logger="nfd.sources.nvml")
    good = src.discover(ctx, cfg(src))
    good_labels = src.labels(good, cfg(src), ctx)
    fake.inject("nvmlDeviceGetName", "GPU_IS_LOST", device=3, times=2)
    for n in (1, 2):
        f = src.discover(ctx, cfg(src))
        assert f.attributes["nvml.system"]["stale"] == "true"
        assert fresh(f) == good
        assert src.labels(f, cfg(src), ctx) == good_labels
        assert src.errors_total == n
    assert "nvmlDeviceGetName (GPU 3)" in src.last_error
    assert info_lines(caplog, "keeping the last good GPU features") == 1  # repeats are not re-logged
    recovered = src.discover(ctx, cfg(src))
    assert recovered == good and "stale" not in recovered.attributes["nvml.system"]
    assert info_lines(caplog, "NVML readable again") == 1
    assert fake.init_count == 0


def test_driver_unloaded_mid_run_is_an_error_not_absence(caplog) -> None:
    fake = make_fake("a100-40gb")
    src = source_for(fake)
    ctx = DiscoveryContext()
    good = src.discover(ctx, cfg(src))
    fake.inject("nvmlInit", "DRIVER_NOT_LOADED")
    assert fresh(src.discover(ctx, cfg(src))) == good
    assert src.errors_total == 1
    assert "nvmlInit" in src.last_error


def test_error_before_any_good_pass_gives_no_features() -> None:
    fake = make_fake("a100-40gb")
    fake.inject("nvmlDeviceGetCudaComputeCapability", "UNKNOWN", times=1)
    src = source_for(fake)
    ctx = DiscoveryContext()
    assert src.discover(ctx, cfg(src)).is_empty()
    assert src.errors_total == 1
    assert not src.discover(ctx, cfg(src)).is_empty()


def test_fewer_gpus_is_a_good_pass() -> None:
    fake = make_fake("h100x8")
    src = source_for(fake)
    ctx = DiscoveryContext()
    src.discover(ctx, cfg(src))
    fake.hidden = {7}
    f = src.discover(ctx, cfg(src))
    assert src.labels(f, cfg(src), ctx)["nvidia.com/gpu.count"] == "7"
    assert src.errors_total == 0


def test_unresolved_mig_profiles_fail_single_and_mixed_only() -> None:
    fake = make_fake("a100-mig-mixed")
    src = source_for(fake)
    ctx = DiscoveryContext()
    mixed = cfg(src, migStrategy="mixed")
    good = src.discover(ctx, mixed)
    fake.inject("nvmlDeviceGetGpuInstanceById", "NO_PERMISSION")
    assert fresh(src.discover(ctx, mixed)) == good
    assert "NVIDIA_MIG_MONITOR_DEVICES" in src.last_error
    # strategy none does not need profiles: a fresh pass succeeds
    f = src.discover(ctx, cfg(src, migStrategy="none"))
    assert f != good and src.errors_total == 1
    assert {m["profile"] for m in f.instances["nvml.mig"]} == {""}


def test_timestamp_is_fixed_per_process_and_can_be_turned_off() -> None:
    ticks = iter([1000, 2000, 3000])
    fake = make_fake("a100-40gb")
    src = source_for(fake, clock=lambda: next(ticks))
    ctx = DiscoveryContext()
    f = src.discover(ctx, cfg(src))
    assert src.labels(f, cfg(src), ctx)["nvidia.com/gfd.timestamp"] == "1000"
    assert src.labels(f, cfg(src), ctx)["nvidia.com/gfd.timestamp"] == "1000"
    assert "nvidia.com/gfd.timestamp" not in src.labels(f, cfg(src, noTimestamp=True), ctx)


def test_config_file_sharing_and_mig_strategy(tmp_path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "version: v1\nflags:\n  migStrategy: mixed\nsharing:\n  timeSlicing:\n"
        "    resources:\n    - name: nvidia.com/mig-1g.5gb\n      replicas: 4\n"
    )
    fake = make_fake("a100-mig-mixed")
    src = source_for(fake)
    ctx = DiscoveryContext()
    c = cfg(src, configFile=str(path))
    labels = src.labels(src.discover(ctx, c), c, ctx)
    assert labels["nvidia.com/mig.strategy"] == "mixed"
    assert labels["nvidia.com/mig-1g.5gb.replicas"] == "4"
    # the worker config's migStrategy wins over the file's flags
    c2 = cfg(src, configFile=str(path), migStrategy="single")
    assert src.labels(src.discover(ctx, c2), c2, ctx)["nvidia.com/mig.strategy"] == "single"
    # a broken file: one warning naming it, the last good contents stay in force
    path.write_text("version: v1\nsharing:\n  timeSlicing:\n    resources: []\n")
    labels2 = src.labels(src.discover(ctx, c), c, ctx)
    assert labels2["nvidia.com/mig-1g.5gb.replicas"] == "4"
    assert any(str(path) in w and "no resources" in w for w in ctx.warnings)


def test_missing_config_file_warns_and_uses_defaults(tmp_path) -> None:
    fake = make_fake("a100-40gb")
    src = source_for(fake)
    ctx = DiscoveryContext()
    c = cfg(src, configFile=str(tmp_path / "nope.yaml"))
    labels = src.labels(src.discover(ctx, c), c, ctx)
    assert labels["nvidia.com/gpu.sharing-strategy"] == "none"
    assert any("nope.yaml" in w for w in ctx.warnings)


def test_config_validation() -> None:
    src = NvmlSource(env={})
    with pytest.raises(ValidationError) as e:
        src.parse_config({"migStrategy": "both"}, path="sources.nvml")
    assert e.value.path == "sources.nvml.migStrategy"
    with pytest.raises(ValidationError):
        src.parse_config({"noTimestamp": "yes"}, path="sources.nvml")
    assert src.parse_config(None, path="sources.nvml")["migStrategy"] == ""


def test_profile_from_environment() -> None:
    src = NvmlSource(env={"NFD_NVML_PROFILE": "h100x8", "NFD_NVML_FAULTS": "nvmlInit=DRIVER_NOT_LOADED*1"})
    ctx = DiscoveryContext()
    assert src.discover(ctx, cfg(src)).is_empty()  # the injected fault: driver not loaded yet
    f = src.discover(ctx, cfg(src))
    labels = src.labels(f, cfg(src), ctx)
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert labels["nvidia.com/gpu.machine"] == "PowerEdge-XE9680"  # from the profile, not this host


def test_bad_profile_name_turns_the_source_off(caplog) -> None:
    caplog.set_level(logging.INFO, logger="nfd.sources.nvml")
    src = NvmlSource(env={"NFD_NVML_PROFILE": "no-such-gpu"})
    assert src.discover(DiscoveryContext(), cfg(src)).is_empty()
    assert info_lines(caplog, "no-such-gpu") == 1


def test_registry_import_is_light() -> None:
    code = (
        "import sys\n"
        "from nfd.sources import registry\n"
        "s = registry.get('nvml')\n"
        "assert s is not None and s.name == 'nvml', s\n"
        "assert 'pynvml' not in sys.modules\n"
        "assert 'nfd.sources.nvml.collect' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_an_nvidia_driver_pynvml_is_not_imported(tmp_path) -> None:
    import subprocess
    import sys

    (tmp_path / "proc").mkdir()
    code = (
        "import sys\n"
        "from nfd.hostpaths import HostPaths\n"
        "from nfd.sources.base import DiscoveryContext\n"
        "from nfd.sources.nvml.source import NvmlSource, driver_present\n"
        f"ctx = DiscoveryContext(paths=HostPaths.under({str(tmp_path)!r}))\n"
        "src = NvmlSource(env={})\n"
        "if driver_present(ctx):\n"
        "    print('host-has-driver')\n"
        "else:\n"
        "    assert src.discover(ctx, src.parse_config({}, path='sources.nvml')).is_empty()\n"
        "    print('pynvml' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    if out == "host-has-driver":
        pytest.skip("this machine has an NVIDIA driver")
    assert out == "False"


def test_a_driver_entry_under_the_host_root_counts(tmp_path) -> None:
    from nfd.hostpaths import HostPaths
    from nfd.sources.nvml.source import driver_present

    (tmp_path / "proc" / "driver" / "nvidia").mkdir(parents=True)
    assert driver_present(DiscoveryContext(paths=HostPaths.under(str(tmp_path))))


def test_the_fake_nvml_is_imported_only_for_a_profile() -> None:
    """nfd.nvml_fake (and its device profiles) is no part of the real source: the backend
    without NFD_NVML_PROFILE is pynvml, and nothing of the fake is imported."""
    code = (
        "import sys\n"
        "from nfd.sources.nvml import backend, collect, labels, source\n"
        "b, host = backend.load_backend({})\n"
        "assert host is None and b.__name__ == 'pynvml', b\n"
        "assert not [m for m in sys.modules if m.startswith('nfd.nvml_fake')]\n"
        "b, host = backend.load_backend({'NFD_NVML_PROFILE': 'h100x8'})\n"
        "assert host is not None and 'nfd.nvml_fake' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_errors_are_served_by_the_worker_metrics(monkeypatch) -> None:
    """nfd_nvml_errors_total is on the worker's own /metrics (it was a prometheus_client counter
    that no worker endpoint served, and its first NVML error imported that library)."""
    from nfd.sources import registry
    from nfd.worker.daemon import Worker
    from nfd.worker.flags import parse_flags

    fake = make_fake("h100x8")
    src = source_for(fake)
    ctx = DiscoveryContext()
    src.discover(ctx, cfg(src))
    fake.inject("nvmlDeviceGetName", "GPU_IS_LOST", device=3, times=2)
    src.discover(ctx, cfg(src))
    src.discover(ctx, cfg(src))
    worker = Worker(parse_flags(["-no-publish"]), env={"NODE_NAME": "n"})
    monkeypatch.delitem(registry._loaded, "nvml", raising=False)
    assert "nfd_nvml_errors_total" not in worker.metrics.render()  # the source is not loaded
    monkeypatch.setitem(registry._loaded, "nvml", src)
    assert "\nnfd_nvml_errors_total 2\n" in worker.metrics.render()


def test_an_nvml_error_imports_no_metrics_library() -> None:
    code = (
        "import sys\n"
        "sys.path.insert(0, 'tests/unit/sources/nvml')\n"
        "from nvml_help import make_fake\n"
        "from nfd.sources.base import DiscoveryContext\n"
        "from nfd.sources.nvml import NvmlSource\n"
        "fake = make_fake('h100x8')\n"
        "src = NvmlSource(backend=fake, host=fake.host)\n"
        "conf = src.parse_config({}, path='sources.nvml')\n"
        "src.discover(DiscoveryContext(), conf)\n"
        "fake.inject('nvmlDeviceGetName', 'GPU_IS_LOST', device=3, times=1)\n"
        "src.discover(DiscoveryContext(), conf)\n"
        "assert src.errors_total == 1\n"
        "print('prometheus_client' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
