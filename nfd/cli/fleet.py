"""``kubectl nfd test --all-nodes | -l SELECTOR``: what applying a rule file would do to a fleet.

Read-only. The cluster's NodeFeatureRules, with the file's objects put in as the master would
take them (a same-named object replaced; an edit that breaks a rule keeps the old revision, as
the master's RuleBook does), are evaluated for every selected node on its merged NodeFeatures by
the master's own way (nfd.nodestate: ``merge_node_features``, ``desired_state`` with the master's
per-node budgets), and the result is planned against the Node as it is now by the master's
``plan_node_update``, so removals follow the bookkeeping annotations exactly as nfd-master would
perform them. The plan's changes are counted per label, annotation, extended resource and taint
(gain, change, lose), and the pods on each node that a new or changed NoExecute taint would evict
(no toleration matches it) are listed. The file's NodeFeatureGroups are evaluated over the same
nodes as nfd-master's group pass would (``nfd.nodestate.groups``), and their membership is compared
with each group's status in the cluster: the nodes that would join and leave.

The master is assumed to be running steadily (it has processed every node once), so a node
without any NodeFeature loses what nfd manages on it, as nfd-master would do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from nfd.api.errors import ValidationError
from nfd.k8s.client import ApiClient
from nfd.k8s.config import ConfigError, load_kubeconfig
from nfd.k8s.errors import ApiError, ApiUnavailable
from nfd.k8s.fetching import list_objects
from nfd.k8s.resources import NODEFEATUREGROUPS, NODEFEATURERULES, NODEFEATURES, NODES, PODS
from nfd.nodestate.bookkeeping import Taint
from nfd.nodestate.desired import Evaluation, desired_state
from nfd.nodestate.groups import FULL, group_members, member_name, policy_of
from nfd.nodestate.nodefeatures import (
    MergedNodeFeatures,
    compact_nodefeature,
    merge_node_features,
    node_name_of,
)
from nfd.nodestate.nodeplan import NodeState, plan_node_update
from nfd.nodestate.outputpolicy import PolicyConfig
from nfd.nodestate.rulebook import RuleBook
from nfd.rules.conflicts import duplicate_rule_names, find_conflicts
from nfd.rules.engine import CompiledRuleSet, EvalBudget, compile_group_rules, compile_nodefeaturerule

KINDS = ("label", "annotation", "extended resource", "taint")


@dataclass(slots=True)
class ItemEffect:
    """One label/annotation/extended resource/taint and the nodes where it appears, changes, goes."""

    kind: str
    key: str
    gain: list[str] = field(default_factory=list)
    change: list[str] = field(default_factory=list)
    lose: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "gain": self.gain, "change": self.change, "lose": self.lose}


@dataclass(slots=True)
class Eviction:
    pod: str  # namespace/name
    node: str
    taint: str  # key=value:NoExecute
    after_s: int | None = None  # a toleration with tolerationSeconds: evicted after that long

    def to_json(self) -> dict[str, Any]:
        return {"pod": self.pod, "node": self.node, "taint": self.taint, "afterSeconds": self.after_s}


@dataclass(slots=True)
class GroupEffect:
    """One NodeFeatureGroup of the file: its members among the evaluated nodes, and how that
    differs from the group's status in the cluster (``now``: None when the group is not there)."""

    namespace: str
    name: str
    members: list[str] = field(default_factory=list)
    now: list[str] | None = None
    now_count: int | None = None  # status.nodeCount (a CountOnly group lists no nodes)
    count_only: bool = False
    join: list[str] = field(default_factory=list)
    leave: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"group": self.name, "namespace": self.namespace, "members": self.members,
                "exists": self.now is not None, "nodeCountNow": self.now_count,
                "join": self.join, "leave": self.leave}


@dataclass(slots=True)
class FleetReport:
    nodes: list[str] = field(default_factory=list)
    without_nodefeature: list[str] = field(default_factory=list)
    items: dict[tuple[str, str], ItemEffect] = field(default_factory=dict)
    # node -> the NoExecute taints (key, value) it gains or whose value changes
    new_noexecute: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    rule_errors: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (rule, message) -> nodes
    rulebook_messages: list[str] = field(default_factory=list)
    merge_errors: list[str] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    # conflicts between rules (nfd.rules.conflicts), by message: (the conflict, nodes)
    conflicts: dict[str, tuple[Any, list[str]]] = field(default_factory=dict)
    groups: list[GroupEffect] = field(default_factory=list)
    group_errors: list[str] = field(default_factory=list)  # a file group that cannot be evaluated

    def effect(self, kind: str, key: str) -> ItemEffect:
        got = self.items.get((kind, key))
        if got is None:
            got = self.items[(kind, key)] = ItemEffect(kind, key)
        return got

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": len(self.nodes),
            "nodesWithoutNodeFeature": self.without_nodefeature,
            "items": [e.to_json() for e in self.sorted_items()],
            "evictions": [e.to_json() for e in self.evictions],
            "ruleErrors": [{"rule": r, "message": m, "nodes": n} for (r, m), n in sorted(self.rule_errors.items())],
            "ruleObjects": self.rulebook_messages,
            "nodeFeatureErrors": self.merge_errors,
            "conflicts": [c.to_json() | {"message": m, "nodes": n} for m, (c, n) in sorted(self.conflicts.items())],
            "groups": [g.to_json() for g in self.groups],
            "groupErrors": self.group_errors,
        }

    def sorted_items(self) -> list[ItemEffect]:
        return [self.items[k] for k in sorted(self.items, key=lambda k: (KINDS.index(k[0]), k[1]))]


# -- pure: rules, nodes and features in, effects out ------------------------------------------


def build_rulebook(cluster_rules: Iterable[dict[str, Any]], file_rules: Iterable[dict[str, Any]],
                   report: FleetReport) -> RuleBook:
    """The master's RuleBook after the cluster's objects, then the file's (as an apply would)."""
    book = RuleBook()
    for obj in cluster_rules:
        book.upsert(obj)
    for obj in file_rules:
        msg = book.upsert(obj)
        if msg:
            report.rulebook_messages.append(msg)
        try:  # two rules of one object with one name: named, as validate names them
            rs = compile_nodefeaturerule(obj)
        except ValidationError:
            continue
        report.rulebook_messages.extend(f"NodeFeatureRule {rs.name!r}: {p}: {m}" for p, m in duplicate_rule_names(rs))
    return book


def compile_file_groups(file_groups: Iterable[dict[str, Any]], cluster_groups: Iterable[dict[str, Any]], *,
                        default_namespace: str, report: FleetReport) -> list[tuple[Any, dict[str, Any] | None]]:
    """The file's NodeFeatureGroups compiled, each with the cluster's object of the same
    namespace/name (None when absent); one without a namespace goes where ``kubectl apply``
    would put it (``default_namespace``). A group that does not compile is named in
    ``report.group_errors`` and left out."""
    in_cluster = {((o.get("metadata") or {}).get("namespace") or "", (o.get("metadata") or {}).get("name") or ""): o
                  for o in cluster_groups}
    out: list[tuple[Any, dict[str, Any] | None]] = []
    for obj in file_groups:
        raw = obj.get("metadata")
        meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
        ns = str(meta.get("namespace") or default_namespace)
        name = str(meta.get("name") or "")
        try:
            group = compile_group_rules(obj)
        except ValidationError as e:
            report.group_errors.append(f"NodeFeatureGroup {ns}/{name}: {e}")
            continue
        group.namespace = ns
        out.append((group, in_cluster.get((ns, name))))
    return out


def plan_groups(groups: Iterable[tuple[Any, dict[str, Any] | None]], merged: dict[str, MergedNodeFeatures], *,
                whole_cluster: bool, report: FleetReport) -> None:
    """Each group's members among the evaluated nodes (``merged``: node name -> its merged
    NodeFeatures), by nfd-master's own ``nfd.nodestate.groups.group_members``, against the group's
    status now. With a selector (not ``whole_cluster``) only status entries of the evaluated
    nodes can leave. A group rule's error is collected like a rule's (the master counts that
    rule as not matched)."""
    # the name status.nodes carries for each evaluated node with a NodeFeature
    names = {member_name(m.features) or node for node, m in merged.items() if m.sources}
    for group, current in groups:
        eff = GroupEffect(group.namespace, group.name)

        def failed(node: str, r: Any, group: Any = group) -> None:
            report.rule_errors.setdefault((f"{group.name}/{r.name}", r.error), []).append(node)

        eff.members = group_members(group, nodes=list(merged), merged_for=merged.__getitem__, on_error=failed)
        if current is not None:
            status = current.get("status") or {}
            listed = [str(n.get("name")) for n in status.get("nodes") or [] if isinstance(n, dict)]
            count = status.get("nodeCount")
            eff.now_count = count if isinstance(count, int) else len(listed)
            if policy_of(current) == FULL:
                eff.now = listed
                scope = set(listed) if whole_cluster else set(listed) & names
                eff.join = [n for n in eff.members if n not in listed]
                eff.leave = sorted(scope - set(eff.members))
            else:
                eff.now, eff.count_only = [], True
        report.groups.append(eff)


def plan_fleet(
    *,
    nodes: list[dict[str, Any]],
    nodefeatures: list[dict[str, Any]],
    rule_sets: list[CompiledRuleSet],
    policy: PolicyConfig,
    namespace: str,
    instance: str = "",
    report: FleetReport | None = None,
    groups: Iterable[tuple[Any, dict[str, Any] | None]] = (),
    whole_cluster: bool = True,
) -> FleetReport:
    """Evaluate and plan every node as nfd-master would; count the changes per item. ``groups``
    (from ``compile_file_groups``) are evaluated over the same nodes (``plan_groups``)."""
    rep = report if report is not None else FleetReport()
    merged_by_node: dict[str, MergedNodeFeatures] = {}
    by_node: dict[str, list[dict[str, Any]]] = {}
    for obj in nodefeatures:
        entry = compact_nodefeature(obj)
        name = node_name_of(entry)
        if name:
            by_node.setdefault(name, []).append(entry)
    for obj in sorted(nodes, key=lambda o: (o.get("metadata") or {}).get("name") or ""):
        state = NodeState.from_obj(obj)
        name = state.name
        rep.nodes.append(name)
        merged = merge_node_features(
            by_node.get(name, []), node_name=name, master_namespace=namespace,
            deny_third_party_labels=policy.deny_node_feature_labels, auto_prefix=not policy.disable_auto_prefix,
        )
        rep.merge_errors.extend(f"node {name}: {e}" for e in merged.errors)
        merged_by_node[name] = merged
        if not merged.found:
            rep.without_nodefeature.append(name)
        outcome = desired_state(merged, rule_sets, policy, node_name=name, how=Evaluation(budget=EvalBudget()))
        desired, node_rep = outcome.desired, outcome.report
        for rule, msg in node_rep.rule_errors:
            rep.rule_errors.setdefault((rule, msg), []).append(name)
        # the matched rules' outputs, in the master's order
        outs = [(rs, rule, o.labels, o.annotations, o.extended_resources, o.taints)
                for (rs, rule, _), o in node_rep.outputs.items()]
        for c in find_conflicts(outs, auto_prefix=not policy.disable_auto_prefix):
            rep.conflicts.setdefault(c.message(), (c, []))[1].append(name)
        # skip_removal=False: a master that has processed the node once removes on evidence.
        ch = plan_node_update(state, desired, skip_removal=False, allow_overwrite=policy.allow_overwrite,
                              instance=instance).changes
        for kind, gained, changed, lost in (
            ("label", ch.labels_added, ch.labels_updated, ch.labels_removed),
            ("annotation", ch.annotations_added, ch.annotations_updated, ch.annotations_removed),
        ):
            for k in gained:
                rep.effect(kind, k).gain.append(name)
            for k in changed:
                rep.effect(kind, k).change.append(name)
            for k in lost:
                rep.effect(kind, k).lose.append(name)
        cap = state.capacity or {}
        for r in ch.resources_set:
            (rep.effect("extended resource", r).change if r in cap else rep.effect("extended resource", r).gain
             ).append(name)
        for r in ch.resources_removed:
            rep.effect("extended resource", r).lose.append(name)
        present = {(t.get("key"), t.get("effect")) for t in state.taints}
        want = {(t.key, t.effect): t for t in desired.taints}
        for s in ch.taints_set:
            t = next(x for x in want.values() if x.to_string() == s)
            ident = f"{t.key}:{t.effect}"
            (rep.effect("taint", ident).change if (t.key, t.effect) in present else rep.effect("taint", ident).gain
             ).append(name)
            if t.effect == "NoExecute":
                rep.new_noexecute.setdefault(name, []).append((t.key, t.value))
        for s in ch.taints_removed:
            t = Taint(*_split_taint(s))
            rep.effect("taint", f"{t.key}:{t.effect}").lose.append(name)
    plan_groups(groups, merged_by_node, whole_cluster=whole_cluster, report=rep)
    return rep


def _split_taint(s: str) -> tuple[str, str, str]:
    kv, _, effect = s.rpartition(":")
    key, _, value = kv.partition("=")
    return key, value, effect


def tolerates(tolerations: list[dict[str, Any]], *, key: str, value: str, effect: str) -> tuple[bool, int | None]:
    """(tolerated, tolerationSeconds) as Kubernetes matches a pod's tolerations to a taint.

    An empty effect matches every effect; ``Exists`` with an empty key matches every key;
    ``Equal`` (the default operator) needs key and value equal. A matching toleration with
    ``tolerationSeconds`` only delays a NoExecute eviction: the shortest such delay is returned.
    """
    delays: list[int] = []
    for tol in tolerations or []:
        if not isinstance(tol, dict):
            continue
        t_effect = tol.get("effect") or ""
        if t_effect and t_effect != effect:
            continue
        op = tol.get("operator") or "Equal"
        t_key = tol.get("key") or ""
        if op == "Exists":
            if t_key and t_key != key:
                continue
        elif op == "Equal":
            if t_key != key or (tol.get("value") or "") != value:
                continue
        else:
            continue
        secs = tol.get("tolerationSeconds")
        if secs is None:
            return True, None
        delays.append(max(int(secs), 0))
    if delays:
        return False, min(delays)
    return False, None


def evictions(report: FleetReport, pods: Iterable[dict[str, Any]]) -> list[Eviction]:
    """The pods a node's new NoExecute taints would evict: running on it, no matching toleration."""
    out: list[Eviction] = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        node = spec.get("nodeName") or ""
        if node not in report.new_noexecute:
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue  # finished: nothing to evict
        for key, value in report.new_noexecute[node]:
            ok, after = tolerates(spec.get("tolerations") or [], key=key, value=value, effect="NoExecute")
            if not ok:
                taint = f"{key}={value}:NoExecute" if value else f"{key}:NoExecute"
                out.append(Eviction(f"{meta.get('namespace', '')}/{meta.get('name', '')}", node, taint, after))
                break
    out.sort(key=lambda e: (e.node, e.pod))
    return out


# -- output ---------------------------------------------------------------------------------


def print_report(report: FleetReport, *, show_nodes: bool, write: Any) -> None:
    w = write
    n = len(report.nodes)
    for msg in report.rulebook_messages:
        w(f"warning: {msg}\n")
    titles = {"label": "Labels", "annotation": "Annotations", "extended resource": "Extended resources",
              "taint": "Taints"}
    items = report.sorted_items()
    for kind in KINDS:
        mine = [e for e in items if e.kind == kind and (e.gain or e.change or e.lose)]
        w(f"{titles[kind]}:{'' if mine else ' (no change)'}\n")
        for e in mine:
            w(f"  {e.key}: gain {len(e.gain)}, change {len(e.change)}, lose {len(e.lose)} (of {n} nodes)\n")
            if show_nodes:
                for verb, names in (("gain", e.gain), ("change", e.change), ("lose", e.lose)):
                    if names:
                        w(f"    {verb}: {', '.join(names)}\n")
    w(f"Pods a new NoExecute taint would evict: {len(report.evictions) or '(none)'}\n")
    for ev in report.evictions:
        later = f" after {ev.after_s}s (tolerationSeconds)" if ev.after_s is not None else ""
        w(f"  {ev.pod} on {ev.node}: {ev.taint}{later}\n")
    if report.without_nodefeature:
        listed = f": {', '.join(report.without_nodefeature)}" if show_nodes else ""
        w(f"Nodes without a NodeFeature (nfd-master removes what it manages on them): "
          f"{len(report.without_nodefeature)}{listed}\n")
    for err in report.merge_errors:
        w(f"warning: {err}\n")
    if report.conflicts:
        w("Conflicts between rules:\n")
        for msg, (_, names) in sorted(report.conflicts.items()):
            where = ", ".join(names) if show_nodes else f"{len(names)} node(s)"
            w(f"  {msg}: on {where}\n")
    if report.groups:
        w("NodeFeatureGroups:\n")
    for g in report.groups:
        if g.now is None:
            now = "not in the cluster"
        elif g.count_only:
            now = f"now {g.now_count}; CountOnly: members not listed"
        else:
            now = f"now {g.now_count or 0}; join {len(g.join)}, leave {len(g.leave)}"
        w(f"  {g.namespace}/{g.name}: {len(g.members)} member(s) of {n} nodes ({now})\n")
        if show_nodes:
            for verb, names in (("members", g.members), ("join", g.join), ("leave", g.leave)):
                if names:
                    w(f"    {verb}: {', '.join(names)}\n")
    for err in report.group_errors:
        w(f"error: {err}\n")
    for (rule, msg), failed in sorted(report.rule_errors.items()):
        where = ", ".join(failed) if show_nodes else f"{len(failed)} node(s)"
        w(f"rule {rule} failed on {where}: {msg}\n")


# -- the cluster (reads only) -----------------------------------------------------------------


class ClusterError(Exception):
    """A request the report needs failed: one line, exit status 1."""


def fetch_and_plan(
    *,
    kubeconfig: str | None,
    selector: str,
    file_rules: list[dict[str, Any]],
    policy: PolicyConfig,
    namespace: str,
    instance: str = "",
    file_groups: list[dict[str, Any]] | None = None,
) -> FleetReport:
    """List Nodes (by ``selector``), NodeFeatures and NodeFeatureRules (and NodeFeatureGroups when
    the file has some), plan, then list the pods of the nodes that gain a NoExecute taint. Raises
    ClusterError with the failed request."""
    try:
        cfg = load_kubeconfig(kubeconfig)
    except ConfigError as e:
        raise ClusterError(f"error building kubeconfig: {e}") from None

    async def go() -> FleetReport:
        async with ApiClient(cfg, user_agent="kubectl-nfd") as api:
            what = "Nodes"
            try:
                nodes, _ = await list_objects(api, NODES, label_selector=selector or None)
                what = "NodeFeatures"
                nfs, _ = await list_objects(api, NODEFEATURES)
                what = "NodeFeatureRules"
                nfrs, _ = await list_objects(api, NODEFEATURERULES)
                nfgs: list[dict[str, Any]] = []
                if file_groups:
                    what = "NodeFeatureGroups"
                    nfgs, _ = await list_objects(api, NODEFEATUREGROUPS)
                rep = FleetReport()
                book = build_rulebook(nfrs, file_rules, rep)
                groups = compile_file_groups(file_groups or [], nfgs, default_namespace=cfg.namespace or "default",
                                             report=rep)
                plan_fleet(nodes=nodes, nodefeatures=nfs, rule_sets=book.ordered(), policy=policy,
                           namespace=namespace, instance=instance, report=rep, groups=groups,
                           whole_cluster=not selector)
                pods: list[dict[str, Any]] = []
                what = "Pods"
                for node in sorted(rep.new_noexecute):
                    pods.extend((await list_objects(api, PODS, field_selector=f"spec.nodeName={node}"))[0])
                rep.evictions = evictions(rep, pods)
                return rep
            except (ApiError, ApiUnavailable, OSError) as e:
                raise ClusterError(f"failed to list {what}: {e}") from None

    return asyncio.run(go())
