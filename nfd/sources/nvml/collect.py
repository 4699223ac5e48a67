"""One pass over NVML -> :class:`Snapshot`, with GFD's split between fatal and benign errors.

Fatal (raise :class:`CollectError`; the caller keeps its last good result): device enumeration,
name, compute capability, MIG mode other than NOT_SUPPORTED, MIG enumeration and attributes,
fabric info other than NOT_SUPPORTED. Benign (recorded as warnings): memory, PCI, NUMA, brand,
architecture, PCI class, DMI and vGPU reads. A MIG profile that cannot be resolved (typically
no MIG monitor capability) is recorded on the device; the source decides whether that matters.
"""

from __future__ import annotations

import ctypes
import uuid as uuidlib
from typing import Any

from nfd.sources.nvml import backend as nv
from nfd.sources.nvml.hostinfo import HostFacts
from nfd.sources.nvml.naming import (
    ARCHITECTURES,
    BRANDS,
    CI_ENGINE_PROFILE_COUNT,
    CI_PROFILE_COUNT,
    GI_PROFILE_COUNT,
    mig_profile_name,
)
from nfd.sources.nvml.snapshot import Fabric, Gpu, MigDevice, Snapshot

MIG_ENABLE = 1
_SKIP_PROBE = {nv.NOT_SUPPORTED, nv.INVALID_ARGUMENT}
_EMPTY_SLOT = {nv.NOT_FOUND, nv.INVALID_ARGUMENT}


class CollectError(Exception):
    """An NVML call whose failure makes this pass unusable; str names the call and device."""

    def __init__(self, call: str, exc: BaseException, *, device: int | None = None):
        where = f" (GPU {device})" if device is not None else ""
        super().__init__(f"{call}{where}: {nv.describe(exc)}")
        self.call = call
        self.code = nv.nvml_code(exc)
        self.device = device


def _s(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes | bytearray) else str(v)


class _Collector:
    def __init__(self, nvml: Any, host: HostFacts):
        self.nvml = nvml
        self.host = host
        self.warnings: list[str] = []

    def call(self, name: str, *args: Any, device: int | None = None) -> Any:
        try:
            return getattr(self.nvml, name)(*args)
        except Exception as e:
            if nv.nvml_code(e) is None:
                raise
            raise CollectError(name, e, device=device) from e

    def optional(
        self, name: str, *args: Any, device: int | None = None, quiet: frozenset[int] = frozenset()
    ) -> Any:
        """A call whose failure is only a warning; None on failure."""
        try:
            return getattr(self.nvml, name)(*args)
        except Exception as e:
            code = nv.nvml_code(e)
            if code is None:
                raise
            if code not in quiet and code not in (nv.NOT_SUPPORTED, nv.FUNCTION_NOT_FOUND):
                where = f" (GPU {device})" if device is not None else ""
                self.warnings.append(f"nvml: {name}{where}: {nv.describe(e)}")
            return None

    # -- passes --------------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        driver = _s(self.call("nvmlSystemGetDriverVersion"))
        cuda = int(self.call("nvmlSystemGetCudaDriverVersion"))
        nvml_version = self.optional("nvmlSystemGetNVMLVersion")
        count = int(self.call("nvmlDeviceGetCount"))
        gpus = tuple(self.gpu(i) for i in range(count))
        machine = self.host.machine_type()
        if machine is None:  # GFD: a read error gives "unknown"; an empty file gives ""
            self.warnings.append("nvml: machine type unreadable; gpu.machine=unknown")
            machine = "unknown"
        vgpu = self.host.vgpu()
        return Snapshot(
            driver_version=driver,
            cuda_driver_version=cuda,
            nvml_version=_s(nvml_version) if nvml_version is not None else "",
            machine_type=machine.strip(),
            gpus=gpus,
            vgpu=vgpu,
            warnings=tuple(self.warnings),
        )

    def gpu(self, index: int) -> Gpu:
        h = self.call("nvmlDeviceGetHandleByIndex", index, device=index)
        name = _s(self.call("nvmlDeviceGetName", h, device=index))
        major, minor = self.call("nvmlDeviceGetCudaComputeCapability", h, device=index)
        uuid = self.optional("nvmlDeviceGetUUID", h, device=index)
        mem = self.optional("nvmlDeviceGetMemoryInfo", h, device=index)
        total = int(mem.total) if mem is not None else 0
        brand = self.optional("nvmlDeviceGetBrand", h, device=index)
        arch = self.optional("nvmlDeviceGetArchitecture", h, device=index)
        pci = self.optional("nvmlDeviceGetPciInfo", h, device=index)
        bus_id = _s(pci.busId) if pci is not None else ""
        device_id = f"0x{int(pci.pciDeviceId) & 0xFFFFFFFF:08x}" if pci is not None else ""
        numa = self.optional("nvmlDeviceGetNumaNodeId", h, device=index)
        pci_class = self.host.pci_class(bus_id) if bus_id else None
        if pci_class is None:
            self.warnings.append(f"nvml: PCI class of GPU {index} unreadable; gpu.mode=unknown")
        mig_capable, mig_enabled = self.mig_mode(h, index)
        migs: tuple[MigDevice, ...] = ()
        if mig_enabled:
            migs = tuple(self.mig_devices(h, index, total))
        return Gpu(
            index=index,
            uuid=_s(uuid) if uuid is not None else "",
            name=name.strip(),
            compute_major=int(major),
            compute_minor=int(minor),
            memory_bytes=total,
            brand=BRANDS.get(brand, "unknown") if brand is not None else "unknown",
            architecture=ARCHITECTURES.get(arch, "unknown") if arch is not None else "unknown",
            pci_bus_id=bus_id,
            pci_device_id=device_id,
            pci_class=pci_class,
            numa_node=int(numa) if numa is not None and int(numa) >= 0 else None,
            mig_capable=mig_capable,
            mig_enabled=mig_enabled,
            mig_devices=migs,
            fabric=self.fabric(h, index),
        )

    def mig_mode(self, h: Any, index: int) -> tuple[bool, bool]:
        try:
            current, _pending = self.nvml.nvmlDeviceGetMigMode(h)
        except Exception as e:
            code = nv.nvml_code(e)
            if code in (nv.NOT_SUPPORTED, nv.FUNCTION_NOT_FOUND):
                return False, False
            if code is None:
                raise
            raise CollectError("nvmlDeviceGetMigMode", e, device=index) from e
        return True, int(current) == MIG_ENABLE

    def mig_devices(self, parent: Any, index: int, parent_total: int) -> list[MigDevice]:
        out: list[MigDevice] = []
        n = int(self.call("nvmlDeviceGetMaxMigDeviceCount", parent, device=index))
        gi_table: dict[int, int] | None = None  # GI profile id -> profile index
        for slot in range(n):
            try:
                mh = self.nvml.nvmlDeviceGetMigDeviceHandleByIndex(parent, slot)
            except Exception as e:
                code = nv.nvml_code(e)
                if code in _EMPTY_SLOT:
                    continue
                if code is None:
                    raise
                raise CollectError("nvmlDeviceGetMigDeviceHandleByIndex", e, device=index) from e
            attrs = self.call("nvmlDeviceGetAttributes", mh, device=index)
            gi_id = int(self.call("nvmlDeviceGetGpuInstanceId", mh, device=index))
            ci_id = int(self.call("nvmlDeviceGetComputeInstanceId", mh, device=index))
            uuid = self.optional("nvmlDeviceGetUUID", mh, device=index)
            mem_mib = int(attrs.memorySizeMB)
            profile, error = "", ""
            try:
                if parent_total <= 0:  # the profile's size is a fraction of it (GFD: an error too)
                    raise ValueError(f"memory of GPU {index} unreadable, the profile's size is a fraction of it")
                if gi_table is None:
                    gi_table = self.gi_profiles(parent)
                profile = self.profile(parent, gi_id, ci_id, gi_table, mem_mib, parent_total)
            except CollectError as e:
                error = str(e)
            except ValueError as e:
                error = str(e)
            if error:
                self.warnings.append(f"nvml: MIG device {index}:{slot}: profile not resolved: {error}")
            out.append(
                MigDevice(
                    parent_index=index,
                    index=slot,
                    uuid=_s(uuid) if uuid is not None else "",
                    profile=profile,
                    gi_id=gi_id,
                    ci_id=ci_id,
                    memory_mib=mem_mib,
                    multiprocessors=int(attrs.multiprocessorCount),
                    gi_slices=int(attrs.gpuInstanceSliceCount),
                    ci_slices=int(attrs.computeInstanceSliceCount),
                    copy_engines=int(attrs.sharedCopyEngineCount),
                    decoders=int(attrs.sharedDecoderCount),
                    encoders=int(attrs.sharedEncoderCount),
                    jpeg_engines=int(attrs.sharedJpegCount),
                    ofa_engines=int(attrs.sharedOfaCount),
                    profile_error=error,
                )
            )
        return out

    def gi_profiles(self, parent: Any) -> dict[int, int]:
        """GPU-instance profile id -> NVML profile index, probing every index as go-nvlib does."""
        table: dict[int, int] = {}
        for idx in range(GI_PROFILE_COUNT):
            info = self._profile_probe(self.nvml.nvmlDeviceGetGpuInstanceProfileInfo, parent, idx)
            if info is not None:
                table.setdefault(int(info.id), idx)
        return table

    def profile(
        self, parent: Any, gi_id: int, ci_id: int, gi_table: dict[int, int], mem_mib: int, total: int
    ) -> str:
        gi = self.call("nvmlDeviceGetGpuInstanceById", parent, gi_id)
        ci = self.call("nvmlGpuInstanceGetComputeInstanceById", gi, ci_id)
        gi_profile_id = int(self.call("nvmlGpuInstanceGetInfo", gi).profileId)
        ci_profile_id = int(self.call("nvmlComputeInstanceGetInfo", ci).profileId)
        gi_index = gi_table.get(gi_profile_id)
        if gi_index is None:
            raise ValueError(f"no GPU instance profile with id {gi_profile_id}")
        for j in range(CI_PROFILE_COUNT):
            for k in range(CI_ENGINE_PROFILE_COUNT):
                info = self._profile_probe(self.nvml.nvmlGpuInstanceGetComputeInstanceProfileInfo, gi, j, k)
                if info is not None and int(info.id) == ci_profile_id:
                    return mig_profile_name(gi_index, j, mem_mib, total)
        raise ValueError(f"no compute instance profile with id {ci_profile_id}")

    def _profile_probe(self, fn: Any, *args: Any) -> Any:
        """A profile-table probe: v2 struct, falling back to v1 on old drivers; None if skipped."""
        for version in (2, 1):
            try:
                return fn(*args, version=version)
            except Exception as e:
                code = nv.nvml_code(e)
                if code == nv.FUNCTION_NOT_FOUND and version == 2:
                    continue
                if code in _SKIP_PROBE:
                    return None
                if code is None:
                    raise
                raise CollectError(getattr(fn, "__name__", "profile info"), e) from e
        return None

    def fabric(self, h: Any, index: int) -> Fabric | None:
        for call, struct in (
            ("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfoV_t"),
            ("nvmlDeviceGetGpuFabricInfo", "c_nvmlGpuFabricInfo_t"),
        ):
            cls = getattr(self.nvml, struct, None)
            fn = getattr(self.nvml, call, None)
            if cls is None or fn is None:
                continue
            info = cls()
            try:
                fn(h, ctypes.byref(info))
            except Exception as e:
                code = nv.nvml_code(e)
                if code == nv.FUNCTION_NOT_FOUND:
                    continue
                if code == nv.NOT_SUPPORTED:
                    return None
                if code is None:
                    raise
                raise CollectError(call, e, device=index) from e
            raw = nv.field_bytes(info, "clusterUuid")
            return Fabric(
                state=int(info.state),
                status=int(info.status),
                cluster_uuid=str(uuidlib.UUID(bytes=raw)) if len(raw) == 16 else "",
                clique_id=int(info.cliqueId),
            )
        return None


def collect(nvml: Any, host: HostFacts) -> Snapshot:
    """Read everything from an initialised NVML backend. Raises CollectError on a fatal call."""
    return _Collector(nvml, host).snapshot()
