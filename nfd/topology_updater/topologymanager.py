"""Topology-manager attributes and the deprecated ``topologyPolicies`` value of the NRT."""

from __future__ import annotations

_POD = {
    "single-numa-node": "SingleNUMANodePodLevel",
    "restricted": "RestrictedPodLevel",
    "best-effort": "BestEffortPodLevel",
}
_CONTAINER = {
    "single-numa-node": "SingleNUMANodeContainerLevel",
    "restricted": "RestrictedContainerLevel",
    "best-effort": "BestEffortContainerLevel",
}

#: kubelet defaults when its configuration leaves the fields empty
DEFAULT_POLICY = "none"
DEFAULT_SCOPE = "container"


def topology_policy(policy: str, scope: str) -> str:
    """Upstream's DetectTopologyPolicy: scope selects the table, anything unknown is ``None``."""
    if scope == "pod":
        return _POD.get(policy, "None")
    if scope == "container":
        return _CONTAINER.get(policy, "None")
    return "None"
