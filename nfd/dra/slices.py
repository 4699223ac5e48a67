"""One resource.k8s.io/v1 ResourceSlice -> a compact, pre-typed ``DraSlice``.

The informer keeps only this form. Each device's values are typed once, when the slice
arrives, as the DRA scheduler types them (int, bool, string, version as ``semver``, capacity
as ``quantity``) and kept in one tuple; what devices with the same attribute names share (the
``dra.device`` keys, the layout of the CEL maps) is one ``_Shape`` object. A node's
``dra.device`` instances (strings, for ``matchFeatures`` and templates) and CEL ``device``
values are built from these when the node is evaluated, so thousands of nodes with the same
GPUs hold a few hundred bytes per device (docs/dra.md, Cost). Parsing never raises: a value
nfd cannot type (an attribute of an unknown kind, a malformed quantity or version) is left out
with a warning that names the slice, device and attribute; the rest of the slice still counts.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from operator import itemgetter
from typing import Any

from nfd.lang.cel import (
    CelError,
    construct,  # CEL loads with the first device, not with the master
)

FEATURE = "dra.device"
# Keys of a dra.device element that are not attributes; an unqualified attribute id with one
# of these names is only available as <domain>/<id>.
META_KEYS = frozenset({"driver", "pool", "device"})
CAPACITY_PREFIX = "capacity."

# Semantic Versioning 2.0.0, as blang/semver Parse (what the DRA scheduler uses) accepts it.
_SEMVER_RE = re.compile(
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)

NodePredicate = Callable[[str, dict[str, str]], bool]  # (node name, node labels) -> selected


@lru_cache(maxsize=4096)
def version_value(text: str) -> Any:
    """The CEL value of a DRA version attribute: a ``semver``, as the DRA scheduler types it
    (blang/semver ``Parse``: the pre-release counts, build metadata does not), so a pasted
    ``compareTo(semver("..."))`` selector means what it means in a ResourceClaim. Values are
    immutable: cached, one object for every device with the same version."""
    return construct("semver", text)


class DomainMap(dict[str, Any]):
    """``device.attributes`` / ``device.capacity``: a domain that the device does not have reads
    as an empty map (as in the DRA scheduler), so ``has(device.attributes["x"].y)`` is false
    instead of an error; ``"x" in device.attributes`` still tells whether it is there."""

    _EMPTY: dict[str, Any] = {}

    def get(self, key: Any, default: Any = None) -> Any:
        v = dict.get(self, key, _ABSENT)
        if v is _ABSENT:
            return self._EMPTY if type(key) is str else default
        return v

    def __missing__(self, key: Any) -> Any:
        if type(key) is str:
            return self._EMPTY
        raise KeyError(key)


_ABSENT = object()


@dataclass(frozen=True, slots=True, eq=False)
class _Shape:
    """What devices with the same attribute and capacity names (and value kinds) share, once
    per process: the ``dra.device`` keys, which of a device's values each key shows, and where
    each domain's ids sit among the typed values. Devices keep only their values."""

    inst_keys: tuple[str, ...]
    pick: Callable[[tuple[Any, ...]], tuple[Any, ...]]  # values -> the instance's texts, in key order
    attrs: tuple[tuple[str, tuple[str, ...], int, int], ...]  # (domain, ids, start, stop) into the values
    caps: tuple[tuple[str, tuple[str, ...], int, int], ...]


# Devices of one driver share a shape; bounded so a stream of odd slices cannot grow it forever
# (past the bound a shape is simply not shared).
_SHAPES: dict[tuple[Any, ...], _Shape] = {}
_MAX_SHAPES = 4096


class DraDevice:
    """One device, compact: ``_vals`` is (driver, pool, name, allowMultipleAllocations, typed
    attribute values by domain, typed capacities by domain, instance texts of non-string values).
    ``instance`` and ``cel`` build fresh values on each read (the master reads them once per
    node evaluation and copies the instances anyway)."""

    __slots__ = ("_shape", "_vals", "selects")

    def __init__(self, shape: _Shape, vals: tuple[Any, ...], selects: NodePredicate | None = None) -> None:
        self._shape, self._vals = shape, vals
        # perDeviceNodeSelection slices only: this device's own node selection
        self.selects = selects

    @property
    def name(self) -> str:
        name: str = self._vals[2]
        return name

    @property
    def instance(self) -> dict[str, str]:
        """The ``dra.device`` element: attributes and capacities as strings."""
        # lengths match by construction; strict=True would double the cost of this read
        return dict(zip(self._shape.inst_keys, self._shape.pick(self._vals), strict=False))

    @property
    def cel(self) -> dict[str, Any]:
        """DRA's CEL ``device`` value (typed attributes and capacities, keyed by domain)."""
        v, sh = self._vals, self._shape
        return {
            "driver": v[0],
            "allowMultipleAllocations": v[3],
            "attributes": DomainMap({d: dict(zip(ids, v[a:b], strict=False)) for d, ids, a, b in sh.attrs}),
            "capacity": DomainMap({d: dict(zip(ids, v[a:b], strict=False)) for d, ids, a, b in sh.caps}),
        }


@dataclass(slots=True)
class DraSlice:
    name: str
    resource_version: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str = ""
    # allNodes, nodeSelector or perDeviceNodeSelection: selected by a predicate, not a name
    selects: NodePredicate | None = None
    per_device: bool = False
    devices: tuple[DraDevice, ...] = ()
    warnings: list[str] = field(default_factory=list)
    # False when nfd cannot tell which nodes the slice is for (it is then ignored, as DRA does)
    usable: bool = True

    @property
    def pool_key(self) -> tuple[str, str]:
        return (self.driver, self.pool)

    def selected(self, node: str, labels: dict[str, str]) -> bool:
        if self.node_name:
            return self.node_name == node
        return self.selects is not None and self.selects(node, labels)


# -- node selection (core/v1 NodeSelector, as k8s.io/component-helpers nodeaffinity) -------------


def _requirement(e: Any, *, path: str, fields: bool) -> Callable[[str, dict[str, str]], bool]:
    if not isinstance(e, dict):
        raise ValueError(f"{path}: must be an object")
    key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
    if not isinstance(key, str) or not key:
        raise ValueError(f"{path}.key: must be a non-empty string")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{path}.values: must be a list of strings")
    if fields and key != "metadata.name":
        raise ValueError(f"{path}.key: {key!r} is not a supported field selector (only metadata.name)")
    vals = frozenset(values)
    if op in ("In", "NotIn"):
        if not values:
            raise ValueError(f"{path}.values: must be non-empty for operator {op}")
        neg = op == "NotIn"
        if fields:
            return lambda n, labels: (n in vals) != neg
        return lambda n, labels: (key in labels and labels[key] in vals) != neg
    if fields:
        raise ValueError(f"{path}.operator: {op!r} is not valid for a field selector (In, NotIn)")
    if op in ("Exists", "DoesNotExist"):
        if values:
            raise ValueError(f"{path}.values: must be empty for operator {op}")
        neg = op == "DoesNotExist"
        return lambda n, labels: (key in labels) != neg
    if op in ("Gt", "Lt"):
        if len(values) != 1 or not re.fullmatch(r"[+-]?[0-9]+", values[0]):
            raise ValueError(f"{path}.values: operator {op} needs exactly one integer value")
        bound = int(values[0])
        gt = op == "Gt"

        def cmp(n: str, labels: dict[str, str]) -> bool:
            v = labels.get(key)
            if v is None or not re.fullmatch(r"[+-]?[0-9]+", v):
                return False
            return int(v) > bound if gt else int(v) < bound

        return cmp
    raise ValueError(f"{path}.operator: unknown operator {op!r}")


def compile_node_selector(sel: Any, *, path: str) -> NodePredicate:
    """A NodeSelector as a predicate: terms are ORed, requirements in a term ANDed; a term
    with no requirement selects nothing. Raises ValueError naming the field."""
    if not isinstance(sel, dict):
        raise ValueError(f"{path}: must be an object")
    terms = sel.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        raise ValueError(f"{path}.nodeSelectorTerms: must be a non-empty list")
    compiled: list[list[Callable[[str, dict[str, str]], bool]]] = []
    for i, t in enumerate(terms):
        tp = f"{path}.nodeSelectorTerms[{i}]"
        if not isinstance(t, dict):
            raise ValueError(f"{tp}: must be an object")
        reqs = [_requirement(e, path=f"{tp}.matchExpressions[{j}]", fields=False)
                for j, e in enumerate(t.get("matchExpressions") or [])]
        reqs += [_requirement(e, path=f"{tp}.matchFields[{j}]", fields=True)
                 for j, e in enumerate(t.get("matchFields") or [])]
        if reqs:
            compiled.append(reqs)

    def selects(node: str, labels: dict[str, str]) -> bool:
        return any(all(r(node, labels) for r in reqs) for reqs in compiled)

    return selects


def _all_nodes(node: str, labels: dict[str, str]) -> bool:
    return True


def _selection(obj: dict[str, Any], *, path: str) -> tuple[str, NodePredicate | None]:
    """(nodeName, predicate) of a slice's or a device's node selection fields."""
    node_name = obj.get("nodeName")
    if isinstance(node_name, str) and node_name:
        return node_name, None
    if obj.get("allNodes") is True:
        return "", _all_nodes
    if obj.get("nodeSelector") is not None:
        return "", compile_node_selector(obj["nodeSelector"], path=f"{path}.nodeSelector")
    return "", None


# -- attribute and capacity values ----------------------------------------------------------------

_VALUE_KINDS = ("int", "bool", "string", "version")


def _split_name(qname: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = qname.partition("/")
    return (domain, ident) if sep else (driver, qname)


def _attribute(raw: Any) -> tuple[Any, str]:
    """(CEL value, instance text) of one DeviceAttribute; ValueError says what is wrong."""
    if not isinstance(raw, dict):
        raise ValueError("must be an object")
    kinds = [k for k in _VALUE_KINDS if raw.get(k) is not None]
    if not kinds:
        other = ", ".join(sorted(str(k) for k in raw)) or "none"
        raise ValueError(f"unknown attribute type (fields: {other}; nfd knows int, bool, string, version)")
    if len(kinds) > 1:
        raise ValueError(f"more than one value ({', '.join(kinds)})")
    kind, v = kinds[0], raw[kinds[0]]
    if kind == "int":
        if type(v) is not int:
            raise ValueError(f"int value {v!r} is not an integer")
        return v, _intern(str(v))
    if kind == "bool":
        if type(v) is not bool:
            raise ValueError(f"bool value {v!r} is not a boolean")
        return v, "true" if v else "false"
    if not isinstance(v, str):
        raise ValueError(f"{kind} value {v!r} is not a string")
    if kind == "string":
        v = _intern(v)  # the same model/vendor strings on thousands of nodes: one copy
        return v, v
    if not _SEMVER_RE.fullmatch(v):
        raise ValueError(f"version value {v!r} is not a semantic version")

    try:
        return version_value(v), _intern(v)
    except CelError as e:
        raise ValueError(str(e)) from None


def _intern(s: str) -> str:
    return sys.intern(s) if len(s) <= 256 else s


@lru_cache(maxsize=4096)
def _quantity(text: str) -> tuple[Any, str]:
    try:
        q: Any = construct("quantity", text)
    except CelError:
        raise ValueError(f"invalid quantity {text!r}") from None
    v: Fraction = q.value
    # integers in base units (bytes for memory), so Gt/Lt and templates can use them
    return q, _intern(str(v.numerator) if v.denominator == 1 else text)


def _capacity(raw: Any) -> tuple[Any, str]:
    if not isinstance(raw, dict) or not isinstance(raw.get("value"), str | int):
        raise ValueError("must be an object with a quantity 'value'")
    return _quantity(str(raw["value"]))


def _device(dev: Any, *, driver: str, pool: str, path: str, warnings: list[str],
            per_device: bool) -> DraDevice | None:
    if not isinstance(dev, dict) or not isinstance(dev.get("name"), str) or not dev.get("name"):
        warnings.append(f"{path}: a device needs a name; device left out")
        return None
    name = _intern(dev["name"])  # gpu-0 .. gpu-7 on every node: one copy
    dp = f"{path}[{name}]"
    # domain -> id -> (typed value, instance text); instance key -> (attrs or caps, domain, id)
    attrs: dict[str, dict[str, tuple[Any, str]]] = {}
    caps: dict[str, dict[str, tuple[Any, str]]] = {}
    inst: dict[str, tuple[bool, str, str]] = {}
    raw_attrs = dev.get("attributes") or {}
    if not isinstance(raw_attrs, dict):
        warnings.append(f"{dp}.attributes: must be an object; attributes left out")
        raw_attrs = {}
    for qname, raw in raw_attrs.items():
        try:
            value, text = _attribute(raw)
        except ValueError as e:
            warnings.append(f"{dp}.attributes[{qname}]: {e}; attribute left out")
            continue
        domain, ident = _split_name(str(qname), driver)
        domain, ident = _intern(domain), _intern(ident)
        attrs.setdefault(domain, {})[ident] = (value, text)
        inst[_intern(f"{domain}/{ident}")] = (False, domain, ident)
        if domain == driver and ident not in META_KEYS:
            inst[ident] = (False, domain, ident)
    raw_caps = dev.get("capacity") or {}
    if not isinstance(raw_caps, dict):
        warnings.append(f"{dp}.capacity: must be an object; capacity left out")
        raw_caps = {}
    for qname, raw in raw_caps.items():
        try:
            q, text = _capacity(raw)
        except ValueError as e:
            warnings.append(f"{dp}.capacity[{qname}]: {e}; capacity left out")
            continue
        domain, ident = _split_name(str(qname), driver)
        domain, ident = _intern(domain), _intern(ident)
        caps.setdefault(domain, {})[ident] = (q, text)
        inst[_intern(f"{CAPACITY_PREFIX}{domain}/{ident}")] = (True, domain, ident)
        if domain == driver:
            inst[_intern(f"{CAPACITY_PREFIX}{ident}")] = (True, domain, ident)
    selects: NodePredicate | None = None
    if per_device:
        try:
            node_name, selects = _selection(dev, path=dp)
        except ValueError as e:
            warnings.append(f"{e}; device left out")
            return None
        if node_name:
            selects = _named(node_name)
        if selects is None:
            warnings.append(f"{dp}: perDeviceNodeSelection, but the device names no node; device left out")
            return None
    shape, vals = _compact(driver, pool, name, dev.get("allowMultipleAllocations") is True, attrs, caps, inst)
    return DraDevice(shape, vals, selects)


def _compact(driver: str, pool: str, name: str, multi: bool, attrs: dict[str, dict[str, tuple[Any, str]]],
             caps: dict[str, dict[str, tuple[Any, str]]],
             inst: dict[str, tuple[bool, str, str]]) -> tuple[_Shape, tuple[Any, ...]]:
    """A device's values as one tuple, and its (shared) shape."""
    vals: list[Any] = [driver, pool, name, multi]
    where: dict[tuple[bool, str, str], int] = {}  # (capacity?, domain, id) -> index of its text
    extra: list[str] = []  # texts that are not the typed value itself (int, bool, version, quantity)
    layouts: list[tuple[tuple[str, tuple[str, ...], int, int], ...]] = []
    for is_cap, groups in ((False, attrs), (True, caps)):
        layout = []
        for domain, ids in groups.items():
            start = len(vals)
            for ident, (value, text) in ids.items():
                if type(value) is str:
                    where[(is_cap, domain, ident)] = len(vals)
                else:
                    where[(is_cap, domain, ident)] = -1 - len(extra)
                    extra.append(text)
                vals.append(value)
            layout.append((domain, tuple(ids), start, len(vals)))
        layouts.append(tuple(layout))
    n = len(vals)
    picks = (0, 1, 2, *(i if i >= 0 else n - 1 - i for i in (where[r] for r in inst.values())))
    vals += extra
    key = (tuple(inst), picks, layouts[0], layouts[1])
    shape = _SHAPES.get(key)
    if shape is None:
        shape = _Shape(("driver", "pool", "device", *inst), itemgetter(*picks), layouts[0], layouts[1])
        if len(_SHAPES) < _MAX_SHAPES:
            _SHAPES[key] = shape
    return shape, tuple(vals)


def _named(node_name: str) -> NodePredicate:
    return lambda n, labels: n == node_name


def parse_slice(obj: dict[str, Any]) -> DraSlice:
    """The compact form of one ResourceSlice; never raises (see ``DraSlice.warnings``)."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    spec = obj.get("spec")
    where = f"ResourceSlice {name}"
    out = DraSlice(name=name, resource_version=str(meta.get("resourceVersion") or ""), driver="", pool="",
                   generation=0, slice_count=0)
    if not isinstance(spec, dict):
        out.usable = False
        out.warnings.append(f"{where}: spec must be an object; slice ignored")
        return out
    raw_pool = spec.get("pool")
    pool: dict[str, Any] = raw_pool if isinstance(raw_pool, dict) else {}
    driver, pool_name = spec.get("driver"), pool.get("name")
    out.driver = _intern(driver) if isinstance(driver, str) else ""
    # a node-local pool is usually named after its node: one string for both
    out.pool = _intern(pool_name) if isinstance(pool_name, str) else ""
    gen, count = pool.get("generation"), pool.get("resourceSliceCount")
    out.generation = gen if type(gen) is int else 0
    out.slice_count = count if type(count) is int and count > 0 else 0
    if not out.driver or not out.pool or not out.slice_count:
        out.usable = False
        out.warnings.append(f"{where}: spec.driver, spec.pool.name and spec.pool.resourceSliceCount are required; "
                            "slice ignored")
        return out
    out.per_device = spec.get("perDeviceNodeSelection") is True
    try:
        node_name, out.selects = _selection(spec, path=f"{where}: spec")
        out.node_name = _intern(node_name)
    except ValueError as e:
        out.usable = False
        out.warnings.append(f"{e}; slice ignored")
        return out
    if not out.node_name and out.selects is None and not out.per_device:
        # Some node selection nfd does not know (a newer API): DRA skips such slices too.
        out.usable = False
        out.warnings.append(f"{where}: no nodeName, nodeSelector, allNodes or perDeviceNodeSelection; slice ignored")
        return out
    devices = spec.get("devices") or []
    if not isinstance(devices, list):
        out.warnings.append(f"{where}: spec.devices must be a list; no devices")
        devices = []
    parsed = [_device(d, driver=out.driver, pool=out.pool, path=f"{where}: spec.devices", warnings=out.warnings,
                      per_device=out.per_device) for d in devices]
    out.devices = tuple(d for d in parsed if d is not None)
    if out.per_device and out.selects is None:
        devs = [d.selects for d in out.devices if d.selects is not None]
        out.selects = lambda n, labels: any(sel(n, labels) for sel in devs)
    return out


def compact_slice(obj: dict[str, Any]) -> dict[str, Any]:
    """Informer transform: identity metadata and the parsed slice (the raw object is dropped)."""
    meta = obj.get("metadata") or {}
    slim = {k: meta[k] for k in ("name", "uid", "resourceVersion") if k in meta}
    return {"metadata": slim, "dra": parse_slice(obj)}
