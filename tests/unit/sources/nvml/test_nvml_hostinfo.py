"""Host facts read from a fake sysfs tree: DMI product name, PCI class, vGPU capability."""

from __future__ import annotations

import os

from nfd.hostpaths import HostPaths
from nfd.sources.base import DiscoveryContext
from nfd.sources.nvml.hostinfo import SysfsHost, parse_vgpu_capability, sysfs_bus_id
from nfd.sources.nvml.snapshot import Vgpu


def write(root, rel: str, data: bytes | str) -> None:
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def config_space(cap: bytes | None) -> bytes:
    """256 bytes of PCI config space with an optional vendor-specific capability at 0x40."""
    cfg = bytearray(256)
    cfg[0:2] = b"\xde\x10"
    if cap is not None:
        cfg[0x06] = 0x10  # capability list present
        cfg[0x34] = 0x60  # first capability: a power-management one, then ours
        cfg[0x60:0x63] = bytes([0x01, 0x40, 0x08])
        cfg[0x40 : 0x40 + len(cap)] = cap
    return bytes(cfg)


def vgpu_cap(version: bytes, branch: bytes) -> bytes:
    record = bytes([0x00, 22]) + version.ljust(10, b"\x00") + branch.ljust(10, b"\x00")
    body = b"VF" + record
    return bytes([0x09, 0x00, 3 + len(body)]) + body


def test_bus_id_conversion() -> None:
    assert sysfs_bus_id("00000000:59:00.0") == "0000:59:00.0"
    assert sysfs_bus_id("00000001:3B:00.0") == "0001:3b:00.0"
    assert sysfs_bus_id("0000:3b:00.0") == "0000:3b:00.0"


def test_machine_type_and_pci_class(tmp_path) -> None:
    write(tmp_path, "sys/class/dmi/id/product_name", "PowerEdge XE9680\n")
    write(tmp_path, "sys/bus/pci/devices/0000:59:00.0/class", "0x030200\n")
    write(tmp_path, "sys/bus/pci/devices/0000:5a:00.0/class", "garbage\n")
    ctx = DiscoveryContext(paths=HostPaths.under(str(tmp_path)))
    host = SysfsHost(ctx)
    assert host.machine_type() == "PowerEdge XE9680"
    assert host.pci_class("00000000:59:00.0") == 0x030200
    assert host.pci_class("00000000:5A:00.0") is None
    assert host.pci_class("00000000:99:00.0") is None
    assert any("not a PCI class" in w for w in ctx.warnings)
    other = tmp_path / "dmi"
    other.write_text("Custom Box")
    assert SysfsHost(ctx, machine_type_file=str(other)).machine_type() == "Custom Box"


def test_vgpu_scan(tmp_path) -> None:
    devs = "sys/bus/pci/devices/"
    write(tmp_path, devs + "0000:00:01.0/vendor", "0x8086\n")  # not NVIDIA: never read further
    write(tmp_path, devs + "0000:00:05.0/vendor", "0x10de\n")
    write(tmp_path, devs + "0000:00:05.0/config", config_space(None))
    ctx = DiscoveryContext(paths=HostPaths.under(str(tmp_path)))
    assert SysfsHost(ctx).vgpu() == Vgpu(present=False)
    write(tmp_path, devs + "0000:00:06.0/vendor", "0x10de\n")
    write(tmp_path, devs + "0000:00:06.0/config", config_space(vgpu_cap(b"550.54.16", b"r550_40")))
    assert SysfsHost(ctx).vgpu() == Vgpu(
        present=True, host_driver_version="550.54.16", host_driver_branch="r550_40"
    )


def test_vgpu_scan_unprivileged_config_is_a_failed_scan(tmp_path) -> None:
    write(tmp_path, "sys/bus/pci/devices/0000:00:05.0/vendor", "0x10de\n")
    write(tmp_path, "sys/bus/pci/devices/0000:00:05.0/config", b"\xde\x10" + b"\x00" * 62)
    ctx = DiscoveryContext(paths=HostPaths.under(str(tmp_path)))
    assert SysfsHost(ctx).vgpu() is None
    assert any("privileged" in w for w in ctx.warnings)


def test_vgpu_capability_parsing() -> None:
    assert parse_vgpu_capability(config_space(None)) is None
    not_vgpu = bytes([0x09, 0x00, 8]) + b"XY\x00\x00\x00"
    assert parse_vgpu_capability(config_space(not_vgpu)) is None
    looped = bytearray(config_space(None))
    looped[0x06], looped[0x34] = 0x10, 0x40
    looped[0x40:0x43] = bytes([0x01, 0x40, 0x08])  # points at itself
    assert parse_vgpu_capability(bytes(looped)) is None
