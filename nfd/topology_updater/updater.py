"""The nfd-topology-updater daemon: scan on triggers, publish the node's NodeResourceTopology.

One cycle: kubelet ``GetAllocatableResources`` + ``List`` (local gRPC), facts about the listed
pods from a node-scoped pod watch cache (``spec.nodeName=<node>``: one LIST + one WATCH, never
a GET per pod), zones computed by pure functions, and a server-side apply only when the object
differs from what we last applied. Where RBAC refuses that PATCH (upstream's roles, Helm,
kustomize and e2e alike, grant create, get and update only), it says so once and writes as
upstream does from then on: get, then create, or update with the read resourceVersion (re-read
on a conflict), and no update when the server already holds what it would write.

Its own object is watched by name (nfd.k8s.ownwatch): deleted or overwritten, it is applied
again at once, so nothing is sent while nothing changes. Where RBAC refuses that watch
(upstream's ClusterRoles grant no list or watch on it) or the watch is down, the object is
re-applied on every interval tick, as upstream does every cycle.

Failures never delete anything: a kubelet that is down, restarting or answering garbage, an API
outage, or a bad kubelet config leaves the last published object in place; the error is
logged (one line naming the input) and counted in ``nfd_topology_updater_scan_errors_total``.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from prometheus_client import CollectorRegistry, Counter, Gauge, disable_created_metrics

from nfd import __version__
from nfd.api.noderesourcetopology import (
    ATTR_PODS_FINGERPRINT,
    ATTR_POLICY,
    ATTR_SCOPE,
    CRD_NAME,
    NodeResourceTopology,
)
from nfd.common.logsetup import klogger
from nfd.hostpaths import HostPaths
from nfd.k8s import fetching, patching, updating
from nfd.k8s.errors import ApiError, ApiUnavailable, Forbidden, NotFound
from nfd.k8s.ownwatch import OwnObjectWatch, contains
from nfd.k8s.resources import NAMESPACES, NODERESOURCETOPOLOGIES, PODS, Resource
from nfd.k8s.watching import Informer
from nfd.topology_updater import aggregate, fingerprint, kubeletconfig, scan
from nfd.topology_updater.config import UpdaterConfig
from nfd.topology_updater.kubelet import KubeletUnavailable
from nfd.topology_updater.notifier import StateDirWatcher, watch_dirs
from nfd.topology_updater.podget import PodsByGet
from nfd.topology_updater.podqos import compact_pod
from nfd.topology_updater.sysfs import NumaTopology, read_hybrid_cpus
from nfd.topology_updater.topologymanager import topology_policy

log = logging.getLogger("nfd.topology_updater")
klog = klogger("nfd.topology_updater")

FIELD_MANAGER = "node-feature-discovery-topology-updater"
INTERVAL = "intervalBased"
FS_UPDATE = "fsUpdate"
POD_CACHE = "podCache"
STARTUP = "startup"
OWN_OBJECT = "ownObject"  # our NodeResourceTopology was deleted or changed by someone else
REAPPLY_EVERY_INTERVAL = "re-applying it on every -sleep-interval tick, as upstream does"


@dataclass(slots=True)
class Options:
    node_name: str
    kubelet_config_uri: str
    podresources_socket: str
    sleep_interval: float = 60.0
    watch_namespace: str = "*"
    api_auth_token_file: str = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    kubelet_state_dir: str = ""
    pods_fingerprint: bool = True
    no_publish: bool = False
    oneshot: bool = False
    port: int = 8080
    bind_address: str = ""  # the metrics/healthz listen address; empty: every address
    #: namespace of the updater pod: the NRT's owner
    namespace: str = ""
    config: UpdaterConfig = field(default_factory=UpdaterConfig)
    paths: HostPaths = field(default_factory=HostPaths)
    #: how long a pod the kubelet lists may be unknown to the pod cache before we publish anyway
    missing_pod_grace_s: float = 10.0
    #: re-apply an unchanged object this often (repairs external edits/deletes); 0 = never
    resync_s: float = 3600.0
    #: scan once at startup (upstream waits for the first tick; see docs/compatibility.md)
    initial_scan: bool = True
    pod_page_size: int = 100


class Metrics:
    """A private registry, as upstream (no process/runtime collectors)."""

    def __init__(self) -> None:
        disable_created_metrics()  # upstream's Go client exports no *_created series
        self.registry = CollectorRegistry(auto_describe=True)
        build_info = Gauge(
            "nfd_topology_updater_build_info",
            "Version from which Node Feature Discovery was built.",
            ["version"],
            registry=self.registry,
        )
        build_info.labels(__version__).set_to_current_time()
        self.scan_errors = Counter(
            "nfd_topology_updater_scan_errors",
            "Number of errors in scanning resource allocation of pods.",
            registry=self.registry,
        )


def build_nrt(
    *,
    node_name: str,
    zones: list[Any],
    tm: kubeletconfig.TopologyManagerInfo,
    hybrid_cpus: list[tuple[str, str]],
    fingerprint: str | None,
    owner_refs: list[dict[str, Any]],
) -> NodeResourceTopology:
    """The object to apply; attribute order as upstream (policy, scope, cpu_*, fingerprint)."""
    nrt = NodeResourceTopology(name=node_name, zones=list(zones), owner_references=list(owner_refs))
    nrt.set_attribute(ATTR_POLICY, tm.policy)
    nrt.set_attribute(ATTR_SCOPE, tm.scope)
    nrt.topology_policies = [topology_policy(tm.policy, tm.scope)]
    for name, value in hybrid_cpus:
        nrt.set_attribute(name, value)
    if fingerprint is not None:
        nrt.set_attribute(ATTR_PODS_FINGERPRINT, fingerprint)
    return nrt


def body_digest(body: dict[str, Any]) -> str:
    # orjson: a big node's object (66 zones of 66 costs on a GB200-shaped node) takes ~5 ms
    # through the json module, every cycle
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


class TopologyUpdater:
    def __init__(
        self, opts: Options, *, api: Any, kubelet: Any, topology: NumaTopology, metrics: Metrics | None = None
    ) -> None:
        self.opts = opts
        self.api = api
        self.kubelet = kubelet
        self.topology = topology
        self.metrics = metrics or Metrics()
        self.exclude = opts.config.excluded_for(opts.node_name)
        self.hybrid_cpus = read_hybrid_cpus(opts.paths)
        self.tm: kubeletconfig.TopologyManagerInfo | None = None
        self.kubelet_config = kubeletconfig.KubeletConfigSource(
            opts.kubelet_config_uri, token_file=opts.api_auth_token_file, api=api, node_name=opts.node_name
        )
        self._pods_generation = 0  # bumped by every pod cache event: the scan memo's key
        self._scan_memo: tuple[Any, scan.ScanResult] | None = None
        self._fingerprints = fingerprint.Memo()
        self.owner_refs: list[dict[str, Any]] = []
        self.pods: Any = None  # Informer of compact pods (or podget.PodsByGet under a get-only role)
        self.last_digest: str | None = None
        self.scan_digest: str | None = None  # the digest of the last object publish() was given
        self.last_applied_at = 0.0
        self.last_nrt: NodeResourceTopology | None = None
        self.last_body: dict[str, Any] | None = None  # what the last apply sent
        self._applying: dict[str, Any] | None = None  # the body of an apply in flight
        self.own: Any = None  # nfd.k8s.ownwatch.OwnObjectWatch on our NodeResourceTopology
        self.patch_refused = False  # RBAC refused PATCH once: get + create/update from then on
        self.scans = 0
        self.publishes = 0
        self._missing_since: dict[tuple[str, str], float] = {}
        self._trigger = asyncio.Event()
        self._reasons: set[str] = set()
        self._retry_handle: asyncio.TimerHandle | None = None
        self._missing_logged: frozenset[tuple[str, str]] = frozenset()

    # --- triggers -------------------------------------------------------------------------

    def request_scan(self, reason: str) -> None:
        self._reasons.add(reason)
        self._trigger.set()

    async def _next_trigger(self) -> set[str]:
        await self._trigger.wait()
        self._trigger.clear()
        reasons, self._reasons = self._reasons, set()
        return reasons

    async def _ticker(self) -> None:
        while True:
            await asyncio.sleep(self.opts.sleep_interval)
            self.request_scan(INTERVAL)

    def _on_own_change(self, obj: dict[str, Any] | None) -> None:
        """Our object as the server now has it (None: deleted). The echo of our own apply holds
        what we sent; anything else means someone deleted or overwrote it: apply again."""
        sent = [b for b in (self._applying, self.last_body) if b is not None]
        if not sent:
            return  # nothing applied yet: the first publish writes anyway
        if obj is not None and any(contains(obj, b) for b in sent):
            return
        log.info("NodeResourceTopology %s %s by someone else: applying it again", self.opts.node_name,
                 "deleted" if obj is None else "changed")
        self.last_digest = None
        self.request_scan(OWN_OBJECT)

    async def own_watch_usable(self) -> bool:
        return self.own is not None and bool(await self.own.check(REAPPLY_EVERY_INTERVAL))

    def _on_pod_event(self, etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        self._pods_generation += 1
        meta = obj.get("metadata") or {}
        if etype != "DELETED" and (meta.get("namespace", ""), meta.get("name", "")) in self._missing_since:
            self.request_scan(POD_CACHE)

    # --- inputs -----------------------------------------------------------------------------

    def pod_facts(self, namespace: str, name: str) -> scan.PodFacts | None:
        if self.pods is None:
            return None
        obj = self.pods.get(name, namespace)
        if obj is None:
            return None
        return scan.PodFacts(
            guaranteed=bool(obj.get("guaranteed")), exclusive_cpus=bool(obj.get("exclusiveCPUs"))
        )

    async def refresh_kubelet_config(self) -> bool:
        try:
            self.tm = await self.kubelet_config.load()
            return True
        except kubeletconfig.KubeletConfigError as e:
            if self.tm is None:
                log.error("cannot read the kubelet configuration: %s", e)
            else:
                log.error("cannot refresh the kubelet configuration, keeping cached values: %s", e)
            return False

    async def ensure_owner(self) -> None:
        if self.owner_refs or not self.opts.namespace:
            return

        try:
            ns = await fetching.get(self.api, NAMESPACES, name=self.opts.namespace)
        except (ApiError, ApiUnavailable) as e:
            log.error(
                "cannot get namespace %s for the NodeResourceTopology owner reference: %s",
                self.opts.namespace,
                e,
            )
            return
        if ns is None:
            log.error(
                "namespace %s not found: NodeResourceTopology published without owner", self.opts.namespace
            )
            return
        meta = ns.get("metadata") or {}
        self.owner_refs = [
            {"apiVersion": "v1", "kind": "Namespace", "name": meta.get("name"), "uid": meta.get("uid")}
        ]

    # --- one cycle ----------------------------------------------------------------------------

    async def scan_once(self, reasons: set[str]) -> NodeResourceTopology | None:
        """One scan; returns the object it would publish, None when the cycle was skipped."""
        self.scans += 1
        try:
            alloc = await self.kubelet.allocatable()
            listed = await self.kubelet.list()
        except KubeletUnavailable as e:
            log.error("scan failed, keeping the published NodeResourceTopology: %s", e)
            self.metrics.scan_errors.inc()
            return None
        refresh = getattr(self.pods, "refresh", None)  # pods read with GET (nfd.topology_updater.podget)
        if refresh is not None:
            ns = self.opts.watch_namespace
            await refresh((p.namespace, p.name) for p in listed.pod_resources if ns == "*" or p.namespace == ns)
        nr = aggregate.node_resources(self.topology, alloc)
        result = self._account(listed)
        zones = aggregate.zones(nr, result.pods, self.exclude)
        if INTERVAL in reasons or self.tm is None:
            await self.refresh_kubelet_config()
        if self.tm is None:
            log.error("topology-manager information unavailable: skipping NodeResourceTopology publish")
            self.metrics.scan_errors.inc()
            return None
        if self._hold_for_missing(result.missing):
            return None
        await self.ensure_owner()
        nrt = build_nrt(
            node_name=self.opts.node_name,
            zones=zones,
            tm=self.tm,
            hybrid_cpus=self.hybrid_cpus,
            fingerprint=result.fingerprint,
            owner_refs=self.owner_refs,
        )
        self.last_nrt = nrt
        return nrt

    def _account(self, listed: Any) -> scan.ScanResult:
        """scan.account, or its last result when neither the kubelet's answer (its bytes) nor
        the pod cache (an event bumps the generation) changed since: a steady node's cycle
        costs the two kubelet calls."""
        key = (listed.SerializeToString(deterministic=True), self._pods_generation)
        memo = self._scan_memo
        if memo is not None and memo[0] == key:
            return memo[1]
        result = scan.account(
            listed.pod_resources,
            self.pod_facts,
            namespace=self.opts.watch_namespace,
            with_fingerprint=self.opts.pods_fingerprint,
            sign=self._fingerprints.sign,
        )
        # a pod the cache lacks may arrive without an event of ours (a relist): no memo then
        self._scan_memo = None if result.missing else (key, result)
        return result

    def _hold_for_missing(self, missing: list[tuple[str, str]]) -> bool:
        """True to skip publishing while a listed pod is briefly unknown to the pod cache.

        Each pod is waited for at most ``missing_pod_grace_s`` (a rescan is scheduled, and its
        arrival in the cache triggers one); after that it is accounted from kubelet data alone,
        so a pod that never shows up (e.g. a static pod without mirror) cannot block publishing.
        """
        now = time.monotonic()
        current = set(missing)
        self._missing_since = {k: v for k, v in self._missing_since.items() if k in current}
        for key in current:
            self._missing_since.setdefault(key, now)
        if not current:
            self._missing_logged = frozenset()
            return False
        youngest = max(self._missing_since.values())
        if now - youngest >= self.opts.missing_pod_grace_s:
            if current != self._missing_logged:  # say it once per set, not every scan
                self._missing_logged = frozenset(current)
                log.info(
                    "%d listed pod(s) unknown to the pod cache for %.0fs or more (e.g. %s/%s): "
                    "accounting them from kubelet data alone",
                    len(current),
                    self.opts.missing_pod_grace_s,
                    *missing[0],
                )
            return False
        log.info(
            "%d listed pod(s) not yet in the pod cache (e.g. %s/%s): publish deferred",
            len(current),
            *missing[0],
        )
        if self._retry_handle is None:
            delay = max(0.2, self.opts.missing_pod_grace_s - (now - youngest))
            self._retry_handle = asyncio.get_running_loop().call_later(delay, self._retry_after_grace)
        return True

    def _retry_after_grace(self) -> None:
        self._retry_handle = None
        self.request_scan(POD_CACHE)

    async def publish(self, nrt: NodeResourceTopology, *, reapply: bool = False) -> bool:
        """Server-side apply when the object changed (or the resync period passed, or ``reapply``)."""
        body = nrt.to_json()
        digest = self.scan_digest = body_digest(body)
        now = time.monotonic()
        fresh = self.opts.resync_s <= 0 or now - self.last_applied_at < self.opts.resync_s
        if digest == self.last_digest and fresh and not reapply:
            log.debug("NodeResourceTopology unchanged, not writing")
            return False

        self._applying = body
        try:
            written = await self._write(body)
        except NotFound as e:
            log.error(
                "failed to apply NodeResourceTopology: %s. The NodeResourceTopology CRD may not be installed. "
                "If using Helm, ensure 'topologyUpdater.createCRDs=true' is set",
                e,
            )
            self.metrics.scan_errors.inc()
            return False
        except (ApiError, ApiUnavailable) as e:
            log.error("failed to apply NodeResourceTopology %s, will retry: %s", self.opts.node_name, e)
            self.metrics.scan_errors.inc()
            return False
        finally:
            self._applying = None
        self.last_body = body
        self.last_digest = digest
        self.last_applied_at = now
        if not written:
            log.debug("NodeResourceTopology on the server is what we would write, not writing")
            return False
        self.publishes += 1
        klog.info_s("NodeResourceTopology object applied", nodeName=self.opts.node_name)  # ours at V0 (upstream: V4 dump)
        return True

    async def _write(self, body: dict[str, Any]) -> bool:
        """Server-side apply; where RBAC refuses patch (upstream's roles grant create, get and
        update only), get + create/update from then on, said once. False: nothing written (the
        server already holds ``body``; only the get + update path can tell)."""
        if not self.patch_refused:
            try:
                await patching.patch(
                    self.api,
                    NODERESOURCETOPOLOGIES,
                    name=self.opts.node_name,
                    body=body,
                    patch_type="apply",
                    field_manager=FIELD_MANAGER,
                    force=True,
                )
                return True
            except Forbidden as e:
                self.patch_refused = True
                log.warning(
                    "cannot patch noderesourcetopologies %s (RBAC: patch is not granted): writing it "
                    "with get, then create or update, from now on: %s", self.opts.node_name, e,
                )
        written = await updating.create_or_replace(
            self.api,
            NODERESOURCETOPOLOGIES,
            name=self.opts.node_name,
            desired=body,
            is_current=lambda obj: contains(obj, body),
        )
        return written is not None

    # --- lifecycle ---------------------------------------------------------------------------

    async def start_pod_cache(self, *, sync_timeout_s: float = 120.0) -> bool:
        self.pods = Informer(
            self.api,
            PODS,
            field_selector=f"spec.nodeName={self.opts.node_name}",
            page_size=self.opts.pod_page_size,
            transform=compact_pod,
        )
        self.pods.on_event(self._on_pod_event)
        await self.pods.start()
        klog.info_s("waiting for node-scoped Pod informer cache sync", nodeName=self.opts.node_name)
        deadline = time.monotonic() + sync_timeout_s
        while not await self.pods.wait_synced(min(0.2, max(0.0, deadline - time.monotonic()))):
            if self.pods.forbidden:  # upstream's roles grant pods get only: read them its way

                await self.pods.stop()
                log.warning(
                    "cannot list and watch pods on node %s (RBAC: list and watch on pods are not granted): "
                    "reading each listed pod with get on every scan, as upstream", self.opts.node_name,
                )
                self.pods = PodsByGet(self.api, transform=compact_pod, on_change=self._on_pods_read)
                return True
            if time.monotonic() >= deadline:
                return False
        klog.info_s("node-scoped Pod informer cache synced", nodeName=self.opts.node_name, pods=len(self.pods.cache))
        return True

    def _on_pods_read(self) -> None:
        self._pods_generation += 1  # the scan memo's key: account again

    async def run(self) -> int:
        """Scan loop; returns the exit status (oneshot) or runs until cancelled."""
        watcher = None
        ticker = None
        if self.opts.kubelet_state_dir:
            watcher = StateDirWatcher(
                watch_dirs(self.opts.kubelet_state_dir), lambda _n: self.request_scan(FS_UPDATE)
            )
            watcher.start()
        if self.opts.sleep_interval > 0:
            ticker = asyncio.create_task(self._ticker(), name="topology-updater-ticker")
        if not self.opts.no_publish and not self.opts.oneshot:
            self.own = OwnObjectWatch(self.api, NODERESOURCETOPOLOGIES, name=self.opts.node_name,
                                      on_change=self._on_own_change)
            await self.own.start()
        await self.refresh_kubelet_config()
        if self.opts.initial_scan:
            self.request_scan(STARTUP)
        try:
            while True:
                reasons = await self._next_trigger()
                if watcher is not None and INTERVAL in reasons:
                    watcher.retry_missing()
                log.debug("scan triggered by %s", ",".join(sorted(reasons)))
                try:
                    nrt = await self.scan_once(reasons)
                except Exception:  # unexpected input must not stop the daemon; keep the last object
                    log.exception("scan failed unexpectedly, keeping the published NodeResourceTopology")
                    self.metrics.scan_errors.inc()
                    nrt = None
                ok = nrt is not None
                if nrt is not None and not self.opts.no_publish:
                    # without a working watch on our object, a deletion shows only this way
                    reapply = INTERVAL in reasons and not await self.own_watch_usable()
                    await self.publish(nrt, reapply=reapply)
                    ok = self.last_digest == self.scan_digest
                if self.opts.oneshot and (ok or not self._missing_since):
                    return 0 if ok else 1
        finally:
            if ticker is not None:
                ticker.cancel()
            if watcher is not None:
                watcher.close()
            if self.own is not None:
                await self.own.stop()


async def wait_for_crd(api: Any, *, stop: asyncio.Event | None = None) -> None:
    """Block until the NRT CRD exists (5 s -> 60 s backoff); skip the wait on 403."""
    crds = Resource(
        "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
    )
    backoff = 5.0
    while True:
        try:
            if await fetching.get(api, crds, name=CRD_NAME) is not None:
                log.info("NodeResourceTopology CRD is available")
                return
            log.info(
                "waiting for NodeResourceTopology CRD %s to be created. If using Helm, ensure "
                "'topologyUpdater.createCRDs=true' is set (retry in %.0fs)",
                CRD_NAME,
                backoff,
            )
        except Forbidden as e:
            log.info("no permission to check CRD %s, not waiting: %s", CRD_NAME, e)
            return
        except (ApiError, ApiUnavailable) as e:
            log.info("error checking for CRD %s, will retry in %.0fs: %s", CRD_NAME, backoff, e)
        await asyncio.sleep(backoff)
        backoff = min(60.0, backoff * 2)
