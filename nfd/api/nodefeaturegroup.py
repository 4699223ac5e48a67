"""NodeFeatureGroup (nfd.k8s-sigs.io/v1alpha1, namespaced): group rules and member nodes.

``spec.featureGroupRules[]`` are rules without outputs (name, vars, varsTemplate, matchFeatures,
matchAny, plus our ``matchCEL``); ``status.nodes[].name`` lists the member nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nfd.api import API_VERSION
from nfd.api.errors import ValidationErrors
from nfd.api.nodefeaturerule import Rule, parse_header, parse_rules


@dataclass(slots=True)
class NodeFeatureGroup:
    name: str
    namespace: str = ""
    rules: list[Rule] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
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
        return {
            "apiVersion": API_VERSION,
            "kind": "NodeFeatureGroup",
            "metadata": meta,
            "spec": {"featureGroupRules": rules},
            "status": {"nodes": [{"name": n} for n in self.nodes]},
        }

    @classmethod
    def from_json(cls, obj: Any) -> NodeFeatureGroup:
        meta, rules_raw = parse_header(obj, kind="NodeFeatureGroup", list_field="featureGroupRules")
        rules, errs = parse_rules(rules_raw, path="spec.featureGroupRules", group=True)
        status = obj.get("status") or {}
        nodes: list[str] = []
        if isinstance(status, dict) and isinstance(status.get("nodes"), list):
            nodes = [str(n.get("name", "")) for n in status["nodes"] if isinstance(n, dict)]
        if errs:
            raise ValidationErrors(errs)
        return cls(
            name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace", "") or ""),
            rules=rules,
            nodes=nodes,
            metadata=meta,
        )
