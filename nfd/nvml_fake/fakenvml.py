"""FakeNvml: the pynvml functions the nvml source calls, answering from a profile dict."""

from __future__ import annotations

import hashlib
import threading
import time
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


#: a GPU's health readings when its profile says nothing (``health:`` of the model, then of the
#: GPU, override them; ``null`` answers NOT_SUPPORTED): a healthy GPU with ECC, PCIe Gen5 x16,
#: no NVLink
HEALTH_DEFAULTS: dict[str, Any] = {
    "eccUncorrectedVolatile": 0,
    "retiredPagesPending": False,
    "remappedRows": {"corrected": 0, "uncorrected": 0, "pending": False, "failed": False},
    "clocksEventReasons": 0,
    "pcie": {"width": 16, "maxWidth": 16, "gen": 5, "maxGen": 5},
    "nvlinks": None,
    "lost": False,
    "xids": [],
    "xidEvents": True,
}


@dataclass(eq=False)
class _Gpu:
    index: int
    spec: dict[str, Any]
    model: dict[str, Any]
    migs: list[_Mig] = field(default_factory=list)

    def health(self, key: str, default: Any = None) -> Any:
        """The health reading ``key``: the GPU's ``health:``, else the model's, else the default."""
        for src in (self.spec.get("health") or {}, self.model.get("health") or {}):
            if key in src:
                return src[key]
        return HEALTH_DEFAULTS.get(key, default)


@dataclass(eq=False)
class _EventSet:
    gpus: set[int] = field(default_factory=set)
    freed: bool = False


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
        # XID events: delivered to event sets registered for the GPU; the profile's come first
        self._events: list[tuple[int, int]] = []
        self._event_cond = threading.Condition()
        for g in self.gpus:
            if g.health("lost"):  # a lost GPU answers GPU_IS_LOST to every call on it
                self.inject("*", "GPU_IS_LOST", device=g.index)
            self._events.extend((g.index, int(x)) for x in g.health("xids") or [])

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
            if (f.call != call and not (f.call == "*" and f.device is not None)) or (
                    f.device is not None and f.device != device):
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
        if hasattr(info, "healthMask"):
            info.healthMask = int(fab.get("healthMask", 0))
        return 0

    def nvmlDeviceGetGpuFabricInfoV(self, h: _Gpu, ref: Any) -> int:
        return self._fabric("nvmlDeviceGetGpuFabricInfoV", h, ref)

    def nvmlDeviceGetGpuFabricInfo(self, h: _Gpu, ref: Any) -> int:
        return self._fabric("nvmlDeviceGetGpuFabricInfo", h, ref)

    # -- health ----------------------------------------------------------------------------------
    def _health_call(self, h: _Gpu, call: str, key: str) -> Any:
        self._enter(call, self._dev(h))
        if not isinstance(h, _Gpu):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        value = h.health(key)
        if value is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return value

    def nvmlDeviceGetTotalEccErrors(self, h: _Gpu, error_type: int, counter_type: int) -> int:
        value = int(self._health_call(h, "nvmlDeviceGetTotalEccErrors", "eccUncorrectedVolatile"))
        if error_type > 1 or counter_type > 1:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        # only the volatile uncorrected counter is in the profile
        return value if (error_type, counter_type) == (1, 0) else 0

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h: _Gpu) -> int:
        return int(bool(self._health_call(h, "nvmlDeviceGetRetiredPagesPendingStatus", "retiredPagesPending")))

    def nvmlDeviceGetRemappedRows(self, h: _Gpu) -> tuple[int, int, int, int]:
        rows = {**HEALTH_DEFAULTS["remappedRows"], **self._health_call(h, "nvmlDeviceGetRemappedRows", "remappedRows")}
        return int(rows["corrected"]), int(rows["uncorrected"]), int(bool(rows["pending"])), int(bool(rows["failed"]))

    def _clocks(self, call: str, h: _Gpu) -> int:
        return int(self._health_call(h, call, "clocksEventReasons"))

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: _Gpu) -> int:
        return self._clocks("nvmlDeviceGetCurrentClocksEventReasons", h)

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: _Gpu) -> int:
        return self._clocks("nvmlDeviceGetCurrentClocksThrottleReasons", h)

    def _pcie(self, call: str, h: _Gpu, key: str) -> int:
        pcie = self._health_call(h, call, "pcie")
        value = {**HEALTH_DEFAULTS["pcie"], **pcie}.get(key)
        if value is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return int(value)

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: _Gpu) -> int:
        return self._pcie("nvmlDeviceGetCurrPcieLinkWidth", h, "width")

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: _Gpu) -> int:
        return self._pcie("nvmlDeviceGetMaxPcieLinkWidth", h, "maxWidth")

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: _Gpu) -> int:
        return self._pcie("nvmlDeviceGetCurrPcieLinkGeneration", h, "gen")

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: _Gpu) -> int:
        return self._pcie("nvmlDeviceGetMaxPcieLinkGeneration", h, "maxGen")

    def nvmlDeviceGetNvLinkState(self, h: _Gpu, link: int) -> int:
        links = self._health_call(h, "nvmlDeviceGetNvLinkState", "nvlinks")
        if not 0 <= link < len(links):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return 1 if links[link] else 0

    def set_health(self, index: int, **values: Any) -> None:
        """Change GPU ``index``'s health readings (tests: a fault appears, a reset clears it)."""
        self.gpus[index].spec = {**self.gpus[index].spec,
                                 "health": {**(self.gpus[index].spec.get("health") or {}), **values}}

    # -- XID events ------------------------------------------------------------------------------
    def emit_xid(self, index: int, xid: int) -> None:
        """Deliver an XID critical-error event for GPU ``index`` to the event sets registered for it."""
        with self._event_cond:
            self._events.append((index, int(xid)))
            self._event_cond.notify_all()

    def nvmlEventSetCreate(self) -> _EventSet:
        self._enter("nvmlEventSetCreate")
        return _EventSet()

    def nvmlDeviceGetSupportedEventTypes(self, h: _Gpu) -> int:
        self._enter("nvmlDeviceGetSupportedEventTypes", h.index)
        return int(pynvml.nvmlEventTypeXidCriticalError) if h.health("xidEvents") else 0

    def nvmlDeviceRegisterEvents(self, h: _Gpu, types: int, evset: _EventSet) -> None:
        self._enter("nvmlDeviceRegisterEvents", h.index)
        if not h.health("xidEvents"):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        evset.gpus.add(h.index)

    def nvmlEventSetWait_v2(self, evset: _EventSet, timeout_ms: int) -> Any:
        self._enter("nvmlEventSetWait")
        with self._event_cond:
            deadline = None
            while True:
                for i, (index, xid) in enumerate(self._events):
                    if index in evset.gpus:
                        del self._events[i]
                        return SimpleNamespace(device=self.gpus[index], eventType=int(pynvml.nvmlEventTypeXidCriticalError),
                                               eventData=xid, gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF)

                now = time.monotonic()
                deadline = deadline if deadline is not None else now + timeout_ms / 1000
                if now >= deadline or not self._event_cond.wait(deadline - now):
                    raise pynvml.NVMLError(pynvml.NVML_ERROR_TIMEOUT)

    nvmlEventSetWait = nvmlEventSetWait_v2

    def nvmlEventSetFree(self, evset: _EventSet) -> None:
        self._enter("nvmlEventSetFree")
        evset.freed = True
