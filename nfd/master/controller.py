"""nfd-master's controller: the informers and their event handlers, and the own-write echo filter.

Caches of NodeFeatures (compressed), NodeFeatureRules (compiled into the rule book it is given),
NodeFeatureGroups, Nodes (slim), ResourceSlices and, with a namespace selector, Namespaces;
each change becomes queued work (a node, a group, every node) on the queues it is given. The
watch events of its own Node writes are recognised (``own_echo``), most without being decoded
(``peek_node_line``), and queue nothing. As upstream's nfdController, it runs on every
replica, leader or not, so a standby takes over with warm caches.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Collection, MutableMapping
from typing import TYPE_CHECKING, Any

from nfd.api import NODE_NAME_LABEL
from nfd.common.logsetup import GoDuration, klogger, kobj
from nfd.dra.pools import ALL_NODES, DraIndex
from nfd.dra.slices import compact_slice
from nfd.k8s import errors as kerr
from nfd.k8s.backoff import Backoff
from nfd.k8s.client import ApiClient
from nfd.k8s.fetching import list_objects
from nfd.k8s.resources import (
    NAMESPACES,
    NODEFEATUREGROUPS,
    NODEFEATURERULES,
    NODEFEATURES,
    NODES,
    RESOURCESLICES,
)
from nfd.k8s.watching import Informer
from nfd.master.config import selector_matches
from nfd.master.eventsink import EventSink, Spawn
from nfd.master.options import LiveConfig, MasterOptions, spread_delay
from nfd.master.workqueue import WorkQueue
from nfd.nodestate.nodefeatures import (
    compact_nodefeature,
    node_name_of,
    publish_metadata_changed,
    spec_changed,
)
from nfd.nodestate.nodeplan import slim_node

if TYPE_CHECKING:
    from nfd.master.evidence import Evidence
    from nfd.master.fairness import CostLedger
    from nfd.nodestate.rulebook import RuleBook

log = logging.getLogger("nfd.master")
klog = klogger("nfd.master")


#: The start of a Node MODIFIED watch line as the API server writes it (Go's field order:
#: name, uid, resourceVersion come first in metadata, and none can hold a quote). Anything
#: else is decoded as usual.
_NODE_MODIFIED = re.compile(
    rb'\{"type":"MODIFIED","object":\{"kind":"Node","apiVersion":"v1","metadata":\{'
    rb'"name":"([a-z0-9.-]{1,253})","uid":"[0-9a-f-]{1,64}","resourceVersion":"([0-9]{1,20})"'
)


def _slim_nfr(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion") if k in meta},
        "spec": obj.get("spec"),
    }


def _slim_ns(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in ("name", "resourceVersion", "labels") if k in meta}}


class Controller:
    """The caches and what their events queue (a node, a group, every node), built from what it
    reads and feeds, as Kubernetes' controllers are: the read client ``api``, the config in
    force (``live``) and the process ``opts``, the ``rulebook`` the rule events compile into,
    the per-node state dropped with a node (``evidence``, ``desired_cache``), the rule objects'
    cost ``ledger``, the work queues, the ``events`` sink, ``spawn`` for background work and
    ``ready()``: whether events queue work now (the updaters run). ``groups``: cache
    NodeFeatureGroups too."""

    def __init__(
        self,
        api: ApiClient,
        *,
        live: LiveConfig,
        opts: MasterOptions,
        rulebook: RuleBook,
        evidence: Evidence,
        ledger: CostLedger,
        node_queue: WorkQueue[str],
        group_queue: WorkQueue[str],
        desired_cache: MutableMapping[str, Any],
        events: EventSink,
        spawn: Spawn,
        ready: Callable[[], bool],
        groups: bool = False,
    ) -> None:
        self.api = api
        self.live = live
        self.opts = opts
        self.rulebook = rulebook
        self.evidence = evidence
        self.ledger = ledger
        self.node_queue = node_queue
        self.group_queue = group_queue
        self.desired_cache = desired_cache
        self.events = events
        self.spawn = spawn
        self.ready = ready
        self.nf_index: dict[str, set[tuple[str, str]]] = {}  # node -> its NodeFeatures' keys
        self.ns_selector_gen = 0
        self.recent_deletes: dict[str, dict[tuple[str, str], float]] = {}
        self.own_rv: dict[str, int] = {}  # newest resourceVersion our own writes produced
        self.own_slim: dict[str, dict[str, Any]] = {}  # that state, until its echo arrives
        self.echoes_skipped = 0  # watch events of our own writes taken without decoding them
        self.echoes_decoded = 0  # the same, decoded (the peek did not recognise the line)
        # Nodes being processed -> newest resourceVersion of a change seen meanwhile (0: none).
        # Decided when the processing ends: most are the echoes of the writes then in flight.
        self.busy: dict[str, int] = {}
        self.nfr_deletes: dict[str, asyncio.TimerHandle] = {}  # masterless: rule deletes in grace
        page = live.config.informer_page_size
        only = opts.only_node
        self.nf_informer = Informer(
            api, NODEFEATURES, page_size=page, transform=compact_nodefeature,
            label_selector=f"{NODE_NAME_LABEL}={only}" if only else None,
        )
        self.nfr_informer = Informer(api, NODEFEATURERULES, page_size=500, transform=_slim_nfr)
        self.node_informer = Informer(
            api, NODES, page_size=500, transform=slim_node, field_selector=f"metadata.name={only}" if only else None
        )
        # False when RBAC does not allow watching Nodes (upstream's ClusterRole has only
        # get/list/patch/update): then Nodes are listed for full passes and read before each
        # update, as upstream does.
        self.watch_nodes = True
        self.nfg_informer: Informer | None = None
        if groups:
            # every namespace (upstream: the master's only, #2558)
            self.nfg_informer = Informer(api, NODEFEATUREGROUPS, page_size=500)
        self.ns_informer: Informer | None = None
        # The dra feature source (ResourceSlices); started in start when the API serves
        # resource.k8s.io/v1 and RBAC allows list and watch.
        self.dra = DraIndex()
        self.dra_informer: Informer | None = None

        self.nf_informer.on_event(self.on_nf_event)
        self.nfr_informer.on_event(self.on_nfr_event)
        self.node_informer.on_event(self.on_node_event)
        self.node_informer.peek = self.peek_node_line
        if self.nfg_informer is not None:
            self.nfg_informer.on_event(self.on_nfg_event)

    def ensure_ns_informer(self) -> None:
        if self.ns_informer is None and self.live.config.restrictions.node_feature_namespace_selector is not None:
            self.ns_informer = Informer(self.api, NAMESPACES, page_size=500, transform=_slim_ns)
            self.ns_informer.on_event(self.on_ns_event)


    def namespace_selected(self, ns: str) -> bool:
        sel = self.live.config.restrictions.node_feature_namespace_selector
        if sel is None:
            return True
        if self.ns_informer is None:
            return False
        obj = self.ns_informer.get(ns)
        if obj is None:
            return False
        return selector_matches(sel, (obj.get("metadata") or {}).get("labels") or {})


    def on_ns_event(self, etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        old_labels = (old.get("metadata") or {}).get("labels") if old is not None else None
        if etype == "MODIFIED" and old is not None and old_labels == (obj.get("metadata") or {}).get("labels"):
            return
        self.ns_selector_gen += 1
        if self.ready():
            self.queue_all_nodes("namespace labels changed")


    def _index_add(self, node: str | None, key: tuple[str, str]) -> None:
        if node:
            self.nf_index.setdefault(node, set()).add(key)


    def _index_remove(self, node: str | None, key: tuple[str, str]) -> None:
        if node and node in self.nf_index:
            s = self.nf_index[node]
            s.discard(key)
            if not s:
                del self.nf_index[node]


    def on_nf_event(self, etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace") or "", meta.get("name") or "")
        node = node_name_of(obj)
        if etype == "DELETED":
            self._index_remove(node, key)
            target = node or key[1]
            klog.info_s("NodeFeature deleted", nodefeature=kobj(key[0], key[1]), nodeName=target)
            if not self.ready() and self.node_absent(target):
                # A standby, and the Node is gone already (nfd-gc deletes a NodeFeature after
                # its Node): nothing to remove from it, and no Node delete to come that would
                # drop the evidence recorded here; a leader's pass drops it (forget_node).
                self.all_groups()
                return
            self.evidence.mark_deleted(target)
            self.recent_deletes.setdefault(target, {})[key] = time.monotonic()
            if self.ready():
                self.node_queue.add_after(target, self.opts.delete_grace_s)
                self.all_groups()
            return
        if node is None:
            log.error("NodeFeature %s/%s has no %s label; ignored", key[0], key[1], "nfd.node.kubernetes.io/node-name")
        old_node = node_name_of(old) if old is not None else None
        if old is not None and old_node != node:
            self._index_remove(old_node, key)
            if old_node and self.ready():
                self.evidence.mark_deleted(old_node)
                self.node_queue.add(old_node)
        self._index_add(node, key)
        if not self.ready() or node is None:
            return
        if etype == "ADDED" or old is None:
            klog.info_s("NodeFeature added", v=2, nodefeature=kobj(key[0], key[1]))
            if self.namespace_selected(key[0]):
                self.node_queue.add_after(node, self.opts.batch_s)
            self.all_groups()
            return
        changed = spec_changed(old, obj)
        klog.info_s("NodeFeature updated", v=2, nodefeature=kobj(key[0], key[1]))
        if changed or publish_metadata_changed(old, obj) or old_node != node:
            self.node_queue.add_after(node, self.opts.batch_s)
        if changed:
            self.all_groups()


    def on_nfr_event(self, etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        name = (obj.get("metadata") or {}).get("name") or ""
        gen = self.rulebook.generation
        pending = self.nfr_deletes.pop(name, None)
        if pending is not None:
            pending.cancel()
        if etype == "DELETED" and self.opts.only_node and self.opts.delete_grace_s > 0:
            # Masterless: a rule delete takes effect after the grace period unless the rule is
            # back by then (a resumed watch replays delete + re-create within milliseconds, and
            # the node pass must not run between them), as NodeFeature deletes do.
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is not None:
                log.info("NodeFeatureRule %s deleted; acting on it in %gs unless it is re-created",
                         name, self.opts.delete_grace_s)
                self.nfr_deletes[name] = loop.call_later(self.opts.delete_grace_s, self._nfr_delete_due, name)
                return
        if etype == "DELETED":
            self.rulebook.remove(name)
        else:
            err = self.rulebook.upsert(obj)
            if err:
                log.error("%s", err)
                self.events.rule_broken(obj, err)
        entry = self.rulebook.sets.get(name)
        self.ledger.revised(name, entry.spec_key if entry is not None else None)
        if self.rulebook.generation != gen and self.ready():
            klog.info_s(f"NodeFeatureRule {etype.lower()}", nodefeaturerule=name)
            self.queue_all_nodes(f"NodeFeatureRule {name} {etype.lower()}")


    def _nfr_delete_due(self, name: str) -> None:
        self.nfr_deletes.pop(name, None)
        if self.nfr_informer.get(name) is not None:
            return  # re-created meanwhile (its events did the rest)
        gen = self.rulebook.generation
        self.rulebook.remove(name)
        if self.rulebook.generation != gen and self.ready():
            log.info("NodeFeatureRule %s deleted (grace period over); re-evaluating the node", name)
            self.queue_all_nodes(f"NodeFeatureRule {name} deleted")


    def on_nfg_event(self, etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        # here, not at the top: only nfd-master caches groups, and masterless mode loads nothing
        # of the group pass (~2.6 ms; tests/unit/worker/test_worker_imports.py)
        from nfd.master.groupstatus import (
            forget,
            group_key,
            status_overwritten,
        )

        if etype == "DELETED":
            forget(group_key(obj))
            return
        if (etype == "MODIFIED" and old is not None and old.get("spec") == obj.get("spec")
                and not status_overwritten(obj, old)):
            return
        if self.ready():
            self.group_queue.add(group_key(obj))


    def peek_node_line(self, line: bytes) -> dict[str, Any] | None:
        """A bookmark in place of the echo of our own write, which is then not decoded.

        The echo is a whole Node (managedFields and all) that on_node_event would drop
        anyway: its state is already cached by remember. Only a node that is cached and an
        echo no newer than our newest write qualify; everything else is decoded.
        """
        m = _NODE_MODIFIED.match(line)
        if m is None:
            return None
        name = m[1].decode()
        if ("", name) not in self.node_informer.cache or not self.own_echo(name, int(m[2])):
            return None
        self.echoes_skipped += 1
        return {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": m[2].decode()}}}


    def own_echo(self, name: str, rv: int) -> bool:
        """Whether a Node event is the echo of our own write (or older): nothing new to react
        to. The echo of the newest write also ends the wait for it (_own_slim)."""
        own = self.own_rv.get(name, 0)
        if rv == own:
            self.own_slim.pop(name, None)
        return rv <= own


    def on_node_event(self, etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        name = (obj.get("metadata") or {}).get("name") or ""
        if etype == "DELETED":
            self.forget_node(name)
            return
        nm = obj.get("metadata") or {}
        rv = nm.get("resourceVersion") or ""
        if etype == "MODIFIED" and rv.isdigit() and self.own_echo(name, int(rv)):
            # An older echo must not replace the newer state our last write returned.
            self.echoes_decoded += 1
            if name in self.own_slim:
                self.node_informer.cache[("", name)] = self.own_slim[name]
            return
        if not self.ready():
            return
        if etype == "ADDED" or old is None:
            self.node_queue.add(name)
            return
        if not self.opts.react_to_node_changes:
            return
        om = old.get("metadata") or {}
        if (
            om.get("labels") != nm.get("labels")
            or om.get("annotations") != nm.get("annotations")
            or old.get("spec") != obj.get("spec")
            or old.get("status") != obj.get("status")
        ):
            if name in self.busy and rv.isdigit():
                self.busy[name] = max(self.busy[name], int(rv))
            else:
                self.node_queue.add(name)


    def queue_all_nodes(self, reason: str, *, spread: bool = True) -> None:
        """Queue every node (a rule, config or namespace change, a resync); nothing while not
        ``ready()``. Masterless (``only_node``) with ``spread``: after the node's fixed share of
        ``spread_s``, so a thousand workers' writes do not arrive together."""
        if not self.ready():
            return
        if not self.watch_nodes:
            # No Node watch allowed (upstream's RBAC): list instead.
            self.spawn(self._list_and_queue(reason))
            return
        klog.info_s("will process all nodes in the cluster", nodeCount=len(self.node_informer.cache), reason=reason)
        if self.node_informer.synced:
            self.forget_absent_nodes({name for _, name in self.node_informer.cache})
        spread_s = self.opts.spread_s if (spread and self.opts.only_node) else 0.0
        for _, name in list(self.node_informer.cache):
            if spread_s > 0:
                self.node_queue.add_after(name, spread_delay(name, spread_s=spread_s))
            else:
                self.node_queue.add(name)

    async def _list_and_queue(self, reason: str) -> None:
        retry = Backoff("listing nodes", log=log)
        while True:
            try:
                items, _ = await list_objects(self.api, NODES, page_size=500, metadata_only=True)
                retry.ok()
                break
            except (kerr.ApiError, kerr.ApiUnavailable) as e:
                await asyncio.sleep(retry.failed(e))
        klog.info_s("will process all nodes in the cluster", nodeCount=len(items), reason=reason)
        names = [(obj.get("metadata") or {}).get("name") or "" for obj in items]
        self.forget_absent_nodes(set(names))
        for name in names:
            self.node_queue.add(name)

    async def node_names(self) -> list[str]:
        """Every Node's name, sorted: from the cache, or listed where Nodes cannot be watched."""
        if self.watch_nodes:
            return sorted(n for _, n in self.node_informer.cache)

        items, _ = await list_objects(self.api, NODES, page_size=500, metadata_only=True)
        return sorted((o.get("metadata") or {}).get("name") or "" for o in items)

    def node_absent(self, name: str) -> bool:
        """Whether the Node is known not to exist: the Node cache is watched, synced and lacks it."""
        return self.watch_nodes and self.node_informer.synced and ("", name) not in self.node_informer.cache

    def forget_node(self, name: str) -> None:
        """The Node is gone: drop everything kept for it, so memory follows the nodes there are."""
        self.evidence.forget(name)
        self.desired_cache.pop(name, None)
        self.recent_deletes.pop(name, None)
        self.own_rv.pop(name, None)
        self.own_slim.pop(name, None)

    def forget_absent_nodes(self, present: Collection[str]) -> int:
        """Drop the state of every node not in ``present`` (the synced Node cache or a complete
        list of Nodes) that is not being processed; returns how many. A node deleted while it
        was being processed can have state stored after its delete event was handled (the
        pass's result, the answer of its last write): the next full pass drops it."""
        kept = [self.evidence.nodes(), self.desired_cache, self.recent_deletes, self.own_rv, self.own_slim]
        gone = {n for names in kept for n in names if n not in present and n not in self.busy}
        for name in gone:
            self.forget_node(name)
        return len(gone)

    def on_dra_event(self, etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        name = (obj.get("metadata") or {}).get("name") or ""
        if etype == "DELETED":
            affected = self.dra.remove(name)
        else:
            affected = self.dra.upsert(obj["dra"])
        if not self.ready() or not affected:
            return
        if ALL_NODES in affected:
            self.queue_all_nodes(f"ResourceSlice {name} {etype.lower()}")
        else:
            for node in affected:
                # drivers write their slices in bursts: one pass per node for the burst
                self.node_queue.add_after(node, self.opts.batch_s)
        self.all_groups()


    def node_labels(self, node: str) -> dict[str, str]:
        obj = self.node_informer.get(node) if self.watch_nodes else None
        labels: dict[str, str] = ((obj or {}).get("metadata") or {}).get("labels") or {}
        return labels


    def all_groups(self) -> None:
        if self.nfg_informer is None or not self.ready():
            return
        for ns, name in list(self.nfg_informer.cache):
            self.group_queue.add(f"{ns}/{name}")


    def remember(self, obj: dict[str, Any]) -> None:
        """Put the node as our write left it into the cache, unless the watch already has newer.

        Later work on the node then plans against what is really there, and the watch events of
        our own writes (up to the newest resourceVersion they produced) re-queue nothing.
        """
        slim = slim_node(obj)
        name = slim["metadata"].get("name") or ""
        if not self.watch_nodes:
            return
        cur = self.node_informer.cache.get(("", name))
        new_rv = slim["metadata"].get("resourceVersion") or ""
        if new_rv.isdigit() and int(new_rv) > self.own_rv.get(name, 0):
            self.own_rv[name] = int(new_rv)
            self.own_slim[name] = slim
        cur_rv = (cur or {}).get("metadata", {}).get("resourceVersion") or ""
        if cur is not None and new_rv.isdigit() and cur_rv.isdigit() and int(new_rv) > int(cur_rv):
            self.node_informer.cache[("", name)] = slim


    def in_delete_grace(self, name: str) -> float:
        """Seconds until a recent NodeFeature delete of this node may be acted on (0: now).

        Any work on the node waits for the grace period unless the deleted objects are back,
        so other events cannot bring the removal forward.
        """
        rd = self.recent_deletes.get(name)
        if not rd:
            return 0.0
        now = time.monotonic()
        present = self.nf_index.get(name, set())
        for k, t in list(rd.items()):
            if k in present or now - t >= self.opts.delete_grace_s:
                del rd[k]
        if not rd:
            del self.recent_deletes[name]
            return 0.0
        return min(self.opts.delete_grace_s - (now - t) for t in rd.values())

    @property
    def synced(self) -> bool:
        infs = [self.nfr_informer, self.nf_informer] + ([self.node_informer] if self.watch_nodes else [])
        if self.dra_informer is not None:
            infs.append(self.dra_informer)
        return all(i.synced for i in infs)


    async def start(self, *, watch_nodes: bool, dra: bool) -> None:
        """Start the informers and wait for their first lists: Nodes only when ``watch_nodes``
        (RBAC allows it), ResourceSlices only when ``dra`` (served and allowed)."""
        self.watch_nodes = watch_nodes
        informers = [self.nfr_informer, self.nf_informer]
        if self.watch_nodes:
            informers.append(self.node_informer)
        if self.nfg_informer is not None:
            informers.append(self.nfg_informer)
        if self.ns_informer is not None:
            informers.append(self.ns_informer)
        if dra:
            self.dra_informer = Informer(self.api, RESOURCESLICES, page_size=500, transform=compact_slice)
            self.dra_informer.on_event(self.on_dra_event)
            informers.append(self.dra_informer)
        for inf in informers:
            await inf.start()
        t0 = time.monotonic()
        for inf in informers:
            await inf.wait_synced()
        sizes = {"nodeFeatures": len(self.nf_informer.cache), "nodeFeatureRules": len(self.nfr_informer.cache),
                 "nodes": len(self.node_informer.cache)}
        if self.dra_informer is not None:
            sizes["resourceSlices"] = len(self.dra_informer.cache)
        klog.info_s("informer caches synced", duration=GoDuration(time.monotonic() - t0), **sizes)

    async def stop(self) -> None:
        for inf in (self.nf_informer, self.nfr_informer, self.node_informer, self.nfg_informer, self.ns_informer,
                    self.dra_informer):
            if inf is not None:
                await inf.stop()
        for h in self.nfr_deletes.values():
            h.cancel()
        self.nfr_deletes.clear()
