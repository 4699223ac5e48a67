"""nfd-master: the asyncio shell around the pure pieces.

The caches (informers, nfd.master.controller) of NodeFeatures (compressed), NodeFeatureRules (compiled), NodeFeatureGroups,
Nodes (slim) and, with a namespace selector, Namespaces run on every replica, leader or not, so a
standby takes over with warm caches. Only the leader runs the updaters. Work is a node name (or a
group name) on a de-duplicating queue; ``nfdApiParallelism`` workers take items, compute the
desired state (cached per node while its inputs are unchanged), plan the patches against the
cached Node and write only when the plan is not empty.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nfd.common.logsetup import klogger
from nfd.k8s import errors as kerr
from nfd.k8s.client import ApiClient
from nfd.k8s.fetching import get
from nfd.k8s.patching import patch
from nfd.k8s.resources import (
    NODEFEATUREGROUPS,
    NODES,
)
from nfd.master import bookkeeping as bk
from nfd.master.access import allowed, dra_available
from nfd.master.config import MasterConfig
from nfd.master.controller import Controller
from nfd.master.evidence import Evidence, skip_removal
from nfd.master.leadership import elect_until
from nfd.master.metrics import MasterMetrics
from nfd.master.nodefeatures import (
    MergedNodeFeatures,
    merge_node_features,
)
from nfd.master.nodeupdate import Desired, NodePlan, NodeState, ops_to_strategic, plan_node_update
from nfd.master.workqueue import ShutDown, WorkQueue

log = logging.getLogger("nfd.master")
klog = klogger("nfd.master")  # upstream's structured lines (docs/logging.md)

MAX_REPORTED_RETRIES = 15


@dataclass(slots=True)
class MasterOptions:
    """Process-level settings (flags that are not part of the config file)."""

    namespace: str = "node-feature-discovery"
    node_name: str = ""
    instance: str = ""
    enable_leader_election: bool = False
    feature_gates: dict[str, bool] = field(default_factory=dict)
    # Ours: how long a NodeFeature delete waits for a re-create before the node is re-processed.
    delete_grace_s: float = 5.0
    # Ours: re-process a node when its labels/annotations/taints/capacity change on the API side.
    react_to_node_changes: bool = True
    # NodeFeature changes of one node within this period are handled in one pass (upstream
    # flushes its event batch once per second).
    batch_s: float = 1.0
    # Ours (masterless mode, nfd-worker -enable-node-update): work on this one node only. The
    # NodeFeature and Node caches are narrowed to it by selectors, no leader election, and no
    # Events (thousands of workers would each post the same InvalidRule event).
    only_node: str = ""
    # Ours (masterless): a cluster-wide trigger (a rule or config change, a resync) reaches every
    # worker at once; each delays its pass by a fixed per-node fraction of this many seconds so
    # the writes do not arrive together (all workers share one API Priority and Fairness flow,
    # whose 429s cost each worker a second exchange). 0: no spread.
    spread_s: float = 0.0

    @property
    def node_feature_groups(self) -> bool:
        return self.feature_gates.get("NodeFeatureGroupAPI", False)

    @property
    def disable_auto_prefix(self) -> bool:
        return self.feature_gates.get("DisableAutoPrefix", False)

    @property
    def dra_resource_slices(self) -> bool:
        """Ours, on by default: the ``dra`` feature source (docs/dra.md). It changes nothing on
        a cluster without ResourceSlices or without rules that read ``dra.device``/``devices``.
        Off by default for a masterless worker (``only_node``): its RBAC has no cluster-wide
        read of ResourceSlices, and thousands of workers should not each try and warn."""
        return self.feature_gates.get("DRAResourceSlices", not self.only_node)


@dataclass(slots=True)
class CachedDesired:
    key: tuple[Any, ...]
    desired: Desired
    has_features: bool
    found: bool
    # outputs of the rules that matched, by (rule set, rule): what a rule failing at run time
    # on this node next time contributes instead of nothing
    outputs: dict[tuple[str, str], Any] = field(default_factory=dict)
    # Masterless (one node): the merged features, reused while only the rules change, and the
    # rules' results on them (nfd.rules.engine.RuleMemo)
    merged: MergedNodeFeatures | None = None
    memo: Any = None
    # rule objects not run in this evaluation (nfd.master.fairness): the node's background
    # evaluation runs them
    deferred: frozenset[str] = frozenset()
    # rule objects evaluated on this node at least once since this master started, and those
    # deferred before ever being: what they would produce here is not known, so the write
    # removes nothing (a restarted master must not strip a deferred object's labels)
    evaluated: frozenset[str] = frozenset()
    unknown: frozenset[str] = frozenset()


def spread_delay(node: str, *, spread_s: float) -> float:
    """A node's fixed share of ``spread_s`` (a hash of its name): the same node waits the same
    time after every trigger, and a thousand nodes spread evenly over the window."""
    import zlib

    return spread_s * (zlib.crc32(node.encode()) % 1000) / 1000.0


class NfdMaster:
    def __init__(
        self,
        api: ApiClient,
        *,
        config: MasterConfig,
        options: MasterOptions,
        metrics: MasterMetrics | None = None,
        write_api: ApiClient | None = None,
    ) -> None:
        self.api = api
        self.write_api = write_api or api
        self.config = config
        self.opts = options
        self.metrics = metrics or MasterMetrics()
        self.config_generation = 0
        self.evidence = Evidence()
        self.node_queue: WorkQueue[str] = WorkQueue()
        self.group_queue: WorkQueue[str] = WorkQueue()
        self.desired_cache: dict[str, CachedDesired] = {}
        self.is_leader = False
        self.ready = False
        self.rulebook: Any = None
        self._policy: Any = None
        self._workers: list[asyncio.Task[None]] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self._stop = asyncio.Event()
        self._resync_task: asyncio.Task[None] | None = None
        self.counts: dict[str, int] = {"noop": 0, "written": 0, "skipped_removal": 0}
        self.on_synced: Callable[[], None] | None = None
        self._logged_rule_errors: set[tuple[Any, ...]] = set()
        # Rule evaluation on the loop in shared slices, and the rule objects too costly to
        # evaluate with the others (docs/reliability.md, "One costly rule object").
        from nfd.master.evalsched import EvalSlicer
        from nfd.master.fairness import CostLedger

        self.slicer = EvalSlicer()
        # A masterless worker has one node: its own failures are all there is to count.
        self.ledger = CostLedger(threshold=1) if options.only_node else CostLedger()
        # Nodes whose last evaluation deferred a rule object: evaluated in full in the
        # background lane, one at a time, while no other node work waits.
        self.deferred_queue: WorkQueue[str] = WorkQueue()
        self._background: _BackgroundPass | None = None
        self._background_lane: asyncio.Task[None] | None = None
        self._set_names: tuple[int, frozenset[str]] = (-1, frozenset())  # rulebook generation, names
        self._frozen: dict[frozenset[str], frozenset[str]] = {}  # see _shared

        # Labels/annotations ride along in the nodes/status patch when both change (see _execute).
        self.combine_status_writes = True
        self.controller = Controller(self, api)

    def report_broken_rule(self, obj: dict[str, Any], msg: str, *, reason: str = "InvalidRule") -> None:
        if not self.is_leader or self.opts.only_node:
            return
        from nfd.k8s.events import post_event

        involved = dict(obj)
        involved.setdefault("apiVersion", "nfd.k8s-sigs.io/v1alpha1")
        involved.setdefault("kind", "NodeFeatureRule")
        self._spawn(
            post_event(
                self.write_api,
                # NodeFeatureRules are cluster-scoped: the API server takes their Events in
                # "default" only ("involvedObject.namespace ... does not match event.namespace")
                namespace="default",
                involved=involved,
                reason=reason,
                message=msg,
                component="nfd-master",
                type_="Warning",
            )
        )

    # -- work ---------------------------------------------------------------------------------
    def update_all_nodes(self, reason: str, *, spread: bool = True) -> None:
        if not self.ready:
            return
        if not self.controller.watch_nodes:
            # No Node watch allowed (upstream's RBAC): list instead.
            self._spawn(self._list_and_queue(reason))
            return
        klog.info_s("will process all nodes in the cluster", nodeCount=len(self.controller.node_informer.cache), reason=reason)
        spread_s = self.opts.spread_s if (spread and self.opts.only_node) else 0.0
        for _, name in list(self.controller.node_informer.cache):
            if spread_s > 0:
                self.node_queue.add_after(name, spread_delay(name, spread_s=spread_s))
            else:
                self.node_queue.add(name)

    async def _list_and_queue(self, reason: str) -> None:
        from nfd.k8s.backoff import Backoff
        from nfd.k8s.fetching import list_objects

        retry = Backoff("listing nodes", log=log)
        while True:
            try:
                items, _ = await list_objects(self.api, NODES, page_size=500, metadata_only=True)
                retry.ok()
                break
            except (kerr.ApiError, kerr.ApiUnavailable) as e:
                await asyncio.sleep(retry.failed(e))
        klog.info_s("will process all nodes in the cluster", nodeCount=len(items), reason=reason)
        for obj in items:
            self.node_queue.add((obj.get("metadata") or {}).get("name") or "")

    def set_config(self, config: MasterConfig) -> None:
        """Live reload: a new (already validated) config; every node is re-evaluated."""
        old = self.config
        self.config = config
        self.controller.nf_informer.page_size = config.informer_page_size  # used by the next relist
        limiter = getattr(self.write_api, "limiter", None)
        if limiter is not None and (old.kube_api_qps, old.kube_api_burst) != (config.kube_api_qps, config.kube_api_burst):
            limiter.qps, limiter.burst = config.kube_api_qps, max(1, config.kube_api_burst)
        if self.is_leader and old.nfd_api_parallelism != config.nfd_api_parallelism:
            self._spawn(self._resize_workers())
        self.config_generation += 1
        self._policy = None
        self.controller.ensure_ns_informer()
        if self.controller.ns_informer is not None:
            self._spawn(self.controller.ns_informer.start())
        if self.ready:
            self.update_all_nodes("configuration changed")
            self._restart_resync()

    def policy(self) -> Any:
        if self._policy is None:
            from nfd.master.pipeline import policy_config

            self._policy = policy_config(self.config, disable_auto_prefix=self.opts.disable_auto_prefix)
        return self._policy

    def merged_for(self, node: str) -> MergedNodeFeatures:
        keys = sorted(self.controller.nf_index.get(node, ()))
        entries = [e for e in (self.controller.nf_informer.cache.get(k) for k in keys) if e is not None]
        merged = merge_node_features(
            entries,
            node_name=node,
            master_namespace=self.opts.namespace,
            namespace_selected=self.controller.namespace_selected
            if self.config.restrictions.node_feature_namespace_selector is not None
            else None,
            deny_third_party_labels=self.config.restrictions.deny_node_feature_labels,
            auto_prefix=not self.opts.disable_auto_prefix,
        )
        for err in merged.errors:
            log.error("node %s: %s", node, err)
        if self.controller.dra_informer is not None:
            # The dra source, in the same pass: its instances append after the NodeFeatures'.
            nd = self.controller.dra.node_devices(node, self.controller.node_labels(node))
            if nd.instances:
                merged.features.add_instances("dra.device", nd.instances)
                merged.devices = nd.cel
        return merged

    def _desired_key(self, node: str) -> tuple[Any, ...]:
        keys = sorted(self.controller.nf_index.get(node, ()))
        hashes = tuple((k, (self.controller.nf_informer.cache.get(k) or {}).get("specHash")) for k in keys)
        rg = self.rulebook.generation if self.rulebook is not None else 0
        dra = self.controller.dra.node_devices(node, self.controller.node_labels(node)).key if self.controller.dra_informer is not None else ()
        return (hashes, rg, self.config_generation, self.controller.ns_selector_gen, dra)

    def _desired_key_gen(self) -> tuple[int, int]:
        return (self.rulebook.generation if self.rulebook is not None else 0, self.config_generation)

    async def desired_for(self, node: str, *, background: bool = False) -> CachedDesired:
        """The node's desired state, from the cache while its inputs are unchanged. In the
        foreground, deferred rule objects are not run (their previous outputs stand in);
        ``background``: run everything, in the background lane's share of the loop."""
        key = self._desired_key(node)
        cached = self.desired_cache.get(node)
        if cached is not None and cached.key == key and not (background and cached.deferred):
            return cached
        from nfd.master.pipeline import compute_desired_steps
        from nfd.rules.engine import EvalBudget, RuleMemo

        if cached is not None and cached.merged is not None and _inputs(cached.key) == _inputs(key):
            # Only the rules changed: the node's features are as merged last time (the engine
            # never modifies them). Kept in masterless mode only, where there is one node.
            merged = cached.merged
            memo = cached.memo
        else:
            merged = self.merged_for(node)
            memo = RuleMemo() if self.opts.only_node else None
        rule_sets = self.rulebook.ordered() if self.rulebook is not None else []
        deferred = frozenset() if background else self.ledger.deferred()
        steps = compute_desired_steps(
            merged, rule_sets=rule_sets, policy=self.policy(), node_name=node, budget=EvalBudget(),
            previous=cached.outputs if cached is not None else None, memo=memo, deferred=deferred,
        )
        desired, rep = await self.slicer.drive(steps, background=background)
        self._charge_budgets(node, rep.over_budget)
        for rule, msg in rep.rule_errors:
            self.metrics.nfr_processing_errors.inc()
            # Once per rule and message per rules generation at error level, not once per node.
            seen_key: tuple[Any, ...] = (self._desired_key_gen(), rule, msg)
            if seen_key not in self._logged_rule_errors:
                if len(self._logged_rule_errors) > 2000:  # messages are <= 1,000 characters: ~2 MB
                    self._logged_rule_errors.clear()
                self._logged_rule_errors.add(seen_key)
                nfr, _, rule_name = str(rule).partition("/")
                # ours: once per rule and error, with the first node it failed on
                klog.error_s(msg, "failed to process rule", ruleName=rule_name or nfr, nodefeaturerule=nfr,
                             nodeName=node)
            else:
                log.debug("node %s: rule %s failed: %s", node, rule, msg)
        for kind, k, reason in rep.rejected:
            seen_key = (self._desired_key_gen(), kind, k[:200], reason[:1000])
            if seen_key not in self._logged_rule_errors:
                if len(self._logged_rule_errors) > 2000:
                    self._logged_rule_errors.clear()
                self._logged_rule_errors.add(seen_key)
                log.warning("%s %.200s rejected (first seen on node %s; not repeated per node): %.1000s",
                            kind, k, node, reason)
            else:
                log.debug("node %s: %s %.200s rejected: %.1000s", node, kind, k, reason)
            if kind.startswith("label"):
                self.metrics.node_labels_rejected.inc()
            elif kind.startswith("extended"):
                self.metrics.node_ers_rejected.inc()
            elif kind.startswith("taint"):
                self.metrics.node_taints_rejected.inc()
        # Node name label values are not exported (cardinality); see docs/compatibility.md.
        self.metrics.nfr_processing_time.labels(name="", node="").observe(rep.duration_s)
        skipped = self._shared(frozenset(rep.deferred))
        evaluated = self._evaluated_sets(cached.evaluated if cached is not None else frozenset(), rule_sets, skipped)
        cd = CachedDesired(key, desired, merged.has_features, merged.found, rep.outputs,
                           merged if self.opts.only_node else None, memo, skipped, evaluated,
                           self._shared(skipped - evaluated))
        self.desired_cache[node] = cd
        return cd

    def _evaluated_sets(self, before: frozenset[str], rule_sets: list[Any], skipped: frozenset[str]) -> frozenset[str]:
        """The rule objects evaluated on a node so far (CachedDesired.evaluated): those run now
        and those run before that still exist. One shared object per distinct value, not one
        per node (a hundred names are ~5 kB; five thousand nodes hold the same few sets)."""
        gen = self.rulebook.generation if self.rulebook is not None else 0
        if self._set_names[0] != gen:
            self._set_names = (gen, frozenset(r.name for r in rule_sets))
        names = self._set_names[1]
        return self._shared((before & names) | (names - skipped))

    def _shared(self, value: frozenset[str]) -> frozenset[str]:
        if not value:
            return frozenset()
        if len(self._frozen) > 256:
            self._frozen.clear()
        return self._frozen.setdefault(value, value)

    def _charge_budgets(self, node: str, over_budget: dict[str, str]) -> None:
        """Count the rule objects that ran out of a budget on ``node`` (nfd.master.fairness);
        one that now has on too many nodes is deferred, with one log line and one Event."""
        if self.rulebook is None:
            return
        for rule_set, example in over_budget.items():
            entry = self.rulebook.sets.get(rule_set)
            if entry is None:
                continue
            d = self.ledger.record(rule_set=rule_set, revision=entry.spec_key, node=node, example=example)
            if d is None:
                continue
            msg = d.message()
            log.warning("%s", msg)
            obj = self.controller.nfr_informer.get(rule_set)
            if obj is not None:
                self.report_broken_rule(obj, msg, reason="RuleBudgetExceeded")  # not masterless

    async def _fresh_node(self, name: str) -> NodeState | None:
        obj = await get(self.write_api, NODES, name=name)
        return None if obj is None else NodeState.from_obj(obj)

    async def _execute(self, node: NodeState, plan: NodePlan) -> NodeState:
        """Send the plan's stages in order; returns the node as the API last returned it.

        Label, annotation and extended-resource changes go as strategic merge patches (the plan's
        map operations, ``null`` removing): kube-apiserver applies those without a JSON round
        trip of the stored Node, ~1.3 ms less of its CPU per write than the same JSON patch
        (benchmarks/bench_node_patch_types.py). A merge patch never fails on a key that is
        already gone or a map that appeared meanwhile, so no resourceVersion guard is needed for
        them. The taint stage is a strategic merge patch too, guarded by the resourceVersion:
        ``spec.taints`` has no patch strategy, so the list is replaced whole, as a merge patch
        would (its JSON round trip cost the API server ~20% of its CPU in a 5,000-node run).
        """
        obj: dict[str, Any] | None = None
        metadata_ops = plan.metadata_ops
        if plan.status_ops and metadata_ops and self.combine_status_writes:
            # One request instead of two: a Node's status subresource also persists metadata
            # (nodeStatusStrategy resets only spec), so extended resources, labels and annotations
            # land together, atomically. Checked on the answer; if a server ever drops the
            # metadata part, fall back to upstream's two requests for good.
            obj = await patch(
                self.write_api,
                NODES,
                name=node.name,
                body=ops_to_strategic(plan.status_ops + metadata_ops),
                subresource="status",
                patch_type="strategic",
            )
            self.controller.remember(obj)
            if _metadata_applied(obj, metadata_ops):
                metadata_ops = []
            else:
                log.warning("the API server ignored metadata in a nodes/status patch; using separate patches")
                self.combine_status_writes = False
        elif plan.status_ops:
            body = ops_to_strategic(plan.status_ops)
            if self.opts.only_node and plan.taints_patch is not None and self.combine_status_writes:
                # Masterless: the extended-resources record rides along with the resources (the
                # node-update admission policy admits a resource only where the write records
                # it); the taint write below repeats it unchanged.
                key = bk.instance_annotation(bk.EXTENDED_RESOURCES, self.opts.instance)
                anns = (plan.taints_patch.get("metadata") or {}).get("annotations") or {}
                if key in anns:
                    body["metadata"] = {"annotations": {key: anns[key]}}
            obj = await patch(
                self.write_api,
                NODES,
                name=node.name,
                body=body,
                subresource="status",
                patch_type="strategic",
            )
            self.controller.remember(obj)
        rv = ((obj or {}).get("metadata") or {}).get("resourceVersion") or node.resource_version
        if metadata_ops:
            obj = await patch(
                self.write_api, NODES, name=node.name, body=ops_to_strategic(metadata_ops), patch_type="strategic"
            )
            self.controller.remember(obj)
        elif plan.taints_patch is not None:
            body = dict(plan.taints_patch)
            body["metadata"] = dict(body["metadata"], resourceVersion=rv)
            obj = await patch(self.write_api, NODES, name=node.name, body=body, patch_type="strategic")
            self.controller.remember(obj)
        assert obj is not None
        return NodeState.from_obj(obj)


    async def process_node(self, name: str, *, background: bool = False) -> None:
        if not background:
            await self._preempt_background(name)
        self.controller.busy[name] = 0
        try:
            await self._process_node(name, background=background)
        finally:
            seen = self.controller.busy.pop(name, 0)
            if seen > self.controller.own_rv.get(name, 0):
                # Changed by someone else after our last write (guarded writes fail on changes
                # before it, and are retried above): look again.
                self.node_queue.add(name)

    async def _preempt_background(self, name: str) -> None:
        """The foreground is about to process ``name``: a background pass on it that is still
        evaluating is cancelled (it is queued again below), one already writing is waited for."""
        bg = self._background
        if bg is None or bg.node != name or bg.task.done():
            return
        if bg.writing:
            await asyncio.wait({bg.task})
        else:
            bg.task.cancel()
            await asyncio.wait({bg.task})

    async def _background_worker(self) -> None:
        """The background lane: nodes whose deferred rule objects are still to run, one at a
        time, only while the node queue has nothing waiting or in progress."""
        while True:
            try:
                name = await self.deferred_queue.get()
            except ShutDown:
                return
            try:
                while len(self.node_queue) or self.node_queue.processing:
                    await asyncio.sleep(0.1)
                bg = _BackgroundPass(name, asyncio.ensure_future(self.process_node(name, background=True)))
                self._background = bg
                try:
                    await asyncio.wait({bg.task})
                except asyncio.CancelledError:
                    bg.task.cancel()
                    raise
                if bg.task.cancelled():
                    continue  # the foreground took the node (and queues it again if needed)
                e = bg.task.exception()
                if e is not None:
                    delay = self.deferred_queue.add_rate_limited(name)
                    log.warning("node %s: background evaluation failed (%s); retry in %.2fs", name, e, delay)
                else:
                    self.deferred_queue.forget(name)
            finally:
                self._background = None
                self.deferred_queue.done(name)

    async def _process_node(self, name: str, *, background: bool = False) -> None:
        wait = self.controller.in_delete_grace(name)
        if wait > 0:
            self.node_queue.add_after(name, wait)
            return
        self.metrics.node_update_requests.inc()
        # Plan against the watched cache; without a Node watch, read the Node (as upstream).
        cached = self.controller.node_informer.get(name) if self.controller.watch_nodes else None
        node = NodeState.from_obj(cached) if cached is not None else await self._fresh_node(name)
        if node is None:
            klog.info_s("node not found, skip update", nodeName=name)
            self.evidence.forget(name)
            self.desired_cache.pop(name, None)
            return
        cd = await self.desired_for(name, background=background)
        if cd.deferred:
            self.deferred_queue.add(name)
        if background and self._background is not None and self._background.node == name:
            self._background.writing = True
        res = self.evidence.resolve(name)
        skip = skip_removal(has_features=cd.has_features, found_in_cache=cd.found, res=res)
        if skip:
            self.counts["skipped_removal"] += 1
            log.info("node %s: no NodeFeature known yet on first pass; not removing anything", name)
        elif cd.unknown:
            skip = True
            log.debug("node %s: deferred rule objects %s not evaluated here yet; not removing anything",
                      name, ", ".join(sorted(cd.unknown)))
        if self.config.no_publish:
            klog.info_s("node update skipped, NoPublish=true", v=1, nodeName=name)
            self.evidence.commit(name, res)
            return
        wrote = False
        all_changes: list[str] = []
        counts: dict[str, int] = {}
        removed = False
        refreshed = False
        for _ in range(3):
            plan = plan_node_update(
                node,
                cd.desired,
                skip_removal=skip,
                allow_overwrite=self.config.restrictions.allow_overwrite,
                instance=self.opts.instance,
            )
            if plan.noop:
                break
            desc = plan.changes.describe()
            for k, n in plan.changes.counts().items():
                counts[k] = counts.get(k, 0) + n
            try:
                node = await self._execute(node, plan)
            except kerr.NotFound:
                log.info("node %s was deleted meanwhile", name)
                self.evidence.forget(name)
                return
            except (kerr.Invalid, kerr.Conflict) as e:
                # Our cached view was stale (a key vanished, the resourceVersion moved): re-read.
                if refreshed:
                    raise
                log.info("node %s: cached state stale (%s); re-reading", name, e.reason or e.status)
                fresh = await self._fresh_node(name)
                if fresh is None:
                    self.evidence.forget(name)
                    return
                node = fresh
                refreshed = True
                continue
            wrote = True
            if desc and desc not in all_changes:
                all_changes.append(desc)
            removed = removed or plan.changes.removed_anything()
            break
        else:
            raise RuntimeError(f"node {name}: plan did not converge")
        self.evidence.commit(name, res)
        if wrote:
            self.counts["written"] += 1
            self.metrics.node_updates.inc()
            klog.info_s("node updated", nodeName=name, **counts, changes="; ".join(all_changes) or "bookkeeping")
            if removed:
                self._node_event(name, "; ".join(all_changes))
        else:
            self.counts["noop"] += 1
            self.metrics.node_noop_updates.inc()
            klog.info_s("no updates to node", v=1, nodeName=name)

    def _node_event(self, name: str, message: str) -> None:
        from nfd.k8s.events import post_event

        if self.opts.only_node:
            return
        cached = self.controller.node_informer.get(name) or {"metadata": {"name": name}}
        involved = {"apiVersion": "v1", "kind": "Node", "metadata": cached.get("metadata") or {"name": name}}
        self._spawn(
            post_event(
                self.write_api,
                namespace="default",
                involved=involved,
                reason="FeaturesUpdated",
                message=message,
                component="nfd-master",
            )
        )

    async def process_group(self, name: str) -> None:
        from nfd.master.groups import compute_membership

        self.metrics.nfg_update_requests.inc()
        assert self.controller.nfg_informer is not None
        obj = self.controller.nfg_informer.get(name, self.opts.namespace)
        if obj is None:
            return
        if self.controller.watch_nodes:
            nodes = sorted(n for _, n in self.controller.node_informer.cache)
        else:
            from nfd.k8s.fetching import list_objects

            items, _ = await list_objects(self.api, NODES, page_size=500, metadata_only=True)
            nodes = sorted((o.get("metadata") or {}).get("name") or "" for o in items)
        members = compute_membership(obj, nodes=nodes, merged_for=self.merged_for)
        status_nodes = [{"name": m} for m in members]
        if ((obj.get("status") or {}).get("nodes") or []) == status_nodes:
            return
        body = json.loads(json.dumps(obj))
        body.setdefault("status", {})["nodes"] = status_nodes
        from nfd.k8s.updating import replace

        await replace(
            self.write_api, NODEFEATUREGROUPS, body=body, name=name, namespace=self.opts.namespace, subresource="status"
        )
        log.info("NodeFeatureGroup %s/%s: %d member nodes", self.opts.namespace, name, len(members))

    async def _worker(self, queue: WorkQueue[str], fn: Callable[[str], Any], kind: str) -> None:
        while True:
            try:
                item = await queue.get()
            except ShutDown:
                return
            try:
                await fn(item)
                queue.forget(item)
            except asyncio.CancelledError:
                # Interrupted (resize or step-down): the item is not lost; a step-down then
                # clears the queue.
                queue.done(item)
                queue.add(item)
                raise
            except Exception as e:
                n = queue.num_requeues(item)
                if n + 1 == MAX_REPORTED_RETRIES and kind == "node":
                    self.metrics.node_update_failures.inc()
                delay = queue.add_rate_limited(item)
                if isinstance(e, kerr.ApiError | kerr.ApiUnavailable):
                    log.warning("%s %s: update failed (%s); retry %d in %.2fs", kind, item, e, n + 1, delay)
                else:
                    log.exception("%s %s: update failed; retry %d in %.2fs", kind, item, n + 1, delay)
            finally:
                queue.done(item)

    # -- leadership and lifecycle ------------------------------------------------------------------
    def _start_workers(self) -> None:
        n = self.config.nfd_api_parallelism
        for _ in range(n):
            self._workers.append(asyncio.create_task(self._worker(self.node_queue, self.process_node, "node")))
        if self._background_lane is None:
            self._background_lane = asyncio.create_task(self._background_worker())
        if self.controller.nfg_informer is not None:
            for _ in range(max(1, min(n, 2))):
                self._workers.append(
                    asyncio.create_task(self._worker(self.group_queue, self.process_group, "group"))
                )

    async def _resize_workers(self) -> None:
        """New nfdApiParallelism: replace the updaters (queued work is kept)."""
        for t in self._workers:
            t.cancel()
        for t in self._workers:
            try:
                await t
            except (asyncio.CancelledError, Exception):
                pass
        self._workers.clear()
        if self.is_leader:
            self._start_workers()

    async def _stop_workers(self) -> None:
        lane, self._background_lane = self._background_lane, None
        for t in self._workers + ([lane] if lane is not None else []):
            t.cancel()
        if lane is not None:
            try:
                await lane
            except (asyncio.CancelledError, Exception):
                pass
        for t in self._workers:
            try:
                await t
            except (asyncio.CancelledError, Exception):
                pass
        self._workers.clear()
        self.node_queue.clear()
        self.group_queue.clear()
        self.deferred_queue.clear()

    async def become_leader(self) -> None:
        klog.info_s("starting the NFD master updater pool", parallelism=self.config.nfd_api_parallelism)
        self.is_leader = True
        self.metrics.is_leader.set(1)
        # Evidence of this term only: a standby has processed nothing.
        self.evidence.reset_processed()
        self.ready = True
        self._start_workers()
        self.update_all_nodes("became leader", spread=False)
        for _, name in list(self.controller.nfg_informer.cache if self.controller.nfg_informer is not None else {}):
            self.group_queue.add(name)
        self._restart_resync()
        for name, msg in sorted((self.rulebook.broken if self.rulebook is not None else {}).items()):
            log.error("NodeFeatureRule %s is invalid: %s", name, msg)

    async def step_down(self) -> None:
        log.warning("lost leadership: stopping updaters, keeping caches warm")
        self.is_leader = False
        self.ready = False
        self.metrics.is_leader.set(0)
        if self._resync_task is not None:
            self._resync_task.cancel()
            self._resync_task = None
        await self._stop_workers()

    def _restart_resync(self) -> None:
        if self._resync_task is not None:
            self._resync_task.cancel()
            self._resync_task = None
        if self.config.resync_period > 0 and self.is_leader:
            self._resync_task = asyncio.create_task(self._resync_loop(self.config.resync_period))

    async def _resync_loop(self, period: float) -> None:
        while True:
            await asyncio.sleep(period)
            self.update_all_nodes("periodic resync")
            self.controller.all_groups()

    def _spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.append(t)
        t.add_done_callback(lambda x: self._tasks.remove(x) if x in self._tasks else None)

    async def start_caches(self) -> None:
        from nfd.master.pipeline import RuleBook

        if self.rulebook is None:
            self.rulebook = RuleBook()
        self.controller.ensure_ns_informer()
        watch_nodes = await allowed(self.api, verb="watch", resource="nodes")
        if not watch_nodes:
            log.warning("RBAC does not allow watching nodes: reading each Node before updating it")
        dra = self.opts.dra_resource_slices and await dra_available(self.api)
        await self.controller.start(watch_nodes=watch_nodes, dra=dra)
        if self.on_synced is not None:
            self.on_synced()

    async def stop(self) -> None:
        self._stop.set()
        await self.step_down() if self.is_leader else None
        self.node_queue.shutdown()
        self.group_queue.shutdown()
        self.deferred_queue.shutdown()
        await self.controller.stop()
        for t in list(self._tasks):
            t.cancel()

    async def run(self, *, elector_factory: Callable[[], Any] | None = None) -> None:
        """Sync caches, then lead (or stand by with warm caches until leading) until stopped.

        ``elector_factory()`` returns a fresh nfd.k8s.lease.LeaderElector wired to
        become_leader/step_down; after losing the lease we stand by again instead of exiting.
        """
        await self.start_caches()
        if elector_factory is None:
            await self.become_leader()
            await self._stop.wait()
            return
        await elect_until(self._stop, elector_factory=elector_factory, is_leader=lambda: self.is_leader,
                          step_down=self.step_down, retry_period=lambda: self.config.leader_election.retry_period)

    async def update_own_node(self) -> None:
        """Remove the deprecated master.version annotation from the node we run on (upstream)."""
        name = self.opts.node_name or os.environ.get("NODE_NAME", "")
        if not name or self.config.no_publish:
            return
        key = bk.instance_annotation(bk.MASTER_VERSION, self.opts.instance)
        try:
            obj = await get(self.write_api, NODES, name=name)
            if obj is None or key not in ((obj.get("metadata") or {}).get("annotations") or {}):
                return
            ptr = key.replace("~", "~0").replace("/", "~1")
            await patch(self.write_api, NODES, name=name, body=[{"op": "remove", "path": f"/metadata/annotations/{ptr}"}])
        except (kerr.ApiError, kerr.ApiUnavailable) as e:
            log.warning("could not clean up %s on node %s: %s", key, name, e)


@dataclass(slots=True)
class _BackgroundPass:
    """The node the background lane is processing, and whether it has got to writing."""

    node: str
    task: asyncio.Task[None]
    writing: bool = False


def _inputs(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """A desired-state key without the rules generation: what the merged features depend on."""
    return key[:1] + key[2:]


def _metadata_applied(obj: dict[str, Any], ops: list[dict[str, Any]]) -> bool:
    """Whether the node ``obj`` shows every label/annotation change of JSON patch ``ops``."""
    meta = obj.get("metadata") or {}
    for op in ops:
        if op["op"] == "test":
            continue
        parts = op["path"].split("/", 3)  # "", "metadata", "labels"|"annotations", key
        current = meta.get(parts[2]) or {}
        if len(parts) == 3:
            if any(current.get(k) != v for k, v in (op.get("value") or {}).items()):
                return False
            continue
        key = parts[3].replace("~1", "/").replace("~0", "~")
        if op["op"] == "remove":
            if key in current:
                return False
        elif current.get(key) != op.get("value"):
            return False
    return True
