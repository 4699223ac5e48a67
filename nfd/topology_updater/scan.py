"""Which pods, and which of their resources, are accounted against NUMA zones.

Pure function of the kubelet's ``List`` answer and what the pod cache says about each pod.
Upstream's rules (pkg/resourcemonitor/podresourcesscanner.go):

- only pods in the watched namespace (``*`` = all);
- a pod counts if it is Guaranteed QoS or has any device assigned;
- CPU ids count only for Guaranteed pods with an integral CPU request in some (init) container;
- devices always count; memory blocks with size > 0 count (with their NUMA ids);
- containers and pods left with nothing to account are dropped;
- the fingerprint covers *every* pod the kubelet listed (when there is at least one).

A pod the kubelet lists but our pod cache does not (yet) know is reported in ``missing`` and
accounted from kubelet data alone: devices and memory blocks as usual, and its CPU ids as
exclusive (the kubelet only reports exclusively allocated CPUs in ``List``). The updater holds
the publish back for a short grace period so the cache can catch up; see updater.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nfd.topology_updater import fingerprint


@dataclass(frozen=True, slots=True)
class PodFacts:
    guaranteed: bool
    exclusive_cpus: bool


@dataclass(frozen=True, slots=True)
class ResourceUse:
    name: str
    #: device ids, CPU ids as decimal strings, or for memory one element: the size in bytes
    ids: tuple[str, ...]
    numa: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ContainerUse:
    name: str
    resources: tuple[ResourceUse, ...]


@dataclass(frozen=True, slots=True)
class PodUse:
    namespace: str
    name: str
    containers: tuple[ContainerUse, ...]


@dataclass(slots=True)
class ScanResult:
    pods: list[PodUse] = field(default_factory=list)
    #: fingerprint attribute value, None when disabled or no pods
    fingerprint: str | None = None
    #: (namespace, name) of listed pods the pod cache does not know
    missing: list[tuple[str, str]] = field(default_factory=list)
    listed: int = 0


def numa_ids(topology: Any) -> tuple[int, ...]:
    if topology is None:
        return ()
    return tuple(int(n.ID) for n in topology.nodes)


def _has_devices(pod: Any) -> bool:
    return any(len(c.devices) > 0 for c in pod.containers)


def account(
    pod_resources: Sequence[Any],
    lookup: Callable[[str, str], PodFacts | None],
    *,
    namespace: str = "*",
    with_fingerprint: bool = True,
    sign: Callable[[Iterable[tuple[str, str]]], str] = fingerprint.sign,
) -> ScanResult:
    """``pod_resources``: the ``PodResources`` messages of a ``List`` answer. ``sign``: the
    fingerprint function (a daemon passes a fingerprint.Memo's)."""
    result = ScanResult(listed=len(pod_resources))
    if with_fingerprint and pod_resources:
        result.fingerprint = sign((p.namespace, p.name) for p in pod_resources)
    for pod in pod_resources:
        if namespace != "*" and pod.namespace != namespace:
            continue
        facts = lookup(pod.namespace, pod.name)
        if facts is None:
            result.missing.append((pod.namespace, pod.name))
            facts = PodFacts(guaranteed=True, exclusive_cpus=True)
        if not (facts.guaranteed or _has_devices(pod)):
            continue
        containers = []
        for c in pod.containers:
            res: list[ResourceUse] = []
            if facts.exclusive_cpus and len(c.cpu_ids) > 0:
                res.append(ResourceUse("cpu", tuple(str(i) for i in c.cpu_ids)))
            for d in c.devices:
                res.append(
                    ResourceUse(
                        d.resource_name,
                        tuple(d.device_ids),
                        numa_ids(d.topology if d.HasField("topology") else None),
                    )
                )
            for m in c.memory:
                if m.size == 0:
                    continue
                res.append(
                    ResourceUse(
                        m.memory_type,
                        (str(m.size),),
                        numa_ids(m.topology if m.HasField("topology") else None),
                    )
                )
            if res:
                containers.append(ContainerUse(c.name, tuple(res)))
        if containers:
            result.pods.append(PodUse(pod.namespace, pod.name, tuple(containers)))
    return result
