"""Per-NUMA zones (capacity, allocatable, available) from the host topology, the kubelet's
allocatable resources and the accounted pod resources. Pure functions.

Semantics follow upstream's pkg/resourcemonitor/noderesourcesaggregator.go:

- allocatable per NUMA node: devices counted on every NUMA node of their topology (devices
  without topology are not tracked); allocatable CPU ids mapped to NUMA nodes through sysfs;
  memory blocks summed per NUMA node per type (``memory``, ``hugepages-<size>``);
- reserved CPUs = CPUs of a NUMA node the kubelet does not list as allocatable;
- capacity: ``cpu`` = allocatable + reserved; memory/hugepages = sysfs figure (falls back to
  allocatable); other resources = allocatable; a NUMA node without allocatable resources gets a
  ``cpu`` entry with capacity = reserved and allocatable = available = 0;
- available starts at allocatable; each accounted CPU/device id takes 1 from its NUMA node;
  memory requests drain the listed NUMA nodes in order (kubelet memory manager order);
- excluded resource names are left out.

Zones and resources are sorted (upstream's order is Go map order, i.e. random) so equal input
gives an equal object and unchanged state causes no write.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from nfd.api.noderesourcetopology import CostInfo, ResourceInfo, Zone
from nfd.topology_updater.scan import PodUse, ResourceUse, numa_ids
from nfd.topology_updater.sysfs import NumaTopology

log = logging.getLogger(__name__)


def is_memory(name: str) -> bool:
    return name == "memory" or name.startswith("hugepages-")


@dataclass(slots=True)
class NodeResources:
    """What the node can offer, computed once from GetAllocatableResources and sysfs."""

    topology: NumaTopology
    #: NUMA id -> resource -> allocatable amount
    allocatable: dict[int, dict[str, int]] = field(default_factory=dict)
    #: resource -> id -> NUMA id
    id_to_numa: dict[str, dict[str, int]] = field(default_factory=dict)
    #: NUMA id -> reserved (not allocatable) CPU ids
    reserved_cpus: dict[int, list[int]] = field(default_factory=dict)


def node_resources(topology: NumaTopology, allocatable: Any) -> NodeResources:
    """``allocatable``: an ``AllocatableResourcesResponse`` message."""
    nr = NodeResources(topology=topology)
    # (resource, ids, numa ids) triples, CPUs folded in as a "cpu" device per NUMA node
    devices: list[tuple[str, list[str], tuple[int, ...]]] = []
    for d in allocatable.devices:
        devices.append(
            (d.resource_name, list(d.device_ids), numa_ids(d.topology if d.HasField("topology") else None))
        )
    cpu_node = topology.cpu_to_node()
    per_numa_cpus: dict[int, list[str]] = {}
    allocatable_cpus: set[int] = set()
    for cpu in allocatable.cpu_ids:
        node = cpu_node.get(int(cpu))
        if node is None:
            log.info("allocatable CPU %d is not in the sysfs NUMA topology, ignored", cpu)
            continue
        allocatable_cpus.add(int(cpu))
        per_numa_cpus.setdefault(node, []).append(str(cpu))
    for node, cpus in sorted(per_numa_cpus.items()):
        devices.append(("cpu", cpus, (node,)))

    for name, ids, nodes in devices:
        id_map = nr.id_to_numa.setdefault(name, {})
        for node in nodes:
            per = nr.allocatable.setdefault(node, {})
            per[name] = per.get(name, 0) + len(ids)
            for i in ids:
                id_map[i] = node
    for m in allocatable.memory:
        if not m.HasField("topology"):
            continue
        for node in numa_ids(m.topology):
            per = nr.allocatable.setdefault(node, {})
            per[m.memory_type] = per.get(m.memory_type, 0) + int(m.size)

    for n in topology.nodes:
        reserved = [c for c in n.cpus if c not in allocatable_cpus]
        if reserved:
            nr.reserved_cpus[n.id] = reserved
    return nr


@dataclass(slots=True)
class _Amounts:
    capacity: int
    allocatable: int
    available: int


def _initial(nr: NodeResources, exclude: frozenset[str]) -> dict[int, dict[str, _Amounts]]:
    per_numa: dict[int, dict[str, _Amounts]] = {}
    for n in nr.topology.nodes:
        reserved = len(nr.reserved_cpus.get(n.id, ()))
        alloc = nr.allocatable.get(n.id)
        if alloc is None:
            per_numa[n.id] = {"cpu": _Amounts(capacity=reserved, allocatable=0, available=0)}
            continue
        res: dict[str, _Amounts] = {}
        for name, amount in alloc.items():
            if name in exclude:
                continue
            if name == "cpu":
                cap = amount + reserved
            elif is_memory(name):
                cap = nr.topology.memory.get(n.id, {}).get(name, amount)
            else:
                cap = amount
            res[name] = _Amounts(capacity=cap, allocatable=amount, available=amount)
        per_numa[n.id] = res
    return per_numa


def _take_ids(nr: NodeResources, per_numa: dict[int, dict[str, _Amounts]], use: ResourceUse) -> None:
    id_map = nr.id_to_numa.get(use.name)
    if id_map is None:
        log.debug("unknown resource %s", use.name)
        return
    for rid in use.ids:
        node = id_map.get(rid)
        if node is None:
            log.debug("unknown %s id %s", use.name, rid)
            continue
        amounts = per_numa.get(node, {}).get(use.name)
        if amounts is None:  # excluded, or NUMA node absent from sysfs
            continue
        amounts.available -= 1


def _take_memory(per_numa: dict[int, dict[str, _Amounts]], use: ResourceUse) -> None:
    if not use.numa or len(use.ids) != 1:
        return
    try:
        want = int(use.ids[0])
    except ValueError:
        return
    for node in use.numa:
        if want == 0:
            return
        res = per_numa.get(node)
        if res is None:
            continue
        amounts = res.get(use.name)
        if amounts is None:
            return
        if amounts.available == 0:
            continue
        took = min(want, amounts.available)
        amounts.available -= took
        want -= took
    if want > 0:
        log.debug("%s request not fully satisfied by its NUMA nodes", use.name)


@functools.lru_cache(maxsize=1024)
def _costs(distances: tuple[int, ...]) -> tuple[CostInfo, ...]:
    """A NUMA node's costs: the same tuple every cycle (its JSON is then reused too)."""
    return tuple(CostInfo(f"node-{j}", d) for j, d in enumerate(distances))


def zones(nr: NodeResources, pods: Iterable[PodUse], exclude: frozenset[str] = frozenset()) -> list[Zone]:
    per_numa = _initial(nr, exclude)
    for pod in pods:
        for c in pod.containers:
            for use in c.resources:
                if use.name in exclude:
                    continue
                if is_memory(use.name):
                    _take_memory(per_numa, use)
                else:
                    _take_ids(nr, per_numa, use)
    out = []
    for n in sorted(nr.topology.nodes, key=lambda n: n.id):
        res = per_numa[n.id]
        out.append(
            Zone(
                name=f"node-{n.id}",
                type="Node",
                costs=_costs(tuple(n.distances)),
                resources=tuple(
                    ResourceInfo(name, a.capacity, a.allocatable, a.available)
                    for name, a in sorted(res.items())
                ),
            )
        )
    return out
