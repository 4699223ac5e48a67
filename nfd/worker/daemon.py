"""The nfd-worker process: discover, label, publish; repeat on a timer, on features.d changes and
on config changes (live reload).

Robustness rules: a failing source keeps its last good result (and is counted in metrics); an
invalid config is reported and the previous good one stays in force; a failed publish is retried
with backoff and never deletes or empties the NodeFeature.

The NodeFeature is watched by name (nfd.k8s.ownwatch): deleted or overwritten by someone else,
it is written again within a tick, and nothing is sent while nothing changes. Where RBAC refuses
that watch (upstream's Role grants create, get, update) or it is down, the object is read on
every sleepInterval, as upstream reads it every cycle, and written when it differs.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from typing import Any

from nfd import __version__
from nfd.api.features import Features
from nfd.common.goflags import klog_header_options
from nfd.common.logsetup import Dump, GoDuration, klogger, setup_logging
from nfd.common.masterflags import INSTANCE_RE
from nfd.common.podenv import pod_namespace
from nfd.hostpaths import HostPaths
from nfd.sources import registry
from nfd.sources.base import DiscoveryContext
from nfd.sources.discovery import compute_labels, discover
from nfd.worker.config import (
    WorkerConfig,
    check_spread,
    config_dump,
    load_config_file,
    normalize_owner_refs,
    strip_features,
)
from nfd.worker.flags import Flags
from nfd.worker.metrics import WorkerMetrics, serve_http

log = logging.getLogger("nfd.worker")
klog = klogger("nfd.worker")  # upstream's structured lines (docs/logging.md)

TICK_S = 1.0  # how often config and features.d are checked (upstream rate-limits local events to 1/s)
_NOT_LOADED = ("not loaded",)  # _config_sig before the first load; a missing file's signature is None


def _file_signature(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _dir_signature(path: str) -> tuple[Any, ...] | None:
    try:
        with os.scandir(path) as it:
            entries = []
            for e in it:
                try:
                    st = e.stat()
                except OSError:
                    continue
                entries.append((e.name, st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode))
    except OSError:
        return None
    return tuple(sorted(entries))


def _instance_ok(name: str) -> bool:
    return INSTANCE_RE.match(name) is not None


def _nvml_errors() -> int | None:
    src = registry.loaded("nvml")
    return getattr(src, "errors_total", None) if src is not None else None


def _features_of(features: Features, source: str) -> Features:
    """The features a source owns (named ``<source>.*``)."""
    pre = source + "."
    return Features(
        flags={k: set(v) for k, v in features.flags.items() if k.startswith(pre)},
        attributes={k: dict(v) for k, v in features.attributes.items() if k.startswith(pre)},
        instances={k: [dict(i) for i in v] for k, v in features.instances.items() if k.startswith(pre)},
    )


class Worker:
    def __init__(self, flags: Flags, *, env: dict[str, str] | None = None, api: Any = None) -> None:
        self.flags = flags
        self.env = dict(os.environ) if env is None else env
        self.node_name = self.env.get("NODE_NAME") or os.uname().nodename  # gethostname(), without importing socket
        self.ctx = DiscoveryContext(paths=HostPaths.detect(flags.host_root, env=self.env), node_name=self.node_name)
        self.cfg = self._with_flags(WorkerConfig())
        self.metrics = WorkerMetrics(self.node_name)
        self.metrics.nvml_errors = _nvml_errors
        self.api = api
        self.publisher: Any = None
        self.owner_refs: list[dict[str, Any]] | None = None
        self.last_good: dict[str, Features] = {}
        self.provisional: set[str] = set()  # last_good entries taken from the published NodeFeature
        self.features = Features()
        self.labels: dict[str, str] = {}
        self._config_sig: Any = _NOT_LOADED
        self._banner_logged = False
        self._features_d_sig: Any = None
        self._dirty = True  # content not yet published
        self.node_updater: Any = None  # nfd.worker.masterless.MasterlessNode in masterless mode
        self.own: Any = None  # nfd.k8s.ownwatch.OwnObjectWatch on the published NodeFeature
        self._node_update_error: str | None = None
        self._check_node_update_flags()

    # -- config ---------------------------------------------------------------------------
    def _with_flags(self, cfg: WorkerConfig) -> WorkerConfig:
        f = self.flags
        if f.no_publish is not None:
            cfg.no_publish = f.no_publish
        if f.feature_sources is not None:
            cfg.feature_sources = f.feature_sources
        if f.label_sources is not None:
            cfg.label_sources = f.label_sources
        if f.no_publish_features is not None:
            cfg.no_publish_features = f.no_publish_features
        if f.owner_refs is not None:
            cfg.owner_refs = normalize_owner_refs(f.owner_refs, path="-owner-refs")
        if f.no_owner_refs:
            cfg.owner_refs = []
        if f.enable_node_update is not None:
            cfg.enable_node_update = f.enable_node_update
        if f.node_update_spread is not None:  # checked at start (_check_node_update_flags)
            cfg.node_update_spread = f.node_update_spread
        if 0 < cfg.sleep_interval < 1:
            cfg.sleep_interval = 1.0
        return cfg

    def _check_node_update_flags(self) -> None:
        """-instance is read only in masterless mode, but checked at start (-feature-gates: by the
        flag parser)."""
        f = self.flags
        # the shared flag check only: the masterless module and the master load when masterless mode starts
        if f.instance and not _instance_ok(f.instance):
            raise ValueError(f"invalid -instance {f.instance!r}: instance name must start and end with an "
                             "alphanumeric character and may only contain alphanumerics, `-`, `_` or `.`")
        if f.node_update_spread is not None:
            check_spread(f.node_update_spread, path="-node-update-spread")

    async def sync_node_updater(self) -> None:
        """Start or stop masterless mode as the config says (live reload), and let a running
        updater pick up changes of nfd-master's config file."""
        want = self.cfg.enable_node_update
        if not want:
            if self.node_updater is not None:
                log.info("node update disabled: this worker no longer updates its node")
                await self.node_updater.stop()
                self.node_updater = None
            return
        if self.node_updater is not None:
            self.node_updater.spread_s = self.cfg.node_update_spread
            self.node_updater.reload_config()
            return
        # here, not at the top: masterless mode composes nfd-master's node pipeline (~234 ms and
        # ~246 modules after a one-shot run, python -X importtime), which no other mode loads
        # (tests/unit/worker/test_worker_imports.py)
        from nfd.worker.masterless import MasterlessNode, NodeUpdateConfigError

        try:
            await self._ensure_publisher()
            self.node_updater = MasterlessNode(
                self.api,
                node_name=self.node_name,
                namespace=self.publisher.namespace,
                master_config_path=self.flags.master_config,
                instance=self.flags.instance,
                feature_gates=self.flags.feature_gates,
                spread_s=self.cfg.node_update_spread,
            )
        except NodeUpdateConfigError as e:
            if self._node_update_error != str(e):
                log.error("node update not started: %s", e)
            self._node_update_error = str(e)
            return
        self._node_update_error = None
        self.node_updater.start()

    def reload_config(self) -> bool:
        """Load the config if it changed. Returns True when a new config took effect."""
        sig = _file_signature(self.flags.config)  # None while the file is missing
        if sig == self._config_sig:
            return False
        first = self._config_sig is _NOT_LOADED
        self._config_sig = sig
        try:
            new = self._with_flags(load_config_file(self.flags.config, self.flags.options))
        except (OSError, ValueError) as e:
            self.metrics.config_reload_errors += 1
            log.warning("invalid config, %s: %s", "using defaults" if first else "keeping the previous one", e)
            return False
        if sig is None:
            klog.info_s("config file not found, using defaults", path=self.flags.config)
        else:
            klog.info_s("configuration file parsed", path=self.flags.config)
        old_refs = self.cfg.owner_refs
        old_klog = self.cfg.klog
        self.cfg = new
        if new.klog != old_klog:
            self._apply_klog()
        if new.owner_refs != old_refs:
            self.owner_refs = None
        if klog.enabled(1):
            klog.info_s("enabled feature sources", v=1, featureSources=self.feature_source_names())
            klog.info_s("enabled label sources", v=1, labelSources=self.label_source_names())
        klog.info_s("configuration successfully updated", configuration=config_dump(new))
        return True

    def _apply_klog(self) -> None:
        """core.klog: v, skip_headers, add_dir_header, where the command line did not set them
        (upstream: flags take precedence)."""
        conf = {str(k): v for k, v in (self.cfg.klog or {}).items()}
        v = self.flags.verbosity
        if v is None:
            raw = str(conf.get("v", "0"))
            v = int(raw) if raw.isdigit() else 0
        setup_logging(v, debug_from=3, **klog_header_options(self.flags, conf))

    def feature_source_names(self) -> list[str]:
        return registry.resolve(self.cfg.feature_sources, kind="feature")

    def label_source_names(self) -> list[str]:
        return registry.resolve(self.cfg.label_sources, kind="label")

    # -- discovery ------------------------------------------------------------------------
    def run_discovery(self, only: list[str] | None = None) -> None:
        """Re-discover ``only`` (default: every enabled feature source) and recompute labels."""
        t0 = time.perf_counter()
        enabled = self.feature_source_names()
        names = [n for n in (only or enabled) if n in enabled]
        res = discover(self.ctx, names, self.cfg.source_configs, last_good=self.last_good)
        for name in res.errors:
            self.metrics.source_errors[name] += 1
            if name in self.provisional:
                log.warning("source %s failed; publishing its features as last published until it reads again", name)
        for name in res.by_source:
            if name not in res.errors:
                self.provisional.discard(name)
        self.last_good.update(res.by_source)
        for stale in [n for n in self.last_good if n not in enabled]:
            del self.last_good[stale]
        merged = Features()
        for name in sorted(self.last_good):
            merged.merge(self.last_good[name])
        elapsed = time.perf_counter() - t0
        if only is None:
            klog.info_s("feature discovery of all sources completed", v=2, duration=GoDuration(elapsed))
        klog.info_s("starting feature discovery...")
        labels = compute_labels(
            merged, self.label_source_names(), self.cfg.source_configs, self.ctx, whitelist=self.cfg.label_whitelist
        )
        if klog.enabled(1):
            klog.info_s("feature discovery completed", v=1, labels=Dump(labels))
        else:
            klog.info_s("feature discovery completed")
        # by value (what to_json would serialise the same), without building both JSONs each pass
        if merged != self.features or labels != self.labels:
            self._dirty = True
        self.features, self.labels = merged, labels
        if only is None:
            self.metrics.discovery.observe(elapsed)
            if self.cfg.sleep_interval > 0 and elapsed > self.cfg.sleep_interval / 2:
                klog.info_s("feature discovery sources took over half of sleep interval ",
                            duration=GoDuration(elapsed), sleepInterval=GoDuration(self.cfg.sleep_interval))

    # -- publishing -----------------------------------------------------------------------
    def desired(self) -> dict[str, Any]:
        # here and below, not at the top: the publish path and the API client (nfd.k8s, asyncio,
        # ssl, yaml, h2: ~79 ms and 134 modules after a one-shot run, python -X importtime) are
        # what a run that does not publish goes without (tests/unit/worker/test_worker_imports.py)
        from nfd.worker.publish import desired_object

        return desired_object(
            node_name=self.node_name,
            namespace=self.publisher.namespace if self.publisher else "",
            features=strip_features(self.features, self.cfg.no_publish_features),
            labels=self.labels,
            owner_refs=self.owner_refs or [],
            pod_uid=self.env.get("POD_UID"),
        )

    async def _ensure_publisher(self) -> None:
        from nfd.worker.publish import Publisher  # here: see desired

        if self.api is None:
            from nfd.k8s.client import ApiClient  # here: see desired

            # HTTP/2: its watches (masterless mode) and writes share one connection
            self.api = await ApiClient.from_kubeconfig(self.flags.kubeconfig, user_agent="nfd-worker", http2=True)
            self.metrics.api_requests = lambda: dict(self.api.metrics)
        if self.publisher is None:
            self.publisher = Publisher(self.api, namespace=pod_namespace(self.env), node_name=self.node_name)

    async def seed_from_api(self) -> None:
        """Right after a (re)start a failing source has no last good result in memory: it is
        filled from this node's NodeFeature as last published (the API is the last good state)
        until the source reads again. A source that reads fine replaces it at once."""
        if self.cfg.no_publish:
            return
        try:
            await self._ensure_publisher()
            current = await self.publisher._read()
        except Exception as e:  # API down, RBAC: start without it, as before
            log.info("cannot read this node's published NodeFeature (%s: %s); a source failing now "
                     "publishes without its last good features", type(e).__name__, e)
            return
        if not current:
            return
        try:
            published = Features.from_json((current.get("spec") or {}).get("features") or {})
        except Exception as e:  # noqa: BLE001 - a malformed object is no last good state
            log.warning("this node's published NodeFeature is not usable as the last good state: %s", e)
            return
        self.publisher.current = current
        for name in self.feature_source_names():
            part = _features_of(published, name)
            if not part.is_empty():
                self.provisional.add(name)
                self.last_good.setdefault(name, part)

    async def publish(self) -> bool:
        """Write the NodeFeature if its content changed. Returns True on success (or no-op)."""
        if self.cfg.no_publish:
            self._dirty = False
            return True
        from nfd.worker.publish import owner_references  # here: see desired

        try:
            await self._ensure_publisher()
            if self.owner_refs is None:
                self.owner_refs = await owner_references(
                    self.api, self.cfg.owner_refs, node_name=self.node_name,
                    namespace=self.publisher.namespace, env=self.env,
                )
            if await self.publisher.publish(self.desired()):
                self.metrics.publishes += 1
            self._dirty = False
            return True
        except Exception as e:  # API down, RBAC, conflicts: keep state, retry later
            self.metrics.publish_errors += 1
            log.warning("publishing NodeFeature failed, will retry: %s: %s", type(e).__name__, e)
            return False

    def _on_own_change(self, obj: dict[str, Any] | None) -> None:
        """Our NodeFeature as the server now has it (None: deleted). The echo of our own write
        holds what we wrote; anything else is someone else's doing: write it again."""
        from nfd.worker.publish import same_content  # here: see desired

        if self.publisher is None or self.cfg.no_publish or self.owner_refs is None:
            return
        if obj is not None and same_content(obj, self.desired()):
            return
        log.info("NodeFeature %s/%s %s by someone else: writing it again", self.publisher.namespace,
                 self.node_name, "deleted" if obj is None else "changed")
        self.publisher.current = obj
        self._dirty = True

    async def _watch_own(self) -> None:
        if self.own is not None or self.cfg.no_publish or self.publisher is None:
            return
        from nfd.k8s.ownwatch import OwnObjectWatch  # here: see desired
        from nfd.k8s.resources import NODEFEATURES

        self.own = OwnObjectWatch(self.api, NODEFEATURES, name=self.node_name,
                                  namespace=self.publisher.namespace, on_change=self._on_own_change)
        await self.own.start()

    async def _own_watch_usable(self) -> bool:
        return self.own is not None and bool(await self.own.check(
            "reading it on every sleepInterval, as upstream does"))

    # -- main loop ------------------------------------------------------------------------
    def log_start(self) -> None:
        """Upstream's start-up banner, once."""
        if self._banner_logged:
            return
        self._banner_logged = True
        klog.info_s("Node Feature Discovery Worker", version=__version__, nodeName=self.node_name,
                    namespace=pod_namespace(self.env))

    def run_offline_once(self) -> int | None:
        """``-oneshot`` when nothing talks to the API (noPublish, not masterless): one discovery
        pass without an event loop, since importing asyncio (and ssl with it) is a tenth of a
        one-shot run. None when the run needs the API (then :meth:`run` does it all)."""
        self.log_start()
        self.reload_config()
        if not (self.flags.oneshot and self.cfg.no_publish and not self.cfg.enable_node_update):
            return None
        self.run_discovery()
        self._dirty = False
        return 0

    async def run(self) -> int:
        # here, not at the top: the event loop (asyncio, ssl: ~25 ms and 58 modules after a
        # one-shot run, python -X importtime), which run_offline_once goes without
        import asyncio

        # a daemon takes SIGTERM from the start: one during the first discovery or publish ends
        # the run after it (exit 0), not the process at once (a one-shot run keeps the default)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT) if not self.flags.oneshot else ():
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError):
                pass
        self.log_start()
        self.reload_config()
        self._features_d_sig = _dir_signature(self.ctx.paths.features_d())
        await self.seed_from_api()
        await asyncio.to_thread(self.run_discovery)
        ok = await self.publish()
        if self.flags.oneshot:
            if ok and self.cfg.enable_node_update:
                ok = await self._update_node_once()
            await self.close()
            return 0 if ok else 1
        await self.sync_node_updater()
        await self._watch_own()

        server = await serve_http(self.flags.port, self.metrics.render, host=self.flags.bind_address or "0.0.0.0")
        klog.info_s("http server starting", port=f":{self.flags.port}")
        next_full = time.monotonic() + self.cfg.sleep_interval
        retry_at = 0.0 if ok else time.monotonic() + 1.0
        backoff = 2.0 if not ok else 1.0
        try:
            while not stop.is_set():
                try:
                    async with asyncio.timeout(TICK_S):
                        await stop.wait()
                    break
                except TimeoutError:
                    pass
                now = time.monotonic()
                ran = False
                if self.reload_config() or (self.cfg.sleep_interval > 0 and now >= next_full):
                    await asyncio.to_thread(self.run_discovery)
                    ran = True
                else:
                    sig_d = _dir_signature(self.ctx.paths.features_d())
                    if sig_d != self._features_d_sig:
                        self._features_d_sig = sig_d
                        log.info("features.d changed, re-discovering the local source")
                        await asyncio.to_thread(self.run_discovery, ["local"])
                if ran:
                    next_full = time.monotonic() + self.cfg.sleep_interval
                    self._features_d_sig = _dir_signature(self.ctx.paths.features_d())
                    if self.publisher is not None and not await self._own_watch_usable():
                        # no watch on our object: a deletion shows only by reading it
                        self.publisher.current = None
                        self._dirty = True
                await self._watch_own()
                await self.sync_node_updater()
                if self._dirty and time.monotonic() >= retry_at:
                    if await self.publish():
                        backoff, retry_at = 1.0, 0.0
                    else:
                        retry_at = time.monotonic() + backoff
                        backoff = min(backoff * 2, 60.0)
        finally:
            klog.info_s("shutting down nfd-worker")
            server.close()
            await self.close()
        return 0

    async def _update_node_once(self, timeout_s: float = 120.0) -> bool:
        """-oneshot in masterless mode: one pass over the node, then exit."""
        import asyncio  # here: see run

        await self.sync_node_updater()
        if self.node_updater is None:
            return False
        deadline = time.monotonic() + timeout_s
        while self.node_updater.processed == 0:
            if time.monotonic() > deadline:
                log.error("node %s not updated within %.0fs", self.node_name, timeout_s)
                return False
            await asyncio.sleep(0.1)
        return True

    async def close(self) -> None:
        if self.own is not None:
            await self.own.stop()
            self.own = None
        if self.node_updater is not None:
            await self.node_updater.stop()
            self.node_updater = None
        if self.api is not None:
            try:
                await self.api.close()
            except Exception:
                pass
