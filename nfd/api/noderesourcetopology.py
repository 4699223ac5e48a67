"""NodeResourceTopology (``topology.node.k8s.io/v1alpha2``): the object nfd-topology-updater
publishes, one per node, cluster-scoped, named after the node.

Quantities are rendered the way Go's ``resource.NewQuantity(v, DecimalSI).String()`` renders
them (``4``, ``2k``, ``17179869184``) so our objects are byte-identical to upstream's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

GROUP = "topology.node.k8s.io"
VERSION = "v1alpha2"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "NodeResourceTopology"
CRD_NAME = f"noderesourcetopologies.{GROUP}"

ATTR_POLICY = "topologyManagerPolicy"
ATTR_SCOPE = "topologyManagerScope"
ATTR_PODS_FINGERPRINT = "nodeTopologyPodsFingerprint"

_DECIMAL_SUFFIXES = ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"))
_BINARY_SUFFIXES = ((60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki"))


def decimal_si(value: int) -> str:
    """Canonical DecimalSI string of an integer quantity: the largest power-of-1000 suffix
    that divides it exactly (Go: ``NewQuantity(v, DecimalSI).String()``)."""
    if value == 0:
        return "0"
    for exp, suffix in _DECIMAL_SUFFIXES:
        if value % (10**exp) == 0:
            return f"{value // 10**exp}{suffix}"
    return str(value)


def binary_si(value: int) -> str:
    """Canonical BinarySI string of an integer quantity (``2097152`` -> ``2Mi``)."""
    if value == 0:
        return "0"
    for exp, suffix in _BINARY_SUFFIXES:
        if value % (1 << exp) == 0:
            return f"{value >> exp}{suffix}"
    return str(value)


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    name: str
    capacity: int
    allocatable: int
    available: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "capacity": decimal_si(self.capacity),
            "allocatable": decimal_si(self.allocatable),
            "available": decimal_si(self.available),
        }


@dataclass(frozen=True, slots=True)
class CostInfo:
    name: str
    value: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value}


_COSTS_JSON: dict[int, tuple[tuple[CostInfo, ...], list[dict[str, Any]]]] = {}


def _costs_json(costs: tuple[CostInfo, ...]) -> list[dict[str, Any]]:
    """A zone's costs as JSON, once per costs tuple: the updater builds one tuple per NUMA node
    (its sysfs distances: 66 x 66 of them on a node with 66 NUMA nodes) and reuses it every
    cycle. Looked up by identity (hashing 66 dataclasses costs as much as the JSON); the list is
    shared: callers must not modify it."""
    hit = _COSTS_JSON.get(id(costs))
    if hit is not None and hit[0] is costs:
        return hit[1]
    out = [c.to_json() for c in costs]
    if len(_COSTS_JSON) >= 1024:
        _COSTS_JSON.clear()
    _COSTS_JSON[id(costs)] = (costs, out)  # holding the tuple keeps its id from being reused
    return out


@dataclass(frozen=True, slots=True)
class Zone:
    name: str
    type: str = "Node"
    resources: tuple[ResourceInfo, ...] = ()
    costs: tuple[CostInfo, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.costs:
            out["costs"] = _costs_json(self.costs)
        out["resources"] = [r.to_json() for r in self.resources]
        return out

    def resource(self, name: str) -> ResourceInfo | None:
        for r in self.resources:
            if r.name == name:
                return r
        return None


@dataclass(slots=True)
class NodeResourceTopology:
    name: str
    zones: list[Zone] = field(default_factory=list)
    #: ordered (name, value) pairs; upstream's AttributeList keeps insertion order
    attributes: list[tuple[str, str]] = field(default_factory=list)
    topology_policies: list[str] = field(default_factory=list)
    owner_references: list[dict[str, Any]] = field(default_factory=list)

    def set_attribute(self, name: str, value: str) -> None:
        """Replace in place if present, else append (upstream's updateAttribute)."""
        for i, (n, _) in enumerate(self.attributes):
            if n == name:
                self.attributes[i] = (name, value)
                return
        self.attributes.append((name, value))

    def attribute(self, name: str) -> str | None:
        for n, v in self.attributes:
            if n == name:
                return v
        return None

    def to_json(self) -> dict[str, Any]:
        """The server-side apply body (also a valid full object)."""
        meta: dict[str, Any] = {"name": self.name}
        if self.owner_references:
            meta["ownerReferences"] = self.owner_references
        out: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta}
        if self.topology_policies:
            out["topologyPolicies"] = list(self.topology_policies)
        out["zones"] = [z.to_json() for z in self.zones]
        out["attributes"] = [{"name": n, "value": v} for n, v in self.attributes]
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> NodeResourceTopology:
        """Parse a stored object (tests and tools); quantities may be any Go quantity string."""
        meta = obj.get("metadata") or {}
        zones = []
        for z in obj.get("zones") or []:
            res = tuple(
                ResourceInfo(
                    name=r["name"],
                    capacity=parse_int_quantity(r.get("capacity", "0")),
                    allocatable=parse_int_quantity(r.get("allocatable", "0")),
                    available=parse_int_quantity(r.get("available", "0")),
                )
                for r in z.get("resources") or []
            )
            costs = tuple(CostInfo(c["name"], int(c["value"])) for c in z.get("costs") or [])
            zones.append(Zone(name=z["name"], type=z.get("type", ""), resources=res, costs=costs))
        return cls(
            name=meta.get("name", ""),
            zones=zones,
            attributes=[(a["name"], a.get("value", "")) for a in obj.get("attributes") or []],
            topology_policies=list(obj.get("topologyPolicies") or []),
            owner_references=list(meta.get("ownerReferences") or []),
        )


_PARSE_SUFFIXES: dict[str, int] = {
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 1 << 10,
    "Mi": 1 << 20,
    "Gi": 1 << 30,
    "Ti": 1 << 40,
    "Pi": 1 << 50,
    "Ei": 1 << 60,
}


def parse_int_quantity(value: str | int) -> int:
    """An integral quantity (``4``, ``2k``, ``1Gi``) as int; raises ValueError otherwise."""
    if isinstance(value, int):
        return value
    s = str(value).strip()
    num = s.rstrip("kMGTPEi")
    suffix = s[len(num) :]
    if suffix not in _PARSE_SUFFIXES or not num.lstrip("-").isdigit():
        raise ValueError(f"not an integral quantity: {value!r}")
    return int(num) * _PARSE_SUFFIXES[suffix]
