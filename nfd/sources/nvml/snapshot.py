"""What one NVML pass saw: plain frozen dataclasses, no NVML types, comparable and cheap to keep.

The collector builds a snapshot from NVML; features and labels are computed from it, so the
label logic needs no NVML at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PCI_CLASS_COMPUTE = 0x030200  # 3D controller
PCI_CLASS_GRAPHICS = 0x030000  # VGA controller


@dataclass(frozen=True, slots=True)
class MigDevice:
    parent_index: int
    #: slot index passed to nvmlDeviceGetMigDeviceHandleByIndex
    index: int
    uuid: str
    #: GFD profile name ("1g.5gb", "1g.10gb.me", "1c.2g.10gb"); "" if it could not be resolved
    profile: str
    gi_id: int
    ci_id: int
    memory_mib: int
    multiprocessors: int
    gi_slices: int
    ci_slices: int
    copy_engines: int
    decoders: int
    encoders: int
    jpeg_engines: int
    ofa_engines: int
    #: why the profile could not be resolved (e.g. no MIG monitor capability)
    profile_error: str = ""

    def attribute_labels(self) -> dict[str, int]:
        """GFD's MIG attribute label suffixes -> values (nvmlDeviceGetAttributes)."""
        return {
            "memory": self.memory_mib,
            "multiprocessors": self.multiprocessors,
            "slices.gi": self.gi_slices,
            "slices.ci": self.ci_slices,
            "engines.copy": self.copy_engines,
            "engines.decoder": self.decoders,
            "engines.encoder": self.encoders,
            "engines.jpeg": self.jpeg_engines,
            "engines.ofa": self.ofa_engines,
        }


@dataclass(frozen=True, slots=True)
class Fabric:
    """nvmlDeviceGetGpuFabricInfo(V); only ``attached`` fabrics count for ``gpu.clique``."""

    state: int
    status: int
    cluster_uuid: str
    clique_id: int

    @property
    def attached(self) -> bool:
        # go-nvlib: state COMPLETED (3), status SUCCESS, non-zero cluster UUID
        return (
            self.state == 3
            and self.status == 0
            and self.cluster_uuid not in ("", "00000000-0000-0000-0000-000000000000")
        )


@dataclass(frozen=True, slots=True)
class Gpu:
    index: int
    uuid: str
    #: raw nvmlDeviceGetName, e.g. "NVIDIA H100 80GB HBM3"
    name: str
    compute_major: int
    compute_minor: int
    #: nvmlDeviceGetMemoryInfo().total in bytes; 0 if it could not be read
    memory_bytes: int = 0
    brand: str = "unknown"
    architecture: str = "unknown"
    #: "00000000:59:00.0" as NVML reports it
    pci_bus_id: str = ""
    #: "0x233010de" (nvmlPciInfo.pciDeviceId)
    pci_device_id: str = ""
    #: sysfs PCI class (0x030200 compute, 0x030000 graphics); None if unreadable
    pci_class: int | None = None
    numa_node: int | None = None
    #: nvmlDeviceGetMigMode answered (NOT_SUPPORTED/FUNCTION_NOT_FOUND -> False)
    mig_capable: bool = False
    mig_enabled: bool = False
    mig_devices: tuple[MigDevice, ...] = ()
    fabric: Fabric | None = None

    @property
    def memory_mib(self) -> int:
        return self.memory_bytes >> 20


@dataclass(frozen=True, slots=True)
class Vgpu:
    """vGPU guest detection from PCI config space; None in a snapshot means the scan failed."""

    present: bool
    host_driver_version: str = ""
    host_driver_branch: str = ""


@dataclass(frozen=True, slots=True)
class Snapshot:
    driver_version: str = ""
    #: nvmlSystemGetCudaDriverVersion, e.g. 12040
    cuda_driver_version: int = 0
    nvml_version: str = ""
    #: trimmed DMI product name; "unknown" if unreadable (as GFD)
    machine_type: str = ""
    gpus: tuple[Gpu, ...] = ()
    vgpu: Vgpu | None = None
    #: non-fatal problems of this pass (memory, PCI class, DMI, vGPU read errors)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def mig_devices(self) -> list[MigDevice]:
        return [m for g in self.gpus for m in g.mig_devices]

    def gpu(self, index: int) -> Gpu | None:
        for g in self.gpus:
            if g.index == index:
                return g
        return None
