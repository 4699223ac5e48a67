"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics.

Expiry is judged by *local observation time*, as client-go does: a candidate notes when it last
saw the lease record change and takes over only when no change was seen for leaseDuration. That
makes election immune to clock skew between nodes.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from nfd.common.logsetup import klogger, kobj
from nfd.k8s.client import ApiClient
from nfd.k8s.creating import create
from nfd.k8s.errors import ApiError, ApiUnavailable, Conflict
from nfd.k8s.fetching import get
from nfd.k8s.resources import LEASES
from nfd.k8s.updating import replace

log = logging.getLogger(__name__)
klog = klogger(__name__)  # client-go leaderelection's lines (docs/logging.md)

Callback = Callable[[], Awaitable[None] | None]


def micro_time(ts: float | None = None) -> str:
    dt = datetime.fromtimestamp(time.time() if ts is None else ts, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        api: ApiClient,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration_s: float = 15.0,
        renew_deadline_s: float = 10.0,
        retry_period_s: float = 2.0,
        on_started_leading: Callback | None = None,
        on_stopped_leading: Callback | None = None,
    ) -> None:
        self.api = api
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration_s = lease_duration_s
        self.renew_deadline_s = renew_deadline_s
        self.retry_period_s = retry_period_s
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.is_leader = False
        self._observed: dict[str, Any] | None = None  # last seen lease spec
        self._observed_at = 0.0  # monotonic time we last saw it change
        self._lease: dict[str, Any] | None = None

    async def _call(self, cb: Callback | None) -> None:
        if cb is None:
            return
        res = cb()
        if inspect.isawaitable(res):
            await res

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True when we hold the lease afterwards."""
        now = time.time()
        lease = await get(self.api, LEASES, name=self.name, namespace=self.namespace)
        spec_new = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_duration_s),
            "acquireTime": micro_time(now),
            "renewTime": micro_time(now),
            "leaseTransitions": 0,
        }
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": spec_new,
            }
            try:
                self._lease = await create(self.api, LEASES, body=body, namespace=self.namespace)
            except Conflict:
                return False
            self._observe(self._lease)
            return True
        spec = lease.get("spec") or {}
        self._observe(lease)
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration_s)
        expired = time.monotonic() > self._observed_at + duration
        if holder and holder != self.identity and not expired:
            return False
        if holder == self.identity:
            spec_new["acquireTime"] = spec.get("acquireTime") or spec_new["acquireTime"]
            spec_new["leaseTransitions"] = int(spec.get("leaseTransitions") or 0)
        else:
            spec_new["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        lease["spec"] = spec_new
        try:
            self._lease = await replace(self.api, LEASES, body=lease, name=self.name, namespace=self.namespace)
        except Conflict:
            return False
        self._observe(self._lease)
        return True

    def _observe(self, lease: dict[str, Any]) -> None:
        spec = lease.get("spec") or {}
        key = {k: spec.get(k) for k in ("holderIdentity", "renewTime", "leaseTransitions")}
        if key != self._observed:
            self._observed = key
            self._observed_at = time.monotonic()

    async def run(self) -> None:
        """Acquire, then renew until renewal fails for renewDeadline; then return (process exits, as upstream)."""
        lock = kobj(self.namespace, self.name)
        klog.info_s("Attempting to acquire leader lease...", lock=lock)
        while not self.is_leader:
            try:
                if await self.try_acquire_or_renew():
                    self.is_leader = True
                    break
            except (ApiError, ApiUnavailable) as e:
                log.warning("leader election: cannot read lease %s/%s: %s", self.namespace, self.name, e)
            await asyncio.sleep(self.retry_period_s)
        klog.info_s("Successfully acquired lease", lock=lock, identity=self.identity)
        await self._call(self.on_started_leading)
        last_renew = time.monotonic()
        while True:
            await asyncio.sleep(self.retry_period_s)
            try:
                if await self.try_acquire_or_renew():
                    last_renew = time.monotonic()
                    continue
                klog.info_s("Failed to renew lease", lock=lock, err="lease taken by "
                            f"{(self._observed or {}).get('holderIdentity')}")
                break
            except (ApiError, ApiUnavailable) as e:
                klog.info_s("Failed to renew lease", lock=lock, err=str(e))
                if time.monotonic() - last_renew > self.renew_deadline_s:
                    break
        self.is_leader = False
        klog.info_s("leaderelection lock was lost", lock=lock)
        await self._call(self.on_stopped_leading)

    async def release(self) -> None:
        """Give the lease up on graceful shutdown so a standby takes over at once."""
        if not self.is_leader or self._lease is None:
            return
        lease = self._lease
        spec = dict(lease.get("spec") or {})
        spec.update({"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": micro_time()})
        lease["spec"] = spec
        try:
            await replace(self.api, LEASES, body=lease, name=self.name, namespace=self.namespace)
        except (ApiError, ApiUnavailable) as e:
            log.info("could not release lease: %s", e)
        self.is_leader = False
