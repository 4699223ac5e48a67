"""nfd-master's node updater: a node's desired state, its processing and the writes.

The desired state is computed from the node's merged NodeFeatures and the rules, and cached
while its inputs are unchanged; rule errors and rejected outputs are logged once per rule and
message, not once per node. Processing plans the patches against the cached Node
(nfd.nodestate.nodeplan) and writes only when the plan is not empty; the writes' answers go into
the controller's Node cache so their echoes re-queue nothing. Rule objects over their budget are
deferred (nfd.master.fairness) and run in the background lane, one node at a time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nfd.common.logsetup import klogger
from nfd.k8s import errors as kerr
from nfd.k8s.client import ApiClient
from nfd.k8s.fetching import get
from nfd.k8s.patching import patch
from nfd.k8s.resources import NODES
from nfd.master.config import policy_config
from nfd.master.controller import Controller
from nfd.master.evalsched import EvalSlicer
from nfd.master.eventsink import EventSink
from nfd.master.evidence import Evidence, skip_removal
from nfd.master.metrics import MasterMetrics
from nfd.master.options import LiveConfig, MasterOptions
from nfd.master.sharedvalues import SharedValues
from nfd.master.workqueue import RetryLater, ShutDown, WorkQueue
from nfd.nodestate import bookkeeping as bk
from nfd.nodestate.desired import Desired, Evaluation, desired_state_steps
from nfd.nodestate.nodefeatures import MergedNodeFeatures, merge_node_features
from nfd.nodestate.nodeplan import NodePlan, NodeState, ops_to_strategic, plan_node_update
from nfd.nodestate.outputpolicy import PolicyConfig
from nfd.nodestate.rulebook import RuleBook
from nfd.rules.engine import EvalBudget, RuleKey, RuleMemo

if TYPE_CHECKING:
    from nfd.master.fairness import CostLedger

log = logging.getLogger("nfd.master")
klog = klogger("nfd.master")


@dataclass(slots=True)
class CachedDesired:
    key: tuple[Any, ...]
    desired: Desired
    has_features: bool
    found: bool
    # outputs of the rules that matched, by RuleKey (rule set, rule, occurrence): what a rule failing at run time
    # on this node next time contributes instead of nothing
    outputs: Mapping[RuleKey, Any] = field(default_factory=dict)
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


class NodeUpdater:
    """Processes the nodes of ``node_queue`` and writes them: reads the ``caches`` (the
    controller's informers, where it also records its writes' answers), the config in force
    (``live``), the process ``opts`` and the ``rulebook``; keeps each node's desired state in
    ``desired_cache`` and the removal ``evidence``; charges the rule objects' costs to
    ``ledger``; writes with ``write_api``; reports to ``events`` and ``metrics``."""

    def __init__(
        self,
        caches: Controller,
        *,
        live: LiveConfig,
        opts: MasterOptions,
        rulebook: RuleBook,
        evidence: Evidence,
        ledger: CostLedger,
        node_queue: WorkQueue[str],
        desired_cache: MutableMapping[str, CachedDesired],
        write_api: ApiClient,
        events: EventSink,
        metrics: MasterMetrics,
    ) -> None:
        self.live = live
        self.opts = opts
        self.rulebook = rulebook
        self.metrics = metrics
        self.write_api = write_api
        self.evidence = evidence
        self.controller = caches
        self.node_queue = node_queue
        self.events = events
        self.desired_cache = desired_cache
        self.counts: dict[str, int] = {"noop": 0, "written": 0, "skipped_removal": 0}
        self._policy: tuple[int, PolicyConfig] | None = None  # config generation, policy
        self._logged_rule_errors: set[tuple[Any, ...]] = set()
        # Rule evaluation on the loop in shared slices, and the rule objects too costly to
        # evaluate with the others (docs/reliability.md, "One costly rule object").
        self.slicer = EvalSlicer()
        self.ledger = ledger
        # Nodes whose last evaluation deferred a rule object: evaluated in full in the
        # background lane, one at a time, while no other node work waits.
        self.deferred_queue: WorkQueue[str] = WorkQueue()
        self._background: _BackgroundPass | None = None
        self._set_names: tuple[int, frozenset[str]] = (-1, frozenset())  # rulebook generation, names
        # one object per distinct desired state, rule output and set of rule names (most nodes
        # share them with the nodes of the same hardware profile)
        self.shared = SharedValues()

        # Labels/annotations ride along in the nodes/status patch when both change (see _execute).
        self.combine_status_writes = True

    def policy(self) -> PolicyConfig:
        """The label policy of the config in force, built once per config generation."""
        gen = self.live.generation
        if self._policy is None or self._policy[0] != gen:
            self._policy = (gen, policy_config(self.live.config, disable_auto_prefix=self.opts.disable_auto_prefix))
        return self._policy[1]


    def merged_for(self, node: str) -> MergedNodeFeatures:
        keys = sorted(self.controller.nf_index.get(node, ()))
        entries = [e for e in (self.controller.nf_informer.cache.get(k) for k in keys) if e is not None]
        merged = merge_node_features(
            entries,
            node_name=node,
            master_namespace=self.opts.namespace,
            namespace_selected=self.controller.namespace_selected
            if self.live.config.restrictions.node_feature_namespace_selector is not None
            else None,
            deny_third_party_labels=self.live.config.restrictions.deny_node_feature_labels,
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
        dra = self.controller.dra.node_devices(node, self.controller.node_labels(node)).key if self.controller.dra_informer is not None else ()
        return (hashes, self.rulebook.generation, self.live.generation, self.controller.ns_selector_gen, dra)


    def _desired_key_gen(self) -> tuple[int, int]:
        return (self.rulebook.generation, self.live.generation)


    async def desired_for(self, node: str, *, background: bool = False) -> CachedDesired:
        """The node's desired state, from the cache while its inputs are unchanged. In the
        foreground, deferred rule objects are not run (their previous outputs stand in);
        ``background``: run everything, in the background lane's share of the loop."""
        key = self._desired_key(node)
        cached = self.desired_cache.get(node)
        if cached is not None and cached.key == key and not (background and cached.deferred):
            return cached
        if cached is not None and cached.merged is not None and _inputs(cached.key) == _inputs(key):
            # Only the rules changed: the node's features are as merged last time (the engine
            # never modifies them). Kept in masterless mode only, where there is one node.
            merged = cached.merged
            memo = cached.memo
        else:
            merged = self.merged_for(node)
            memo = RuleMemo() if self.opts.only_node else None
        rule_sets = self.rulebook.ordered()
        deferred = frozenset() if background else self.ledger.deferred()
        how = Evaluation(budget=EvalBudget(), previous=cached.outputs if cached is not None else None, memo=memo,
                         deferred=deferred)
        steps = desired_state_steps(merged, rule_sets, self.policy(), node_name=node, how=how)
        outcome = await self.slicer.drive(steps, background=background)
        desired, rep = outcome.desired, outcome.report
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
        skipped = self.shared.names(frozenset(rep.deferred))
        evaluated = self._evaluated_sets(cached.evaluated if cached is not None else frozenset(), rule_sets, skipped)
        cd = CachedDesired(key, self.shared.desired(desired), merged.has_features, merged.found,
                           self.shared.outputs(rep.outputs),
                           merged if self.opts.only_node else None, memo, skipped, evaluated,
                           self.shared.names(skipped - evaluated))
        self.desired_cache[node] = cd
        return cd


    def _evaluated_sets(self, before: frozenset[str], rule_sets: list[Any], skipped: frozenset[str]) -> frozenset[str]:
        """The rule objects evaluated on a node so far (CachedDesired.evaluated): those run now
        and those run before that still exist. One shared object per distinct value, not one
        per node (a hundred names are ~5 kB; five thousand nodes hold the same few sets)."""
        gen = self.rulebook.generation
        if self._set_names[0] != gen:
            self._set_names = (gen, frozenset(r.name for r in rule_sets))
        names = self._set_names[1]
        return self.shared.names((before & names) | (names - skipped))


    def _charge_budgets(self, node: str, over_budget: dict[str, str]) -> None:
        """Count the rule objects that ran out of a budget on ``node`` (nfd.master.fairness);
        one that now has on too many nodes is deferred, with one log line and one Event."""
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
                self.events.rule_broken(obj, msg, reason="RuleBudgetExceeded")


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


    async def background_worker(self) -> None:
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
            self.controller.forget_node(name)
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
        if self.live.config.no_publish:
            klog.info_s("node update skipped, NoPublish=true", v=1, nodeName=name)
            self.evidence.commit(name, res)
            return
        wrote = unsettled = False
        all_changes: list[str] = []
        counts: dict[str, int] = {}
        removed = False
        refreshed = False
        for _ in range(4):
            plan = plan_node_update(
                node,
                cd.desired,
                skip_removal=skip,
                allow_overwrite=self.live.config.restrictions.allow_overwrite,
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
                self.controller.forget_node(name)
                return
            except (kerr.Invalid, kerr.Conflict) as e:
                # Our cached view was stale (a key vanished, the resourceVersion moved): re-read.
                if refreshed:
                    raise
                log.info("node %s: cached state stale (%s); re-reading", name, e.reason or e.status)
                fresh = await self._fresh_node(name)
                if fresh is None:
                    self.controller.forget_node(name)
                    return
                node = fresh
                refreshed = True
                continue
            wrote = True
            if desc and desc not in all_changes:
                all_changes.append(desc)
            removed = removed or plan.changes.removed_anything()
            # Plan again on the write's answer. The label, annotation and resource patches are
            # not guarded by a resourceVersion, so a change someone made between our read and
            # our write (a prune removing the labels) is in that answer only: its watch event
            # carries an older resourceVersion than our write and is dropped as our own echo.
        else:
            if not wrote:
                raise RuntimeError(f"node {name}: plan did not converge")
            unsettled = True
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
        if unsettled:
            raise RetryLater("written, but changed by someone else after each write; processing it again")


    def _node_event(self, name: str, message: str) -> None:
        cached = self.controller.node_informer.get(name) or {"metadata": {"name": name}}
        self.events.node_updated(cached.get("metadata") or {"name": name}, message)



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
