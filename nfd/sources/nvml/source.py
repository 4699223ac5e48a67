"""The ``nvml`` feature source: NVIDIA GPUs via NVML, labelled as gpu-feature-discovery does.

A thin shell around pure parts: collect (NVML -> Snapshot), features (Snapshot <-> Features)
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
from nfd.sources.base import DiscoveryContext, FeatureSource
from nfd.sources.nvml import backend as nv
from nfd.sources.nvml.naming import DRIVER, GPU, MIG, SYSTEM

if TYPE_CHECKING:  # the device plugin's config is read only where a GPU node sets configFile
    from nfd.sources.nvml.sharing import DevicePluginConfig

log = logging.getLogger("nfd.sources.nvml")


def driver_present(ctx: DiscoveryContext) -> bool:
    """The NVIDIA kernel driver is loaded (its procfs entry; /dev/dxg on WSL) or its control device
    exists. Without either NVML cannot initialise, so pynvml (~25 ms to import) is left alone."""
    paths = (ctx.paths.proc("driver/nvidia"), "/proc/driver/nvidia", ctx.paths.path("/dev/nvidiactl"),
             "/dev/nvidiactl", "/dev/dxg")
    return any(os.path.exists(p) for p in paths)


class NvmlSource(FeatureSource):
    name = "nvml"
    features = (GPU, MIG, DRIVER, SYSTEM)

    def __init__(
        self,
        *,
        env: dict[str, str] | None = None,
        clock: Any = time.time,
        backend: Any = None,
        host: Any = None,
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
        self._dp_cache: dict[str, tuple[tuple[float, int], DevicePluginConfig]] = {}

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
        }

    def parse_config(self, raw: Any, *, path: str) -> dict[str, Any]:
        cfg = super().parse_config(raw, path=path)
        from nfd.sources.nvml.sharing import MIG_STRATEGIES

        if cfg["migStrategy"] not in ("", *MIG_STRATEGIES):
            raise ValidationError(
                f"{path}.migStrategy", f"must be one of none, single, mixed; got {cfg['migStrategy']!r}"
            )
        return cfg

    def device_plugin_config(self, config: dict[str, Any], ctx: DiscoveryContext) -> DevicePluginConfig:
        """The configFile's contents; on a bad file, warn and keep the last good one."""
        from nfd.sources.nvml.sharing import DevicePluginConfig, parse_device_plugin_config

        path = config.get("configFile") or ""
        if not path:
            return DevicePluginConfig()
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
        try:
            nvml.nvmlInit()
        except Exception as e:
            code = nv.nvml_code(e)
            if code is None:
                raise
            if code in nv.ABSENT_CODES and self._last is None:
                self._note_absent(nv.describe(e))
                return Features()
            return self._failed(f"nvmlInit: {nv.describe(e)}")
        try:
            from nfd.sources.nvml.collect import CollectError, collect
            from nfd.sources.nvml.features import snapshot_to_features
            from nfd.sources.nvml.hostinfo import SysfsHost

            host = self._fake_host or SysfsHost(ctx, machine_type_file=config.get("machineTypeFile") or "")
            try:
                snap = collect(nvml, host)
            except CollectError as e:
                return self._failed(str(e))
        finally:
            try:
                nvml.nvmlShutdown()
            except Exception as e:  # shutting down a half-broken NVML must not hide the result
                log.debug("nvml: nvmlShutdown: %s", e)
        for w in snap.warnings:
            ctx.warn(w)
        strategy = self.mig_strategy(config, self.device_plugin_config(config, ctx))
        unresolved = [m for m in snap.mig_devices() if not m.profile]
        if unresolved and strategy != "none":
            m = unresolved[0]
            return self._failed(
                f"MIG device {m.parent_index}:{m.index} profile not resolved ({m.profile_error}); "
                f"mig-strategy={strategy} needs MIG profiles (is NVIDIA_MIG_MONITOR_DEVICES=all set?)"
            )
        if not self._available:
            log.info("nvml: NVML driver %s, %d GPU(s)", snap.driver_version, len(snap.gpus))
            self._available = True
        if self._last_error_msg:
            log.info("nvml: NVML readable again after: %s", self._last_error_msg)
            self._last_error_msg = ""
        features = snapshot_to_features(snap)
        self._last = features.copy()
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
        from nfd.sources.nvml.features import snapshot_from_features
        from nfd.sources.nvml.labels import LabelSettings, gfd_labels

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
