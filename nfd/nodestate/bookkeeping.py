"""The Node annotations through which nfd-master records what it owns, in upstream's exact format.

Ownership lives only here, so a cluster can move between upstream's master and ours in either
direction: whatever one wrote, the other reads and removes correctly.

- ``[<instance>.]nfd.node.kubernetes.io/feature-labels``: sorted, comma-separated label keys,
  ``feature.node.kubernetes.io/`` stripped;
- ``[<instance>.]nfd.node.kubernetes.io/feature-annotations``: same for feature annotations;
- ``[<instance>.]nfd.node.kubernetes.io/extended-resources``: same for extended resources;
- ``nfd.node.kubernetes.io/taints``: ``key=value:Effect`` (or ``key:Effect``), comma-separated,
  in rule-output order, never instance-prefixed (upstream's code, not its docs).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nfd.api import DEFAULT_LABEL_NS, NFD_ANNOTATION_NS

FEATURE_LABELS = f"{NFD_ANNOTATION_NS}/feature-labels"
FEATURE_ANNOTATIONS = f"{NFD_ANNOTATION_NS}/feature-annotations"
EXTENDED_RESOURCES = f"{NFD_ANNOTATION_NS}/extended-resources"
TAINTS = f"{NFD_ANNOTATION_NS}/taints"
MASTER_VERSION = f"{NFD_ANNOTATION_NS}/master.version"
WORKER_VERSION = f"{NFD_ANNOTATION_NS}/worker.version"

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def instance_annotation(name: str, instance: str) -> str:
    return f"{instance}.{name}" if instance else name


@dataclass(frozen=True, slots=True)
class Taint:
    """A core/v1 Taint; identity on the node is (key, effect)."""

    key: str
    value: str
    effect: str

    def to_string(self) -> str:
        """Upstream's ``Taint.ToString``."""
        if self.value:
            return f"{self.key}={self.value}:{self.effect}"
        return f"{self.key}:{self.effect}"

    def to_json(self) -> dict[str, str]:
        d = {"key": self.key, "effect": self.effect}
        if self.value:
            d["value"] = self.value
        return d

    @classmethod
    def from_json(cls, obj: dict[str, object]) -> Taint:
        return cls(str(obj.get("key") or ""), str(obj.get("value") or ""), str(obj.get("effect") or ""))


def encode_names(names: Iterable[str]) -> str:
    """Sorted, comma-separated, default namespace stripped (upstream strips with the label ns)."""
    prefix = DEFAULT_LABEL_NS + "/"
    return ",".join(sorted(n[len(prefix) :] if n.startswith(prefix) else n for n in names))


def decode_names(value: str | None) -> list[str]:
    """Inverse of encode_names: names without a ``/`` get the default namespace back."""
    if not value:
        return []
    return [n if "/" in n else f"{DEFAULT_LABEL_NS}/{n}" for n in value.split(",")]


def encode_taints(taints: Iterable[Taint]) -> str:
    return ",".join(t.to_string() for t in taints)


class TaintSpecError(ValueError):
    pass


def parse_taint(spec: str) -> Taint:
    """Parse ``key[=value]:Effect`` like kubectl's taint parser (used on the taints annotation)."""
    if ":" not in spec:
        raise TaintSpecError(f"invalid taint spec {spec!r}: missing effect")
    kv, effect = spec.rsplit(":", 1)
    if effect not in TAINT_EFFECTS:
        raise TaintSpecError(f"invalid taint spec {spec!r}: effect must be one of {', '.join(TAINT_EFFECTS)}")
    key, _, value = kv.partition("=")
    if not key:
        raise TaintSpecError(f"invalid taint spec {spec!r}: empty key")
    return Taint(key, value, effect)


def decode_taints(value: str | None) -> list[Taint]:
    """Parse the taints annotation. Raises TaintSpecError naming the bad entry."""
    if not value:
        return []
    return [parse_taint(s.strip()) for s in value.split(",") if s.strip()]
