"""``kubectl-nfd``: the kubectl plugin of upstream NFD (``kubectl nfd validate|dryrun|test``).

Same subcommands, flags, messages and exit codes as upstream's plugin, so scripts written for it
run unchanged:

    kubectl nfd validate -f RULES.yaml [--cluster [-k KUBECONFIG] | --crds DIR]
    kubectl nfd dryrun   -f RULES.yaml -n NODEFEATURE.yaml
    kubectl nfd test     -f RULES.yaml -n NODE [-k KUBECONFIG] [-s NAMESPACE]
    kubectl nfd test     -f RULES.yaml (-A | -l SELECTOR) [--show-nodes] [-o text|json]
                         [--enable-taints] [--config nfd-master.conf] [--instance NAME]

As upstream: dryrun/test read the first YAML document of each file, rules run without
``rule.matched`` feedback and without auto-prefixing, ``@`` values are resolved from the
NodeFeature's attributes, sections ``*** Labels ***`` etc. are printed with their validation
errors, and a rule that fails to run (or a file that cannot be read) gives exit status 1.
Beyond upstream: validate runs ``nfd rules validate``'s check (nfd.rules.lint.check_object) on
every document, so it refuses what nfd-master would; unknown fields are errors (as kubectl
apply's strict field validation); a section's validation errors fail dryrun and test (upstream
prints them and says "is valid"); a file of the wrong kind is refused; rules run within
nfd-master's per-node budgets. ``nfd rules
validate|dryrun`` is the richer form (master policy, feedback, JSON); see docs/rules.md.

``test`` merges the node's NodeFeatures as nfd-master does (objects in the master's namespace,
``-s/--namespace``, first, then by name, then namespace; upstream documents ``-s`` but never
registered it and merges in list order).

``test -A`` (every node) or ``test -l SELECTOR`` is ours (nfd.cli.fleet): what applying the file
would change across the fleet, per label, annotation, extended resource and taint, and the pods
a new NoExecute taint would evict. Read-only.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, NoReturn

from nfd.api import DEFAULT_LABEL_NS, NODE_NAME_LABEL
from nfd.api.errors import ValidationError
from nfd.api.features import Features
from nfd.api.nodefeaturerule import unknown_field_problems
from nfd.api.validation import validate_annotation, validate_extended_resource, validate_label, validate_taint
from nfd.cli.rules import _objects, _policy_config, served_crds_of
from nfd.nodestate.desired import Evaluation, desired_state
from nfd.nodestate.nodefeatures import MergedNodeFeatures, merge_node_features
from nfd.rules.dynamic import resolve_value
from nfd.rules.engine import EvalBudget, compile_nodefeaturerule
from nfd.rules.expression import go_quote
from nfd.rules.files import InputError, load_documents, object_name
from nfd.rules.lint import ServedCRDs, check_files, check_object, warning_lines
from nfd.sources.registry import published_features

PROG = "kubectl-nfd"
DEFAULT_NAMESPACE = "node-feature-discovery"

_LONG = {
    "validate": "Validate a NodeFeatureRule file to ensure it is valid before applying it to a cluster",
    "dryrun": "Process a NodeFeatureRule file against a local NodeFeature file to dry run the rule "
    "against a node before applying it to a cluster",
    "test": "Test a NodeFeatureRule file against a Node to ensure it is valid before applying it to a cluster",
}
_SHORT = {
    "dryrun": "Process a NodeFeatureRule file against a NodeFeature file",
    "test": "Test a NodeFeatureRule file against a Node",
    "validate": "Validate a NodeFeatureRule file",
}


class FileError(Exception):
    """A file that cannot be read or parsed: reported as one error, exit status 1."""


# -- files ---------------------------------------------------------------------------------


def _documents(path: str, what: str) -> list[Any]:
    dups: list[Any] = []
    try:
        docs = load_documents(path, duplicates=dups)
    except InputError as e:
        msg = str(e)
        verb = "reading" if "cannot read" in msg else "parsing"
        raise FileError(f"error {verb} {what} file: {msg}") from None
    if dups:  # kubectl refuses the file; PyYAML would keep the last value in silence
        raise FileError(f"error parsing {what} file: {path}: " + "; ".join(str(d) for d in dups))
    if not docs:
        raise FileError(f"error reading {what} file: {path}: no {what} object found (the file is empty)")
    return docs


def _first_document(path: str, what: str) -> dict[str, Any]:
    """The first YAML document of ``path`` (upstream's sigs.k8s.io/yaml reads only that one);
    a document of another kind is refused, naming the file and its kind."""
    doc = _documents(path, what)[0]
    if not isinstance(doc, dict):
        raise FileError(f"error parsing {what}: {path}: the document is not a mapping")
    kind = doc.get("kind")
    if kind is not None and kind != what:
        raise FileError(f"error parsing {what}: {path}: the document is a {kind}, not a {what}")
    return doc


def _load_rule_set(path: str) -> tuple[Any, list[str]]:
    """(the rule file compiled, its unknown fields as errors: kubectl apply refuses them, and a
    misspelt match term makes the rule match every node); a structural problem (a wrong type)
    is a file error as upstream's unmarshalling error is. Notes are printed as warnings."""
    doc = _first_document(path, "NodeFeatureRule")
    obj = dict(doc)
    obj["kind"] = "NodeFeatureRule"  # as upstream, a document without a kind is taken as one
    check = check_object(obj, kinds=("NodeFeatureRule",))
    for line in warning_lines(check):
        print(f"Warning: {line}", file=sys.stderr)
    try:
        return compile_nodefeaturerule(obj), [f"{p}: {m}" for p, m in check.unknown]
    except ValidationError as e:
        raise FileError(f"error parsing NodeFeatureRule: {path}: {e}") from None


def _features_of_nodefeature(path: str) -> Any:
    doc = _first_document(path, "NodeFeature")
    if "kind" not in doc and doc and set(doc) <= {"flags", "attributes", "instances"}:
        doc = {"spec": {"features": doc}}  # ``nfd export features`` output
    spec = doc.get("spec") or {}
    if not isinstance(spec, dict):
        raise FileError(f"error parsing NodeFeature: {path}: spec: must be an object")
    try:
        return Features.from_json(spec.get("features"), path="spec.features")
    except ValidationError as e:
        raise FileError(f"error parsing NodeFeature: {path}: {e}") from None


# -- validate ------------------------------------------------------------------------------


def cluster_crds(kubeconfig: str | None) -> Any:
    """nfd.rules.lint.ServedCRDs of the cluster: its NodeFeatureRule and NodeFeatureGroup
    CustomResourceDefinitions, as the API server serves them (read with a kubeconfig found as
    kubectl finds it)."""
    # The API client here and in the two functions below, not at the top: its imports (asyncio,
    # ssl, nfd.k8s: ~51 ms with python -X importtime) are for the commands that read the
    # cluster; dryrun and validate without --cluster are offline.
    import asyncio

    from nfd.k8s.client import ApiClient
    from nfd.k8s.config import ConfigError, load_kubeconfig
    from nfd.k8s.errors import ApiError, ApiUnavailable
    from nfd.k8s.fetching import get
    from nfd.k8s.resources import CUSTOMRESOURCEDEFINITIONS, RULE_CRD_NAMES

    try:
        cfg = load_kubeconfig(kubeconfig)
    except ConfigError as e:
        raise FileError(f"error building kubeconfig: {e}") from None

    async def fetch() -> list[dict[str, Any]]:
        async with ApiClient(cfg, user_agent="kubectl-nfd") as api:
            crds = [await get(api, CUSTOMRESOURCEDEFINITIONS, name=n) for n in RULE_CRD_NAMES]
            return [c for c in crds if c is not None]

    try:
        crds = asyncio.run(fetch())
    except (ApiError, ApiUnavailable, OSError) as e:
        raise FileError(f"failed to read the cluster's CustomResourceDefinitions: {e}") from None
    return ServedCRDs.from_crds(crds, "the cluster's CRDs")


def validate_file(path: str, *, served: Any = None) -> tuple[list[str], list[str]]:
    """(errors, warnings) of every NodeFeatureRule and NodeFeatureGroup in ``path``:
    nfd.rules.lint.check_file, the validation of ``nfd rules validate``, so both find the same
    problems (upstream's plugin checks names and values only). Prints upstream's
    ``Validating rule:`` lines."""
    try:
        rep = check_files([path], published=published_features(), served=served)
    except InputError as e:
        msg = str(e)
        verb = "reading" if "cannot read" in msg else "parsing"
        raise FileError(f"error {verb} NodeFeatureRule file: {msg}") from None
    fc = rep.files[0]
    errs = [str(d) for d in fc.duplicates]
    warns: list[str] = []
    for check in fc.objects:
        for name in check.rule_names:
            print("Validating rule: ", "" if name.startswith("#") else name)
        head = f"{check.kind} {check.name!r}: " if len(fc.objects) > 1 else ""
        errs.extend(f"{head}{p}: {m}" if p else f"{head}{m}" for p, m in check.problems)
        warns.extend(head + w for w in warning_lines(check))
    warns.extend(f"conflict: where both rules match, {c.message()}" for c in rep.conflicts)
    return errs, warns


def _as_master_names(name: str) -> str:
    """A name as nfd-master publishes it: an unprefixed one gets the default namespace
    (``feature.node.kubernetes.io/``), so it is no validation error here, as in validate."""
    return name if "/" in name else f"{DEFAULT_LABEL_NS}/{name}"


def _label_errors(labels: dict[str, str]) -> list[str]:
    out = []
    for k, v in sorted(labels.items()):
        err = validate_label(_as_master_names(k), v)
        if err:
            out.append(f"invalid label {go_quote(k)}:{go_quote(v)} {err}")
    return out


def _annotation_errors(annotations: dict[str, str]) -> list[str]:
    out = []
    for k, v in sorted(annotations.items()):
        err = validate_annotation(_as_master_names(k), v)
        if err:
            out.append(f"invalid annotation {go_quote(k)}:{go_quote(v)} {err}")
    return out


def _er_errors(resources: dict[str, str]) -> list[str]:
    out = []
    for k, v in sorted(resources.items()):
        err = validate_extended_resource(_as_master_names(k), v)
        if err:
            out.append(f"invalid extended resource {go_quote(k)}:{go_quote(v)} {err}")
    return out


def _taint_errors(taints: list[dict[str, str]]) -> list[str]:
    out = []
    for t in taints:
        err = validate_taint(t["key"], t.get("value", ""), t.get("effect", ""))
        if err:
            out.append(f"invalid taint {t['key']}={t.get('value', '')}:{t.get('effect', '')}: {err}")
    return out


# -- dryrun / test -------------------------------------------------------------------------


def process_rules(rule_set: Any, features: Any) -> list[str]:
    """Run every rule against ``features`` (no feedback) and print upstream's sections; returns
    the processing errors and the sections' validation errors (either makes the exit status
    1: nfd-master would not publish an output that fails validation). The rules run within
    nfd-master's per-node budgets (EvalBudget): a rule the master would stop fails here with
    the error that names the budget."""
    errs: list[str] = []
    taints: list[dict[str, str]] = []
    labels: dict[str, str] = {}
    resources: dict[str, str] = {}
    annotations: dict[str, str] = {}
    how = Evaluation(budget=EvalBudget(), explain=True, feed_back=False, auto_prefix=False)
    result = desired_state(MergedNodeFeatures(features=features), [rule_set], None, node_name="", how=how).rules
    for res in result.results:
        print("Processing rule: ", res.name)
        if res.error is not None:
            errs.append(f"failed to process rule: {go_quote(res.name)} - {res.error}")
            continue
        if not res.matched:
            continue
        out = res.output
        taints.extend(out.taints)
        for what, src, dst in (("label", out.labels, labels), ("extendedResource", out.extended_resources, resources)):
            for k, v in src.items():
                dv, err = resolve_value(v, features)
                if dv is None:
                    errs.append(f"failed to get dynamic value for {what} {go_quote(k)}: {err}")
                    continue
                dst[k] = dv
        annotations.update(out.annotations)

    def section(title: str, lines: list[str], problems: list[str]) -> None:
        print(f"***\t{title}\t***")
        for line in lines:
            print(line)
        if problems:
            print("\t-Validation errors-")
            for p in problems:
                print(p)
            errs.extend(f"{title}: {p}" for p in problems)

    if taints:
        section("Taints", [f"{{{t['key']} {t.get('value', '')} {t.get('effect', '')} <nil>}}" for t in taints],
                _taint_errors(taints))
    if labels:
        section("Labels", [f"{k}={v}" for k, v in sorted(labels.items())], _label_errors(labels))
    if resources:
        section("Extended Resources", [f"{k}={v}" for k, v in sorted(resources.items())], _er_errors(resources))
    if annotations:
        section("Annotations", [f"{k}={v}" for k, v in sorted(annotations.items())], _annotation_errors(annotations))
    return errs


def node_features_from_cluster(node: str, *, kubeconfig: str | None, namespace: str) -> tuple[Any, list[str]]:
    """(merged Features, ["ns/name", ...]) of the node's NodeFeatures, merged as nfd-master does."""
    import asyncio  # here: see cluster_crds

    from nfd.k8s.client import ApiClient
    from nfd.k8s.config import ConfigError, load_kubeconfig
    from nfd.k8s.errors import ApiError, ApiUnavailable
    from nfd.k8s.fetching import list_objects
    from nfd.k8s.resources import NODEFEATURES

    try:
        cfg = load_kubeconfig(kubeconfig)
    except ConfigError as e:
        raise FileError(f"error building kubeconfig: {e}") from None

    async def fetch() -> list[dict[str, Any]]:
        async with ApiClient(cfg, user_agent="kubectl-nfd") as api:
            items, _ = await list_objects(api, NODEFEATURES, label_selector=f"{NODE_NAME_LABEL}={node}")
            return items

    try:
        objs = asyncio.run(fetch())
    except (ApiError, ApiUnavailable, OSError) as e:
        raise FileError(f"failed to get NodeFeature resources for node {go_quote(node)}: {e}") from None
    merged = merge_node_features(objs, node_name=node, master_namespace=namespace, auto_prefix=False)
    for err in merged.errors:
        print(f"warning: {err}", file=sys.stderr)
    names = [f"{(o.get('metadata') or {}).get('namespace', '')}/{(o.get('metadata') or {}).get('name', '')}"
             for o in objs]
    return merged.features, names


# -- command line ------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse with cobra's exits: a usage error prints ``Error: ...`` and exits 1."""

    def error(self, message: str) -> NoReturn:
        head = "the following arguments are required: "
        if message.startswith(head):  # cobra's wording: required flag(s) "a", "b" not set
            longs = [opt.split("/")[-1].lstrip("-") for opt in message[len(head):].split(", ")]
            message = f"required flag(s) {', '.join(go_quote(x) for x in longs)} not set"
        sys.stderr.write(f"Error: {message}\n")
        self.print_usage(sys.stderr)
        print(message)  # cobra's Execute prints the error again on stdout
        sys.exit(1)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="kubectl plugin for NFD\n\tDebug tool to validate/dryrun/test NodeFeatureRules",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    for name in ("dryrun", "test", "validate"):
        sp = sub.add_parser(name, help=_SHORT[name], description=_LONG[name])
        sp.add_argument("-f", "--nodefeaturerule-file", dest="rules", required=True,
                        help="Path to the NodeFeatureRule file to validate")
        if name == "validate":
            # ours: also against the CRDs a cluster serves (they may be an older release's)
            sp.add_argument("--cluster", action="store_true",
                            help="also check against the cluster's served NodeFeatureRule/NodeFeatureGroup CRDs: "
                            "every field they would prune, and each rule that would then match every node")
            sp.add_argument("-k", "--kubeconfig", default="", help="kubeconfig file to use (with --cluster)")
            sp.add_argument("--crds", metavar="DIR", help="also check against the CRD YAML files in DIR")
        if name == "dryrun":
            sp.add_argument("-n", "--nodefeature-file", dest="nodefeature", required=True,
                            help="Path to the NodeFeature file to validate against")
        elif name == "test":
            # required unless -A/-l (checked in run, with cobra's wording)
            sp.add_argument("-n", "--nodename", dest="node", help="Node to validate against")
            sp.add_argument("-k", "--kubeconfig", default="", help="kubeconfig file to use")
            sp.add_argument("-s", "--namespace", default=DEFAULT_NAMESPACE,
                            help="namespace of nfd-master: its NodeFeatures are merged first, as the master does")
            sp.set_defaults(subparser=sp)
            fleet = sp.add_argument_group("fleet form (instead of -n): what applying the file would change")
            fleet.add_argument("-A", "--all-nodes", action="store_true", help="every node of the cluster")
            fleet.add_argument("-l", "--selector", default="", help="nodes matching this label selector")
            fleet.add_argument("--show-nodes", action="store_true", help="name the nodes of every change")
            fleet.add_argument("-o", "--output", choices=("text", "json"), default="text", help="report format")
            fleet.add_argument("--config", help="nfd-master configuration file for the policy (enableTaints, "
                               "extraLabelNs, denyLabelNs, labelWhiteList, restrictions)")
            fleet.add_argument("--enable-taints", action="store_true", help="as nfd-master -enable-taints")
            fleet.add_argument("--disable-auto-prefix", action="store_true",
                               help="as nfd-master's DisableAutoPrefix feature gate")
            fleet.add_argument("--extra-label-ns", help="as nfd-master -extra-label-ns (comma-separated)")
            fleet.add_argument("--deny-label-ns", help="as nfd-master -deny-label-ns (comma-separated)")
            fleet.add_argument("--label-whitelist", help="as nfd-master -label-whitelist")
            fleet.add_argument("--instance", default="", help="as nfd-master -instance (its bookkeeping annotations)")
    return p


def _report(errs: list[str], fail: str, ok: str) -> int:
    if errs:
        print(fail)
        for e in errs:
            print(e, file=sys.stderr)
        return 1
    print(ok)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.command == "validate":
        print(f"Validating NodeFeatureRule {args.rules}")
        try:
            served = None
            if args.cluster:
                served = cluster_crds(args.kubeconfig or None)
            elif args.crds:
                try:
                    served = served_crds_of(args.crds)
                except InputError as e:
                    raise FileError(f"error reading CRDs: {e}") from None
            errs, warns = validate_file(args.rules, served=served)
        except FileError as e:
            errs, warns = [str(e)], []
        for w in warns:
            print(f"Warning: {w}", file=sys.stderr)
        return _report(errs, f"NodeFeatureRule {args.rules} is not valid", f"NodeFeatureRule {args.rules} is valid")
    if args.command == "dryrun":
        rq, nq = go_quote(args.rules), go_quote(args.nodefeature)
        print(f"Evaluating NodeFeatureRule {rq} against NodeFeature {nq}")
        try:
            rule_set, errs = _load_rule_set(args.rules)
            errs += process_rules(rule_set, _features_of_nodefeature(args.nodefeature))
        except FileError as e:
            errs = [str(e)]
        return _report(errs, f"NodeFeatureRule {rq} is not valid for NodeFeature {nq}",
                       f"NodeFeatureRule {rq} is valid for NodeFeature {nq}")
    if args.all_nodes or args.selector:
        if args.node:
            print("Error: -n/--nodename cannot be combined with -A/--all-nodes or -l/--selector", file=sys.stderr)
            return 1
        return run_fleet(args)
    print(f"Evaluating NodeFeatureRule against Node {args.node}")
    try:
        features, names = node_features_from_cluster(args.node, kubeconfig=args.kubeconfig or None,
                                                     namespace=args.namespace)
        print(f"Found {len(names)} NodeFeature objects for node {go_quote(args.node)}: {', '.join(names)}")
        rule_set, errs = _load_rule_set(args.rules)
        errs += process_rules(rule_set, features)
    except FileError as e:
        errs = [str(e)]
    return _report(errs, f"NodeFeatureRule is not valid for Node {args.node}",
                   f"NodeFeatureRule is valid for Node {args.node}")


def run_fleet(args: argparse.Namespace) -> int:
    """``test -A|-l``: the report of nfd.cli.fleet; exit 1 when a rule fails or a read fails."""
    from nfd.cli import fleet  # here: it reads the cluster (~65 ms with the API client; see cluster_crds)

    try:
        objs = _objects(args.rules, ("NodeFeatureRule", "NodeFeatureGroup"), skip_other_nfd=True)
        file_rules = [o for o in objs if o.get("kind") == "NodeFeatureRule"]
        file_groups = [o for o in objs if o.get("kind") == "NodeFeatureGroup"]
        policy = _policy_config(args)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    # kubectl apply's strict field validation refuses an unknown field; the report below is for
    # the object as the API server stores it without that (the field pruned)

    unknown = [f"{o.get('kind')} {object_name(o)!r}: {p}: {m}" for o in objs for p, m in unknown_field_problems(o)]
    for u in unknown:
        print(f"error: {u} (kubectl apply refuses the object; the report is for it without the field)",
              file=sys.stderr)
    where = f"nodes matching {go_quote(args.selector)}" if args.selector else "every node"
    try:
        rep = fleet.fetch_and_plan(kubeconfig=args.kubeconfig or None, selector=args.selector, file_rules=file_rules,
                                   policy=policy, namespace=args.namespace, instance=args.instance, file_groups=file_groups)
    except fleet.ClusterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.output == "json":
        json.dump(rep.to_json() | {"unknownFields": unknown}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(f"Evaluating NodeFeatureRule {go_quote(args.rules)} against {where}: {len(rep.nodes)} node(s)")
        fleet.print_report(rep, show_nodes=args.show_nodes, write=sys.stdout.write)
    return 1 if rep.rule_errors or rep.group_errors or unknown else 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "test" and not (args.node or args.all_nodes or args.selector):
        args.subparser.error("the following arguments are required: -n/--nodename")
    try:
        return run(args)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
