"""What the updater needs to know about a Pod object: its QoS class and whether it asks for
exclusive CPUs. Pods are reduced to this on ingest so the node-scoped pod cache stays tiny
(a full Pod is tens of kB as Python objects; 200 of them would blow the memory budget).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from nfd.api.quantity import quantity_fraction


def _qos_from_spec(spec: dict[str, Any]) -> str:
    """Kubernetes' GetPodQOS over init and regular containers (cpu and memory only)."""
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    for c in containers:
        res = c.get("resources") or {}
        for name, q in (res.get("requests") or {}).items():
            if name in ("cpu", "memory"):
                v = quantity_fraction(q)
                if v > 0:
                    requests[name] = requests.get(name, Fraction(0)) + v
        found = set()
        for name, q in (res.get("limits") or {}).items():
            if name in ("cpu", "memory"):
                v = quantity_fraction(q)
                if v > 0:
                    found.add(name)
                    limits[name] = limits.get(name, Fraction(0)) + v
        if found != {"cpu", "memory"}:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and len(requests) == len(limits) and all(limits.get(k) == v for k, v in requests.items()):
        return "Guaranteed"
    return "Burstable"


def pod_qos(pod: dict[str, Any]) -> str:
    """``status.qosClass`` as set by the API server, computed from the spec when absent."""
    q = (pod.get("status") or {}).get("qosClass")
    if q in ("Guaranteed", "Burstable", "BestEffort"):
        return str(q)
    return _qos_from_spec(pod.get("spec") or {})


def _integral_cpu_request(container: dict[str, Any]) -> bool:
    q = ((container.get("resources") or {}).get("requests") or {}).get("cpu")
    if q is None:
        return False
    try:
        return quantity_fraction(q).denominator == 1
    except (ValueError, ZeroDivisionError):
        return False


def exclusive_cpus(pod: dict[str, Any]) -> bool:
    """Some (init) container of the pod requests a whole number of CPUs."""
    spec = pod.get("spec") or {}
    return any(
        _integral_cpu_request(c) for c in (spec.get("initContainers") or []) + (spec.get("containers") or [])
    )


def compact_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """The cache form of a Pod: identity plus two booleans (see module docstring)."""
    meta = pod.get("metadata") or {}
    try:
        guaranteed = pod_qos(pod) == "Guaranteed"
        exclusive = guaranteed and exclusive_cpus(pod)
    except (ValueError, ZeroDivisionError, TypeError, AttributeError):
        # a malformed quantity cannot come from a real API server; count it as not exclusive
        guaranteed, exclusive = False, False
    return {
        "metadata": {
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        },
        "guaranteed": guaranteed,
        "exclusiveCPUs": exclusive,
    }
