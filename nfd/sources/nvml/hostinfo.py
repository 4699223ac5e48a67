"""The non-NVML facts GFD reads from the host: DMI product name, PCI class, vGPU capability.

:class:`SysfsHost` reads them through the worker's host paths; a fake NVML profile supplies
its own (see nfd.nvml_fake) so a GPU-less machine shows a GPU node's labels.
"""

from __future__ import annotations

import os
from typing import Protocol

from nfd.sources.base import DiscoveryContext
from nfd.sources.hostfs import list_dir, read_bytes, read_value
from nfd.sources.nvml.snapshot import Vgpu

DMI_PRODUCT_NAME = "/sys/class/dmi/id/product_name"
NVIDIA_VENDOR = "0x10de"


class HostFacts(Protocol):
    def machine_type(self) -> str | None: ...
    def pci_class(self, bus_id: str) -> int | None: ...
    def vgpu(self) -> Vgpu | None: ...


def sysfs_bus_id(nvml_bus_id: str) -> str:
    """``00000000:59:00.0`` (NVML) -> ``0000:59:00.0`` (sysfs), as GFD converts it."""
    bid = nvml_bus_id.strip().lower()
    domain, sep, rest = bid.partition(":")
    if sep and len(domain) == 8:
        return domain[4:] + ":" + rest
    return bid


class SysfsHost:
    def __init__(self, ctx: DiscoveryContext, *, machine_type_file: str = ""):
        self.ctx = ctx
        self.machine_type_file = machine_type_file

    def machine_type(self) -> str | None:
        path = self.machine_type_file or self.ctx.paths.path(DMI_PRODUCT_NAME)
        return read_value(self.ctx, path)

    def pci_class(self, bus_id: str) -> int | None:
        path = self.ctx.paths.sys(f"bus/pci/devices/{sysfs_bus_id(bus_id)}/class")
        v = read_value(self.ctx, path)
        try:
            return int(v, 16) if v else None
        except ValueError:
            self.ctx.warn(f"{path}: not a PCI class: {(v or '')[:20]!r}")
            return None

    def vgpu(self) -> Vgpu | None:
        """Scan NVIDIA PCI functions for the vGPU vendor capability; None if the scan failed."""
        root = self.ctx.paths.sys("bus/pci/devices")
        names = list_dir(self.ctx, root)
        if names is None:
            return None
        found: Vgpu | None = None
        for name in names:
            dev = os.path.join(root, name)
            if read_value(self.ctx, os.path.join(dev, "vendor")) != NVIDIA_VENDOR:
                continue
            config = read_bytes(self.ctx, os.path.join(dev, "config"), limit=4096)
            if config is None:
                return None
            if len(config) < 256:
                self.ctx.warn(
                    f"{dev}/config: only {len(config)} bytes of PCI config space readable "
                    "(vGPU detection needs a privileged container)"
                )
                return None
            info = parse_vgpu_capability(config)
            if info is not None:
                found = info
        return found or Vgpu(present=False)


def vendor_capability(config: bytes) -> bytes | None:
    """The PCI vendor-specific capability (id 0x09) from config space, if any."""
    if len(config) < 256 or not config[0x06] & 0x10:
        return None
    seen: set[int] = set()
    pos = config[0x34]
    while pos and pos not in seen and pos + 2 < len(config):
        seen.add(pos)
        cap_id, nxt, length = config[pos], config[pos + 1], config[pos + 2]
        if cap_id == 0xFF:
            break
        if cap_id == 0x09:
            return config[pos : pos + length]
        pos = nxt
    return None


def parse_vgpu_capability(config: bytes) -> Vgpu | None:
    """A vGPU record (signature ``VF``) with the host driver version/branch, or None."""
    cap = vendor_capability(config)
    if cap is None or len(cap) < 5 or cap[3:5] != b"VF":
        return None
    # records start at offset 5: (id, length, data...); id 0 carries host driver version+branch
    pos = 5
    while pos < len(cap) and cap[pos] != 0:
        step = cap[pos + 1] if pos + 1 < len(cap) else 0
        if step == 0:
            break
        pos += step
    if pos < len(cap) and cap[pos] == 0 and pos + 22 <= len(cap):
        version = cap[pos + 2 : pos + 12].strip(b"\x00").decode("ascii", "replace")
        branch = cap[pos + 12 : pos + 22].strip(b"\x00").decode("ascii", "replace")
        return Vgpu(present=True, host_driver_version=version, host_driver_branch=branch)
    return Vgpu(present=True)
