"""The arm64 cpu source's inputs: the process's own auxiliary vector and MIDR_EL1 read with `mrs`
(upstream: getauxval(3) and klauspost/cpuid's getMidr), sysfs/fixtures where those do not apply.

What the instructions really answer is checked under emulation by tests/e2e/test_arm64.py; here
the choice of input per host layout, on any machine.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import pytest

from nfd.hostpaths import HostPaths
from nfd.sources import cpu as cpumod
from nfd.sources import cpuid as cpuidmod
from nfd.sources.base import DiscoveryContext
from tests.unit.sources.sources_help import fixture_root

NEOVERSE_V2 = 0x410FD4F0


_REAL_UNAME = os.uname()


def _uname(machine: str) -> Any:
    real = _REAL_UNAME
    return os.uname_result((real.sysname, real.nodename, real.release, real.version, machine))


def _auxv(hwcap: int, hwcap2: int) -> bytes:
    return struct.pack("<6Q", 16, hwcap, 26, hwcap2, 0, 0)


@pytest.fixture
def arm64(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """This process seen as a native arm64 one: os.uname() says aarch64, /proc/self/auxv is a
    Neoverse-like vector; returns the list of paths read for the auxv."""
    monkeypatch.setattr(cpumod.os, "uname", lambda: _uname("aarch64"))
    read: list[str] = []
    real = cpumod.read_bytes

    def read_bytes(ctx: DiscoveryContext, path: str, *, limit: int = 1 << 20) -> bytes | None:
        if path.endswith("self/auxv"):
            read.append(path)
            return _auxv(0xFFF3FFFF, 0x3F3BF) if path == "/proc/self/auxv" else b""
        return real(ctx, path, limit=limit)

    monkeypatch.setattr(cpumod, "read_bytes", read_bytes)
    return read


def _tree_with_midr(root: Path, midr: int) -> None:
    d = root / "sys/devices/system/cpu/cpu0/regs/identification"
    d.mkdir(parents=True)
    (d / "midr_el1").write_text(f"0x{midr:016x}\n")


def test_native_reads_own_auxv_and_mrs(arm64: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpuidmod, "native_midr", lambda: NEOVERSE_V2)
    ctx = DiscoveryContext(paths=HostPaths(), arch="aarch64")
    f = cpumod.CpuSource().discover(ctx, cpumod.CpuSource().default_config())
    assert arm64 == ["/proc/self/auxv"]
    assert {"SVE", "SVE2", "BTI", "PACA"} <= f.flags["cpu.cpuid"] and "SM4" not in f.flags["cpu.cpuid"]
    assert f.attributes["cpu.model"] == {"vendor_id": "ARM", "family": "15", "id": str(0xD4F0), "hypervisor": "none"}


def test_image_layout_reads_own_auxv_not_host_proc(arm64: list[str], monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    """Under /host-* (the DaemonSet), the auxv is still /proc/self/auxv: a user-mode emulator
    answers only that path with the emulated CPU's vector, and natively it is the same file."""
    (tmp_path / "host-proc/sys").mkdir(parents=True)
    (tmp_path / "host-sys").mkdir()
    monkeypatch.setattr(cpuidmod, "native_midr", lambda: NEOVERSE_V2)
    paths = HostPaths.with_prefix(str(tmp_path / "host-"))
    assert dict(paths.tops)["proc"].endswith("host-proc")
    f = cpumod.CpuSource().discover(DiscoveryContext(paths=paths, arch="aarch64"), {})
    assert arm64 == ["/proc/self/auxv"]
    assert f.attributes["cpu.model"]["vendor_id"] == "ARM"


def test_no_executable_memory_falls_back_to_sysfs_midr(arm64: list[str], monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    def refused() -> int:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(cpuidmod, "native_midr", refused)
    _tree_with_midr(tmp_path, 0x4E0F0040)  # an NVIDIA implementer
    ctx = DiscoveryContext(paths=HostPaths(tops=(("sys", str(tmp_path / "sys")),)), arch="aarch64")
    f = cpumod.CpuSource().discover(ctx, {})
    assert f.attributes["cpu.model"] == {"vendor_id": "NVIDIA", "family": "15", "id": "64", "hypervisor": "none"}
    assert any("cannot read MIDR_EL1 with mrs" in w for w in ctx.warnings)


def test_host_root_never_runs_mrs(arm64: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A host root is a modelled host: cpuid.json's hwcaps and the tree's midr_el1."""
    def boom() -> int:
        raise AssertionError("mrs run for a host root")

    monkeypatch.setattr(cpuidmod, "native_midr", boom)
    ctx = DiscoveryContext(paths=HostPaths.under(fixture_root("arm-host")))
    f = cpumod.CpuSource().discover(ctx, {})
    assert arm64 == []
    assert f.attributes["cpu.model"]["vendor_id"] == "ARM" and f.attributes["cpu.model"]["id"] == "53441"


def test_no_hwcap_cpuid_reads_no_midr(monkeypatch: pytest.MonkeyPatch) -> None:
    """klauspost/cpuid reads MIDR only when HWCAP_CPUID says the kernel emulates the read."""
    monkeypatch.setattr(cpumod.os, "uname", lambda: _uname("aarch64"))
    real = cpumod.read_bytes
    monkeypatch.setattr(cpumod, "read_bytes", lambda ctx, path, limit=1 << 20: _auxv(0x3, 0)
                        if path == "/proc/self/auxv" else real(ctx, path, limit=limit))
    monkeypatch.setattr(cpuidmod, "native_midr", lambda: NEOVERSE_V2)
    f = cpumod.CpuSource().discover(DiscoveryContext(paths=HostPaths(), arch="aarch64"), {})
    assert f.flags["cpu.cpuid"] == {"FP", "ASIMD"}
    assert f.attributes["cpu.model"] == {"vendor_id": "VendorUnknown", "family": "0", "id": "0", "hypervisor": "none"}


def test_mrs_stub_encoding() -> None:
    """mrs x0, midr_el1 (op0=3 op1=0 CRn=0 CRm=0 op2=0) and ret, little-endian."""
    mrs, ret = struct.unpack("<2I", cpuidmod._MIDR_CODE)
    assert mrs == 0xD5380000 | (0 << 5) | 0  # MRS <Xt>, MIDR_EL1 with Xt = x0
    assert ret == 0xD65F03C0


def test_x86_only_parts_stay_empty_on_arm64(arm64: list[str], monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    """intel_idle, intel_pstate and kvm_intel/kvm_amd seen by an arm64 process (an x86 kernel
    under user-mode emulation): upstream's arm64 build has only stubs for them, so nothing."""
    monkeypatch.setattr(cpuidmod, "native_midr", lambda: NEOVERSE_V2)
    sys_ = tmp_path / "sys"
    for rel, text in {"devices/system/cpu/cpuidle/current_driver": "intel_idle\n",
                      "module/intel_idle/parameters/max_cstate": "9\n",
                      "devices/system/cpu/intel_pstate/status": "active\n",
                      "module/kvm_amd/parameters/sev": "Y\n",
                      "firmware/uv/prot_virt_host": "1\n"}.items():
        (sys_ / rel).parent.mkdir(parents=True, exist_ok=True)
        (sys_ / rel).write_text(text)
    paths = HostPaths(tops=(("sys", str(sys_)),))
    f = cpumod.CpuSource().discover(DiscoveryContext(paths=paths, arch="aarch64"), {})
    assert (f.attributes["cpu.cstate"], f.attributes["cpu.pstate"], f.attributes["cpu.security"]) == ({}, {}, {})
    x86 = cpumod.CpuSource().discover(DiscoveryContext(paths=paths, arch="x86_64"), {})
    assert x86.attributes["cpu.cstate"] == {"enabled": "true"} and x86.attributes["cpu.security"]["sev.enabled"]
