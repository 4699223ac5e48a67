from __future__ import annotations

import os

from nfd.hostpaths import HostPaths
from nfd.sources.base import DiscoveryContext

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "sysfs")
MODELS = ["gpu-server", "hybrid-cpu", "sriov-host", "hugepages-nvdimm", "arm-host", "kvm-guest"]
# shared conformance data, beside the repository (read at test time, never copied in)
UPSTREAM_PCI = os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared", "fixtures", "upstream-pci", "rootfs-1"))


def fixture_root(name: str) -> str:
    return os.path.abspath(os.path.join(FIXTURES, name, "root"))


def fixture_ctx(name: str) -> DiscoveryContext:
    return DiscoveryContext(paths=HostPaths.under(fixture_root(name)), node_name="node-1")
