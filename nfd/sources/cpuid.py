"""CPUID on x86-64: the instruction itself (via a tiny executable-memory ctypes stub), a fixture
reader, and the decoding of leaves into upstream's feature names.

Upstream labels ``cpu-cpuid.<NAME>`` with the names of github.com/klauspost/cpuid/v2
``FeatureSet()`` plus ``X86_64_V1..V4``; :func:`x86_features` decodes the same bits into the same
names (the names are the library's identifiers, the bits come from the Intel/AMD manuals).
"""

from __future__ import annotations

import ctypes  # only where CPUID really runs (not on Arm, nor with a cpuid.json fixture)
import json  # modelled hosts only
import mmap
import os
from typing import Any

from nfd.common.valuerecord import Record

# --- native reader ------------------------------------------------------------------------

# void cpuid(uint32 leaf, uint32 subleaf, uint32 out[4]) (SysV x86-64):
#   push rbx; mov eax,edi; mov ecx,esi; mov r8,rdx; cpuid;
#   mov [r8],eax; mov [r8+4],ebx; mov [r8+8],ecx; mov [r8+12],edx; pop rbx; ret
_CPUID_CODE = bytes.fromhex("53" "89f8" "89f1" "4989d0" "0fa2" "418900" "41895804" "41894808" "4189500c" "5b" "c3")
# uint64 xgetbv(uint32 index): mov ecx,edi; xgetbv; shl rdx,32; or rax,rdx; ret
_XGETBV_CODE = bytes.fromhex("89f9" "0f01d0" "48c1e220" "4809d0" "c3")


class NativeCpuid:
    """Runs CPUID/XGETBV on this CPU. Raises OSError where executable memory is not allowed."""

    def __init__(self) -> None:
        code = _CPUID_CODE + b"\x90" * (32 - len(_CPUID_CODE)) + _XGETBV_CODE
        self._mem = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        self._mem.write(code)
        addr = ctypes.addressof(ctypes.c_char.from_buffer(self._mem))
        self._cpuid = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32))(addr)
        self._xgetbv = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint32)(addr + 32)
        self._out = (ctypes.c_uint32 * 4)()
        self._cache: dict[tuple[int, int], tuple[int, int, int, int]] = {}

    def cpuid(self, leaf: int, subleaf: int = 0) -> tuple[int, int, int, int]:
        key = (leaf, subleaf)
        hit = self._cache.get(key)
        if hit is None:
            self._cpuid(leaf, subleaf, self._out)
            hit = (self._out[0], self._out[1], self._out[2], self._out[3])
            self._cache[key] = hit
        return hit

    def xgetbv(self, index: int) -> int:
        # XGETBV faults unless CR4.OSXSAVE; callers check CPUID.1:ECX.OSXSAVE first
        return int(self._xgetbv(index))


_native: NativeCpuid | None = None


def native() -> NativeCpuid:
    global _native
    if _native is None:
        _native = NativeCpuid()
    return _native


# uint64 midr(void) (AArch64): mrs x0, midr_el1; ret. At EL0 the kernel (HWCAP_CPUID) or a
# user-mode emulator answers the read.
_MIDR_CODE = bytes.fromhex("000038d5" "c0035fd6")
_midr: int | None = None


def native_midr() -> int:
    """MIDR_EL1 of the CPU this runs on, read with ``mrs`` as upstream's klauspost/cpuid
    ``getMidr`` does (read once per process, as upstream detects once at start). Raises OSError
    where executable memory cannot be had.

    The instructions are written to a memfd and mapped from it: the kernel makes the instruction
    cache coherent when it maps a page-cache page executable, which an anonymous mapping written
    through a data pointer does not guarantee on Arm."""
    global _midr
    if _midr is None:
        fd = os.memfd_create("nfd-midr", os.MFD_CLOEXEC)
        try:
            os.write(fd, _MIDR_CODE.ljust(mmap.PAGESIZE, b"\0"))
            mem = mmap.mmap(fd, mmap.PAGESIZE, flags=mmap.MAP_SHARED,
                            prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        finally:
            os.close(fd)
        addr = ctypes.addressof(ctypes.c_char.from_buffer(mem))
        _midr = int(ctypes.CFUNCTYPE(ctypes.c_uint64)(addr)())
    return _midr


class FixtureCpuid(Record):
    """CPUID answers from a ``cpuid.json`` fixture: ``{"leaves": {"0x7:0": [eax, ebx, ecx, edx]},
    "xgetbv": 0xe7}``; leaves not listed read as zeros (as a real CPU answers for unknown leaves
    within range)."""

    _FIELDS = ("leaves", "xcr0")

    def __init__(self, leaves: dict[tuple[int, int], tuple[int, int, int, int]] | None = None, xcr0: int = 0) -> None:
        self.leaves: dict[tuple[int, int], tuple[int, int, int, int]] = {} if leaves is None else leaves
        self.xcr0 = xcr0

    def cpuid(self, leaf: int, subleaf: int = 0) -> tuple[int, int, int, int]:
        return self.leaves.get((leaf, subleaf)) or self.leaves.get((leaf, -1)) or (0, 0, 0, 0)

    def xgetbv(self, index: int) -> int:
        return self.xcr0 if index == 0 else 0

    @classmethod
    def from_json(cls, obj: Any) -> FixtureCpuid:
        leaves: dict[tuple[int, int], tuple[int, int, int, int]] = {}
        for key, regs in (obj.get("leaves") or {}).items():
            leaf_s, _, sub_s = str(key).partition(":")
            regs_t = tuple(int(r, 0) if isinstance(r, str) else int(r) for r in regs)
            if len(regs_t) != 4:
                raise ValueError(f"leaves.{key}: need 4 registers")
            leaves[(int(leaf_s, 0), int(sub_s, 0) if sub_s else 0)] = (regs_t[0], regs_t[1], regs_t[2], regs_t[3])
        x = obj.get("xgetbv", 0)
        return cls(leaves=leaves, xcr0=int(x, 0) if isinstance(x, str) else int(x))


def load_fixture(path: str) -> dict[str, Any] | None:
    """The parsed ``cpuid.json`` of a modelled host, or None if there is none."""
    if not os.path.isfile(path):
        return None

    with open(path, encoding="utf-8") as f:
        obj = json.load(f)
    if not isinstance(obj, dict):
        raise ValueError("must be a JSON object")
    return obj


# --- decoding -----------------------------------------------------------------------------

VENDORS = {
    "AMDisbetter!": "AMD", "AuthenticAMD": "AMD", "CentaurHauls": "VIA", "GenuineIntel": "Intel",
    "TransmetaCPU": "Transmeta", "GenuineTMx86": "Transmeta", "Geode by NSC": "NSC",
    "VIA VIA VIA ": "VIA", "KVMKVMKVM": "KVM", "Linux KVM Hv": "KVM", "TCGTCGTCGTCG": "QEMU",
    "Microsoft Hv": "MSVM", "VMwareVMware": "VMware", "XenVMMXenVMM": "XenHVM",
    "bhyve bhyve ": "Bhyve", "HygonGenuine": "Hygon", "Vortex86 SoC": "SiS", "SiS SiS SiS ": "SiS",
    "RiseRiseRise": "SiS", "Genuine  RDC": "RDC", "QNXQVMBSQG": "QNX", "ACRNACRNACRN": "ACRN",
    "SRESRESRESRE": "SRE", "Apple VZ": "Apple",
}
UNKNOWN_VENDOR = "VendorUnknown"


def regs_string(*regs: int) -> str:
    """Registers as little-endian ASCII, cut at the first NUL (vendor and hypervisor ids)."""
    raw = b"".join(r.to_bytes(4, "little") for r in regs)
    return raw.split(b"\x00", 1)[0].decode("latin-1")


# (register index in (eax, ebx, ecx, edx), bit, name) per plain leaf; conditional bits are in code
_LEAF1 = [
    (3, 0, "X87"), (3, 8, "CMPXCHG8"), (3, 11, "SYSEE"), (3, 15, "CMOV"), (3, 23, "MMX"),
    (3, 24, "FXSR"), (3, 25, "FXSROPT"), (3, 25, "SSE"), (3, 26, "SSE2"), (2, 0, "SSE3"),
    (2, 5, "VMX"), (2, 9, "SSSE3"), (2, 19, "SSE4"), (2, 20, "SSE42"), (2, 25, "AESNI"),
    (2, 1, "CLMUL"), (2, 22, "MOVBE"), (2, 23, "POPCNT"), (2, 30, "RDRAND"), (2, 31, "HYPERVISOR"),
    (2, 29, "F16C"), (2, 13, "CX16"),
]
_LEAF7_0 = [
    (1, 2, "SGX"), (1, 4, "HLE"), (1, 9, "ERMS"), (1, 11, "RTM"), (1, 14, "MPX"), (1, 18, "RDSEED"),
    (1, 19, "ADX"), (1, 29, "SHA"),
    (2, 5, "WAITPKG"), (2, 7, "CETSS"), (2, 8, "GFNI"), (2, 9, "VAES"), (2, 10, "VPCLMULQDQ"),
    (2, 13, "TME"), (2, 25, "CLDEMOTE"), (2, 23, "KEYLOCKER"), (2, 27, "MOVDIRI"),
    (2, 28, "MOVDIR64B"), (2, 29, "ENQCMD"), (2, 30, "SGXLC"),
    (3, 4, "FSRM"), (3, 9, "SRBDS_CTRL"), (3, 10, "MD_CLEAR"), (3, 11, "RTM_ALWAYS_ABORT"),
    (3, 14, "SERIALIZE"), (3, 15, "HYBRID_CPU"), (3, 16, "TSXLDTRK"), (3, 18, "PCONFIG"),
    (3, 20, "CETIBT"), (3, 26, "IBPB"), (3, 27, "STIBP"), (3, 28, "FLUSH_L1D"),
    (3, 29, "IA32_ARCH_CAP"), (3, 30, "IA32_CORE_CAP"), (3, 31, "SPEC_CTRL_SSBD"),
]
_LEAF7_1 = [
    (0, 1, "SM3_X86"), (0, 2, "SM4_X86"), (0, 7, "CMPCCXADD"), (0, 10, "MOVSB_ZL"),
    (0, 11, "STOSB_SHORT"), (0, 12, "CMPSB_SCADBS_SHORT"), (0, 17, "FRED"), (0, 22, "HRESET"),
    (0, 23, "AVXIFMA"), (0, 26, "LAM"),
    (3, 4, "AVXVNNIINT8"), (3, 5, "AVXNECONVERT"), (3, 6, "AMXTRANSPOSE"), (3, 7, "AMXTF32"),
    (3, 8, "AMXCOMPLEX"), (3, 10, "AVXVNNIINT16"), (3, 14, "PREFETCHI"), (3, 19, "AVX10"),
    (3, 21, "APX_F"),
]
# AVX-512 family: only when the OS saves opmask/ZMM state; (leaf7 sub, reg, bit, name)
_AVX512 = [
    (0, 1, 16, "AVX512F"), (0, 1, 17, "AVX512DQ"), (0, 1, 21, "AVX512IFMA"), (0, 1, 26, "AVX512PF"),
    (0, 1, 27, "AVX512ER"), (0, 1, 28, "AVX512CD"), (0, 1, 30, "AVX512BW"), (0, 1, 31, "AVX512VL"),
    (0, 2, 1, "AVX512VBMI"), (0, 2, 3, "AMXFP8"), (0, 2, 6, "AVX512VBMI2"), (0, 2, 11, "AVX512VNNI"),
    (0, 2, 12, "AVX512BITALG"), (0, 2, 14, "AVX512VPOPCNTDQ"),
    (0, 3, 8, "AVX512VP2INTERSECT"), (0, 3, 22, "AMXBF16"), (0, 3, 23, "AVX512FP16"),
    (0, 3, 24, "AMXTILE"), (0, 3, 25, "AMXINT8"),
    (1, 0, 5, "AVX512BF16"), (1, 0, 19, "WRMSRNS"), (1, 0, 21, "AMXFP16"), (1, 0, 27, "MSRLIST"),
]
_LEAF7_2 = [(3, 0, "PSFD"), (3, 1, "IDPRED_CTRL"), (3, 2, "RRSBA_CTRL"), (3, 4, "BHI_CTRL"), (3, 5, "MCDT_NO")]
_EXT1 = [
    (2, 0, "LAHF"), (2, 2, "SVM"), (2, 6, "SSE4A"), (2, 10, "IBS"), (2, 22, "TOPEXT"),
    (3, 11, "SYSCALL"), (3, 20, "NX"), (3, 22, "MMXEXT"), (3, 23, "MMX"), (3, 24, "FXSR"),
    (3, 25, "FXSROPT"), (3, 27, "RDTSCP"), (3, 30, "AMD3DNOWEXT"), (3, 31, "AMD3DNOW"),
]
_EXT7 = [(1, 0, "MCAOVERFLOW"), (1, 1, "SUCCOR"), (1, 2, "HWA"), (3, 9, "CPBOOST")]
_EXT8_EBX = [
    (28, "PSFD"), (27, "CPPC"), (24, "SPEC_CTRL_SSBD"), (23, "PPIN"), (21, "TLB_FLUSH_NESTED"),
    (20, "EFER_LMSLE_UNS"), (19, "IBRS_PROVIDES_SMP"), (18, "IBRS_PREFERRED"), (17, "STIBP_ALWAYSON"),
    (15, "STIBP"), (14, "IBRS"), (13, "INT_WBINVD"), (12, "IBPB"), (9, "WBNOINVD"), (8, "MCOMMIT"),
    (4, "RDPRU"), (3, "INVLPGB"), (1, "MSRIRC"), (0, "CLZERO"),
]
_EXTA_EDX = [
    (0, "SVMNP"), (1, "LBRVIRT"), (2, "SVML"), (3, "NRIPS"), (4, "TSCRATEMSR"), (5, "VMCBCLEAN"),
    (6, "SVMFBASID"), (7, "SVMDA"), (10, "SVMPF"), (12, "SVMPFT"),
]
_EXT1A_EAX = [(0, "FP128"), (1, "MOVU"), (2, "FP256")]
_EXT1B_EAX = [
    (0, "IBSFFV"), (1, "IBSFETCHSAM"), (2, "IBSOPSAM"), (3, "IBSRDWROPCNT"), (4, "IBSOPCNT"),
    (5, "IBSBRNTRGT"), (6, "IBSOPCNTEXT"), (7, "IBSRIPINVALIDCHK"), (8, "IBS_OPFUSE"),
    (9, "IBS_FETCH_CTLX"), (10, "IBS_OPDATA4"), (11, "IBS_ZEN4"),
]
_EXT1F_EAX = [
    (0, "SME"), (1, "SEV"), (2, "MSR_PAGEFLUSH"), (3, "SEV_ES"), (4, "SEV_SNP"), (5, "VMPL"),
    (10, "SME_COHERENT"), (11, "SEV_64BIT"), (12, "SEV_RESTRICTED"), (13, "SEV_ALTERNATIVE"),
    (14, "SEV_DEBUGSWAP"), (15, "IBS_PREVENTHOST"), (16, "VTE"), (24, "VMSA_REGPROT"),
]
_EXT21 = [
    (0, 31, "SRSO_MSR_FIX"), (0, 30, "SRSO_USER_KERNEL_NO"), (0, 29, "SRSO_NO"), (0, 28, "IBPB_BRTYPE"),
    (0, 27, "SBPB"), (0, 23, "AVX512BMM"), (2, 1, "TSA_L1_NO"), (2, 2, "TSA_SQ_NO"), (0, 5, "TSA_VERW_CLEAR"),
]

_LEVELS = [
    {"CMOV", "CMPXCHG8", "X87", "FXSR", "MMX", "SSE", "SSE2"},
    {"CX16", "LAHF", "POPCNT", "SSE3", "SSE4", "SSE42", "SSSE3"},
    {"AVX", "AVX2", "BMI1", "BMI2", "F16C", "FMA3", "LZCNT", "MOVBE", "OSXSAVE"},
    {"AVX512F", "AVX512BW", "AVX512CD", "AVX512DQ", "AVX512VL"},
]


class X86Info(Record):
    """What CPUID says about an x86 CPU: flags, vendor and model."""

    _FIELDS = ("flags", "vendor", "vendor_string", "family", "model", "hypervisor_vendor", "hypervisor_string",
               "avx10_level", "max_leaf", "max_ext_leaf")

    def __init__(self, flags: set[str], vendor: str, vendor_string: str, family: int, model: int,
                 hypervisor_vendor: str, hypervisor_string: str, avx10_level: int, max_leaf: int,
                 max_ext_leaf: int) -> None:
        self.flags = flags
        self.vendor = vendor
        self.vendor_string = vendor_string
        self.family = family
        self.model = model
        self.hypervisor_vendor = hypervisor_vendor
        self.hypervisor_string = hypervisor_string
        self.avx10_level = avx10_level
        self.max_leaf = max_leaf
        self.max_ext_leaf = max_ext_leaf

    @property
    def level(self) -> int:
        """x86-64 microarchitecture level (0 when not 64-bit capable)."""
        if not ({"SYSEE", "SYSCALL"} & self.flags):
            return 0
        need: set[str] = set()
        lvl = 0
        for i, extra in enumerate(_LEVELS, start=1):
            need |= extra
            if need <= self.flags:
                lvl = i
            else:
                break
        return lvl


def _bits(regs: tuple[int, int, int, int], table: list[tuple[int, int, str]], out: set[str]) -> None:
    for reg, bit, name in table:
        if regs[reg] >> bit & 1:
            out.add(name)


def _family_model(eax: int) -> tuple[int, int]:
    family = (eax >> 8) & 0xF
    ext = family == 6
    if family == 0xF:
        family += (eax >> 20) & 0xFF
        ext = True
    model = (eax >> 4) & 0xF
    if ext:
        model += (eax >> 12) & 0xF0
    return family, model


def _threads_per_core(r: Any, vendor: str, max_leaf: int, max_ext: int) -> int:
    if max_leaf < 4 or vendor not in ("Intel", "AMD"):
        return 1
    if max_leaf < 0xB:
        if vendor != "Intel":
            return 1
        _, b, _, d = r.cpuid(1, 0)
        if d >> 28 & 1:
            logical = (b >> 16) & 0xFF
            if logical > 1:
                cores = (r.cpuid(4, 0)[0] >> 26) + 1
                return logical // cores
        return 1
    b = r.cpuid(0xB, 0)[1]
    if b & 0xFFFF == 0:
        if vendor == "AMD":
            eax1, _, _, d = r.cpuid(1, 0)
            if d >> 28 & 1 and _family_model(eax1)[0] >= 23:
                if max_ext >= 0x8000001E:
                    return ((r.cpuid(0x8000001E, 0)[1] >> 8) & 0xFF) + 1
                return 2
        return 1
    return b & 0xFFFF


def x86_features(r: Any) -> X86Info:
    """Decode CPUID leaves from reader ``r`` (:class:`nfd.sources.base.CpuidReader`)."""
    fs: set[str] = set()
    max_leaf, b0, c0, d0 = r.cpuid(0, 0)
    vendor_string = regs_string(b0, d0, c0)
    vendor = VENDORS.get(vendor_string, UNKNOWN_VENDOR)
    max_ext = r.cpuid(0x80000000, 0)[0]
    hv = r.cpuid(0x40000000, 0)
    hv_string = regs_string(hv[1], hv[2], hv[3])
    hv_vendor = VENDORS.get(hv_string, UNKNOWN_VENDOR)
    if max_leaf < 1:
        return X86Info(fs, vendor, vendor_string, 0, 0, hv_vendor, hv_string, 0, max_leaf, max_ext)

    family, model, osxsave, xcr0 = _leaf1_features(r, fs, vendor, max_leaf, max_ext)
    avx10 = _leaf7_features(r, fs, max_leaf, osxsave, xcr0) if max_leaf >= 7 else 0
    if max_leaf >= 0xD and "XSAVE" in fs:
        a = r.cpuid(0xD, 1)[0]
        for bit, name in ((0, "XSAVEOPT"), (1, "XSAVEC"), (2, "XGETBV1"), (3, "XSAVES")):
            if a >> bit & 1:
                fs.add(name)
    _extended_features(r, fs, vendor, max_ext)
    # AMD parts before family 19h, and some 1Ah models, are not TSA-affected but lack the bits
    if vendor == "AMD" and (family < 0x19 or (family == 0x1A and (model <= 0x4F or 0x60 <= model <= 0x7F))):
        fs.update(("TSA_L1_NO", "TSA_SQ_NO"))
    if max_leaf >= 0x20 and r.cpuid(0x4000000C, 0)[1] == 0xBE3:
        fs.add("TDX_GUEST")  # Hyper-V hides the TDX leaf; it reports isolation type 0xbe3
    if max_leaf >= 0x21:
        _, b21, c21, d21 = r.cpuid(0x21, 0)
        if regs_string(b21, d21, c21) == "IntelTDX    ":
            fs.add("TDX_GUEST")
    if max_leaf >= 0xA:
        _pmu(r.cpuid(0xA, 0), fs)
    return X86Info(fs, vendor, vendor_string, family, model, hv_vendor, hv_string, avx10, max_leaf, max_ext)


def _leaf1_features(r: Any, fs: set[str], vendor: str, max_leaf: int, max_ext: int) -> tuple[int, int, int, int]:
    """Leaf 1's features into ``fs``, with what the OS enabled of them (XCR0: AVX); returns
    (family, model, OSXSAVE bit, XCR0)."""
    leaf1 = r.cpuid(1, 0)
    family, model = _family_model(leaf1[0])
    c, d = leaf1[2], leaf1[3]
    _bits(leaf1, _LEAF1, fs)
    # klauspost/cpuid v2.4.0 tests `c&1<<26` (Go precedence: (c&1)<<26), so XSAVE and OSXSAVE
    # follow ECX bit 0 (SSE3), not bits 26/27; upstream's labels inherit that, so do we
    if c & 1:
        fs.update(("XSAVE", "OSXSAVE"))
    htt_capable = vendor in ("Intel", "AMD") and d >> 28 & 1 and max_leaf >= 4
    if htt_capable and _threads_per_core(r, vendor, max_leaf, max_ext) > 1:
        fs.add("HTT")
    osxsave = c >> 26 & 1 and c >> 27 & 1
    xcr0 = r.xgetbv(0) if osxsave else 0
    if osxsave and c >> 28 & 1 and xcr0 & 0x6 == 0x6:
        fs.add("AVX")
        old_intel = vendor == "Intel" and family == 6 and model < 60  # before Haswell
        old_amd = vendor == "AMD" and (family < 23 or (family == 23 and model < 49))  # before Zen 2
        if old_intel or old_amd:
            fs.add("AVXSLOW")
    if c >> 12 & 1 and c >> 27 & 1:
        fs.add("FMA3")
    return family, model, osxsave, xcr0


def _leaf7_features(r: Any, fs: set[str], max_leaf: int, osxsave: int, xcr0: int) -> int:
    """The structured extended features (leaf 7, its sub-leaves and the leaves they point to:
    SGX 0x12, Key Locker 0x19, AVX10 0x24) into ``fs``; returns the AVX10 version (0: none)."""
    l70 = r.cpuid(7, 0)
    ebx = l70[1]
    if "AVX" in fs and ebx >> 5 & 1:
        fs.add("AVX2")
    if ebx >> 3 & 1:
        fs.add("BMI1")
        if ebx >> 8 & 1:
            fs.add("BMI2")
    _bits(l70, _LEAF7_0, fs)
    l71 = r.cpuid(7, 1)
    if "AVX" in fs and l71[0] >> 4 & 1:
        fs.add("AVXVNNI")
    _bits(l71, _LEAF7_1, fs)
    if osxsave and (xcr0 >> 5) & 7 == 7 and (xcr0 >> 1) & 3 == 3:
        for sub, reg, bit, name in _AVX512:
            if (l70 if sub == 0 else l71)[reg] >> bit & 1:
                fs.add(name)
    _bits(r.cpuid(7, 2), _LEAF7_2, fs)
    if "SGX" in fs and r.cpuid(0x12, 0)[0] >> 12 & 1:
        fs.add("SGXPQC")
    if "KEYLOCKER" in fs and max_leaf >= 0x19 and r.cpuid(0x19, 0)[1] & 5 == 5:
        fs.add("KEYLOCKERW")
    avx10 = 0
    if "AVX10" in fs and max_leaf >= 0x24:
        b24 = r.cpuid(0x24, 0)[1]
        for bit, name in ((16, "AVX10_128"), (17, "AVX10_256"), (18, "AVX10_512")):
            if b24 >> bit & 1:
                fs.add(name)
        avx10 = b24 & 0xFF
    return avx10


def _extended_features(r: Any, fs: set[str], vendor: str, max_ext: int) -> None:
    """The extended leaves' (0x8000_0001 on: AMD's, mostly) features into ``fs``."""
    if max_ext >= 0x80000001:
        e1 = r.cpuid(0x80000001, 0)
        if e1[2] >> 5 & 1:
            fs.update(("LZCNT", "POPCNT"))
        _bits(e1, _EXT1, fs)
        if "AVX" in fs:
            if e1[2] >> 11 & 1:
                fs.add("XOP")
            if e1[2] >> 16 & 1:
                fs.add("FMA4")
    if max_ext >= 0x80000007:
        _bits(r.cpuid(0x80000007, 0), _EXT7, fs)
    if max_ext >= 0x80000008:
        b8 = r.cpuid(0x80000008, 0)[1]
        fs.update(name for bit, name in _EXT8_EBX if b8 >> bit & 1)
    if "SVM" in fs and max_ext >= 0x8000000A:
        dA = r.cpuid(0x8000000A, 0)[3]
        fs.update(name for bit, name in _EXTA_EDX if dA >> bit & 1)
    if max_ext >= 0x8000001A:
        a1a = r.cpuid(0x8000001A, 0)[0]
        fs.update(name for bit, name in _EXT1A_EAX if a1a >> bit & 1)
    if max_ext >= 0x8000001B and "IBS" in fs:
        a1b = r.cpuid(0x8000001B, 0)[0]
        fs.update(name for bit, name in _EXT1B_EAX if a1b >> bit & 1)
    if max_ext >= 0x8000001F and vendor == "AMD":
        a1f = r.cpuid(0x8000001F, 0)[0]
        fs.update(name for bit, name in _EXT1F_EAX if a1f >> bit & 1)
    if max_ext >= 0x80000021 and vendor == "AMD":
        _bits(r.cpuid(0x80000021, 0), _EXT21, fs)


def _pmu(regs: tuple[int, int, int, int], fs: set[str]) -> None:
    eax, ebx, _, edx = regs
    version = eax & 0xFF
    nfixed = edx & 0x1F if version > 1 else 0
    if version == 0:
        return
    names = ("PMU_FIXEDCOUNTER_INSTRUCTIONS", "PMU_FIXEDCOUNTER_CYCLES", "PMU_FIXEDCOUNTER_REFCYCLES",
             "PMU_FIXEDCOUNTER_TOPDOWN_SLOTS")
    if ebx == 0:
        if nfixed == 3:
            fs.update(names[:3])
        elif nfixed == 4:
            fs.update(names)
    else:
        fs.update(n for i, n in enumerate(names) if not ebx >> i & 1)


def dump_leaves(r: Any) -> dict[str, Any]:
    """The leaves :func:`x86_features` reads, as a ``cpuid.json`` fixture (for capture)."""
    max_leaf = r.cpuid(0, 0)[0]
    max_ext = r.cpuid(0x80000000, 0)[0]
    keys = [(0, 0), (1, 0), (4, 0), (0xB, 0), (0xB, 1), (0x40000000, 0), (0x80000000, 0)]
    keys += [(leaf, 0) for leaf in (7, 0xA, 0xD, 0x10, 0x12, 0x16, 0x19, 0x20, 0x21, 0x24) if leaf <= max_leaf]
    keys += [(7, 1), (7, 2), (0xD, 1), (0xF, 0), (0xF, 1), (0x10, 1), (0x10, 2), (0x10, 3)] if max_leaf >= 7 else []
    keys += [(e, 0) for e in (0x80000001, 0x80000007, 0x80000008, 0x8000000A, 0x8000001A,
                                0x8000001B, 0x8000001E, 0x8000001F, 0x80000021) if e <= max_ext]
    leaves = {f"{leaf:#x}:{sub}": list(r.cpuid(leaf, sub)) for leaf, sub in sorted(set(keys))}
    osxsave = leaves["0x1:0"][2] >> 27 & 1 if "0x1:0" in leaves else 0
    return {"arch": "x86_64", "leaves": leaves, "xgetbv": r.xgetbv(0) if osxsave else 0}
