"""A daemon's watch on the one object it owns, so that it learns at once when someone deletes
or overwrites it, and still sends nothing while nothing changes.

One LIST (or streaming list) and one WATCH by ``fieldSelector=metadata.name=<name>``, re-opened
when the server ends it: the kubelet watches each Secret and ConfigMap its pods mount the same
way. While the watch is up, the owner writes only on a change of its own or on an event that
shows its object gone or different from what it wrote; while it is not (not yet synced, API
outage, or RBAC refusing list/watch), the owner falls back to upstream's per-interval write or
read (``usable`` says which). A 403 stops the watch for good (``refused``): retrying it would be
one refused request per backoff period on every node.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from nfd.k8s.client import ApiClient
from nfd.k8s.resources import Resource
from nfd.k8s.watching import Informer

log = logging.getLogger(__name__)

#: the server ends a watch at min-request-timeout (30 min by default, randomized) anyway
WATCH_TIMEOUT_S = 1800


def contains(have: Any, want: Any) -> bool:
    """Whether ``have`` (an object as the server returns it) holds everything ``want`` (what we
    wrote) says: every key of a mapping, lists element by element, scalars equal. Fields the
    server adds (resourceVersion, managedFields, a label of someone else's) do not count."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and contains(have[k], v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(have) == len(want) and all(
            contains(h, w) for h, w in zip(have, want, strict=True))
    return bool(have == want)


class OwnObjectWatch:
    """Calls ``on_change(obj)`` for each ADDED or MODIFIED event of the named object and
    ``on_change(None)`` when it is deleted (or a complete relist lacks it)."""

    def __init__(
        self,
        api: ApiClient,
        res: Resource,
        *,
        name: str,
        namespace: str | None = None,
        on_change: Callable[[dict[str, Any] | None], None],
    ) -> None:
        self.name = name
        self.kind = res.kind
        self.on_change = on_change
        self.refused = False
        self.informer = Informer(api, res, namespace=namespace, field_selector=f"metadata.name={name}",
                                 page_size=0, watch_timeout_s=WATCH_TIMEOUT_S)
        self.informer.on_event(self._event)

    def _event(self, etype: str, obj: dict[str, Any], _old: dict[str, Any] | None) -> None:
        if (obj.get("metadata") or {}).get("name") != self.name:
            return
        self.on_change(None if etype == "DELETED" else obj)

    async def start(self) -> None:
        await self.informer.start()

    async def stop(self) -> None:
        await self.informer.stop()

    @property
    def current(self) -> dict[str, Any] | None:
        return self.informer.get(self.name, self.informer.namespace or "")

    async def check(self, fallback: str) -> bool:
        """True while the watch can be trusted. On a 403 stops it for good, with one line that
        names the fallback."""
        if self.refused:
            return False
        if self.informer.forbidden:
            self.refused = True
            await self.informer.stop()
            log.warning(
                "cannot watch %s %s (RBAC: list and watch on %s are not granted): %s",
                self.kind, self.name, self.informer.res.plural, fallback,
            )
            return False
        return self.informer.synced and self.informer.healthy
