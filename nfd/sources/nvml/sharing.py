"""The part of the device plugin's config file (``version: v1``) that GFD labels depend on.

``flags.migStrategy`` and ``sharing.timeSlicing`` / ``sharing.mps``. As GFD does, per-resource
``rename`` and ``devices`` are ignored (only ``renameByDefault`` renames), and when ``mps`` is
present it is the active strategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nfd.api.errors import ValidationError

MIG_STRATEGIES = ("none", "single", "mixed")


@dataclass(frozen=True, slots=True)
class Replicated:
    """A device plugin sharing mode (time-slicing or MPS): resources and replicas."""
    rename_by_default: bool = False
    #: resource name -> replicas (>= 2)
    resources: tuple[tuple[str, int], ...] = ()

    def replicas(self, resource: str) -> int | None:
        for name, n in self.resources:
            if name == resource:
                return n
        return None

    @property
    def is_replicated(self) -> bool:
        return any(n > 1 for _, n in self.resources)


@dataclass(frozen=True, slots=True)
class Sharing:
    """The device plugin's sharing settings: time-slicing and MPS."""
    time_slicing: Replicated = Replicated()
    mps: Replicated | None = None

    @property
    def strategy(self) -> str:
        """The node's active sharing strategy: ``mps``, ``time-slicing`` or ``none``."""
        if self.mps is not None and self.mps.is_replicated:
            return "mps"
        if self.time_slicing.is_replicated:
            return "time-slicing"
        return "none"

    @property
    def active(self) -> Replicated:
        return self.mps if self.mps is not None else self.time_slicing


@dataclass(frozen=True, slots=True)
class DevicePluginConfig:
    """What nvml reads from the GPU device plugin's config: MIG strategy, sharing."""
    mig_strategy: str = ""
    sharing: Sharing = Sharing()


def parse_device_plugin_config(doc: Any, *, path: str) -> DevicePluginConfig:
    """Parse the YAML/JSON document; raises ValidationError naming the bad field."""
    if doc is None:
        return DevicePluginConfig()
    if not isinstance(doc, dict):
        raise ValidationError(path, "must be an object")
    version = doc.get("version", "v1")
    if version != "v1":
        raise ValidationError(f"{path}.version", f"unsupported version {version!r}, expected 'v1'")
    mig = ""
    flags = doc.get("flags") or {}
    if not isinstance(flags, dict):
        raise ValidationError(f"{path}.flags", "must be an object")
    if flags.get("migStrategy") is not None:
        mig = flags["migStrategy"]
        if mig not in MIG_STRATEGIES:
            raise ValidationError(
                f"{path}.flags.migStrategy", f"must be one of none, single, mixed; got {mig!r}"
            )
    sharing_doc = doc.get("sharing") or {}
    if not isinstance(sharing_doc, dict):
        raise ValidationError(f"{path}.sharing", "must be an object")
    ts = sharing_doc.get("timeSlicing")
    mps = sharing_doc.get("mps")
    sharing = Sharing(
        time_slicing=_replicated(ts, f"{path}.sharing.timeSlicing") if ts is not None else Replicated(),
        mps=_replicated(mps, f"{path}.sharing.mps") if mps is not None else None,
    )
    return DevicePluginConfig(mig_strategy=mig, sharing=sharing)


RESOURCE_PREFIX = "nvidia.com/"


def _replicated(doc: Any, path: str) -> Replicated:
    if not isinstance(doc, dict):
        raise ValidationError(path, "must be an object")
    rbd = doc.get("renameByDefault", False)
    if not isinstance(rbd, bool):
        raise ValidationError(f"{path}.renameByDefault", "must be a boolean")
    resources = doc.get("resources")
    if not isinstance(resources, list) or not resources:
        raise ValidationError(f"{path}.resources", "no resources specified")
    out: list[tuple[str, int]] = []
    for i, r in enumerate(resources):
        rp = f"{path}.resources[{i}]"
        if not isinstance(r, dict):
            raise ValidationError(rp, "must be an object")
        name = r.get("name")
        if not isinstance(name, str) or not name:
            raise ValidationError(f"{rp}.name", "no resource name specified")
        if not name.startswith(RESOURCE_PREFIX):
            name = RESOURCE_PREFIX + name  # GFD's NewResourceName: `gpu` is nvidia.com/gpu
        replicas = r.get("replicas")
        if isinstance(replicas, bool) or not isinstance(replicas, int):
            raise ValidationError(f"{rp}.replicas", "no replicas specified (an integer)")
        if replicas < 2:
            raise ValidationError(f"{rp}.replicas", "number of replicas must be >= 2")
        out.append((name, replicas))
    return Replicated(rename_by_default=rbd, resources=tuple(out))
