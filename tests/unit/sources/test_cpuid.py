"""CPUID decoding into upstream's (klauspost/cpuid) feature names, and the cpu source's model."""

from __future__ import annotations

import platform

import pytest

from nfd.hostpaths import HostPaths
from nfd.sources import cpuid
from nfd.sources.base import DiscoveryContext
from nfd.sources.cpu import SOURCE as CPU


def s4(text: str) -> int:
    return int.from_bytes(text.encode("latin-1"), "little")


def reader(leaves: dict, xcr0: int = 0xE7) -> cpuid.FixtureCpuid:
    return cpuid.FixtureCpuid.from_json({"leaves": leaves, "xgetbv": xcr0})


INTEL0 = [0xD, s4("Genu"), s4("ntel"), s4("ineI")]
BASE1 = [0x000806F8, 0, (1 << 26) | (1 << 27) | (1 << 28) | (1 << 12), 0]


def test_vendor_and_family_model():
    info = cpuid.x86_features(reader({"0x0:0": INTEL0, "0x1:0": [0x000806F8, 0, 0, 0]}))
    assert (info.vendor, info.family, info.model) == ("Intel", 6, 143)  # Sapphire Rapids
    amd = cpuid.x86_features(reader({"0x0:0": [1, s4("Auth"), s4("cAMD"), s4("enti")], "0x1:0": [0x00A10F11, 0, 0, 0]}))
    assert (amd.vendor, amd.family, amd.model) == ("AMD", 25, 17)


def test_avx512_needs_os_support():
    leaves = {"0x0:0": INTEL0, "0x1:0": BASE1, "0x7:0": [0, (1 << 16) | (1 << 5), 0, 0]}
    with_os = cpuid.x86_features(reader(leaves, 0xE7)).flags
    assert {"AVX", "AVX2", "AVX512F", "FMA3"} <= with_os
    ymm_only = cpuid.x86_features(reader(leaves, 0x7)).flags
    assert "AVX512F" not in ymm_only and "AVX2" in ymm_only
    no_os = cpuid.x86_features(reader(leaves, 0x1)).flags
    assert not {"AVX", "AVX2", "AVX512F"} & no_os


def test_xsave_flags_follow_sse3_like_klauspost():
    """klauspost/cpuid v2.4.0 reads XSAVE/OSXSAVE from ECX bit 0 (a Go precedence slip); upstream's
    labels carry that, so ours must too. AVX still needs the real bits 26-28 and XCR0."""
    sse3_only = {"0x0:0": INTEL0, "0x1:0": [0x000806F8, 0, 1, 0]}
    assert {"XSAVE", "OSXSAVE"} <= cpuid.x86_features(reader(sse3_only, 0)).flags
    xsave_bits = {"0x0:0": INTEL0, "0x1:0": BASE1}  # bits 26/27/28, no SSE3
    flags = cpuid.x86_features(reader(xsave_bits, 0xE7)).flags
    assert "AVX" in flags and not {"XSAVE", "OSXSAVE"} & flags


def test_microarch_levels():
    v1 = {"CMOV", "CMPXCHG8", "X87", "FXSR", "MMX", "SSE", "SSE2", "SYSCALL"}
    info = cpuid.X86Info(set(v1), "Intel", "", 6, 0, "", "", 0, 0, 0)
    assert info.level == 1
    info.flags |= {"CX16", "LAHF", "POPCNT", "SSE3", "SSE4", "SSE42", "SSSE3"}
    assert info.level == 2
    info.flags |= {"AVX512F", "AVX512BW", "AVX512CD", "AVX512DQ", "AVX512VL"}  # v4 bits without v3
    assert info.level == 2
    info.flags -= {"SYSCALL"}
    assert info.level == 0


def test_hypervisor_naming():
    hv_bit = [0x000806F8, 0, 1 << 31, 0]
    kvm = {"0x0:0": INTEL0, "0x1:0": hv_bit, "0x40000000:0": [0x40000001, s4("KVMK"), s4("VMKV"), s4("M\0\0\0")]}
    ctx = DiscoveryContext(cpuid=reader(kvm), arch="x86_64")
    assert CPU.discover(ctx, CPU.default_config()).attributes["cpu.model"]["hypervisor"] == "kvm"
    odd = dict(kvm, **{"0x40000000:0": [0x40000001, s4("Acme"), s4(" HV!"), s4("@v2 ")]})
    ctx = DiscoveryContext(cpuid=reader(odd), arch="x86_64")
    assert CPU.discover(ctx, CPU.default_config()).attributes["cpu.model"]["hypervisor"] == "Acme_HV_v2_"
    bare = {"0x0:0": INTEL0, "0x1:0": [0x000806F8, 0, 0, 0]}
    ctx = DiscoveryContext(cpuid=reader(bare), arch="x86_64")
    assert CPU.discover(ctx, CPU.default_config()).attributes["cpu.model"]["hypervisor"] == "none"


def test_avx10_version_attribute_and_label_bypasses_blacklist():
    leaves = {"0x0:0": [0x24, s4("Genu"), s4("ntel"), s4("ineI")], "0x1:0": BASE1,
              "0x7:0": [1, 0, 0, 0], "0x7:1": [0, 0, 0, 1 << 19], "0x24:0": [0, 2 | (1 << 16) | (1 << 17), 0, 0]}
    ctx = DiscoveryContext(cpuid=reader(leaves), arch="x86_64")
    cfg = CPU.default_config()
    f = CPU.discover(ctx, cfg)
    assert {"AVX10", "AVX10_128", "AVX10_256"} <= f.flags["cpu.cpuid"]
    assert f.attributes["cpu.cpuid"] == {"AVX10_VERSION": "2"}
    labels = CPU.labels(f, cfg, ctx)
    assert labels["cpuid.AVX10_VERSION"] == "2"
    assert "cpuid.AVX10" not in labels and labels["cpuid.AVX10_128"] == "true"


def test_whitelist_takes_precedence():
    leaves = {"0x0:0": INTEL0, "0x1:0": BASE1}
    ctx = DiscoveryContext(cpuid=reader(leaves), arch="x86_64")
    cfg = CPU.parse_config({"cpuid": {"attributeWhitelist": ["AVX", "SSE"]}}, path="sources.cpu")
    labels = CPU.labels(CPU.discover(ctx, cfg), cfg, ctx)
    assert sorted(k for k in labels if k.startswith("cpuid.")) == ["cpuid.AVX"]  # SSE bit not set here


def test_tdx_guest_and_rdt():
    leaves = {
        "0x0:0": [0x21, s4("Genu"), s4("ntel"), s4("ineI")], "0x1:0": BASE1,
        "0x7:0": [0, (1 << 12) | (1 << 15), 0, 0],
        "0xf:0": [0, 0, 0, 1 << 1], "0xf:1": [0, 0, 0, 0b111],
        "0x10:0": [0, 0b1110, 0, 0],
        "0x21:0": [0, s4("Inte"), s4("    "), s4("lTDX")],
    }
    ctx = DiscoveryContext(cpuid=reader(leaves), arch="x86_64")
    f = CPU.discover(ctx, CPU.default_config())
    assert "TDX_GUEST" in f.flags["cpu.cpuid"]
    assert f.attributes["cpu.security"]["tdx.protected"] == "true"
    assert f.attributes["cpu.rdt"] == {"RDTMON": "true", "RDTCMT": "true", "RDTMBM": "true", "RDTL3CA": "true",
                                       "RDTL2CA": "true", "RDTMBA": "true"}


def test_sgx_epc_sections(tree):
    leaves = {"0x0:0": [0x12, s4("Genu"), s4("ntel"), s4("ineI")], "0x1:0": BASE1,
              "0x7:0": [0, 1 << 2, 0, 0], "0x12:0": [1, 0, 0, 0],
              "0x12:2": [0x1, 0, 0x4000_0000 | 1, 0x1], "0x12:3": [0x1, 0, 0x1000_0000 | 1, 0], "0x12:4": [0, 0, 0, 0]}
    ctx = DiscoveryContext(cpuid=reader(leaves), arch="x86_64")
    sec = CPU.discover(ctx, CPU.default_config()).attributes["cpu.security"]
    assert sec == {"sgx.enabled": "true", "sgx.epc": str((1 << 32) + 0x4000_0000 + 0x1000_0000)}
    assert "security.sgx.epc" not in CPU.labels(CPU.discover(ctx, CPU.default_config()), CPU.default_config(), ctx)


def test_cpuinfo_fallback(tree, monkeypatch):
    root = tree("proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"
                "flags\t\t: fpu cx8 sep cmov mmx fxsr sse sse2 lm syscall nx pni ssse3 cx16 sse4_1 sse4_2 popcnt "
                "lahf_lm hypervisor avx512f\n\nprocessor\t: 1\n")
    monkeypatch.setattr(cpuid, "native", lambda: (_ for _ in ()).throw(OSError("no exec memory")))
    ctx = DiscoveryContext(paths=HostPaths.under(root), arch="x86_64")
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    f = CPU.discover(ctx, CPU.default_config())
    assert {"X87", "SSE42", "AVX512F", "X86_64_V1", "X86_64_V2"} <= f.flags["cpu.cpuid"]
    assert "X86_64_V3" not in f.flags["cpu.cpuid"]
    assert f.attributes["cpu.model"] == {"vendor_id": "Intel", "family": "6", "id": "85", "hypervisor": "unknown"}
    assert any("falling back to /proc/cpuinfo" in w for w in ctx.warnings)


def test_broken_cpuid_fixture_is_a_warning(tree):
    root = tree("cpuid.json", "{not json")
    tree("sys/devices/system/cpu/online", "0\n")
    ctx = DiscoveryContext(paths=HostPaths.under(root), arch="riscv64")
    f = CPU.discover(ctx, CPU.default_config())
    assert f.flags["cpu.cpuid"] == set()
    assert any("cpuid.json" in w for w in ctx.warnings)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="native CPUID needs x86-64")
def test_native_cpuid_agrees_with_proc_cpuinfo():
    info = cpuid.x86_features(cpuid.native())
    fields = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            if not line.strip():
                break
            k, _, v = line.partition(":")
            fields[k.strip()] = v.strip()
    assert info.vendor_string == fields["vendor_id"]
    assert str(info.family) == fields["cpu family"] and str(info.model) == fields["model"]
    linux = set(fields["flags"].split())
    for linux_name, ours in (("sse2", "SSE2"), ("avx2", "AVX2"), ("avx512f", "AVX512F"), ("aes", "AESNI"),
                             ("hypervisor", "HYPERVISOR"), ("sha_ni", "SHA"), ("bmi2", "BMI2")):
        assert (linux_name in linux) == (ours in info.flags), linux_name
