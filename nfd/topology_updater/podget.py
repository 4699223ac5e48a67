"""The pods the kubelet lists, read one by one with GET: the updater's way when its role grants
``pods`` ``get`` only, as upstream's Helm chart and kustomize base do (upstream's updater GETs
each listed pod on every scan). Our own roles grant a node-scoped LIST + WATCH instead
(nfd.k8s.watching.Informer), which costs nothing while no pod changes.

Read like upstream: every listed pod once per scan, a few at a time. A pod the server does not
have (404) is missing (the updater's grace for pods the cache lacks applies); a failed read keeps
the pod's last known form, or leaves it missing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any

from nfd.k8s import fetching
from nfd.k8s.errors import ApiError, ApiUnavailable
from nfd.k8s.resources import PODS

log = logging.getLogger("nfd.topology_updater")

Key = tuple[str, str]  # (namespace, name)

#: GETs in flight at once: upstream reads them one after another
PARALLEL = 4


class PodsByGet:
    """The compact pods (``transform``) of the last scan's listed pods, by (namespace, name),
    with the read-only surface of the pod informer the updater uses (``get``, ``cache``,
    ``stop``)."""

    def __init__(self, api: Any, *, transform: Callable[[dict[str, Any]], dict[str, Any]],
                 on_change: Callable[[], None]) -> None:
        self.api = api
        self.transform = transform
        self.on_change = on_change  # a pod's compact form changed, or one came or went
        self.cache: dict[Key, dict[str, Any]] = {}
        self._errors_logged: set[str] = set()

    def get(self, name: str, namespace: str = "") -> dict[str, Any] | None:
        return self.cache.get((namespace, name))

    async def refresh(self, keys: Iterable[Key]) -> None:
        """Read every listed pod; forget the pods no longer listed."""
        wanted = list(dict.fromkeys(keys))
        slots = asyncio.Semaphore(PARALLEL)

        async def read(key: Key) -> tuple[Key, dict[str, Any] | None, bool]:
            async with slots:
                try:
                    obj = await fetching.get(self.api, PODS, name=key[1], namespace=key[0])
                except (ApiError, ApiUnavailable) as e:
                    msg = str(e)
                    if msg not in self._errors_logged:  # once per distinct failure, not per scan
                        self._errors_logged.add(msg)
                        log.error("cannot get pod %s/%s: %s", key[0], key[1], e)
                    return key, self.cache.get(key), False
                return key, (self.transform(obj) if obj is not None else None), True

        fresh: dict[Key, dict[str, Any]] = {}
        for key, obj, _ok in await asyncio.gather(*(read(k) for k in wanted)):
            if obj is not None:
                fresh[key] = obj
        if _facts(fresh) != _facts(self.cache):
            self.on_change()
        self.cache = fresh

    async def stop(self) -> None:
        return None


def _facts(cache: dict[Key, dict[str, Any]]) -> dict[Key, tuple[Any, ...]]:
    return {k: (o.get("guaranteed"), o.get("exclusiveCPUs"), (o.get("metadata") or {}).get("uid"))
            for k, o in cache.items()}
