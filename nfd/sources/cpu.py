"""``cpu`` source: CPUID flags and microarchitecture level, model, cstate, pstate, RDT,
security (SGX/TDX/SEV), SST, topology, coprocessor, and hybrid-core markers.

CPUID comes from the instruction itself on x86-64 (``nfd.sources.cpuid``), from a ``cpuid.json``
fixture at a host root (modelled hosts), or from AT_HWCAP/AT_HWCAP2 on arm64. ``/proc/cpuinfo``
flags are only a fallback when CPUID cannot be executed (e.g. no executable memory).
"""

from __future__ import annotations

import os
import re
import struct
from typing import Any

from nfd.api.features import Features
from nfd.common.gokeys import canonical_keys
from nfd.sources import cpuid as cpuidmod
from nfd.sources.base import CpuidReader, DiscoveryContext, FeatureSource, str_list
from nfd.sources.hostfs import exists, list_dir, read_bytes, read_int, read_text, read_value

DEFAULT_BLACKLIST = [
    "AVX10",
    "BMI1",
    "BMI2",
    "CLMUL",
    "CMOV",
    "CX16",
    "ERMS",
    "F16C",
    "HTT",
    "LZCNT",
    "MMX",
    "MMXEXT",
    "NX",
    "POPCNT",
    "RDRAND",
    "RDSEED",
    "RDTSCP",
    "SGX",
    "SGXLC",
    "SSE",
    "SSE2",
    "SSE3",
    "SSE4",
    "SSE42",
    "SSSE3",
    "TDX_GUEST",
]

# security attributes that feed rules/extended resources only, never labels (upstream)
_UNLABELLED_SECURITY = {"tdx.total_keys", "sgx.epc", "sev.encrypted_state_ids", "sev.asids"}

_SANITIZE = re.compile(r"[^-A-Za-z0-9_.]+")

# arm64 AT_HWCAP / AT_HWCAP2 bit names (Linux uapi hwcap.h order), as upstream labels them
ARM64_HWCAP = [
    "FP",
    "ASIMD",
    "EVTSTRM",
    "AES",
    "PMULL",
    "SHA1",
    "SHA2",
    "CRC32",
    "ATOMICS",
    "FPHP",
    "ASIMDHP",
    "CPUID",
    "ASIMDRDM",
    "JSCVT",
    "FCMA",
    "LRCPC",
    "DCPOP",
    "SHA3",
    "SM3",
    "SM4",
    "ASIMDDP",
    "SHA512",
    "SVE",
    "ASIMDFHM",
    "DIT",
    "USCAT",
    "ILRCPC",
    "FLAGM",
    "SSBS",
    "SB",
    "PACA",
    "PACG",
]  # noqa: SIM905
ARM64_HWCAP2 = [
    "DCPODP",
    "SVE2",
    "SVEAES",
    "SVEPMULL",
    "SVEBITPERM",
    "SVESHA3",
    "SVESM4",
    "FLAGM2",
    "FRINT",
    "SVEI8MM",
    "SVEF32MM",
    "SVEF64MM",
    "SVEBF16",
    "I8MM",
    "BF16",
    "DGH",
    "RNG",
    "BTI",
    "MTE",
    "ECV",
    "AFP",
    "RPRES",
    "MTE3",
    "SME",
    "SMEI16I64",
    "SMEF64F64",
    "SMEI8I32",
    "SMEF16F32",
    "SMEB16F32",
    "SMEF32F32",
    "SMEFA64",
    "WFXT",
    "EBF16",
    "SVEEBF16",
]  # noqa: SIM905
_ARM_IMPLEMENTERS = {
    0xC0: "Ampere",
    0x41: "ARM",
    0x42: "Broadcom",
    0x43: "Cavium",
    0x44: "DEC",
    0x46: "Fujitsu",
    0x49: "Infineon",
    0x4D: "Motorola",
    0x4E: "NVIDIA",
    0x50: "AMCC",
    0x51: "Qualcomm",
    0x56: "Marvell",
    0x69: "Intel",
}
_AT_HWCAP, _AT_HWCAP2 = 16, 26

# /proc/cpuinfo flag -> CPUID feature name, for the fallback path only
_CPUINFO_FLAGS = {
    "fpu": "X87",
    "cx8": "CMPXCHG8",
    "sep": "SYSEE",
    "cmov": "CMOV",
    "mmx": "MMX",
    "fxsr": "FXSR",
    "sse": "SSE",
    "sse2": "SSE2",
    "pni": "SSE3",
    "vmx": "VMX",
    "ssse3": "SSSE3",
    "sse4_1": "SSE4",
    "sse4_2": "SSE42",
    "aes": "AESNI",
    "pclmulqdq": "CLMUL",
    "movbe": "MOVBE",
    "popcnt": "POPCNT",
    "rdrand": "RDRAND",
    "hypervisor": "HYPERVISOR",
    "f16c": "F16C",
    "cx16": "CX16",
    "xsave": "XSAVE",
    "avx": "AVX",
    "fma": "FMA3",
    "avx2": "AVX2",
    "bmi1": "BMI1",
    "bmi2": "BMI2",
    "sgx": "SGX",
    "hle": "HLE",
    "erms": "ERMS",
    "rtm": "RTM",
    "mpx": "MPX",
    "rdseed": "RDSEED",
    "adx": "ADX",
    "sha_ni": "SHA",
    "avx512f": "AVX512F",
    "avx512dq": "AVX512DQ",
    "avx512ifma": "AVX512IFMA",
    "avx512pf": "AVX512PF",
    "avx512er": "AVX512ER",
    "avx512cd": "AVX512CD",
    "avx512bw": "AVX512BW",
    "avx512vl": "AVX512VL",
    "avx512vbmi": "AVX512VBMI",
    "avx512_vbmi2": "AVX512VBMI2",
    "avx512_vnni": "AVX512VNNI",
    "avx512_bitalg": "AVX512BITALG",
    "avx512_vpopcntdq": "AVX512VPOPCNTDQ",
    "avx512_vp2intersect": "AVX512VP2INTERSECT",
    "avx512_fp16": "AVX512FP16",
    "avx512_bf16": "AVX512BF16",
    "amx_bf16": "AMXBF16",
    "amx_tile": "AMXTILE",
    "amx_int8": "AMXINT8",
    "avx_vnni": "AVXVNNI",
    "gfni": "GFNI",
    "vaes": "VAES",
    "vpclmulqdq": "VPCLMULQDQ",
    "waitpkg": "WAITPKG",
    "cldemote": "CLDEMOTE",
    "movdiri": "MOVDIRI",
    "movdir64b": "MOVDIR64B",
    "enqcmd": "ENQCMD",
    "serialize": "SERIALIZE",
    "tsxldtrk": "TSXLDTRK",
    "fsrm": "FSRM",
    "md_clear": "MD_CLEAR",
    "lahf_lm": "LAHF",
    "abm": "LZCNT",
    "svm": "SVM",
    "sse4a": "SSE4A",
    "ibs": "IBS",
    "topoext": "TOPEXT",
    "syscall": "SYSCALL",
    "nx": "NX",
    "mmxext": "MMXEXT",
    "rdtscp": "RDTSCP",
    "3dnowext": "AMD3DNOWEXT",
    "3dnow": "AMD3DNOW",
    "xop": "XOP",
    "fma4": "FMA4",
    "xsaveopt": "XSAVEOPT",
    "xsavec": "XSAVEC",
    "xgetbv1": "XGETBV1",
    "xsaves": "XSAVES",
    "sme": "SME",
    "sev": "SEV",
    "sev_es": "SEV_ES",
    "sev_snp": "SEV_SNP",
    "clzero": "CLZERO",
    "wbnoinvd": "WBNOINVD",
    "ibpb": "IBPB",
    "stibp": "STIBP",
    "flush_l1d": "FLUSH_L1D",
    "arch_capabilities": "IA32_ARCH_CAP",
    "pconfig": "PCONFIG",
    "hybrid_cpu": "HYBRID_CPU",
    "tdx_guest": "TDX_GUEST",
    "ht": "HTT",
}


class CpuSource(FeatureSource):
    name = "cpu"
    features = ("cpu.cpuid", "cpu.model", "cpu.cstate", "cpu.pstate", "cpu.rdt", "cpu.security", "cpu.sst",
                "cpu.topology", "cpu.coprocessor")

    def default_config(self) -> dict[str, Any]:
        return {"cpuid": {"attributeBlacklist": list(DEFAULT_BLACKLIST), "attributeWhitelist": []}}

    def parse_config(self, raw: Any, *, path: str) -> dict[str, Any]:
        cfg = super().parse_config(raw, path=path)

        block = cfg["cpuid"] or {}
        if isinstance(block, dict):
            block = canonical_keys(block, ("attributeBlacklist", "attributeWhitelist"))
        merged = self.default_config()["cpuid"]
        for key in ("attributeBlacklist", "attributeWhitelist"):
            if key in block:
                merged[key] = str_list(block[key] or [], f"{path}.cpuid.{key}")
        cfg["cpuid"] = merged
        return cfg

    # -- discovery ------------------------------------------------------------------------
    def discover(self, ctx: DiscoveryContext, config: dict[str, Any]) -> Features:
        f = Features()
        arch, reader, fixture = _cpu_backend(ctx)
        info: cpuidmod.X86Info | None = None
        if arch in ("x86_64", "amd64", "i686", "i386"):
            if reader is not None:
                info = cpuidmod.x86_features(reader)
                flags = set(info.flags)
                flags.update(f"X86_64_V{i}" for i in range(1, info.level + 1))
                f.flags["cpu.cpuid"] = flags
                # upstream publishes the (possibly empty) cpu.cpuid attribute set on x86 only
                f.attributes["cpu.cpuid"] = {"AVX10_VERSION": str(info.avx10_level)} if info.avx10_level > 0 else {}
                f.attributes["cpu.model"] = _x86_model(info)
            else:
                f.flags["cpu.cpuid"] = _cpuinfo_flags(ctx)
                f.attributes["cpu.model"] = _cpuinfo_model(ctx)
        elif arch in ("aarch64", "arm64"):
            hwcap, hwcap2 = _arm_hwcaps(ctx, fixture)
            f.flags["cpu.cpuid"] = {n for i, n in enumerate(ARM64_HWCAP) if hwcap >> i & 1} | {
                n for i, n in enumerate(ARM64_HWCAP2) if hwcap2 >> i & 1
            }
            f.attributes["cpu.model"] = _arm_model(ctx, hwcap)
        else:
            f.flags["cpu.cpuid"] = set()
            f.attributes["cpu.model"] = {}

        # upstream compiles intel_idle/intel_pstate detection and the x86 security checks for
        # amd64 only (its other architectures' stubs give empty sets): on arm64 they stay empty
        # even where the kernel seen is an x86 one (user-mode emulation)
        x86 = arch in ("x86_64", "amd64")
        cstate = _cstate(ctx) if x86 else {}
        if cstate is not None:
            f.attributes["cpu.cstate"] = cstate
        f.attributes["cpu.pstate"] = _pstate(ctx) if x86 else {}
        f.attributes["cpu.rdt"] = _rdt(ctx, reader) if reader is not None else {}
        f.attributes["cpu.security"] = _security(ctx, reader, info) if x86 else _security_other(ctx, arch)
        f.attributes["cpu.sst"] = _sst(ctx, reader) if reader is not None else {}
        f.attributes["cpu.topology"] = _topology(ctx)
        f.attributes["cpu.coprocessor"] = (
            {"nx_gzip": "true"}
            if exists(ctx.paths.sys("devices/vio/ibm,compression-v1/nx_gzip_caps"))
            else {}
        )
        return f

    # -- labels ---------------------------------------------------------------------------
    def labels(self, features: Features, config: dict[str, Any], ctx: DiscoveryContext) -> dict[str, str]:
        out: dict[str, str] = {}
        cc = config.get("cpuid") or {}
        white = set(cc.get("attributeWhitelist") or [])
        black = set(cc.get("attributeBlacklist") or [])
        for flag in features.flags.get("cpu.cpuid", ()):
            if (flag in white) if white else (flag not in black):
                out[f"cpuid.{flag}"] = "true"
        for k, v in features.attributes.get("cpu.cpuid", {}).items():
            out[f"cpuid.{k}"] = v
        for prefix, feat in (("model.", "cpu.model"), ("cstate.", "cpu.cstate"), ("pstate.", "cpu.pstate")):
            for k, v in features.attributes.get(feat, {}).items():
                out[prefix + k] = v
        for k, v in features.attributes.get("cpu.security", {}).items():
            if k not in _UNLABELLED_SECURITY:
                out[f"security.{k}"] = v
        for k, v in features.attributes.get("cpu.sst", {}).items():
            out[f"power.sst_{k}"] = v
        topo = features.attributes.get("cpu.topology", {})
        if "hardware_multithreading" in topo:
            out["hardware_multithreading"] = topo["hardware_multithreading"]
        cop = features.attributes.get("cpu.coprocessor", {})
        if "nx_gzip" in cop:
            out["coprocessor.nx_gzip"] = cop["nx_gzip"]
        # hybrid markers: upstream reads <sysfs>/sys/devices/... (a doubled "sys", so they never
        # appear there); we read the real /sys/devices/cpu_{atom,core}/cpus, and the quirk path too
        for kind in ("cpu_atom", "cpu_core"):
            for p in (f"devices/{kind}/cpus", f"sys/devices/{kind}/cpus"):
                if read_bytes(ctx, ctx.paths.sys(p), limit=4096) is not None:
                    out[kind] = "true"
                    break
        return out


# --- backends -------------------------------------------------------------------------------


def _cpu_backend(ctx: DiscoveryContext) -> tuple[str, CpuidReader | None, dict[str, Any] | None]:
    """(arch, x86 CPUID reader or None, cpuid.json fixture or None)."""
    fixture = None
    fixture_path = ctx.paths.path("/cpuid.json")
    if not ctx.paths.is_native and ctx.cpuid is None:
        try:
            fixture = cpuidmod.load_fixture(fixture_path)
        except (OSError, ValueError) as e:
            ctx.warn(f"{fixture_path}: invalid CPUID fixture: {e}")
    arch = ctx.arch or (str(fixture.get("arch")) if fixture and fixture.get("arch") else os.uname().machine)
    if ctx.cpuid is not None:
        return arch, ctx.cpuid, fixture
    if fixture is not None and "leaves" in fixture:
        try:
            return arch, cpuidmod.FixtureCpuid.from_json(fixture), fixture
        except (ValueError, TypeError, AttributeError) as e:
            ctx.warn(f"{fixture_path}: invalid CPUID fixture: {e}")
            return arch, None, fixture
    if arch in ("x86_64", "amd64") and os.uname().machine == "x86_64":  # platform.machine(), unimported
        try:
            return arch, cpuidmod.native(), fixture
        except (OSError, ValueError) as e:
            ctx.warn(f"cpuid: cannot execute CPUID ({e}); falling back to /proc/cpuinfo flags")
    return arch, None, fixture


def _x86_model(info: cpuidmod.X86Info) -> dict[str, str]:
    model = {"vendor_id": info.vendor, "family": str(info.family), "id": str(info.model)}
    if "HYPERVISOR" in info.flags:
        if info.hypervisor_vendor == cpuidmod.UNKNOWN_VENDOR:
            clean = _SANITIZE.sub("_", info.hypervisor_string)
            model["hypervisor"] = clean or "unknown"
        else:
            model["hypervisor"] = info.hypervisor_vendor.lower()
    else:
        model["hypervisor"] = "none"
    return model


def _cpuinfo_fields(ctx: DiscoveryContext) -> dict[str, str]:
    text = read_text(ctx, ctx.paths.proc("cpuinfo")) or ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break  # first processor block is enough
            continue
        k, sep, v = line.partition(":")
        if sep:
            fields.setdefault(k.strip(), v.strip())
    return fields


def _cpuinfo_flags(ctx: DiscoveryContext) -> set[str]:
    fields = _cpuinfo_fields(ctx)
    flags = {_CPUINFO_FLAGS[x] for x in fields.get("flags", "").split() if x in _CPUINFO_FLAGS}
    if "lm" in fields.get("flags", "").split():
        info_flags = flags | ({"OSXSAVE"} if "AVX" in flags else set())
        lvl = cpuidmod.X86Info(info_flags, "", "", 0, 0, "", "", 0, 0, 0).level
        flags.update(f"X86_64_V{i}" for i in range(1, lvl + 1))
    return flags


def _cpuinfo_model(ctx: DiscoveryContext) -> dict[str, str]:
    fields = _cpuinfo_fields(ctx)
    vendor = cpuidmod.VENDORS.get(fields.get("vendor_id", ""), cpuidmod.UNKNOWN_VENDOR)
    hv = "hypervisor" in fields.get("flags", "").split()
    return {
        "vendor_id": vendor,
        "family": fields.get("cpu family", "0"),
        "id": fields.get("model", "0"),
        "hypervisor": "unknown" if hv else "none",
    }


def _arm_hwcaps(ctx: DiscoveryContext, fixture: dict[str, Any] | None) -> tuple[int, int]:
    if fixture is not None and "hwcap" in fixture:
        try:
            return int(str(fixture["hwcap"]), 0), int(str(fixture.get("hwcap2", 0)), 0)
        except ValueError:
            ctx.warn(f"{ctx.paths.path('/cpuid.json')}: hwcap/hwcap2 must be integers")
            return 0, 0
    # the process's own auxiliary vector, as upstream's getauxval(3): /proc/self/auxv whatever the
    # host layout (a procfs at /host-proc shows the same file natively, but a user-mode emulator
    # answers only this path with the emulated CPU's vector); a host root's tree may model it
    auxv = "/proc/self/auxv" if ctx.paths.root == "/" else ctx.paths.proc("self/auxv")
    data = read_bytes(ctx, auxv, limit=8192) or b""
    hwcap = hwcap2 = 0
    for off in range(0, len(data) - 15, 16):
        key, val = struct.unpack_from("<QQ", data, off)
        if key == _AT_HWCAP:
            hwcap = val
        elif key == _AT_HWCAP2:
            hwcap2 = val
        elif key == 0:
            break
    return hwcap, hwcap2


def _arm_midr(ctx: DiscoveryContext) -> int | None:
    """MIDR_EL1: read with ``mrs`` on this CPU, as upstream, where this process runs natively on
    arm64 (any host layout but a host root); else, or where no executable memory can be had,
    cpu0's ``regs/identification/midr_el1`` in sysfs (a host root's tree models it)."""
    midr_path = ctx.paths.sys("devices/system/cpu/cpu0/regs/identification/midr_el1")
    if ctx.paths.root == "/" and os.uname().machine in ("aarch64", "arm64"):
        try:
            return cpuidmod.native_midr()
        except (OSError, ValueError, AttributeError) as e:
            ctx.warn(f"cpu: cannot read MIDR_EL1 with mrs ({e}); reading {midr_path}")
    return read_int(ctx, midr_path)


def _arm_model(ctx: DiscoveryContext, hwcap: int) -> dict[str, str]:
    vendor, family, model = cpuidmod.UNKNOWN_VENDOR, 0, 0
    midr: int | None = None
    if hwcap >> 11 & 1:  # HWCAP_CPUID: MIDR readable at EL0 (upstream reads it only then)
        midr = _arm_midr(ctx)
    if midr is not None:
        vendor = _ARM_IMPLEMENTERS.get((midr >> 24) & 0xFF, cpuidmod.UNKNOWN_VENDOR)
        family = (midr >> 16) & 0xFF
        model = midr & 0xFFFF
    return {"vendor_id": vendor, "family": str(family), "id": str(model), "hypervisor": "none"}


# --- sysfs-based parts ----------------------------------------------------------------------


def _cstate(ctx: DiscoveryContext) -> dict[str, str] | None:
    base = ctx.paths.sys("devices/system/cpu")
    if not os.path.isdir(base):
        ctx.warn(f"{base}: missing, cannot detect cstate")
        return None
    if not os.path.isdir(os.path.join(base, "cpuidle")):
        return {}
    driver = read_value(ctx, os.path.join(base, "cpuidle/current_driver"))
    if driver is None:
        return None
    if driver != "intel_idle":
        return {}
    n = read_int(ctx, ctx.paths.sys("module/intel_idle/parameters/max_cstate"))
    if n is None:
        return None
    return {"enabled": "true" if n > 0 else "false"}


def _pstate(ctx: DiscoveryContext) -> dict[str, str]:
    base = ctx.paths.sys("devices/system/cpu")
    pdir = os.path.join(base, "intel_pstate")
    if not os.path.isdir(pdir):
        return {}
    status = read_value(ctx, os.path.join(pdir, "status"))
    if status is None or status == "off":
        return {}
    out = {"status": status}
    no_turbo = read_value(ctx, os.path.join(pdir, "no_turbo"))
    if no_turbo:
        out["turbo"] = "true" if no_turbo.startswith("0") else "false"
    if status != "active":
        return out
    cdir = os.path.join(base, "cpufreq")
    scaling = ""
    for policy in list_dir(ctx, cdir) or []:
        cpus = read_value(ctx, os.path.join(cdir, policy, "affected_cpus"))
        if not cpus:
            continue
        gov = read_value(ctx, os.path.join(cdir, policy, "scaling_governor"))
        if gov is None:
            continue
        if scaling and scaling != gov:
            scaling = ""
            break
        scaling = gov
    if scaling:
        out["scaling_governor"] = scaling
    return out


def _rdt(ctx: DiscoveryContext, r: CpuidReader) -> dict[str, str]:
    out: dict[str, str] = {}
    ebx7 = r.cpuid(7, 0)[1]
    if ebx7 >> 12 & 1 and r.cpuid(0xF, 0)[3] >> 1 & 1:
        out["RDTMON"] = "true"
        l3 = r.cpuid(0xF, 1)[3]
        if l3 & 1:
            out["RDTCMT"] = "true"
        if l3 & 0b110 == 0b110:
            out["RDTMBM"] = "true"
    if ebx7 >> 15 & 1:
        alloc = r.cpuid(0x10, 0)[1]
        if alloc >> 1 & 1:
            out["RDTL3CA"] = "true"
            n = read_int(ctx, ctx.paths.sys("fs/resctrl/info/L3/num_closids"))
            if n is not None:
                out["RDTL3CA_NUM_CLOSID"] = str(n - 1)
        if alloc >> 2 & 1:
            out["RDTL2CA"] = "true"
        if alloc >> 3 & 1:
            out["RDTMBA"] = "true"
    return out


def _misc_capacity(ctx: DiscoveryContext, resource: str) -> int | None:
    for rel in ("fs/cgroup/misc.capacity", "fs/cgroup/misc/misc.capacity"):
        text = read_text(ctx, ctx.paths.sys(rel), limit=65536)
        if text is None:
            continue
        for line in text.splitlines():
            if line.startswith(resource):
                parts = line.split(" ")
                try:
                    return int(parts[1])
                except (IndexError, ValueError):
                    return None
        return None
    return None


def _sgx_epc(r: CpuidReader) -> int:
    total = 0
    for sub in range(2, 10):
        eax, _, ecx, edx = r.cpuid(0x12, sub)
        kind = eax & 0xF
        if kind == 0:
            break
        if kind == 1:
            total += ((edx & 0xFFFFF) << 32) + (ecx & 0xFFFFF000)
    return total


def _kvm_param(ctx: DiscoveryContext, module: str, param: str) -> str | None:
    data = read_bytes(ctx, ctx.paths.sys(f"module/{module}/parameters/{param}"), limit=4096)
    return None if data is None else data.decode("latin-1")


def _security_other(ctx: DiscoveryContext, arch: str) -> dict[str, str]:
    """Outside x86 upstream checks only s390x's secure execution (security_s390x.go); arm64's
    stub has nothing."""
    if arch == "s390x" and read_bytes(ctx, ctx.paths.sys("firmware/uv/prot_virt_host"), limit=16) == b"1\n":
        return {"se.enabled": "true"}
    return {}


def _security(ctx: DiscoveryContext, r: CpuidReader | None, info: cpuidmod.X86Info | None) -> dict[str, str]:
    out: dict[str, str] = {}
    flags = info.flags if info is not None else set()
    if r is not None and "SGX" in flags:
        epc = _sgx_epc(r)
        if epc > 0:
            out["sgx.enabled"] = "true"
            out["sgx.epc"] = str(epc)
    if _kvm_param(ctx, "kvm_intel", "tdx") == "Y\n":
        out["tdx.enabled"] = "true"
        n = _misc_capacity(ctx, "tdx")
        if n is not None:
            out["tdx.total_keys"] = str(n)
    if "TDX_GUEST" in flags:
        out["tdx.protected"] = "true"
    for param, key, cap_key in (
        ("sev", "sev.enabled", "sev.asids"),
        ("sev_es", "sev.es.enabled", "sev.encrypted_state_ids"),
        ("sev_snp", "sev.snp.enabled", None),
    ):
        v = _kvm_param(ctx, "kvm_amd", param)
        if v and v[0] in "1Y":
            out[key] = "true"
            if cap_key:
                n = _misc_capacity(ctx, param)
                if n is not None:
                    out[cap_key] = str(n)
    if read_bytes(ctx, ctx.paths.sys("firmware/uv/prot_virt_host"), limit=16) == b"1\n":
        out["se.enabled"] = "true"  # s390x secure execution host
    return out


def _sst(ctx: DiscoveryContext, r: CpuidReader) -> dict[str, str]:
    nominal = r.cpuid(0x16, 0)[0]
    base = ctx.paths.sys("bus/cpu/devices")
    for cpu in list_dir(ctx, base) or []:
        p = os.path.join(base, cpu, "cpufreq/base_frequency")
        freq = read_int(ctx, p)
        if freq is None:
            continue
        if nominal == 0:
            return {}
        if freq // 1000 > nominal:
            return {"bf.enabled": "true"}
    return {}


def _topology(ctx: DiscoveryContext) -> dict[str, str]:
    base = ctx.paths.sys("bus/cpu/devices")
    cpus = list_dir(ctx, base)
    if cpus is None:
        return {}
    ht = False
    packages: set[str] = set()
    for cpu in cpus:
        siblings = read_value(ctx, os.path.join(base, cpu, "topology/thread_siblings_list"))
        if siblings is None:
            return {}
        if "," in siblings or "-" in siblings:
            ht = True
        pkg = read_value(ctx, os.path.join(base, cpu, "topology/physical_package_id"))
        if pkg is None:
            return {}
        packages.add(pkg)
    return {"hardware_multithreading": "true" if ht else "false", "socket_count": str(len(packages))}


SOURCE = CpuSource()
