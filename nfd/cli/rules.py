"""``nfd rules``: offline NodeFeatureRule tools (no cluster, no kubernetes client library).

    nfd rules validate -f FILE [-f FILE ...]
    nfd rules dryrun -f RULES.yaml --nodefeature NF.yaml [-o text|json] [--raw]
                     (NF.yaml: NodeFeature object(s), or ``nfd export features`` output)
                     [--config nfd-master.conf] [--enable-taints] [--disable-auto-prefix]
                     [--extra-label-ns NS,...] [--deny-label-ns NS,...] [--label-whitelist RE]
                     [--no-budget]   (default: nfd-master's per-node budgets, EvalBudget)

Exit status: 0 fine; 1 a rule problem (validate) or a rule error (dryrun); 2 a file that cannot be
read, is not YAML, or does not hold NodeFeatureRule (resp. NodeFeature) objects.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from nfd.api.errors import ValidationError, ValidationErrors


class InputError(Exception):
    """A file-level problem (exit status 2)."""


def _loader() -> Any:
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc,valid-type]
        """SafeLoader without the timestamp resolver: dates stay strings, as in Kubernetes."""

    Loader.yaml_implicit_resolvers = {
        k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
        for k, v in base.yaml_implicit_resolvers.items()
    }
    return Loader


def load_documents(path: str) -> list[Any]:
    """Every non-empty YAML/JSON document in ``path``; ``List`` objects are flattened."""
    import yaml

    from nfd.common import safeyaml
    from nfd.common.fileargs import FileArgError, read_text_arg

    try:
        text = read_text_arg(path)
    except FileArgError as e:
        raise InputError(str(e)) from None
    try:
        docs = [d for d in safeyaml.safe_load_all(text, source=path, loader=_loader()) if d is not None]
    except safeyaml.YamlLimitError as e:
        raise InputError(str(e)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(f"{path}: not valid YAML{where}: {problem}") from None
    out: list[Any] = []
    for d in docs:
        if isinstance(d, dict) and isinstance(d.get("kind"), str) and d["kind"].endswith("List"):
            items = d.get("items") or []
            if not isinstance(items, list):
                raise InputError(f"{path}: {d['kind']}.items must be a list")
            out.extend(items)
        else:
            out.append(d)
    return out


_FEATURE_KEYS = frozenset({"flags", "attributes", "instances"})


# other NFD kinds that may share a file with the ones a command reads; they are skipped
_NFD_KINDS = frozenset({"NodeFeature", "NodeFeatureRule", "NodeFeatureGroup"})


def _objects(path: str, kinds: tuple[str, ...], *, skip_other_nfd: bool = False) -> list[dict[str, Any]]:
    docs = load_documents(path)
    if kinds == ("NodeFeature",):
        # also accept bare features (``nfd export features`` output) as an anonymous NodeFeature
        docs = [
            {"kind": "NodeFeature", "metadata": {"name": ""}, "spec": {"features": d}}
            if isinstance(d, dict) and "kind" not in d and d and set(d) <= _FEATURE_KEYS
            else d
            for d in docs
        ]
    out = []
    for i, d in enumerate(docs):
        kind = d.get("kind") if isinstance(d, dict) else None
        if kind in kinds:
            out.append(d)
        elif not (skip_other_nfd and kind in _NFD_KINDS):
            raise InputError(
                f"{path}: document {i + 1} is not a {' or '.join(kinds)} object (kind: {kind!r})"
            )
    if not out:
        raise InputError(f"{path}: no {' or '.join(kinds)} object found")
    return out


def _obj_name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, dict) else ""


# -- validate --------------------------------------------------------------------------------


def cmd_validate(args: argparse.Namespace) -> int:
    from nfd.rules.lint import check_object, warning_lines

    problems = 0
    checked = 0
    for path in args.files:
        try:
            objs = _objects(path, ("NodeFeatureRule", "NodeFeatureGroup"))
        except InputError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        for obj in objs:
            checked += 1
            check = check_object(obj, auto_prefix=not args.disable_auto_prefix)
            head = f"{path}: {check.kind} {check.name!r}"
            for line in warning_lines(check):
                print(f"{head}: warning: {line}")
            for fpath, msg in check.problems:
                print(f"{head}: {fpath}: {msg}" if fpath else f"{head}: {msg}")
                problems += 1
    if problems:
        print(f"{problems} problem(s) found", file=sys.stderr)
        return 1
    print(f"{checked} object(s) valid", file=sys.stderr)
    return 0


def print_warnings(path: str, obj: dict[str, Any]) -> None:
    """What validation would warn about in a rule object dryrun evaluates (unknown fields), on
    stderr as ``kubectl apply`` prints its warnings; evaluation goes on."""
    from nfd.api.nodefeaturerule import unknown_field_message, unknown_fields

    for p in unknown_fields(obj):
        print(f"Warning: {path}: NodeFeatureRule {_obj_name(obj)!r}: {unknown_field_message(p)}", file=sys.stderr)


# -- dryrun --------------------------------------------------------------------------------


def _policy_config(args: argparse.Namespace) -> Any:
    from nfd.rules.policy import PolicyConfig

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
    from nfd.api.nodefeature import NodeFeature
    from nfd.rules.engine import (
        BrokenRule,
        CompiledRuleSet,
        EvalBudget,
        compile_nodefeaturerule,
        process_rule_sets,
    )
    from nfd.rules.nodefeatures import merge_node_features
    from nfd.rules.policy import apply_policy

    try:
        rule_objs = [
            (f, o) for f in args.files for o in _objects(f, ("NodeFeatureRule",), skip_other_nfd=True)
        ]
        nf_objs = _objects(args.nodefeature, ("NodeFeature",), skip_other_nfd=True)
        config = _policy_config(args)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    nfs = []
    for obj in nf_objs:
        try:
            nfs.append(NodeFeature.from_json(obj))
        except ValidationError as e:
            print(f"error: {args.nodefeature}: NodeFeature {_obj_name(obj)!r}: {e}", file=sys.stderr)
            return 2
    first = nfs[0]
    node_name = first.node_name or first.name
    # every object parsed above, so the merge skips none
    merged = merge_node_features(
        nf_objs, node_name=node_name, master_namespace=first.namespace,
        deny_third_party_labels=config.deny_node_feature_labels, auto_prefix=not config.disable_auto_prefix,
    )
    features, nf_labels = merged.features, merged.labels

    rule_sets: list[CompiledRuleSet] = []
    files: dict[str, str] = {}  # rule set name -> file, for messages
    for fname, obj in rule_objs:
        files.setdefault(_obj_name(obj), fname)
        print_warnings(fname, obj)
        try:
            rule_sets.append(compile_nodefeaturerule(obj))
        except ValidationError as e:  # malformed spec: the whole object fails, like one bad rule
            name = _obj_name(obj)
            rule_sets.append(CompiledRuleSet(name=name, rules=[BrokenRule(name, str(e), "spec")]))
    # the master's per-node budgets (EvalBudget's defaults, as nfd-master uses them), so a rule
    # that the master would stop is stopped here too, its error naming the budget
    budget = None if args.no_budget else EvalBudget()
    res = process_rule_sets(
        rule_sets, features, node_name=node_name, auto_prefix=not config.disable_auto_prefix, budget=budget
    )
    errors = [{"rule": n, "message": m} for n, m in res.errors]
    if args.raw:
        o = res.output
        out = {
            "labels": dict(sorted(o.labels.items())),
            "annotations": dict(sorted(o.annotations.items())),
            "vars": dict(sorted(o.vars.items())),
            "taints": [dict(t) for t in o.taints],
            "extendedResources": dict(sorted(o.extended_resources.items())),
            "errors": errors,
        }
        rejected: list[Any] = []
    else:
        pol = apply_policy(
            nodefeature_labels=nf_labels, rule_output=res.master_output, features=res.features, config=config
        )
        out = {
            "labels": dict(sorted(pol.labels.items())),
            "annotations": dict(sorted(pol.annotations.items())),
            "vars": dict(sorted(res.output.vars.items())),
            "taints": pol.taints,
            "extendedResources": dict(sorted(pol.extended_resources.items())),
            "errors": errors,
        }
        rejected = pol.rejected
    if args.output == "json":
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_text(out, res.results, rejected, raw=args.raw, node=node_name, files=files)
    return 1 if errors else 0


def _print_text(
    out: dict[str, Any],
    results: list[Any],
    rejected: list[Any],
    *,
    raw: bool,
    node: str,
    files: dict[str, str],
) -> None:
    w = sys.stdout.write
    w(f"Node {node!r}: {'raw rule output (before policy)' if raw else 'what nfd-master would apply'}\n")
    for title, key in (
        ("Labels", "labels"),
        ("Annotations", "annotations"),
        ("Extended resources", "extendedResources"),
        ("Vars (not published)", "vars"),
    ):
        items = out[key]
        w(f"{title}:{'' if items else ' (none)'}\n")
        for k, v in items.items():
            w(f"  {k}={v}\n")
    w(f"Taints:{'' if out['taints'] else ' (none)'}\n")
    for t in out["taints"]:
        w(f"  {t['key']}={t['value']}:{t['effect']}\n" if t.get("value") else f"  {t['key']}:{t['effect']}\n")
    if rejected:
        w("Rejected by policy:\n")
        for r in rejected:
            w(f"  {r.kind} {r.key}: {r.reason}\n")
    w("Rules:\n")
    for r in results:
        if r.error:
            status = f"ERROR: {r.error} (in {files.get(r.rule_set, '?')})"
        else:
            status = "matched" if r.matched else f"not matched: {r.reason}"
        w(f"  {r.rule_set}/{r.name}: {status}\n")


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
