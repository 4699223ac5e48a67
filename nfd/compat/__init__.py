"""Image compatibility (upstream ``api/image-compatibility/v1alpha1``, ``nfd compat``).

An image names the node features it needs in a compatibility spec stored as an OCI artifact
attached to the image (referrers API, or the referrers tag schema where a registry lacks it):

- ``nfd.compat.spec``: the spec parsed and validated;
- ``nfd.compat.validator``: its rules evaluated against this node, every expression reported;
- ``nfd.compat.oci``: fetching and attaching the artifact (oras Python SDK, ``nfd[compat]``).
"""

ARTIFACT_TYPE = "application/vnd.nfd.image-compatibility.v1alpha1"
SPEC_MEDIA_TYPE = "application/vnd.nfd.image-compatibility.spec.v1alpha1+yaml"
VERSION = "v1alpha1"
CREATED_ANNOTATION = "org.opencontainers.image.created"
