"""The feature model shared by every process: flag, attribute and instance features.

Feature sets are keyed ``<source>.<feature>`` (``cpu.cpuid``, ``pci.device``). In memory:

- ``flags[name]`` is a set of element names (upstream: ``elements: {key: {}}``),
- ``attributes[name]`` maps element name to string value,
- ``instances[name]`` is a list of attribute maps (upstream: ``elements: [{attributes: {...}}]``).

``to_json``/``from_json`` speak upstream's exact ``NodeFeatureSpec.features`` shape.
"""

from __future__ import annotations

from typing import Any

from nfd.api.errors import ValidationError


class Features:
    """A node's features: flags, attributes and instances, each by feature name.

    Written out as a dataclass would generate it (``__init__``, ``__eq__``, ``__repr__``): the
    one-shot worker does not load ``dataclasses`` (docs/worker.md, "The one-shot wall")."""

    __slots__ = ("flags", "attributes", "instances")
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __init__(self, flags: dict[str, set[str]] | None = None, attributes: dict[str, dict[str, str]] | None = None,
                 instances: dict[str, list[dict[str, str]]] | None = None) -> None:
        self.flags: dict[str, set[str]] = {} if flags is None else flags
        self.attributes: dict[str, dict[str, str]] = {} if attributes is None else attributes
        self.instances: dict[str, list[dict[str, str]]] = {} if instances is None else instances

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Features)
        return (self.flags, self.attributes, self.instances) == (other.flags, other.attributes, other.instances)

    def __repr__(self) -> str:
        return f"Features(flags={self.flags!r}, attributes={self.attributes!r}, instances={self.instances!r})"

    # -- construction helpers -------------------------------------------------------------
    def add_flags(self, name: str, elements: Any) -> None:
        self.flags.setdefault(name, set()).update(elements)

    def add_attributes(self, name: str, elements: dict[str, str]) -> None:
        self.attributes.setdefault(name, {}).update({k: str(v) for k, v in elements.items()})

    def add_instances(self, name: str, elements: list[dict[str, str]]) -> None:
        self.instances.setdefault(name, []).extend(
            {k: str(v) for k, v in e.items()} for e in elements
        )

    def merge(self, other: Features) -> None:
        """Merge ``other`` into self as the master merges NodeFeatures: later wins, instances append."""
        for k, fv in other.flags.items():
            self.flags.setdefault(k, set()).update(fv)
        for k, av in other.attributes.items():
            self.attributes.setdefault(k, {}).update(av)
        for k, iv in other.instances.items():
            self.instances.setdefault(k, []).extend(dict(i) for i in iv)

    def copy(self) -> Features:
        return Features(
            flags={k: set(v) for k, v in self.flags.items()},
            attributes={k: dict(v) for k, v in self.attributes.items()},
            instances={k: [dict(i) for i in v] for k, v in self.instances.items()},
        )

    def is_empty(self) -> bool:
        return not (self.flags or self.attributes or self.instances)

    # -- upstream JSON --------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """Upstream ``spec.features``; keys sorted so equal features serialise identically."""
        return {
            "flags": {
                k: {"elements": {e: {} for e in sorted(self.flags[k])}} for k in sorted(self.flags)
            },
            "attributes": {
                k: {"elements": dict(sorted(self.attributes[k].items()))}
                for k in sorted(self.attributes)
            },
            "instances": {
                k: {"elements": [{"attributes": dict(sorted(i.items()))} for i in self.instances[k]]}
                for k in sorted(self.instances)
            },
        }

    @classmethod
    def from_json(cls, obj: Any, *, path: str = "spec.features") -> Features:
        """Parse upstream ``spec.features``. Raises ValidationError naming the bad field."""
        f = cls()
        if obj is None:
            return f
        if not isinstance(obj, dict):
            raise ValidationError(path, "must be an object")
        for kind in ("flags", "attributes", "instances"):
            sets = obj.get(kind) or {}
            if not isinstance(sets, dict):
                raise ValidationError(f"{path}.{kind}", "must be an object")
            for name, fs in sets.items():
                p = f"{path}.{kind}.{name}"
                if fs is None:
                    fs = {}
                if not isinstance(fs, dict):
                    raise ValidationError(p, "must be an object")
                elems = fs.get("elements")
                if kind == "flags":
                    if elems is None:
                        elems = {}
                    if not isinstance(elems, dict):
                        raise ValidationError(f"{p}.elements", "must be an object")
                    f.flags[name] = set(elems)
                elif kind == "attributes":
                    if elems is None:
                        elems = {}
                    if not isinstance(elems, dict):
                        raise ValidationError(f"{p}.elements", "must be an object")
                    if all(type(k) is str and type(v) is str for k, v in elems.items()):
                        f.attributes[name] = dict(elems)  # the usual case: no conversion
                    else:
                        f.attributes[name] = {str(k): _str(v, f"{p}.elements.{k}") for k, v in elems.items()}
                else:
                    if elems is None:
                        elems = []
                    if not isinstance(elems, list):
                        raise ValidationError(f"{p}.elements", "must be a list")
                    lst: list[dict[str, str]] = []
                    for i, inst in enumerate(elems):
                        ip = f"{p}.elements[{i}]"
                        if not isinstance(inst, dict):
                            raise ValidationError(ip, "must be an object")
                        attrs = inst.get("attributes") or {}
                        if not isinstance(attrs, dict):
                            raise ValidationError(f"{ip}.attributes", "must be an object")
                        if all(type(k) is str and type(v) is str for k, v in attrs.items()):
                            lst.append(dict(attrs))
                        else:
                            lst.append({str(k): _str(v, f"{ip}.attributes.{k}") for k, v in attrs.items()})
                    f.instances[name] = lst
        return f


def _str(v: Any, path: str) -> str:
    if isinstance(v, str):
        return v
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return str(v)
    raise ValidationError(path, f"must be a string, got {type(v).__name__}")
