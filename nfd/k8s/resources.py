"""The API resources nfd uses, and their URL paths."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True, slots=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, *, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        return base


NODES = Resource("", "v1", "nodes", "Node", False)
PODS = Resource("", "v1", "pods", "Pod", True)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False)
EVENTS = Resource("", "v1", "events", "Event", True)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
DAEMONSETS = Resource("apps", "v1", "daemonsets", "DaemonSet", True)
NODEFEATURES = Resource("nfd.k8s-sigs.io", "v1alpha1", "nodefeatures", "NodeFeature", True)
NODEFEATURERULES = Resource("nfd.k8s-sigs.io", "v1alpha1", "nodefeaturerules", "NodeFeatureRule", False)
NODEFEATUREGROUPS = Resource("nfd.k8s-sigs.io", "v1alpha1", "nodefeaturegroups", "NodeFeatureGroup", True)
CUSTOMRESOURCEDEFINITIONS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)
#: the CRDs of the NFD rule objects (nfd-master and ``kubectl nfd validate --cluster`` read them)
RULE_CRD_NAMES = ("nodefeaturerules.nfd.k8s-sigs.io", "nodefeaturegroups.nfd.k8s-sigs.io")
RESOURCESLICES = Resource("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False)
NODERESOURCETOPOLOGIES = Resource(
    "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies", "NodeResourceTopology", False
)
