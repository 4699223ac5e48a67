"""Snapshot <-> NFD features, so NodeFeatureRules can match GPUs and labels can be rebuilt.

Feature names (all documented in docs/gpu.md):

- ``nvml.gpu`` (instances): one per GPU;
- ``nvml.mig`` (instances): one per MIG device;
- ``nvml.driver`` (attributes): driver, CUDA driver and NVML versions;
- ``nvml.system`` (attributes): node-level facts (GPU count, models, MIG, mode, vGPU, clique).

The worker hands a source's labels() the *features*, not the snapshot, so every fact a label
needs is stored here and :func:`snapshot_from_features` restores it losslessly.
"""

from __future__ import annotations

from nfd.api.features import Features
from nfd.sources.nvml.labels import cuda_version, gpu_clique, gpu_mode, models, primary_model
from nfd.sources.nvml.naming import DRIVER, GPU, MIG, SYSTEM, arch_family, sanitise
from nfd.sources.nvml.snapshot import Fabric, Gpu, MigDevice, Snapshot, Vgpu

_MIG_FIELDS = {
    "memory": "memory_mib",
    "multiprocessors": "multiprocessors",
    "slices_gi": "gi_slices",
    "slices_ci": "ci_slices",
    "engines_copy": "copy_engines",
    "engines_decoder": "decoders",
    "engines_encoder": "encoders",
    "engines_jpeg": "jpeg_engines",
    "engines_ofa": "ofa_engines",
    "gi_id": "gi_id",
    "ci_id": "ci_id",
}


def _b(v: bool) -> str:
    return "true" if v else "false"


def snapshot_to_features(snap: Snapshot) -> Features:
    f = Features()
    gpus: list[dict[str, str]] = []
    migs: list[dict[str, str]] = []
    for g in snap.gpus:
        inst = {
            "index": str(g.index),
            "uuid": g.uuid,
            "name": g.name,
            "product": sanitise(g.name),
            "brand": g.brand,
            "architecture": g.architecture,
            "compute_major": str(g.compute_major),
            "compute_minor": str(g.compute_minor),
            "compute_capability": f"{g.compute_major}.{g.compute_minor}",
            "family": arch_family(g.compute_major, g.compute_minor) if g.compute_major else "undefined",
            "memory_bytes": str(g.memory_bytes),
            "memory": str(g.memory_mib),
            "pci_bus_id": g.pci_bus_id,
            "pci_device_id": g.pci_device_id,
            "mig_capable": _b(g.mig_capable),
            "mig_mode": "enabled" if g.mig_enabled else ("disabled" if g.mig_capable else "unsupported"),
            "mig_devices": str(len(g.mig_devices)),
        }
        if g.pci_class is not None:
            inst["pci_class"] = f"0x{g.pci_class:06x}"
        if g.numa_node is not None:
            inst["numa_node"] = str(g.numa_node)
        if g.fabric is not None:
            inst.update(
                fabric_state=str(g.fabric.state),
                fabric_status=str(g.fabric.status),
                fabric_cluster_uuid=g.fabric.cluster_uuid,
                fabric_clique_id=str(g.fabric.clique_id),
                fabric_attached=_b(g.fabric.attached),
            )
        gpus.append(inst)
        for m in g.mig_devices:
            mi = {
                "parent_index": str(m.parent_index),
                "parent_uuid": g.uuid,
                "parent_name": g.name,
                "index": str(m.index),
                "uuid": m.uuid,
                "profile": m.profile,
            }
            for key, attr in _MIG_FIELDS.items():
                mi[key] = str(getattr(m, attr))
            if m.profile_error:
                mi["profile_error"] = m.profile_error
            migs.append(mi)
    if gpus:
        f.add_instances(GPU, gpus)
    if migs:
        f.add_instances(MIG, migs)
    if snap.gpus:
        cmaj, cmin = cuda_version(snap.cuda_driver_version)
        parts = snap.driver_version.split(".")
        drv = {
            "version": snap.driver_version,
            "major": parts[0] if parts else "",
            "minor": parts[1] if len(parts) > 1 else "",
            "revision": parts[2] if len(parts) > 2 else "",
            "cuda_driver_version": str(snap.cuda_driver_version),
            "cuda_major": str(cmaj),
            "cuda_minor": str(cmin),
            "cuda_version": f"{cmaj}.{cmin}",
            "nvml_version": snap.nvml_version,
        }
        f.add_attributes(DRIVER, drv)
    system: dict[str, str] = {"gpu_count": str(len(snap.gpus))}
    if snap.gpus:
        groups = models(snap)
        system.update(
            models=str(len(groups)),
            primary_model=sanitise(primary_model(snap)),
            mig_capable=_b(any(g.mig_capable for g in snap.gpus)),
            mig_enabled_count=str(sum(g.mig_enabled for g in snap.gpus)),
            mig_device_count=str(len(snap.mig_devices())),
            machine_type=snap.machine_type,
            gpu_mode=gpu_mode(snap),
        )
        clique = gpu_clique(snap)
        if clique:
            system["clique"] = clique
    if snap.vgpu is not None:
        system["vgpu_present"] = _b(snap.vgpu.present)
        if snap.vgpu.present:
            system["vgpu_host_driver_version"] = snap.vgpu.host_driver_version
            system["vgpu_host_driver_branch"] = snap.vgpu.host_driver_branch
    f.add_attributes(SYSTEM, system)
    return f


def _int(v: str | None, default: int = 0) -> int:
    try:
        return int(v, 0) if v else default
    except ValueError:
        return default


def snapshot_from_features(f: Features) -> Snapshot:
    """Rebuild the label-relevant snapshot from ``nvml.*`` features (other keys are ignored)."""
    migs_by_parent: dict[int, list[MigDevice]] = {}
    for mi in f.instances.get(MIG, []):
        kw = {attr: _int(mi.get(key)) for key, attr in _MIG_FIELDS.items()}
        m = MigDevice(
            parent_index=_int(mi.get("parent_index")),
            index=_int(mi.get("index")),
            uuid=mi.get("uuid", ""),
            profile=mi.get("profile", ""),
            profile_error=mi.get("profile_error", ""),
            **kw,
        )
        migs_by_parent.setdefault(m.parent_index, []).append(m)
    gpus = []
    for gi in f.instances.get(GPU, []):
        idx = _int(gi.get("index"))
        fabric = None
        if "fabric_state" in gi:
            fabric = Fabric(
                state=_int(gi.get("fabric_state")),
                status=_int(gi.get("fabric_status")),
                cluster_uuid=gi.get("fabric_cluster_uuid", ""),
                clique_id=_int(gi.get("fabric_clique_id")),
            )
        gpus.append(
            Gpu(
                index=idx,
                uuid=gi.get("uuid", ""),
                name=gi.get("name", ""),
                compute_major=_int(gi.get("compute_major")),
                compute_minor=_int(gi.get("compute_minor")),
                memory_bytes=_int(gi.get("memory_bytes")),
                brand=gi.get("brand", "unknown"),
                architecture=gi.get("architecture", "unknown"),
                pci_bus_id=gi.get("pci_bus_id", ""),
                pci_device_id=gi.get("pci_device_id", ""),
                pci_class=_int(gi["pci_class"]) if "pci_class" in gi else None,
                numa_node=_int(gi["numa_node"]) if "numa_node" in gi else None,
                mig_capable=gi.get("mig_capable") == "true",
                mig_enabled=gi.get("mig_mode") == "enabled",
                mig_devices=tuple(migs_by_parent.get(idx, [])),
                fabric=fabric,
            )
        )
    drv = f.attributes.get(DRIVER, {})
    system = f.attributes.get(SYSTEM, {})
    vgpu = None
    if "vgpu_present" in system:
        vgpu = Vgpu(
            present=system["vgpu_present"] == "true",
            host_driver_version=system.get("vgpu_host_driver_version", ""),
            host_driver_branch=system.get("vgpu_host_driver_branch", ""),
        )
    return Snapshot(
        driver_version=drv.get("version", ""),
        cuda_driver_version=_int(drv.get("cuda_driver_version")),
        nvml_version=drv.get("nvml_version", ""),
        machine_type=system.get("machine_type", ""),
        gpus=tuple(gpus),
        vgpu=vgpu,
    )
