"""Generate the CRD manifests in this directory.

The match-term schema is shared by NodeFeatureRule and NodeFeatureGroup (and by
rules and matchAny elements), so it is written once here rather than four times
by hand. Run `python crds/generate.py` after editing; tests/unit/api/test_crds.py
fails when the committed YAML and this generator disagree.

The schemas are meant to accept every object upstream's CRDs accept (same
required fields, enums and, like upstream, no defaults) plus our `matchCEL`
extension on rules and group rules.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent

# Operators in upstream's CRD enum order.
MATCH_OPS = [
    "In", "NotIn", "InRegexp", "Exists", "DoesNotExist",
    "Gt", "Ge", "Lt", "Le", "GtLt", "GeLe", "IsTrue", "IsFalse",
]

# Kubernetes resource.Quantity as an int-or-string with the apimachinery pattern.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?"
    r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

Schema = dict[str, Any]


def _str(desc: str) -> Schema:
    return {"type": "string", "description": desc}


def _str_map(desc: str) -> Schema:
    return {"type": "object", "description": desc, "additionalProperties": {"type": "string"}}


def _str_list(desc: str) -> Schema:
    return {"type": "array", "description": desc, "items": {"type": "string"}}


def _obj(desc: str, props: Schema, required: list[str] | None = None) -> Schema:
    out: Schema = {"type": "object", "description": desc, "properties": props}
    if required:
        out["required"] = required
    return out


def _root(desc: str, props: Schema, required: list[str]) -> Schema:
    base: Schema = {
        "apiVersion": _str("API version of this object (group/version)."),
        "kind": _str("Kind of this object."),
        "metadata": {"type": "object"},
    }
    return _obj(desc, {**base, **props}, required)


def match_expression(desc: str) -> Schema:
    return _obj(desc, {
        "op": {"type": "string", "description": "Operator applied to the input.", "enum": MATCH_OPS},
        "value": _str_list(
            "Operands. Empty for Exists, DoesNotExist, IsTrue and IsFalse; one value for "
            "Gt, Ge, Lt and Le; two for GtLt and GeLe; at least one otherwise."
        ),
        "type": _str("How values are compared by the numeric operators; 'version' compares versions."),
    }, ["op"])


def match_features() -> Schema:
    term = _obj("Requirements against one feature set.", {
        "feature": _str("Feature set to match against, <domain>.<feature>."),
        "matchExpressions": {
            "type": "object",
            "description": "Expressions evaluated against the values of the named elements.",
            "additionalProperties": match_expression("An expression on one element's value."),
        },
        "matchName": match_expression("An expression evaluated against each element's name."),
    }, ["feature"])
    return {"type": "array", "description": "Terms that must all match (logical AND).", "items": term}


def match_any() -> Schema:
    elem = _obj("One alternative of matchAny.", {"matchFeatures": match_features()}, ["matchFeatures"])
    return {"type": "array", "description": "Alternatives of which one must match (logical OR).",
            "items": elem}


def match_cel() -> Schema:
    return _str_list(
        "nfd extension (not in upstream): CEL expressions evaluated against the node's "
        "features; all must be true for the rule to match."
    )


def taint() -> Schema:
    return _obj("A core/v1 Taint to set on the node.", {
        "key": _str("Taint key."),
        "value": _str("Taint value."),
        "effect": _str("Taint effect: NoSchedule, PreferNoSchedule or NoExecute."),
        "timeAdded": {"type": "string", "format": "date-time",
                      "description": "Time the taint was added (NoExecute only)."},
    }, ["effect", "key"])


def rule() -> Schema:
    return _obj("A node customization rule.", {
        "name": _str("Rule name, used in logs and metrics."),
        "labels": _str_map("Node labels to create when the rule matches."),
        "labelsTemplate": _str("Template expanding to '<key>[=<value>]' lines of labels."),
        "annotations": _str_map("Node annotations to create when the rule matches."),
        "vars": _str_map("Variables for later rules (not published)."),
        "varsTemplate": _str("Template expanding to '<key>[=<value>]' lines of vars."),
        "taints": {"type": "array", "description": "Taints to set when the rule matches.", "items": taint()},
        "extendedResources": _str_map("Extended resources to advertise when the rule matches."),
        "matchFeatures": match_features(),
        "matchAny": match_any(),
        "matchCEL": match_cel(),
    }, ["name"])


def group_rule() -> Schema:
    return _obj("A rule selecting the nodes of a feature group.", {
        "name": _str("Rule name."),
        "vars": _str_map("Variables for later rules (not published)."),
        "varsTemplate": _str("Template expanding to '<key>[=<value>]' lines of vars."),
        "matchFeatures": match_features(),
        "matchAny": match_any(),
        "matchCEL": match_cel(),
    }, ["name"])


def _crd(*, group: str, kind: str, plural: str, scope: str, versions: list[Schema],
         short_names: list[str] | None = None, annotations: dict[str, str] | None = None) -> Schema:
    names: Schema = {"kind": kind, "listKind": kind + "List", "plural": plural,
                     "singular": kind.lower()}
    if short_names:
        names["shortNames"] = short_names
    meta: Schema = {"name": f"{plural}.{group}"}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": meta,
        "spec": {"group": group, "names": names, "scope": scope, "versions": versions},
    }


def _version(name: str, schema: Schema, *, storage: bool = True, status: bool = False) -> Schema:
    v: Schema = {"name": name, "served": True, "storage": storage,
                 "schema": {"openAPIV3Schema": schema}}
    if status:
        v["subresources"] = {"status": {}}
    return v


def node_feature() -> Schema:
    # Each feature set's elements are owned as a whole (x-kubernetes-map-type / list-type
    # atomic): managedFields then name ~20 feature sets instead of every element, which halved
    # a realistic NodeFeature as stored and served (63 kB -> 34 kB; docs/compatibility.md).
    flag_set = _obj("Flag features: names without values.", {
        "elements": {"type": "object", "description": "Flag names.",
                     "additionalProperties": {"type": "object", "description": "Always empty."},
                     "x-kubernetes-map-type": "atomic"},
    }, ["elements"])
    attr_set = _obj("Attribute features: names with string values.",
                    {"elements": dict(_str_map("Attribute values by name."), **{"x-kubernetes-map-type": "atomic"})},
                    ["elements"])
    inst_set = _obj("Instance features: a list of attribute maps, e.g. devices.", {
        "elements": {"type": "array", "description": "Instances.", "items": _obj(
            "One instance.", {"attributes": _str_map("Attributes of the instance.")}, ["attributes"]),
            "x-kubernetes-list-type": "atomic"},
    }, ["elements"])
    features = _obj("Raw features discovered on the node.", {
        "flags": {"type": "object", "description": "Flag feature sets by name.",
                  "additionalProperties": flag_set},
        "attributes": {"type": "object", "description": "Attribute feature sets by name.",
                       "additionalProperties": attr_set},
        "instances": {"type": "object", "description": "Instance feature sets by name.",
                      "additionalProperties": inst_set},
    })
    spec = _obj("Features and labels published for one node.", {
        "features": features,
        "labels": _str_map("Node labels requested to be created."),
    })
    return _crd(group="nfd.k8s-sigs.io", kind="NodeFeature", plural="nodefeatures", scope="Namespaced",
                versions=[_version("v1alpha1", _root(
                    "Features discovered for one node, published by nfd-worker or a third party.",
                    {"spec": spec}, ["spec"]))])


def node_feature_rule() -> Schema:
    spec = _obj("Rules of a NodeFeatureRule.", {
        "rules": {"type": "array", "description": "Node customization rules, evaluated in order.",
                  "items": rule()},
    }, ["rules"])
    return _crd(group="nfd.k8s-sigs.io", kind="NodeFeatureRule", plural="nodefeaturerules",
                scope="Cluster", short_names=["nfr"],
                versions=[_version("v1alpha1", _root(
                    "Feature-based customization of nodes (labels, annotations, taints, "
                    "extended resources).", {"spec": spec}, ["spec"]))])


def node_feature_group() -> Schema:
    spec = _obj("Rules selecting the group's nodes.", {
        "featureGroupRules": {"type": "array", "description": "Group rules; a node is in the group "
                              "if any rule matches.", "items": group_rule()},
        # ours, named as proposed upstream (#2548); unset is Full
        "materializePolicy": {"type": "string", "enum": ["Full", "CountOnly"], "description":
                              "What the status holds: Full (default) lists the member nodes in "
                              "status.nodes, CountOnly only their number in status.nodeCount."},
    }, ["featureGroupRules"])
    status = _obj("Observed state of the group.", {
        "nodes": {
            "type": "array", "description": "Nodes that match the group's rules.",
            "items": _obj("A member node.", {"name": _str("Node name.")}, ["name"]),
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
        },
        # ours, named as in upstream's KEP-2548
        "nodeCount": {"type": "integer", "format": "int64", "description": "Number of member nodes."},
    })
    return _crd(group="nfd.k8s-sigs.io", kind="NodeFeatureGroup", plural="nodefeaturegroups",
                scope="Namespaced", short_names=["nfg"],
                versions=[_version("v1alpha1", _root(
                    "A group of nodes selected by feature rules.", {"spec": spec, "status": status},
                    ["spec"]), status=True)])


def _quantity(desc: str) -> Schema:
    return {"description": desc, "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN, "x-kubernetes-int-or-string": True}


def _name_values(desc: str, value: Schema) -> Schema:
    return {"type": "array", "description": desc, "items": _obj(
        "A named value.", {"name": _str("Name."), "value": value}, ["name", "value"])}


def _zones() -> Schema:
    resource = _obj("A resource of the zone.", {
        "name": _str("Resource name."),
        "capacity": _quantity("Total amount of the resource in the zone."),
        "allocatable": _quantity("Amount that can be allocated to workloads."),
        "available": _quantity("Allocatable amount not yet allocated."),
    }, ["allocatable", "available", "capacity", "name"])
    zone = _obj("A topology zone, e.g. a NUMA node.", {
        "name": _str("Zone name."),
        "type": _str("Zone type, e.g. Node."),
        "parent": _str("Parent zone name."),
        "costs": _name_values("Distances to other zones.",
                              {"type": "integer", "format": "int64", "description": "Cost."}),
        "attributes": _name_values("Zone attributes.", _str("Value.")),
        "resources": {"type": "array", "description": "Resources of the zone.", "items": resource},
    }, ["name", "type"])
    return {"type": "array", "description": "Topology zones of the node.", "items": zone}


def node_resource_topology() -> Schema:
    policies = _str_list("Topology manager policies of the node (deprecated in v1alpha2).")
    v1 = _root("Per-NUMA-zone resources of a node.", {"topologyPolicies": policies, "zones": _zones()},
               ["topologyPolicies", "zones"])
    v2 = _root("Per-NUMA-zone resources of a node.", {
        "topologyPolicies": policies,
        "zones": _zones(),
        "attributes": _name_values("Node-wide attributes, e.g. the topology manager policy.",
                                   _str("Value.")),
    }, ["zones"])
    return _crd(group="topology.node.k8s.io", kind="NodeResourceTopology",
                plural="noderesourcetopologies", scope="Cluster", short_names=["node-res-topo"],
                annotations={"api-approved.kubernetes.io":
                             "https://github.com/kubernetes/enhancements/pull/1870"},
                versions=[_version("v1alpha1", v1, storage=False), _version("v1alpha2", v2)])


class _NoAliasDumper(yaml.SafeDumper):
    """Shared sub-schemas are written out in full: no YAML anchors in manifests."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


HEADER = "# Generated by crds/generate.py; edit that file and re-run it.\n"

FILES: dict[str, Any] = {
    "nfd-api-crds.yaml": lambda: [node_feature(), node_feature_rule(), node_feature_group()],
    "noderesourcetopologies.yaml": lambda: [node_resource_topology()],
}


def render(filename: str) -> str:
    docs = FILES[filename]()
    body = "".join("---\n" + yaml.dump(d, Dumper=_NoAliasDumper, sort_keys=False, width=100) for d in docs)
    return HEADER + body


# The Helm chart carries copies (real files, so `helm package` or a copied chart keeps them).
# The NodeResourceTopology CRD is a template behind topologyUpdater.createCRDs, as upstream's:
# an upstream release that templated it keeps it on `helm upgrade` to this chart.
CHART = HERE.parent / "deploy" / "helm" / "node-feature-discovery"
CHART_CRDS = CHART / "crds"
CHART_TEMPLATED = {"noderesourcetopologies.yaml": CHART / "templates" / "topologyupdater-crds.yaml"}
TEMPLATE_GUARD = "{{- if and .Values.topologyUpdater.enable .Values.topologyUpdater.createCRDs }}\n"


# ...and so do the kustomize bases, as upstream's base/nfd-crds and base/noderesourcetopologies-crd
# (kustomize loads no file from outside a kustomization's directory).
KUSTOMIZE_COPIES = {"nfd-api-crds.yaml": HERE.parent / "deploy" / "base" / "nfd-crds" / "nfd-api-crds.yaml",
                    "noderesourcetopologies.yaml":
                        HERE.parent / "deploy" / "base" / "noderesourcetopologies-crd" / "noderesourcetopologies.yaml"}


def chart_copy(name: str) -> tuple[Path, str]:
    """Where the chart keeps CRD file `name`, and its text there."""
    if name in CHART_TEMPLATED:
        return CHART_TEMPLATED[name], TEMPLATE_GUARD + render(name) + "{{- end }}\n"
    return CHART_CRDS / name, render(name)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for name in FILES:
        copies = [(HERE / name, render(name)), chart_copy(name)]
        if name in KUSTOMIZE_COPIES:
            copies.append((KUSTOMIZE_COPIES[name], render(name)))
        for path, text in copies:
            if check:
                if path.is_symlink() or not path.exists() or path.read_text() != text:
                    stale.append(str(path.relative_to(HERE.parent)))
            else:
                if path.is_symlink():
                    path.unlink()
                path.write_text(text)
    if stale:
        print("stale, run python crds/generate.py: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
