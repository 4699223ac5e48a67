"""FakeNvml: the pynvml functions the nvml source calls, answering from a profile dict."""

from __future__ import annotations

import hashlib
import uuid as uuidlib
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml

from nfd.sources.nvml.fields import set_field_bytes
from nfd.sources.nvml.naming import CI_ENGINE_PROFILE_COUNT, CI_PROFILE_COUNT, GI_PROFILE_COUNT
from nfd.sources.nvml.snapshot import Vgpu

# CI profile index by compute slices (NVML_COMPUTE_INSTANCE_PROFILE_*). A model's `ciProfiles`
# ([{index, id, sliceCount, ...}]) is its compute-instance profile table as NVML reports it;
# without one, every size has id == index (as most drivers report it).
_CI_INDEX = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4, 8: 5, 6: 6}
_CI_SLICES = {v: k for k, v in _CI_INDEX.items()}


def ci_profile_table(model: dict[str, Any]) -> list[dict[str, Any]]:
    """The model's compute-instance profiles: its ``ciProfiles``, else the default table."""
    table = model.get("ciProfiles")
    if table:
        return [dict(p) for p in table]
    return [{"index": i, "id": i, "sliceCount": s} for i, s in sorted(_CI_SLICES.items())]


def _code(error: str | int) -> int:
    if isinstance(error, int):
        return error
    name = error.upper()
    if not name.startswith("NVML_ERROR_"):
        name = "NVML_ERROR_" + name
    code = getattr(pynvml, name, None)
    if not isinstance(code, int):
        raise ValueError(f"unknown NVML error {error!r}")
    return code


@dataclass
class Fault:
    call: str
    code: int
    #: GPU index the fault applies to (MIG handles count as their parent); None: every call
    device: int | None = None
    #: how many times it fires; None: forever
    times: int | None = None
    #: let this many matching calls succeed first
    after: int = 0
    fired: int = 0
    seen: int = 0


@dataclass(eq=False)
class _Gpu:
    index: int
    spec: dict[str, Any]
    model: dict[str, Any]
    migs: list[_Mig] = field(default_factory=list)


@dataclass(eq=False)
class _Mig:
    parent: _Gpu
    slot: int
    uuid: str
    gi_id: int
    ci_id: int
    gi_profile: dict[str, Any]
    ci_index: int
    attrs: dict[str, int]
    ci_profile_id: int = -1  # from the model's compute-instance profile table


@dataclass(eq=False)
class _Gi:
    """A GPU instance; several MIG devices share one when it is split into compute instances."""

    mig: _Mig  # the first MIG device on this GPU instance


@dataclass(eq=False)
class _Ci:
    mig: _Mig


def _stable_uuid(*parts: Any) -> str:
    return str(uuidlib.UUID(bytes=hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:16]))


class FakeHost:
    """Host facts (DMI, PCI class, vGPU) as the profile states them."""

    def __init__(self, fake: FakeNvml):
        self.fake = fake

    def machine_type(self) -> str | None:
        host = self.fake.profile.get("host") or {}
        v = host.get("machineType")
        return None if v is None else str(v)

    def pci_class(self, bus_id: str) -> int | None:
        for g in self.fake.gpus:
            if g.spec.get("busId", "").lower() == bus_id.lower():
                cls = g.spec.get("pciClass", g.model.get("pciClass"))
                return None if cls is None else int(cls)
        return None

    def vgpu(self) -> Vgpu | None:
        host = self.fake.profile.get("host") or {}
        v = host.get("vgpu", {"present": False})
        if v is None:
            return None
        return Vgpu(
            present=bool(v.get("present", False)),
            host_driver_version=str(v.get("hostDriverVersion", "")),
            host_driver_branch=str(v.get("hostDriverBranch", "")),
        )


class FakeNvml:
    """Stands in for the ``pynvml`` module. Not thread-safe; one per test."""

    c_nvmlGpuFabricInfoV_t = pynvml.c_nvmlGpuFabricInfoV_t
    c_nvmlGpuFabricInfo_t = pynvml.c_nvmlGpuFabricInfo_t

    def __init__(self, profile: dict[str, Any]):
        self.profile = profile
        self.faults: list[Fault] = []
        self.calls: Counter[str] = Counter()
        self.init_count = 0
        self.hidden: set[int] = set()
        self.host = FakeHost(self)
        self.gpus: list[_Gpu] = []
        models = profile["models"]
        for i, spec in enumerate(profile["gpus"]):
            g = _Gpu(index=i, spec=spec, model=models[spec["model"]])
            g.migs = self._build_migs(g)
            self.gpus.append(g)
        # errors the profile itself states: a node whose GPUs answer errors
        for call, error in (profile.get("errors") or {}).items():
            self.inject(call, error)
        for i, spec in enumerate(profile["gpus"]):
            for call, error in (spec.get("errors") or {}).items():
                self.inject(call, error, device=i)

    # -- profile -> MIG objects ----------------------------------------------------------------
    def _build_migs(self, g: _Gpu) -> list[_Mig]:
        out = []
        by_name = {p["name"]: p for p in g.model.get("giProfiles") or []}
        for slot, m in enumerate(g.spec.get("migDevices") or []):
            gp = by_name[m["profile"]]
            gi_slices = int(gp["sliceCount"])
            ci_slices = int(m.get("ciSlices", gi_slices))
            ci = self._ci_profile(g.model, m, ci_slices)
            sms = int(gp["multiprocessorCount"]) * ci_slices // gi_slices
            attrs = {
                "memorySizeMB": int(gp["memorySizeMB"]),
                "multiprocessorCount": sms,
                "gpuInstanceSliceCount": gi_slices,
                "computeInstanceSliceCount": ci_slices,
                "sharedCopyEngineCount": int(gp.get("copyEngineCount", 0)),
                "sharedDecoderCount": int(gp.get("decoderCount", 0)),
                "sharedEncoderCount": int(gp.get("encoderCount", 0)),
                "sharedJpegCount": int(gp.get("jpegCount", 0)),
                "sharedOfaCount": int(gp.get("ofaCount", 0)),
            }
            attrs.update({k: int(v) for k, v in (m.get("attributes") or {}).items()})
            out.append(
                _Mig(
                    parent=g,
                    slot=int(m.get("slot", slot)),
                    uuid=str(m.get("uuid") or "MIG-" + _stable_uuid(g.spec.get("uuid", g.index), slot)),
                    gi_id=int(m.get("giId", slot + 1)),
                    ci_id=int(m.get("ciId", 0)),
                    gi_profile=gp,
                    ci_index=ci["index"],
                    attrs=attrs,
                    ci_profile_id=int(ci["id"]),
                )
            )
        return out

    @staticmethod
    def _ci_profile(model: dict[str, Any], m: dict[str, Any], ci_slices: int) -> dict[str, Any]:
        """The MIG device's compute-instance profile: ``ciProfile`` (an index) if given, else
        the table's profile of its compute slices."""
        table = ci_profile_table(model)
        if "ciProfile" in m:
            for p in table:
                if int(p["index"]) == int(m["ciProfile"]):
                    return p
            raise ValueError(f"no compute instance profile with index {m['ciProfile']}")
        for p in table:
            if int(p["sliceCount"]) == ci_slices:
                return p
        raise ValueError(f"no compute instance profile with {ci_slices} slices")

    # -- fault injection -----------------------------------------------------------------------
    def inject(
        self,
        call: str,
        error: str | int,
        *,
        device: int | None = None,
        times: int | None = None,
        after: int = 0,
    ) -> Fault:
        f = Fault(call=call, code=_code(error), device=device, times=times, after=after)
        self.faults.append(f)
        return f

    def inject_spec(self, spec: str) -> None:
        """``call[@gpu]=ERROR[*times]`` items separated by commas (env NFD_NVML_FAULTS)."""
        for item in spec.split(","):
            item = item.strip()
            if not item:
                continue
            lhs, _, rhs = item.partition("=")
            call, _, dev = lhs.partition("@")
            err, _, times = rhs.partition("*")
            self.inject(
                call.strip(),
                err.strip(),
                device=int(dev) if dev else None,
                times=int(times) if times else None,
            )

    def clear_faults(self) -> None:
        self.faults.clear()

    def _enter(self, call: str, device: int | None = None, *, needs_init: bool = True) -> None:
        self.calls[call] += 1
        if needs_init and self.init_count == 0:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_UNINITIALIZED)
        for f in self.faults:
            if f.call != call or (f.device is not None and f.device != device):
                continue
            f.seen += 1
            if f.seen <= f.after or (f.times is not None and f.fired >= f.times):
                continue
            f.fired += 1
            raise pynvml.NVMLError(f.code)

    def _model_call(self, g: _Gpu, call: str, key: str) -> Any:
        """A value the model may mark unsupported by setting it to null."""
        self._enter(call, g.index)
        if key in g.spec:
            value = g.spec[key]
        else:
            value = g.model.get(key)
        if value is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return value

    # -- system --------------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self._enter("nvmlInit", needs_init=False)
        self.init_count += 1

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        self.init_count -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._enter("nvmlSystemGetDriverVersion")
        return str(self.profile["system"]["driverVersion"])

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._enter("nvmlSystemGetCudaDriverVersion")
        return int(self.profile["system"]["cudaDriverVersion"])

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._enter("nvmlSystemGetNVMLVersion")
        return str(self.profile["system"].get("nvmlVersion", ""))

    def _visible(self) -> list[_Gpu]:
        return [g for g in self.gpus if g.index not in self.hidden]

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return len(self._visible())

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Gpu:
        self._enter("nvmlDeviceGetHandleByIndex", index)
        vis = self._visible()
        if not 0 <= index < len(vis):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return vis[index]

    # -- devices (full GPUs and MIG handles) ---------------------------------------------------
    @staticmethod
    def _dev(h: Any) -> int:
        return h.index if isinstance(h, _Gpu) else h.parent.index

    def nvmlDeviceGetName(self, h: _Gpu | _Mig) -> str:
        self._enter("nvmlDeviceGetName", self._dev(h))
        if isinstance(h, _Mig):
            return f"{h.parent.model['name']} MIG {h.gi_profile['name']}"
        return str(h.model["name"])

    def nvmlDeviceGetUUID(self, h: _Gpu | _Mig) -> str:
        self._enter("nvmlDeviceGetUUID", self._dev(h))
        if isinstance(h, _Mig):
            return h.uuid
        return str(h.spec.get("uuid") or "GPU-" + _stable_uuid(self.profile.get("name", ""), h.index))

    def nvmlDeviceGetBrand(self, h: _Gpu) -> int:
        return int(self._model_call(h, "nvmlDeviceGetBrand", "brand"))

    def nvmlDeviceGetArchitecture(self, h: _Gpu) -> int:
        return int(self._model_call(h, "nvmlDeviceGetArchitecture", "architecture"))

    def nvmlDeviceGetMemoryInfo(self, h: _Gpu, version: int | None = None) -> Any:
        total = int(self._model_call(h, "nvmlDeviceGetMemoryInfo", "memoryTotal"))
        return SimpleNamespace(total=total, free=total, used=0)

    def nvmlDeviceGetCudaComputeCapability(self, h: _Gpu) -> tuple[int, int]:
        cc = self._model_call(h, "nvmlDeviceGetCudaComputeCapability", "computeCapability")
        return int(cc[0]), int(cc[1])

    def nvmlDeviceGetPciInfo(self, h: _Gpu) -> Any:
        self._enter("nvmlDeviceGetPciInfo", h.index)
        bus = str(h.spec.get("busId", f"00000000:{h.index + 1:02x}:00.0"))
        return SimpleNamespace(busId=bus, busIdLegacy=bus[4:], pciDeviceId=int(h.model.get("pciDeviceId", 0)))

    def nvmlDeviceGetNumaNodeId(self, h: _Gpu) -> int:
        return int(self._model_call(h, "nvmlDeviceGetNumaNodeId", "numaNode"))

    def nvmlDeviceGetMigMode(self, h: _Gpu) -> list[int]:
        self._enter("nvmlDeviceGetMigMode", h.index)
        if not h.model.get("migCapable", False):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        mode = h.spec.get("migMode", [0, 0])
        return [int(mode[0]), int(mode[1])]

    def _require_mig(self, h: _Gpu) -> None:
        if not h.model.get("migCapable", False):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetMaxMigDeviceCount(self, h: _Gpu) -> int:
        self._enter("nvmlDeviceGetMaxMigDeviceCount", h.index)
        self._require_mig(h)
        return int(h.model.get("maxMigDevices", 7))

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: _Gpu, index: int) -> _Mig:
        self._enter("nvmlDeviceGetMigDeviceHandleByIndex", h.index)
        self._require_mig(h)
        for m in h.migs:
            if m.slot == index:
                return m
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)

    def nvmlDeviceIsMigDeviceHandle(self, h: Any) -> int:
        self._enter("nvmlDeviceIsMigDeviceHandle", self._dev(h))
        return 1 if isinstance(h, _Mig) else 0

    def nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, h: _Mig) -> _Gpu:
        self._enter("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", self._dev(h))
        return h.parent

    def nvmlDeviceGetAttributes(self, h: _Mig) -> Any:
        self._enter("nvmlDeviceGetAttributes", self._dev(h))
        if not isinstance(h, _Mig):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return SimpleNamespace(**h.attrs)

    def nvmlDeviceGetGpuInstanceId(self, h: _Mig) -> int:
        self._enter("nvmlDeviceGetGpuInstanceId", self._dev(h))
        return h.gi_id

    def nvmlDeviceGetComputeInstanceId(self, h: _Mig) -> int:
        self._enter("nvmlDeviceGetComputeInstanceId", self._dev(h))
        return h.ci_id

    def nvmlDeviceGetGpuInstanceById(self, h: _Gpu, gi_id: int) -> _Gi:
        self._enter("nvmlDeviceGetGpuInstanceById", h.index)
        for m in h.migs:
            if m.gi_id == gi_id:
                return _Gi(m)
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)

    def nvmlGpuInstanceGetInfo(self, gi: _Gi) -> Any:
        self._enter("nvmlGpuInstanceGetInfo", gi.mig.parent.index)
        return SimpleNamespace(id=gi.mig.gi_id, profileId=int(gi.mig.gi_profile["id"]), device=gi.mig.parent)

    def nvmlGpuInstanceGetComputeInstanceById(self, gi: _Gi, ci_id: int) -> _Ci:
        self._enter("nvmlGpuInstanceGetComputeInstanceById", gi.mig.parent.index)
        for m in gi.mig.parent.migs:
            if m.gi_id == gi.mig.gi_id and m.ci_id == ci_id:
                return _Ci(m)
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)

    def nvmlComputeInstanceGetInfo(self, ci: _Ci) -> Any:
        self._enter("nvmlComputeInstanceGetInfo", ci.mig.parent.index)
        return SimpleNamespace(id=ci.mig.ci_id, profileId=ci.mig.ci_profile_id)

    def nvmlDeviceGetGpuInstanceProfileInfo(self, h: _Gpu, profile: int, version: int = 2) -> Any:
        call = "nvmlDeviceGetGpuInstanceProfileInfo" + ("V" if version == 2 else "")
        self._enter(call, h.index)
        self._require_mig(h)
        for p in h.model.get("giProfiles") or []:
            if int(p["index"]) == profile:
                info = {k: v for k, v in p.items() if k not in ("index", "name")}
                return SimpleNamespace(name="MIG " + str(p["name"]), **info)
        # as nvml.h says: an index past the table is an invalid argument, one the GPU lacks is not supported
        if not 0 <= profile < GI_PROFILE_COUNT:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlGpuInstanceGetComputeInstanceProfileInfo(
        self, gi: _Gi, profile: int, eng_profile: int, version: int = 2
    ) -> Any:
        call = "nvmlGpuInstanceGetComputeInstanceProfileInfo" + ("V" if version == 2 else "")
        self._enter(call, gi.mig.parent.index)
        if not (0 <= profile < CI_PROFILE_COUNT and 0 <= eng_profile < CI_ENGINE_PROFILE_COUNT):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        gi_slices = int(gi.mig.gi_profile["sliceCount"])
        for p in ci_profile_table(gi.mig.parent.model):
            if int(p["index"]) == profile and eng_profile == 0 and int(p["sliceCount"]) <= gi_slices:
                return SimpleNamespace(**{k: v for k, v in p.items() if k != "index"})
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def _fabric(self, call: str, h: _Gpu, ref: Any) -> int:
        self._enter(call, h.index)
        fab = h.spec.get("fabric", h.model.get("fabric"))
        if fab is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        info = ref._obj if hasattr(ref, "_obj") else ref
        raw = uuidlib.UUID(str(fab.get("clusterUuid", "00000000-0000-0000-0000-000000000000"))).bytes
        set_field_bytes(info, "clusterUuid", raw)
        info.state = int(fab.get("state", 3))
        info.status = int(fab.get("status", 0))
        info.cliqueId = int(fab.get("cliqueId", 0))
        return 0

    def nvmlDeviceGetGpuFabricInfoV(self, h: _Gpu, ref: Any) -> int:
        return self._fabric("nvmlDeviceGetGpuFabricInfoV", h, ref)

    def nvmlDeviceGetGpuFabricInfo(self, h: _Gpu, ref: Any) -> int:
        return self._fabric("nvmlDeviceGetGpuFabricInfo", h, ref)
