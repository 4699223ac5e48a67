"""``nfd rules``: offline NodeFeatureRule tools (no cluster, no kubernetes client library).

    nfd rules validate -f FILE [-f FILE ...] [--crds DIR]
    nfd rules dryrun -f RULES.yaml --nodefeature NF.yaml [-o text|json] [--raw]
                     (NF.yaml: NodeFeature object(s), or ``nfd export features`` output)
                     [--config nfd-master.conf] [--enable-taints] [--disable-auto-prefix]
                     [--extra-label-ns NS,...] [--deny-label-ns NS,...] [--label-whitelist RE]
                     [--no-budget]   (default: nfd-master's per-node budgets, EvalBudget)

Thin over nfd.rules.lint.check_files (validate, shared with ``kubectl nfd validate``) and
nfd.nodestate (dryrun: the NodeFeatures merged, ``desired_state`` and the groups' membership,
as nfd-master computes them).

Exit status: 0 fine; 1 a problem (validate) or a rule error (dryrun); 2 a file that cannot be
read, is not YAML, is empty, repeats a key (dryrun), or holds no rule/group (resp. NodeFeature)
object.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any

import yaml

from nfd.api.crds import load_crds
from nfd.api.errors import ValidationError, ValidationErrors
from nfd.api.nodefeature import NodeFeature
from nfd.nodestate.desired import Evaluation, NodeOutcome, desired_state
from nfd.nodestate.groups import evaluate_group, member_name
from nfd.nodestate.nodefeatures import MergedNodeFeatures, merge_node_features
from nfd.nodestate.outputpolicy import PolicyConfig
from nfd.rules.conflicts import result_conflicts
from nfd.rules.engine import (
    BrokenRule,
    CompiledRuleSet,
    EvalBudget,
    compile_group_rules,
    compile_nodefeaturerule,
)
from nfd.rules.files import InputError, load_documents, objects_of_kinds
from nfd.rules.files import object_name as _obj_name
from nfd.rules.files import yaml_loader as _loader
from nfd.rules.lint import ServedCRDs, check_files, check_object, warning_lines
from nfd.sources.registry import published_features

__all__ = ["InputError", "load_documents", "main", "_loader"]


def _objects(path: str, kinds: tuple[str, ...], *, skip_other_nfd: bool = False) -> list[dict[str, Any]]:
    """The objects of ``kinds`` in ``path``; keys written twice are refused (kubectl refuses
    them, PyYAML would silently keep the last value)."""
    dups: list[Any] = []
    objs = objects_of_kinds(path, kinds, skip_other_nfd=skip_other_nfd, duplicates=dups)
    if dups:
        raise InputError(f"{path}: " + "; ".join(str(d) for d in dups))
    return objs


# -- validate --------------------------------------------------------------------------------


def cmd_validate(args: argparse.Namespace) -> int:
    try:
        served = served_crds_of(args.crds) if args.crds else None
        rep = check_files(args.files, auto_prefix=not args.disable_auto_prefix, published=published_features(),
                          served=served)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for f in rep.files:
        for d in f.duplicates:
            print(f"{f.path}: {d}")
        for check in f.objects:
            head = f"{f.path}: {check.kind} {check.name!r}"
            for line in warning_lines(check):
                print(f"{head}: warning: {line}")
            for fpath, msg in check.problems:
                print(f"{head}: {fpath}: {msg}" if fpath else f"{head}: {msg}")
    for c in rep.conflicts:
        print(f"warning: conflict: where both rules match, {c.message()}")
    if rep.problem_count:
        print(f"{rep.problem_count} problem(s) found")
        return 1
    print(f"{rep.object_count} object(s) valid")
    return 0


def served_crds_of(directory: str) -> Any:
    """nfd.rules.lint.ServedCRDs from a directory of CRD YAML files (another release's crds/,
    such as the NFD 0.19 CRDs a GPU Operator bundles). Raises InputError."""
    try:
        crds = load_crds(directory)
    except (OSError, yaml.YAMLError) as e:
        raise InputError(f"--crds {directory}: {e}") from None
    if not crds:
        raise InputError(f"--crds {directory}: no CustomResourceDefinition in its *.yaml files")
    return ServedCRDs.from_crds(crds, f"the CRDs in {directory}")


def checked(path: str, obj: dict[str, Any]) -> tuple[Any, list[str], list[tuple[str, str]]]:
    """(the object compiled, or None; what validation warns about in it: its notes, worded as
    ``validate`` words them, headed by the file and object; its unknown fields, (path,
    message), which kubectl apply refuses)."""
    check = check_object(obj)
    head = f"{path}: {check.kind} {check.name!r}"
    return check.rule_set, [f"{head}: {line}" for line in warning_lines(check)], check.unknown


# -- dryrun --------------------------------------------------------------------------------


def _policy_config(args: argparse.Namespace) -> Any:
    conf: dict[str, Any] = {}
    if args.config:
        docs = load_documents(args.config)
        if len(docs) > 1 or (docs and not isinstance(docs[0], dict)):
            raise InputError(f"{args.config}: not an nfd-master configuration object")
        conf = dict(docs[0]) if docs else {}
    if args.enable_taints:
        conf["enableTaints"] = True
    if args.extra_label_ns is not None:
        conf["extraLabelNs"] = [x for x in args.extra_label_ns.split(",") if x]
    if args.deny_label_ns is not None:
        conf["denyLabelNs"] = [x for x in args.deny_label_ns.split(",") if x]
    if args.label_whitelist is not None:
        conf["labelWhiteList"] = args.label_whitelist
    try:
        return PolicyConfig.from_master_config(conf, disable_auto_prefix=args.disable_auto_prefix)
    except ValidationError as e:
        raise InputError(f"{args.config or 'options'}: {e}") from None


def cmd_dryrun(args: argparse.Namespace) -> int:
    try:
        rule_objs = [
            (f, o) for f in args.files
            for o in _objects(f, ("NodeFeatureRule", "NodeFeatureGroup"), skip_other_nfd=True)
        ]
        nf_objs = _objects(args.nodefeature, ("NodeFeature",), skip_other_nfd=True)
        config = _policy_config(args)
        node = _dryrun_node(args.nodefeature, nf_objs, config)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    objs = _compile_objects(rule_objs)
    for w in objs.warnings:
        print(f"Warning: {w}", file=sys.stderr)
    for u in objs.unknown_errors:
        print(f"error: {u['message']}", file=sys.stderr)
    # the master's per-node budgets (EvalBudget's defaults, as nfd-master uses them), so a rule
    # that the master would stop is stopped here too, its error naming the budget
    how = Evaluation(budget=None if args.no_budget else EvalBudget(), explain=True)
    outcome = desired_state(node.merged, objs.rule_sets, config, node_name=node.name, how=how)
    out = _dryrun_json(outcome, objs, node, raw=args.raw, auto_prefix=not config.disable_auto_prefix)
    if args.output == "json":
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        rejected = [] if args.raw or outcome.policy is None else outcome.policy.rejected
        _print_text(out, rejected, raw=args.raw, title=node.title)
    return 1 if out["errors"] else 0


@dataclass(slots=True)
class _DryrunNode:
    merged: MergedNodeFeatures
    name: str  # the node's name, "" when the NodeFeatures name none
    title: str  # how the text output names it


def _dryrun_node(path: str, nf_objs: list[dict[str, Any]], config: PolicyConfig) -> _DryrunNode:
    """The NodeFeatures of ``path`` merged as nfd-master merges a node's. Raises InputError."""
    nfs = []
    for obj in nf_objs:
        try:
            nfs.append(NodeFeature.from_json(obj))
        except ValidationError as e:
            raise InputError(f"{path}: NodeFeature {_obj_name(obj)!r}: {e}") from None
    first = nfs[0]
    node_name = first.node_name or first.name
    # every object parsed above, so the merge skips none
    merged = merge_node_features(
        nf_objs, node_name=node_name, master_namespace=first.namespace,
        deny_third_party_labels=config.deny_node_feature_labels, auto_prefix=not config.disable_auto_prefix,
    )
    # ``nfd export features`` output names no node: the system source's nodename, else the file
    features = merged.features
    title = (f"Node {node_name!r}" if node_name else
             f"Node {member_name(features)!r} (system.name)" if member_name(features) else
             f"The features in {path}")
    return _DryrunNode(merged, node_name, title)


@dataclass(slots=True)
class _RuleObjects:
    rule_sets: list[CompiledRuleSet] = field(default_factory=list)
    groups: list[CompiledRuleSet] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # rule set name -> file, for messages
    warnings: list[str] = field(default_factory=list)
    unknown_errors: list[dict[str, str]] = field(default_factory=list)


def _compile_objects(rule_objs: list[tuple[str, dict[str, Any]]]) -> _RuleObjects:
    """The files' NodeFeatureRules and NodeFeatureGroups compiled (a malformed spec fails the
    whole object, like one bad rule), with what validation warns about them."""
    out = _RuleObjects()
    for fname, obj in rule_objs:
        out.files.setdefault(_obj_name(obj), fname)
        rs, warns, unknown = checked(fname, obj)  # compiled once, for the warnings and the evaluation
        out.warnings.extend(warns)
        # kubectl apply refuses an unknown field (a typo such as matchFeature: the engine would
        # ignore it, and a rule left without its match term matches every node)
        name = _obj_name(obj)
        out.unknown_errors.extend({"rule": _rule_name_at(obj, p) or name,
                                   "message": f"{fname}: {obj.get('kind')} {name!r}: {p}: {m}"} for p, m in unknown)
        group = obj.get("kind") == "NodeFeatureGroup"
        try:
            (out.groups if group else out.rule_sets).append(
                rs if rs is not None else compile_group_rules(obj) if group else compile_nodefeaturerule(obj))
        except ValidationError as e:  # malformed spec: the whole object fails, like one bad rule
            name = _obj_name(obj)
            (out.groups if group else out.rule_sets).append(CompiledRuleSet(
                name=name, rules=[BrokenRule(name, str(e), "spec")],
                kind=str(obj.get("kind")), namespace=str((obj.get("metadata") or {}).get("namespace") or "")))
    return out


def _dryrun_json(outcome: NodeOutcome, objs: _RuleObjects, node: _DryrunNode, *, raw: bool,
                 auto_prefix: bool) -> dict[str, Any]:
    """``nfd rules dryrun -o json``: what the master would apply (``raw``: the rules' combined
    output before the policy), each rule's and group's outcome, the conflicts and errors."""
    res = outcome.rules
    features = node.merged.features
    errors = objs.unknown_errors + [{"rule": n, "message": m} for n, m in res.errors]
    out: dict[str, Any] = {"node": node.name or member_name(features)}
    o = res.output
    pol = outcome.policy
    if raw or pol is None:
        out.update({
            "labels": dict(sorted(o.labels.items())),
            "annotations": dict(sorted(o.annotations.items())),
            "vars": dict(sorted(o.vars.items())),
            "taints": [dict(t) for t in o.taints],
            "extendedResources": dict(sorted(o.extended_resources.items())),
        })
        rejected: list[Any] = []
    else:
        out.update({
            "labels": dict(sorted(pol.labels.items())),
            "annotations": dict(sorted(pol.annotations.items())),
            "vars": dict(sorted(o.vars.items())),
            "taints": pol.taints,
            "extendedResources": dict(sorted(pol.extended_resources.items())),
        })
        rejected = pol.rejected
    out["rejected"] = [{"kind": r.kind, "key": r.key, "reason": r.reason} for r in rejected]
    out["rules"] = [_result_json(r, objs.files) for r in res.results]
    out["groups"] = _groups_json(objs, node, errors)
    out["conflicts"] = [c.to_json() | {"message": c.message()}
                        for c in result_conflicts(res.results, auto_prefix=auto_prefix)]
    out["errors"] = errors
    out["warnings"] = objs.warnings
    return out


def _groups_json(objs: _RuleObjects, node: _DryrunNode, errors: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Each NodeFeatureGroup's verdict on the node (a group rule's error goes to ``errors``)."""
    features = node.merged.features
    group_out = []
    for g in sorted(objs.groups, key=lambda g: (g.namespace, g.name)):
        results = evaluate_group(g, features, node_name=node.name)
        for r in results:
            if r.error is not None:
                errors.append({"rule": f"{g.name}/{r.name}", "message": r.error})
        group_out.append({
            "group": g.name, "namespace": g.namespace,
            "member": any(r.matched for r in results),
            "memberName": member_name(features) or node.name,
            "rules": [_result_json(r, objs.files) for r in results],
        })
    return group_out


def _rule_name_at(obj: dict[str, Any], path: str) -> str | None:
    """The name of the rule that ``path`` (``spec.rules[2]...``) is in, if any."""
    m = re.match(r"spec\.(rules|featureGroupRules)\[(\d+)\]", path)
    spec = obj.get("spec")
    rules = spec.get(m.group(1)) if m and isinstance(spec, dict) else None
    if not isinstance(rules, list) or int(m.group(2)) >= len(rules):  # type: ignore[union-attr]
        return None
    r = rules[int(m.group(2))]  # type: ignore[union-attr]
    return str(r.get("name")) if isinstance(r, dict) and r.get("name") else None


def _result_json(r: Any, files: dict[str, str]) -> dict[str, Any]:
    """One rule's outcome: matched, or why not, or its error (and the file of its object)."""
    j: dict[str, Any] = {"ruleSet": r.rule_set, "rule": r.name, "matched": r.matched}
    if r.error is not None:
        j["error"] = r.error
        j["file"] = files.get(r.rule_set, "?")
    elif not r.matched:
        j["reason"] = r.reason or "did not match"
    return j


def _status(j: dict[str, Any]) -> str:
    if "error" in j:
        return f"ERROR: {j['error']} (in {j['file']})"
    return "matched" if j["matched"] else f"not matched: {j['reason']}"


def _print_text(out: dict[str, Any], rejected: list[Any], *, raw: bool, title: str) -> None:
    w = sys.stdout.write
    w(f"{title}: {'raw rule output (before policy)' if raw else 'what nfd-master would apply'}\n")
    for heading, key in (
        ("Labels", "labels"),
        ("Annotations", "annotations"),
        ("Extended resources", "extendedResources"),
        ("Vars (not published)", "vars"),
    ):
        items = out[key]
        w(f"{heading}:{'' if items else ' (none)'}\n")
        for k, v in items.items():
            w(f"  {k}={v}\n")
    w(f"Taints:{'' if out['taints'] else ' (none)'}\n")
    for t in out["taints"]:
        w(f"  {t['key']}={t['value']}:{t['effect']}\n" if t.get("value") else f"  {t['key']}:{t['effect']}\n")
    if rejected:
        w("Rejected by policy:\n")
        for r in rejected:
            w(f"  {r.kind} {r.key}: {r.reason}\n")
    if out["conflicts"]:
        w("Conflicts between rules:\n")
        for c in out["conflicts"]:
            w(f"  {c['message']}\n")
    w("Rules:" + ("" if out["rules"] else " (none)") + "\n")
    for j in out["rules"]:
        w(f"  {j['ruleSet']}/{j['rule']}: {_status(j)}\n")
    if out["groups"]:
        w("NodeFeatureGroups:\n")
        for g in out["groups"]:
            ref = f"{g['namespace']}/{g['group']}" if g["namespace"] else g["group"]
            verdict = f"member (as {g['memberName']!r})" if g["member"] else "not a member"
            w(f"  {ref}: {verdict}\n")
            for j in g["rules"]:
                w(f"    {j['rule']}: {_status(j)}\n")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nfd rules", description="Offline NodeFeatureRule tools")
    sub = p.add_subparsers(dest="command", metavar="{validate,dryrun}")
    v = sub.add_parser(
        "validate",
        help="check NodeFeatureRule (and NodeFeatureGroup) files",
        description="Check NodeFeatureRule and NodeFeatureGroup files as nfd-master would read them: "
        "every problem is printed with its file, rule and field; exit 1 when one is found.",
    )
    v.add_argument(
        "-f",
        "--file",
        dest="files",
        action="append",
        required=True,
        help="YAML file (repeatable, - for stdin)",
    )
    v.add_argument("--disable-auto-prefix", action="store_true",
                   help="check label names as nfd-master does with the DisableAutoPrefix feature gate")
    v.add_argument("--crds", metavar="DIR",
                   help="also check against the CRDs in DIR (*.yaml; e.g. an older NFD's, as a cluster serves "
                   "them): every field their schema would prune, and each rule that would then match every node")
    d = sub.add_parser(
        "dryrun",
        help="evaluate rules against a NodeFeature object",
        description="Evaluate NodeFeatureRules against a NodeFeature (e.g. `nfd export features -o yaml`) "
        "offline and print the labels, annotations, extended resources and taints nfd-master would "
        "write, with the reason each rule matched or not.",
    )
    d.add_argument(
        "-f", "--file", dest="files", action="append", required=True, help="NodeFeatureRule YAML (repeatable)"
    )
    d.add_argument("--nodefeature", required=True, help="NodeFeature YAML (several documents are merged)")
    d.add_argument("-o", "--output", choices=("text", "json"), default="text", help="output format (default: text)")
    d.add_argument("--raw", action="store_true", help="the engine's combined output before master policy")
    d.add_argument("--no-budget", action="store_true",
                   help="evaluate without nfd-master's per-node time and template-step budgets")
    d.add_argument("--config", help="nfd-master configuration file for the policy")
    d.add_argument("--enable-taints", action="store_true", help="apply taints, as nfd-master's -enable-taints")
    d.add_argument("--disable-auto-prefix", action="store_true",
                   help="as nfd-master with the DisableAutoPrefix feature gate")
    d.add_argument("--extra-label-ns", help="comma-separated extra label namespaces to allow, as nfd-master's flag")
    d.add_argument("--deny-label-ns", help="comma-separated label namespaces to deny, as nfd-master's flag")
    d.add_argument("--label-whitelist", help="regexp on label names, as nfd-master's -label-whitelist")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # a command group without its subcommand: help, as cobra and `nfd compat`
        parser.print_help()
        return 0
    try:
        if args.command == "validate":
            return cmd_validate(args)
        return cmd_dryrun(args)
    except ValidationErrors as e:  # should not escape, but never show a traceback
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
