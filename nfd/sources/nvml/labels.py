"""Snapshot + settings -> the label set gpu-feature-discovery would publish, plus our fixes.

Everything is fully prefixed (``nvidia.com/...``). Differences from GFD, all documented in
docs/gpu.md and docs/compatibility.md:

- a node with several GPU models gets the ``gpu.*`` labels of one model chosen deterministically
  (see :func:`primary_model`) plus ``gpu.count.<model>`` per model;
- conditions that make GFD exit (MPS sharing on a MIG-enabled GPU, an unparsable driver version)
  drop only the affected labels and produce a warning;
- every label is checked against Kubernetes' syntax: values are cut to 63 characters and trimmed,
  invalid keys are left out, each with a warning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from nfd.sources.nvml.naming import arch_family, fix_label_value, label_key_error, sanitise
from nfd.sources.nvml.sharing import Sharing
from nfd.sources.nvml.snapshot import PCI_CLASS_COMPUTE, PCI_CLASS_GRAPHICS, Gpu, MigDevice, Snapshot

NS = "nvidia.com/"
GPU_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True)
class LabelSettings:
    mig_strategy: str = "none"
    sharing: Sharing = field(default_factory=Sharing)
    #: gfd.timestamp value (Unix seconds), None to omit it (GFD's --no-timestamp)
    timestamp: int | None = None


Warn = Callable[[str], None]


def _nowarn(_: str) -> None:
    pass


def gfd_labels(snap: Snapshot, settings: LabelSettings, *, warn: Warn = _nowarn) -> dict[str, str]:
    """The complete label map, in GFD's merge order (later writers win)."""
    out: dict[str, str] = {}
    if settings.timestamp is not None:
        out[NS + "gfd.timestamp"] = str(settings.timestamp)
    if snap.gpus:
        out[NS + "gpu.machine"] = sanitise(snap.machine_type)
        out.update(version_labels(snap, warn))
        out[NS + "mig.capable"] = _bool(any(g.mig_capable for g in snap.gpus))
        out[NS + "mps.capable"] = _mps_capable(snap, settings.sharing, warn)
        out.update(resource_labels(snap, settings, warn))
        out[NS + "gpu.mode"] = gpu_mode(snap)
        clique = gpu_clique(snap)
        if clique:
            out[NS + "gpu.clique"] = clique
    if snap.vgpu is not None:
        out[NS + "vgpu.present"] = _bool(snap.vgpu.present)
        if snap.vgpu.present:
            out[NS + "vgpu.host-driver-version"] = snap.vgpu.host_driver_version
            out[NS + "vgpu.host-driver-branch"] = snap.vgpu.host_driver_branch
    return validate(out, warn)


def validate(labels: dict[str, str], warn: Warn) -> dict[str, str]:
    """Keep only labels Kubernetes accepts; repair over-long or badly-ended values."""
    out: dict[str, str] = {}
    for key, value in labels.items():
        err = label_key_error(key)
        if err:
            warn(f"nvml: label {key!r} left out: {err}")
            continue
        fixed = fix_label_value(value)
        if fixed is None:
            warn(f"nvml: label {key}={value!r} left out: not a valid label value")
            continue
        if fixed != value:
            warn(f"nvml: label {key}: value {value!r} shortened to {fixed!r} to be a valid label value")
        out[key] = fixed
    return out


def _bool(b: bool) -> str:
    return "true" if b else "false"


# -- node-level ----------------------------------------------------------------------------------


def version_labels(snap: Snapshot, warn: Warn) -> dict[str, str]:
    out: dict[str, str] = {}
    parts = snap.driver_version.split(".")
    if 2 <= len(parts) <= 3:
        major, minor = parts[0], parts[1]
        rev = parts[2] if len(parts) > 2 else ""
        out.update(
            {
                NS + "cuda.driver.major": major,
                NS + "cuda.driver.minor": minor,
                NS + "cuda.driver.rev": rev,
                NS + "cuda.driver-version.major": major,
                NS + "cuda.driver-version.minor": minor,
                NS + "cuda.driver-version.revision": rev,
                NS + "cuda.driver-version.full": snap.driver_version,
            }
        )
    else:
        warn(f"nvml: driver version {snap.driver_version!r} does not match X.Y[.Z]; no driver labels")
    cmaj, cmin = cuda_version(snap.cuda_driver_version)
    out.update(
        {
            NS + "cuda.runtime.major": str(cmaj),
            NS + "cuda.runtime.minor": str(cmin),
            NS + "cuda.runtime-version.major": str(cmaj),
            NS + "cuda.runtime-version.minor": str(cmin),
            NS + "cuda.runtime-version.full": f"{cmaj}.{cmin}",
        }
    )
    return out


def cuda_version(v: int) -> tuple[int, int]:
    return v // 1000, (v % 1000) // 10


def _mps_capable(snap: Snapshot, sharing: Sharing, warn: Warn) -> str:
    if sharing.strategy != "mps":
        return "false"
    if any(g.mig_enabled for g in snap.gpus):
        # GFD exits here ("MPS sharing is not supported for mig devices"); we only say no
        warn("nvml: MPS sharing is configured but a GPU has MIG enabled; mps.capable=false")
        return "false"
    return "true"


def gpu_mode(snap: Snapshot) -> str:
    classes = {g.pci_class for g in snap.gpus}
    if not classes or None in classes or len(classes) != 1:
        return "unknown"
    cls = classes.pop()
    if cls == PCI_CLASS_COMPUTE:
        return "compute"
    if cls == PCI_CLASS_GRAPHICS:
        return "graphics"
    return "unknown"


def gpu_clique(snap: Snapshot) -> str:
    """``<clusterUUID>.<cliqueId>`` when every fabric-attached GPU agrees, else ""."""
    attached = [g.fabric for g in snap.gpus if g.fabric is not None and g.fabric.attached]
    if not attached:
        return ""
    uuids = {f.cluster_uuid for f in attached}
    cliques = {f.clique_id for f in attached}
    if len(uuids) != 1 or len(cliques) != 1:
        return ""
    return f"{uuids.pop()}.{cliques.pop()}"


# -- resource labels ------------------------------------------------------------------------------


class _Resource:
    """GFD's resourceLabeler: ``<resource>.<suffix>`` labels, sharing-aware."""

    def __init__(self, name: str, sharing: Sharing | None):
        self.name = name
        self.sharing = sharing  # None: sharing disabled (MIG-enabled parents)

    def key(self, suffix: str) -> str:
        return f"{self.name}.{suffix}"

    def replicas(self) -> int:
        if self.sharing is None:
            return 0
        r = self.sharing.active.replicas(self.name)
        return r if r is not None and r > 0 else 1

    def shared(self) -> bool:
        if self.sharing is None:
            return False
        r = self.sharing.active.replicas(self.name)
        return r is not None and r > 1

    def product(self, *parts: str) -> str:
        stripped = [sanitise(p) for p in parts if p]
        if self.shared() and not (self.sharing is not None and self.sharing.active.rename_by_default):
            stripped.append("SHARED")
        return "-".join(stripped)

    def base(self, count: int, *parts: str) -> dict[str, str]:
        replicas = self.replicas()
        strategy = "none"
        if self.sharing is not None and replicas > 1:
            strategy = self.sharing.strategy
        return {
            self.key("product"): self.product(*parts),
            self.key("count"): str(count),
            self.key("replicas"): str(replicas),
            self.key("sharing-strategy"): strategy,
        }


def full_gpu_labels(gpu: Gpu, count: int, sharing: Sharing | None) -> dict[str, str]:
    rl = _Resource(GPU_RESOURCE, sharing)
    out = rl.base(count, gpu.name)
    if gpu.memory_mib:
        out[rl.key("memory")] = str(gpu.memory_mib)
    if gpu.compute_major != 0:
        out[rl.key("family")] = arch_family(gpu.compute_major, gpu.compute_minor)
        out[rl.key("compute.major")] = str(gpu.compute_major)
        out[rl.key("compute.minor")] = str(gpu.compute_minor)
    return out


def mig_resource_labels(
    resource: str, mig: MigDevice, parent: Gpu, count: int, sharing: Sharing
) -> dict[str, str]:
    rl = _Resource(resource, sharing)
    out = rl.base(count, parent.name, "MIG", mig.profile)
    for suffix, value in mig.attribute_labels().items():
        out[rl.key(suffix)] = str(value)
    return out


def models(snap: Snapshot) -> dict[str, list[Gpu]]:
    """GPUs grouped by exact NVML name, in order of first appearance."""
    groups: dict[str, list[Gpu]] = {}
    for g in snap.gpus:
        groups.setdefault(g.name, []).append(g)
    return groups


def primary_model(snap: Snapshot) -> str:
    """The model whose labels fill ``nvidia.com/gpu.*`` on a node with several models.

    GFD lets a model with a non-MIG GPU override MIG-only models and otherwise picks at random.
    We keep the first rule, then take the model with most GPUs, then the one owning the
    lowest GPU index.
    """
    groups = models(snap)

    def rank(item: tuple[str, list[Gpu]]) -> tuple[int, int, int]:
        name, gpus = item
        has_full = any(not g.mig_enabled for g in gpus)
        return (0 if has_full else 1, -len(gpus), min(g.index for g in gpus))

    return min(groups.items(), key=rank)[0]


def resource_labels(snap: Snapshot, settings: LabelSettings, warn: Warn) -> dict[str, str]:
    groups = models(snap)
    name = primary_model(snap)
    gpus = groups[name]
    out: dict[str, str] = {}
    mig_on = [g for g in gpus if g.mig_enabled]
    full = [g for g in gpus if not g.mig_enabled]
    # GFD labels the MIG-enabled GPUs of a model without sharing, then lets its full GPUs override
    if mig_on:
        out.update(full_gpu_labels(mig_on[-1], len(gpus), None))
    if full:
        out.update(full_gpu_labels(full[-1], len(gpus), settings.sharing))
    if len(groups) > 1:
        warn(f"nvml: multiple GPU models {sorted(groups)}; gpu.* labels describe {name!r}")
        for model, members in groups.items():
            out[f"{NS}gpu.count.{sanitise(model)}"] = str(len(members))
    strategy = settings.mig_strategy
    if strategy == "single":
        out[NS + "mig.strategy"] = "single"
        out.update(_single(snap, settings.sharing, warn))
    elif strategy == "mixed":
        out[NS + "mig.strategy"] = "mixed"
        out.update(_mixed(snap, settings.sharing))
    return out


def _group_migs(snap: Snapshot) -> dict[str, tuple[MigDevice, int]]:
    """Profile -> (first MIG device seen with it, count), in GPU then slot order."""
    out: dict[str, tuple[MigDevice, int]] = {}
    for m in snap.mig_devices():
        if not m.profile:  # unresolved: no resource name to label it under
            continue
        first, n = out.get(m.profile, (m, 0))
        out[m.profile] = (first, n + 1)
    return out


def _single(snap: Snapshot, sharing: Sharing, warn: Warn) -> dict[str, str]:
    enabled = [g for g in snap.gpus if g.mig_enabled]
    if not enabled:
        return {}
    reason = ""
    if any(not g.mig_devices for g in enabled):
        reason = "at least one MIG device is enabled but empty"
    elif any(not g.mig_enabled for g in snap.gpus):
        reason = "devices with MIG enabled and disabled detected"
    else:
        groups = _group_migs(snap)
        if len(groups) != 1:
            reason = "more than one MIG device type present on node"
        else:
            ((first, count),) = groups.values()
            parent = snap.gpu(first.parent_index) or enabled[0]
            return mig_resource_labels(GPU_RESOURCE, first, parent, count, sharing)
    warn(f"nvml: invalid configuration for mig-strategy=single: {reason}")
    rl = _Resource(GPU_RESOURCE, None)
    return {
        rl.key("product"): rl.product(enabled[0].name, "MIG", "INVALID"),
        rl.key("count"): "0",
        rl.key("replicas"): "0",
        rl.key("sharing-strategy"): "",
        rl.key("memory"): "0",
    }


def _mixed(snap: Snapshot, sharing: Sharing) -> dict[str, str]:
    out: dict[str, str] = {}
    for profile, (first, count) in _group_migs(snap).items():
        parent = snap.gpu(first.parent_index)
        if parent is None:
            continue
        out.update(mig_resource_labels(f"nvidia.com/mig-{profile}", first, parent, count, sharing))
    return out
