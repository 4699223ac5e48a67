"""NodeFeatureGroup (nfd.k8s-sigs.io/v1alpha1, namespaced): group rules and member nodes.

``spec.featureGroupRules[]`` are rules without outputs (name, vars, varsTemplate, matchFeatures,
matchAny, plus our ``matchCEL``) and our ``materializePolicy`` (Full or CountOnly, named as
proposed upstream in #2548); ``status.nodes[].name`` lists the member nodes, ``status.nodeCount``
(upstream's KEP-2548 name) counts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nfd.api import API_VERSION
from nfd.api.errors import ValidationError, ValidationErrors
from nfd.api.nodefeaturerule import Rule, parse_header, parse_rules


@dataclass(slots=True)
class NodeFeatureGroup:
    name: str
    namespace: str = ""
    rules: list[Rule] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    materialize_policy: str = ""
    node_count: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        meta = dict(self.metadata)
        meta["name"] = self.name
        if self.namespace:
            meta["namespace"] = self.namespace
        rules = []
        for r in self.rules:
            j = r.to_json()
            for k in ("labels", "labelsTemplate", "annotations", "extendedResources", "taints"):
                j.pop(k, None)
            rules.append(j)
        spec: dict[str, Any] = {"featureGroupRules": rules}
        if self.materialize_policy:
            spec["materializePolicy"] = self.materialize_policy
        status: dict[str, Any] = {"nodes": [{"name": n} for n in self.nodes]}
        if self.node_count is not None:
            status["nodeCount"] = self.node_count
        return {"apiVersion": API_VERSION, "kind": "NodeFeatureGroup", "metadata": meta, "spec": spec,
                "status": status}

    @classmethod
    def from_json(cls, obj: Any) -> NodeFeatureGroup:
        meta, rules_raw = parse_header(obj, kind="NodeFeatureGroup", list_field="featureGroupRules")
        rules, errs = parse_rules(rules_raw, path="spec.featureGroupRules", group=True)
        status = obj.get("status") or {}
        nodes: list[str] = []
        if isinstance(status, dict) and isinstance(status.get("nodes"), list):
            nodes = [str(n.get("name", "")) for n in status["nodes"] if isinstance(n, dict)]
        spec = obj.get("spec") or {}
        policy = spec.get("materializePolicy") if isinstance(spec, dict) else None
        if policy is not None and policy not in ("Full", "CountOnly"):
            errs.append(ValidationError("spec.materializePolicy", f"must be Full or CountOnly, not {policy!r}"))
        count = status.get("nodeCount") if isinstance(status, dict) else None
        if errs:
            raise ValidationErrors(errs)
        return cls(
            name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace", "") or ""),
            rules=rules,
            nodes=nodes,
            materialize_policy=str(policy or ""),
            node_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
            metadata=meta,
        )
