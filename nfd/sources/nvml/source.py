"""The ``nvml`` feature source: NVIDIA GPUs via NVML, labelled as gpu-feature-discovery does.

A thin shell around pure parts: collect (NVML -> Snapshot), snapshotfeatures (Snapshot <-> Features)
and labels (Snapshot + settings -> labels). What it adds is failure policy:

- no NVML on the node (library or driver missing): the source is off, logged once at INFO,
  and NVML is quietly re-tried every cycle so a driver installed later is picked up;
- NVML failing after a good pass (GPU lost, driver reload, ...): the last good features are
  kept (marked ``nvml.system.stale=true``), the error is counted (``errors_total``, the worker's
  metric ``nfd_nvml_errors_total``) and the next cycle retries. Labels are never wiped by an NVML error.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from nfd.api.errors import ValidationError
from nfd.api.features import Features
from nfd.sources.base import DiscoveryContext, FeatureSource, check_like
from nfd.sources.nvml import backend as nv
from nfd.sources.nvml.naming import DRIVER, GPU, HEALTH, HEALTH_SUMMARY, MIG, SYSTEM

if TYPE_CHECKING:  # the device plugin's config is read only where a GPU node sets configFile
    from nfd.sources.nvml.sharing import DevicePluginConfig

log = logging.getLogger("nfd.sources.nvml")

HEALTH_DEFAULTS: dict[str, Any] = {
    "enabled": True,
    # application XIDs not counted (NVIDIA's device plugin's default skip list)
    "ignoredXids": [13, 31, 43, 45, 68, 109],
    # XIDs held until the GPU is seen reset instead of aging out
    "resetXids": [48, 63, 64, 74, 79, 95, 119, 120, 140],
    # seconds an XID not in resetXids keeps its GPU unhealthy
    "xidWindow": 3600,
    # NVLinks each GPU should have up; 0: the links NVML reports
    "nvlinkExpected": 0,
    # passes in a row a degraded reading (clock events, PCIe link) must be seen to set, or not seen to clear
    "degradedPasses": 3,
    # XID events: a background wait on NVML's event set
    "xidEvents": True,
}


def driver_present(ctx: DiscoveryContext) -> bool:
    """The NVIDIA kernel driver is loaded (its procfs entry; /dev/dxg on WSL) or its control device
    exists. Without either NVML cannot initialise, so pynvml (~25 ms to import) is left alone."""
    paths = (ctx.paths.proc("driver/nvidia"), "/proc/driver/nvidia", ctx.paths.path("/dev/nvidiactl"),
             "/dev/nvidiactl", "/dev/dxg")
    return any(os.path.exists(p) for p in paths)


class NvmlSource(FeatureSource):
    name = "nvml"
    features = (GPU, MIG, DRIVER, SYSTEM, HEALTH, HEALTH_SUMMARY)

    def __init__(
        self,
        *,
        env: dict[str, str] | None = None,
        clock: Any = time.time,
        backend: Any = None,
        host: Any = None,
        health_clock: Any = time.time,
    ):
        """``backend``/``host`` inject an NVML implementation and host facts (tests)."""
        self._env = env
        self._lock = threading.Lock()
        self._backend: Any = backend
        self._fake_host: Any = host
        self._absent_logged = False
        self._available = False
        self._last: Features | None = None
        self._last_error_msg = ""
        self.errors_total = 0
        self.last_error = ""
        self._timestamp: int | None = None
        self._clock = clock
        self._health_clock = health_clock
        self._dp_cache: dict[str, tuple[tuple[float, int], DevicePluginConfig]] = {}
        self._tracker: Any = None  # health.HealthTracker, made at the first pass with health on
        self._watcher: Any = None  # health.XidWatcher
        self._identities: dict[int, tuple[str, str, int | None]] = {}
        self._init_failed = False
        self.health_reads = 0  # NVML calls of the last health pass (benchmarks)

    # -- configuration ------------------------------------------------------------------------
    def default_config(self) -> dict[str, Any]:
        return {
            # none | single | mixed; "" takes flags.migStrategy from configFile, else none
            "migStrategy": "",
            # device-plugin/GFD config file (version: v1) with sharing.timeSlicing / sharing.mps
            "configFile": "",
            # leave out nvidia.com/gfd.timestamp (GFD's --no-timestamp)
            "noTimestamp": False,
            # DMI product name file for gpu.machine; "" is /sys/class/dmi/id/product_name
            "machineTypeFile": "",
            # GPU health features nvml.health / nvml.health_summary (docs/gpu-health.md)
            "health": dict(HEALTH_DEFAULTS),
        }

    def parse_config(self, raw: Any, *, path: str) -> dict[str, Any]:
        cfg = super().parse_config(raw, path=path)
        # deferred: each of this source's GPU modules is 6-15 ms of a one-shot worker's start-up
        # (sharing 6.4, health 8.9, hostinfo 9.5, collect 13.4, labels 13.7, snapshotfeatures 14.8 ms;
        # yaml 11.5), and each loads only where it is used: a GPU node, an nvml config
        from nfd.sources.nvml.sharing import MIG_STRATEGIES

        if cfg["migStrategy"] not in ("", *MIG_STRATEGIES):
            raise ValidationError(
                f"{path}.migStrategy", f"must be one of none, single, mixed; got {cfg['migStrategy']!r}"
            )
        health = cfg["health"]
        merged = dict(HEALTH_DEFAULTS)
        for key, value in health.items():
            if key not in HEALTH_DEFAULTS:
                log.info("%s.health.%s: unknown key ignored", path, key)
                continue
            merged[key] = check_like(HEALTH_DEFAULTS[key], value, f"{path}.health.{key}")
        for key in ("ignoredXids", "resetXids"):
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in merged[key]):
                raise ValidationError(f"{path}.health.{key}", "must be a list of integers")
        for key in ("xidWindow", "nvlinkExpected", "degradedPasses"):
            if merged[key] < 0:
                raise ValidationError(f"{path}.health.{key}", "must not be negative")
        cfg["health"] = merged
        return cfg

    def device_plugin_config(self, config: dict[str, Any], ctx: DiscoveryContext) -> DevicePluginConfig:
        """The configFile's contents; on a bad file, warn and keep the last good one."""
        # deferred: see parse_config
        from nfd.sources.nvml.sharing import DevicePluginConfig, parse_device_plugin_config

        path = config.get("configFile") or ""
        if not path:
            return DevicePluginConfig()
        # deferred: see parse_config
        import yaml

        from nfd.common import safeyaml

        cached = self._dp_cache.get(path)
        try:
            st = os.stat(path)
            key = (st.st_mtime, st.st_size)
            if cached is not None and cached[0] == key:
                return cached[1]
            with open(path, encoding="utf-8") as f:
                doc = safeyaml.safe_load(f.read((1 << 20) + 1), source=path, max_bytes=1 << 20)
            parsed = parse_device_plugin_config(doc, path=path)
        except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError) as e:
            kept = " (keeping the last good one)" if cached else ""
            ctx.warn(f"nvml: sharing config {path}: {e}{kept}")
            return cached[1] if cached else DevicePluginConfig()
        self._dp_cache[path] = (key, parsed)
        return parsed

    def mig_strategy(self, config: dict[str, Any], dp: DevicePluginConfig) -> str:
        return config.get("migStrategy") or dp.mig_strategy or "none"

    # -- discovery ----------------------------------------------------------------------------
    def discover(self, ctx: DiscoveryContext, config: dict[str, Any]) -> Features:
        with self._lock:
            return self._discover(ctx, config)

    def _load(self, ctx: DiscoveryContext) -> bool:
        if self._backend is not None:
            return True
        env = os.environ if self._env is None else self._env
        if not env.get(nv.PROFILE_ENV, "").strip() and not driver_present(ctx):
            self._note_absent("no NVIDIA driver: no /proc/driver/nvidia, /dev/nvidiactl or /dev/dxg")
            return False
        try:
            self._backend, self._fake_host = nv.load_backend(self._env)
        except ImportError as e:
            self._note_absent(f"pynvml cannot be imported: {e}")
            return False
        except ValueError as e:  # a bad NFD_NVML_PROFILE: an input error, said at the default verbosity
            self._note_absent(f"{nv.PROFILE_ENV}: {e}", warning=True)
            return False
        return True

    def _note_absent(self, why: str, *, warning: bool = False) -> None:
        if not self._absent_logged:
            log.log(
                logging.WARNING if warning else logging.INFO,
                "nvml: no usable NVML on this node (%s); the nvml source is off and re-checks each cycle", why,
            )
            self._absent_logged = True

    def _discover(self, ctx: DiscoveryContext, config: dict[str, Any]) -> Features:
        if not self._load(ctx):
            return Features()
        nvml = self._backend
        hcfg = config.get("health") or {}
        try:
            nvml.nvmlInit()
        except Exception as e:
            code = nv.nvml_code(e)
            if code is None:
                raise
            self._init_failed = True
            if code in nv.ABSENT_CODES and self._last is None:
                self._note_absent(nv.describe(e))
                return Features()
            return self._failed(f"nvmlInit: {nv.describe(e)}")
        if self._init_failed and self._tracker is not None:
            self._tracker.reset_all()  # NVML back after failing to initialise: the driver was reloaded
        self._init_failed = False
        self._health_watch(hcfg)  # once NVML answers: no thread on a node without a driver
        health: tuple[list[dict[str, str]], dict[str, str]] | None = None
        try:
            # deferred: see parse_config
            from nfd.sources.nvml.collect import CollectError, collect
            from nfd.sources.nvml.hostinfo import SysfsHost
            from nfd.sources.nvml.snapshotfeatures import snapshot_to_features

            host = self._fake_host or SysfsHost(ctx, machine_type_file=config.get("machineTypeFile") or "")
            error = ""
            try:
                snap = collect(nvml, host)
                self._identities = {g.index: (g.uuid, g.pci_bus_id, g.numa_node) for g in snap.gpus}
            except CollectError as e:
                error = str(e)
            if hcfg.get("enabled"):
                health = self._health(nvml, hcfg, ctx)
        finally:
            try:
                nvml.nvmlShutdown()
            except Exception as e:  # shutting down a half-broken NVML must not hide the result
                log.debug("nvml: nvmlShutdown: %s", e)
        if error:
            return self._with_health(self._failed(error), health)
        for w in snap.warnings:
            ctx.warn(w)
        strategy = self.mig_strategy(config, self.device_plugin_config(config, ctx))
        unresolved = [m for m in snap.mig_devices() if not m.profile]
        if unresolved and strategy != "none":
            m = unresolved[0]
            return self._with_health(self._failed(
                f"MIG device {m.parent_index}:{m.index} profile not resolved ({m.profile_error}); "
                f"mig-strategy={strategy} needs MIG profiles (is NVIDIA_MIG_MONITOR_DEVICES=all set?)"
            ), health)
        if not self._available:
            log.info("nvml: NVML driver %s, %d GPU(s)", snap.driver_version, len(snap.gpus))
            self._available = True
        if self._last_error_msg:
            log.info("nvml: NVML readable again after: %s", self._last_error_msg)
            self._last_error_msg = ""
        features = self._with_health(snapshot_to_features(snap), health)
        self._last = features.copy()
        return features

    # -- health -------------------------------------------------------------------------------
    def _health_watch(self, hcfg: dict[str, Any]) -> None:
        """Start the XID watcher where health and XID events are on; stop it where they are off."""
        want = bool(hcfg.get("enabled")) and bool(hcfg.get("xidEvents"))
        if want and hasattr(self._backend, "nvmlEventSetCreate"):
            # deferred: see parse_config
            from nfd.sources.nvml.health import HealthTracker, XidWatcher

            if self._tracker is None:
                self._tracker = HealthTracker(clock=self._health_clock)
            if self._watcher is None:
                self._watcher = XidWatcher(self._backend, self._tracker)
            if not self._watcher.running:
                self._watcher.start()
        elif self._watcher is not None:
            self._watcher.stop()
            self._watcher = None

    def close(self) -> None:
        """Stop the XID watcher (without waiting: it ends at its next bounded wait)."""
        if self._watcher is not None:
            self._watcher.stop(timeout=0)
            self._watcher = None

    def _health(self, nvml: Any, hcfg: dict[str, Any], ctx: DiscoveryContext) -> Any:
        # deferred: see parse_config
        from nfd.sources.nvml.health import NVLINK_MAX_LINKS, HealthSettings, HealthTracker, read_health

        if self._tracker is None:
            self._tracker = HealthTracker(clock=self._health_clock)
        calls = getattr(nvml, "calls", None)
        before = sum(calls.values()) if calls is not None else 0
        try:
            readings = read_health(nvml, self._identities, NVLINK_MAX_LINKS)
        except Exception as e:
            if nv.nvml_code(e) is None:
                raise
            ctx.warn(f"nvml: health: {nv.describe(e)}")
            return None
        if calls is not None:
            self.health_reads = sum(calls.values()) - before
        for r in readings:
            for err in r.errors:
                ctx.warn(f"nvml: health: {err}")
        settings = HealthSettings(
            ignored_xids=frozenset(hcfg.get("ignoredXids") or ()),
            reset_xids=frozenset(hcfg.get("resetXids") or ()),
            xid_window=float(hcfg.get("xidWindow", 3600)),
            nvlink_expected=int(hcfg.get("nvlinkExpected", 0)),
            degraded_passes=int(hcfg.get("degradedPasses", 3)),
        )
        return self._tracker.update(readings, settings)

    @staticmethod
    def _with_health(features: Features, health: Any) -> Features:
        if health is not None:
            instances, summary = health
            features.instances.pop(HEALTH, None)
            if instances:
                features.add_instances(HEALTH, instances)
            features.attributes[HEALTH_SUMMARY] = {}
            features.add_attributes(HEALTH_SUMMARY, summary)
        return features

    def _failed(self, message: str) -> Features:
        """Count the error; keep the last good features (or none if there never were any)."""
        self.errors_total += 1
        self.last_error = message
        kept = "keeping the last good GPU features" if self._last is not None else "no GPU features yet"
        if message != self._last_error_msg:
            log.warning("nvml: %s; %s, retrying next cycle", message, kept)
        else:
            log.debug("nvml: %s (again)", message)
        self._last_error_msg = message
        if self._last is None:
            return Features()
        stale = self._last.copy()
        # visible to rules (and operators), invisible to the GFD labels
        stale.attributes.setdefault("nvml.system", {})["stale"] = "true"
        return stale

    # -- labels -------------------------------------------------------------------------------
    def labels(self, features: Features, config: dict[str, Any], ctx: DiscoveryContext) -> dict[str, str]:
        if SYSTEM not in features.attributes:
            return {}  # NVML absent: no labels at all, not even gfd.timestamp
        # deferred: see parse_config
        from nfd.sources.nvml.labels import LabelSettings, gfd_labels
        from nfd.sources.nvml.snapshotfeatures import snapshot_from_features

        dp = self.device_plugin_config(config, ctx)
        if self._timestamp is None:
            self._timestamp = int(self._clock())
        settings = LabelSettings(
            mig_strategy=self.mig_strategy(config, dp),
            sharing=dp.sharing,
            timestamp=None if config.get("noTimestamp") else self._timestamp,
        )
        return gfd_labels(snapshot_from_features(features), settings, warn=ctx.warn)


SOURCE = NvmlSource()
