"""Watches and informers: list-then-watch caches that survive API outages.

The cache is never cleared because the API server is unreachable: an object leaves the cache
only on a DELETED event or when a *complete* relist no longer contains it. Callers can treat a
DELETED callback as evidence that the object is gone.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from nfd.k8s.backoff import Backoff
from nfd.k8s.client import ApiClient, Peek
from nfd.k8s.errors import ApiError, ApiUnavailable, Gone
from nfd.k8s.fetching import list_objects
from nfd.k8s.resources import Resource

log = logging.getLogger(__name__)

METADATA_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

#: Annotation on the BOOKMARK that ends a streaming list's initial events.
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
#: timeoutSeconds of a streaming list's request (the server ends a watch at its timeout, initial
#: events or not; 30 minutes is ~100x what 5,000 NodeFeatures take)
WATCH_LIST_TIMEOUT_S = 1800

Key = tuple[str, str]
Handler = Callable[[str, dict[str, Any], dict[str, Any] | None], None]


def object_key(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


async def watch_events(
    api: ApiClient,
    res: Resource,
    *,
    resource_version: str,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    timeout_seconds: int = 300,
    metadata_only: bool = False,
    send_initial_events: bool = False,
    peek: Peek | None = None,
) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """Yield (type, object) from one watch request. An ERROR event with code 410 raises Gone.

    ``send_initial_events`` asks for a streaming list (WatchList): every current object as
    ADDED, then a BOOKMARK annotated ``k8s.io/initial-events-end``, then the watch goes on.
    """
    params = {
        "watch": True,
        "resourceVersion": resource_version or None,
        "sendInitialEvents": True if send_initial_events else None,
        "resourceVersionMatch": "NotOlderThan" if send_initial_events else None,
        "allowWatchBookmarks": True,
        "labelSelector": label_selector,
        "fieldSelector": field_selector,
        "timeoutSeconds": timeout_seconds,
    }
    async for ev in api.stream_lines(
        res.path(namespace=namespace),
        params=params,
        accept=METADATA_WATCH if metadata_only else "application/json",
        timeout_s=timeout_seconds + 30,
        peek=peek,
    ):
        etype = ev.get("type", "")
        obj = ev.get("object") or {}
        if etype == "ERROR":
            code = int(obj.get("code") or 0)
            if code == 410:
                raise Gone(410, obj.get("reason", "Expired"), obj.get("message", ""), obj)
            raise ApiError(code, obj.get("reason", ""), obj.get("message", ""), obj)
        yield etype, obj


class Informer:
    """A cache of one resource kept current by list+watch, with change callbacks.

    Callbacks run synchronously in the informer task: keep them cheap (enqueue work).
    """

    def __init__(
        self,
        api: ApiClient,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        metadata_only: bool = False,
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None = strip_managed_fields,
        max_backoff_s: float = 30.0,
        watch_timeout_s: int = 300,
        watch_list: bool = True,
    ) -> None:
        self.api = api
        self.res = res
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.page_size = page_size
        self.metadata_only = metadata_only
        self.transform = transform
        self.max_backoff_s = max_backoff_s
        self.watch_timeout_s = watch_timeout_s
        # Streaming list (sendInitialEvents) instead of paginated LISTs, while the server takes it.
        self.watch_list = watch_list
        self.cache: dict[Key, dict[str, Any]] = {}
        self.resource_version = ""
        self.synced = False
        self.healthy = False  # False while the watch is broken (cache may be stale, never emptied)
        self.forbidden = False  # the last LIST/WATCH was refused with 403 (RBAC)
        self.relists = 0
        self._need_list = True
        self._handlers: list[Handler] = []
        # Sees each live watch line before it is decoded; what it returns (a BOOKMARK, say)
        # stands in for the event. The initial events of a streaming list never go through it.
        self.peek: Peek | None = None
        self._synced_event = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def on_event(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def get(self, name: str, namespace: str = "") -> dict[str, Any] | None:
        return self.cache.get((namespace, name))

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"informer-{self.res.plural}")

    async def stop(self) -> None:
        task = self._task
        if task is not None:
            # cancelled again while it runs on: a library that turns a cancel into an error
            # (asyncio.wait_for on 3.11 did) must not keep a stopped informer retrying forever
            while not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=1.0)
            if not task.cancelled():
                task.exception()  # retrieved: its error was logged where it happened
            self._task = None

    async def wait_synced(self, timeout: float | None = None) -> bool:
        try:
            async with asyncio.timeout(timeout):
                await self._synced_event.wait()
            return True
        except TimeoutError:
            return False

    def _emit(self, etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        for h in self._handlers:
            try:
                h(etype, obj, old)
            except Exception:
                log.exception("%s informer handler failed on %s %s", self.res.plural, etype, object_key(obj))

    def _apply(self, etype: str, obj: dict[str, Any]) -> None:
        if self.transform is not None:
            obj = self.transform(obj)
        key = object_key(obj)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv:
            self.resource_version = rv
        if etype == "DELETED":
            old = self.cache.pop(key, None)
            self._emit("DELETED", obj, old)
        elif etype in ("ADDED", "MODIFIED"):
            old = self.cache.get(key)
            self.cache[key] = obj
            self._emit("ADDED" if old is None else "MODIFIED", obj, old)

    async def _relist(self) -> None:
        items, rv = await list_objects(
            self.api,
            self.res,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=self.page_size,
            metadata_only=self.metadata_only,
            transform=self.transform,
        )
        self._replace({object_key(obj): obj for obj in items}, rv)

    def _replace(self, fresh: dict[Key, dict[str, Any]], rv: str) -> None:
        """Make the cache a complete list's content, with callbacks for what changed."""
        self.relists += 1
        # A complete list is evidence: what it lacks is gone.
        for key in [k for k in self.cache if k not in fresh]:
            old = self.cache.pop(key)
            self._emit("DELETED", old, old)
        for key, obj in fresh.items():
            prev = self.cache.get(key)
            self.cache[key] = obj
            if prev is None:
                self._emit("ADDED", obj, None)
            elif (prev.get("metadata") or {}).get("resourceVersion") != (obj.get("metadata") or {}).get(
                "resourceVersion"
            ):
                self._emit("MODIFIED", obj, prev)
        self.resource_version = rv

    async def _run(self) -> None:
        retry = Backoff(f"{self.res.plural} watch", log=log, cap=self.max_backoff_s)
        gone_in_a_row = 0
        last_gone = 0.0
        self._need_list = True
        while True:
            try:
                if self._need_list and self.watch_list and not await self._server_has_watch_list():
                    log.info("%s: API server older than 1.27 (no streaming lists); using paginated LISTs",
                             self.res.plural)
                    self.watch_list = False
                if self._need_list and self.watch_list:
                    await self._watch_list()  # clears _need_list at the list's end marker
                    if not gone_in_a_row:  # a list between two 410s is no recovery from them
                        retry.ok()
                    continue
                if self._need_list:
                    await self._relist()
                    self._need_list = False
                    self._mark_synced()
                self.healthy = True
                async for etype, obj in watch_events(
                    self.api,
                    self.res,
                    resource_version=self.resource_version,
                    namespace=self.namespace,
                    label_selector=self.label_selector,
                    field_selector=self.field_selector,
                    timeout_seconds=self.watch_timeout_s,
                    metadata_only=self.metadata_only,
                    peek=self._peek,
                ):
                    self._on_watch_event(etype, obj)
                    retry.ok()
                    gone_in_a_row = 0
            except asyncio.CancelledError:
                raise
            except Gone:
                # One 410 is routine (the watch outlived its resourceVersion): relist at once.
                # 410s in a row mean the relist does not help: back off like any failure.
                self._need_list = True
                now = time.monotonic()
                if now - last_gone > 60.0:  # long since the last one: routine again
                    gone_in_a_row = 0
                last_gone = now
                gone_in_a_row += 1
                if gone_in_a_row == 1:
                    log.info("%s watch expired (410); relisting", self.res.plural)
                else:
                    await asyncio.sleep(retry.failed("410 Gone again right after a relist"))
            except (ApiUnavailable, ApiError, ValueError) as e:
                if self._need_list and self.watch_list and isinstance(e, ApiError) and e.status in (400, 403, 422):
                    # 400/422: the server rejects sendInitialEvents (WatchList off); 403: watch is
                    # not allowed, but a LIST may be (the cache then syncs as before).
                    log.info("%s: streaming list refused (%s); using paginated LISTs", self.res.plural, e)
                    self.watch_list = False
                    continue
                self.healthy = False
                self.forbidden = isinstance(e, ApiError) and e.status == 403
                await asyncio.sleep(retry.failed(e, detail=f"; keeping {len(self.cache)} cached objects"))

    def _peek(self, line: bytes) -> dict[str, Any] | None:
        return self.peek(line) if self.peek is not None else None  # set or cleared at any time

    def _mark_synced(self) -> None:
        self.forbidden = False
        if not self.synced:
            self.synced = True
            self._synced_event.set()

    def _on_watch_event(self, etype: str, obj: dict[str, Any]) -> None:
        if etype == "BOOKMARK":
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self.resource_version = rv
            return
        self._apply(etype, obj)

    async def _server_has_watch_list(self) -> bool:
        """False for servers before 1.27, which ignore sendInitialEvents (their RV="" watch sends
        every object as ADDED but never the end marker). 1.27-1.31 with the WatchList gate off
        refuse it with 422, handled in _run."""
        minor = await self.api.server_minor()
        return minor is None or minor >= 27

    async def _watch_list(self) -> None:
        """A streaming list, then the watch on the same stream. A stream that ends before the
        list's end marker raises ApiUnavailable (retried with backoff): nothing from it is used.

        The API server sends each object from its watch cache as it encodes it, so this costs
        it far less than paginated LISTs (which it serves from etcd once the cluster's
        resourceVersion has moved past the cache's snapshots) and this process decodes while
        the server encodes. Like a complete LIST, the end marker is evidence of what is gone.
        """
        fresh: dict[Key, dict[str, Any]] | None = {}

        def live_peek(line: bytes) -> dict[str, Any] | None:
            return self._peek(line) if fresh is None else None

        async for etype, obj in watch_events(
            self.api,
            self.res,
            resource_version="",
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            # long enough for the initial events of a very large list; the watch then goes on
            timeout_seconds=max(self.watch_timeout_s, WATCH_LIST_TIMEOUT_S),
            metadata_only=self.metadata_only,
            send_initial_events=True,
            peek=live_peek,
        ):
            if fresh is None:
                self._on_watch_event(etype, obj)
                continue
            if etype == "BOOKMARK":
                meta = obj.get("metadata") or {}
                if (meta.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
                    self._replace(fresh, meta.get("resourceVersion") or self.resource_version)
                    fresh = None
                    self._need_list = False  # a broken stream from here on resumes the watch
                    self._mark_synced()
                    self.healthy = True
                continue
            if self.transform is not None:
                obj = self.transform(obj)
            if etype == "DELETED":
                fresh.pop(object_key(obj), None)
            else:
                fresh[object_key(obj)] = obj
        if fresh is not None:
            raise ApiUnavailable(f"{self.res.plural}: the streaming list ended after {len(fresh)} objects, "
                                 "before its end marker")
