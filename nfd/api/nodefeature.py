"""NodeFeature (nfd.k8s-sigs.io/v1alpha1): one node's features and labels, as a raw-JSON-friendly model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nfd.api import API_VERSION, NODE_NAME_LABEL
from nfd.api.errors import ValidationError
from nfd.api.features import Features


@dataclass(slots=True)
class NodeFeature:
    name: str
    namespace: str = ""
    features: Features = field(default_factory=Features)
    labels: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def node_name(self) -> str | None:
        return (self.metadata.get("labels") or {}).get(NODE_NAME_LABEL)

    def to_json(self) -> dict[str, Any]:
        meta = dict(self.metadata)
        meta["name"] = self.name
        if self.namespace:
            meta["namespace"] = self.namespace
        return {
            "apiVersion": API_VERSION,
            "kind": "NodeFeature",
            "metadata": meta,
            "spec": {"features": self.features.to_json(), "labels": dict(sorted(self.labels.items()))},
        }

    @classmethod
    def from_json(cls, obj: Any) -> NodeFeature:
        if not isinstance(obj, dict):
            raise ValidationError("", "NodeFeature must be an object")
        kind = obj.get("kind")
        if kind != "NodeFeature":
            raise ValidationError("kind", f'expected "NodeFeature", got {kind!r}')
        meta = obj.get("metadata") or {}
        if not isinstance(meta, dict):
            raise ValidationError("metadata", "must be an object")
        features, labels = parse_spec(obj.get("spec"))
        return cls(
            name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace", "") or ""),
            features=features,
            labels=labels,
            metadata=meta,
        )


def parse_spec(spec: Any) -> tuple[Features, dict[str, str]]:
    """A NodeFeature's ``spec`` as (features, labels); a missing spec is empty. Raises
    ValidationError naming the bad field (features checked first, as the master always has).
    Shared by the object model and the merge, which reads specs straight from the master's
    cache without building objects."""
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        raise ValidationError("spec", "must be an object")
    features = Features.from_json(spec.get("features"), path="spec.features")
    labels = spec.get("labels") or {}
    if not isinstance(labels, dict):
        raise ValidationError("spec.labels", "must be an object")
    return features, {str(k): "" if v is None else str(v) for k, v in labels.items()}
