"""API models for nfd.k8s-sigs.io/v1alpha1 and topology.node.k8s.io/v1alpha2."""

from nfd.api.features import Features

GROUP = "nfd.k8s-sigs.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

NODE_NAME_LABEL = "nfd.node.kubernetes.io/node-name"
WORKER_VERSION_ANNOTATION = "nfd.node.kubernetes.io/worker.version"
WORKER_POD_UID_ANNOTATION = "nfd.node.kubernetes.io/worker.pod.uid"
DEFAULT_LABEL_NS = "feature.node.kubernetes.io"
NFD_ANNOTATION_NS = "nfd.node.kubernetes.io"

__all__ = [
    "API_VERSION",
    "DEFAULT_LABEL_NS",
    "Features",
    "GROUP",
    "NFD_ANNOTATION_NS",
    "NODE_NAME_LABEL",
    "VERSION",
    "WORKER_POD_UID_ANNOTATION",
    "WORKER_VERSION_ANNOTATION",
]
