"""Record a fake-NVML profile from a real node: ``python -m nfd.nvml_fake.record [--name N] > p.yaml``.

Walks the same NVML calls as the collector and stores every answer, and NOT_SUPPORTED answers
as ``null``, so the profile replays what the node said. Host facts (DMI name, PCI class) are
read from sysfs. Works against any backend with pynvml's names, the fake included (tests use
that to check record -> replay is lossless).
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import uuid as uuidlib
from typing import Any

import pynvml
import yaml

from nfd.hostpaths import HostPaths
from nfd.sources.base import DiscoveryContext
from nfd.sources.nvml import backend as nv
from nfd.sources.nvml.collect import CI_PROFILE_COUNT
from nfd.sources.nvml.hostinfo import SysfsHost
from nfd.sources.nvml.naming import GI_PROFILE_COUNT

_ATTRS = (
    "memorySizeMB",
    "multiprocessorCount",
    "gpuInstanceSliceCount",
    "computeInstanceSliceCount",
    "sharedCopyEngineCount",
    "sharedDecoderCount",
    "sharedEncoderCount",
    "sharedJpegCount",
    "sharedOfaCount",
)
_GI_FIELDS = (
    "id",
    "sliceCount",
    "instanceCount",
    "multiprocessorCount",
    "memorySizeMB",
    "copyEngineCount",
    "decoderCount",
    "encoderCount",
    "jpegCount",
    "ofaCount",
)


def _s(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes | bytearray) else str(v)


def _try(fn: Any, *args: Any, **kw: Any) -> Any:
    """The call's answer, or None when NVML says NOT_SUPPORTED / FUNCTION_NOT_FOUND."""
    try:
        return fn(*args, **kw)
    except Exception as e:
        if nv.nvml_code(e) in (nv.NOT_SUPPORTED, nv.FUNCTION_NOT_FOUND):
            return None
        raise


def record(nvml: Any, host: Any, *, name: str = "recorded") -> dict[str, Any]:
    """A profile dict from an initialised backend and host facts (see nfd.sources.nvml.hostinfo)."""
    models: dict[str, dict[str, Any]] = {}
    gpus: list[dict[str, Any]] = []
    for i in range(int(nvml.nvmlDeviceGetCount())):
        h = nvml.nvmlDeviceGetHandleByIndex(i)
        gname = _s(nvml.nvmlDeviceGetName(h))
        pci = nvml.nvmlDeviceGetPciInfo(h)
        bus = _s(pci.busId)
        mode = _try(nvml.nvmlDeviceGetMigMode, h)
        key = gname
        if key not in models:
            mem = _try(nvml.nvmlDeviceGetMemoryInfo, h)
            cc = nvml.nvmlDeviceGetCudaComputeCapability(h)
            model: dict[str, Any] = {
                "name": gname,
                "memoryTotal": int(mem.total) if mem is not None else None,
                "computeCapability": [int(cc[0]), int(cc[1])],
                "architecture": _try(nvml.nvmlDeviceGetArchitecture, h),
                "brand": _try(nvml.nvmlDeviceGetBrand, h),
                "pciDeviceId": int(pci.pciDeviceId) & 0xFFFFFFFF,
                "pciClass": host.pci_class(bus),
                "migCapable": mode is not None,
            }
            if mode is not None:
                model["maxMigDevices"] = int(nvml.nvmlDeviceGetMaxMigDeviceCount(h))
                model["giProfiles"] = _gi_profiles(nvml, h)
            models[key] = model
        spec: dict[str, Any] = {"model": key, "uuid": _s(nvml.nvmlDeviceGetUUID(h)), "busId": bus}
        spec["numaNode"] = _try(nvml.nvmlDeviceGetNumaNodeId, h)
        fabric = None
        info = nvml.c_nvmlGpuFabricInfoV_t()
        if _try(nvml.nvmlDeviceGetGpuFabricInfoV, h, ctypes.byref(info)) is not None:
            fabric = {
                "clusterUuid": str(uuidlib.UUID(bytes=nv.field_bytes(info, "clusterUuid")[:16])),
                "cliqueId": int(info.cliqueId),
                "state": int(info.state),
                "status": int(info.status),
            }
        spec["fabric"] = fabric
        if mode is not None:
            spec["migMode"] = [int(mode[0]), int(mode[1])]
            if int(mode[0]) == 1:
                spec["migDevices"] = _mig_devices(nvml, h, models[key].get("giProfiles") or [])
                table = _ci_profiles(nvml, h, models[key].get("ciProfiles") or [])
                if table:
                    models[key]["ciProfiles"] = table
        gpus.append(spec)
    return {
        "name": name,
        "description": f"recorded from a node with {len(gpus)} GPU(s)",
        "unverified": [],
        "system": {
            "driverVersion": _s(nvml.nvmlSystemGetDriverVersion()),
            "cudaDriverVersion": int(nvml.nvmlSystemGetCudaDriverVersion()),
            "nvmlVersion": _s(nvml.nvmlSystemGetNVMLVersion()),
        },
        "host": {"machineType": host.machine_type(), "vgpu": _vgpu(host)},
        "models": {_model_key(k): v for k, v in models.items()},
        "gpus": [dict(g, model=_model_key(g["model"])) for g in gpus],
    }


def _model_key(name: str) -> str:
    return "-".join(name.lower().replace("nvidia", "").split()) or "gpu"


def _vgpu(host: Any) -> dict[str, Any] | None:
    v = host.vgpu()
    if v is None:
        return None
    return {
        "present": v.present,
        "hostDriverVersion": v.host_driver_version,
        "hostDriverBranch": v.host_driver_branch,
    }


def _gi_profiles(nvml: Any, h: Any) -> list[dict[str, Any]]:
    out = []
    for idx in range(GI_PROFILE_COUNT):
        try:
            info = nvml.nvmlDeviceGetGpuInstanceProfileInfo(h, idx)
        except Exception as e:
            if nv.nvml_code(e) is not None:  # unsupported index, or MIG off on this driver
                continue
            raise
        name = _s(getattr(info, "name", "")).removeprefix("MIG ").strip() or f"profile{idx}"
        out.append({"index": idx, "name": name, **{f: int(getattr(info, f)) for f in _GI_FIELDS}})
    return out


def _ci_profiles(nvml: Any, h: Any, known: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The compute-instance profile table (index, id, slices), probed on this GPU's GPU instances
    (a bigger instance offers more sizes) and merged with what other GPUs of the model showed."""
    table = {int(p["index"]): p for p in known}
    for slot in range(int(nvml.nvmlDeviceGetMaxMigDeviceCount(h))):
        try:
            mh = nvml.nvmlDeviceGetMigDeviceHandleByIndex(h, slot)
            gi = nvml.nvmlDeviceGetGpuInstanceById(h, int(nvml.nvmlDeviceGetGpuInstanceId(mh)))
        except Exception as e:
            if nv.nvml_code(e) is not None:
                continue
            raise
        for j in range(CI_PROFILE_COUNT):
            if j in table:
                continue
            try:
                info = nvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, j, 0)
            except Exception as e:
                if nv.nvml_code(e) is not None:
                    continue
                raise
            table[j] = {"index": j, "id": int(info.id), "sliceCount": int(info.sliceCount)}
    return [table[j] for j in sorted(table)]


def _mig_devices(nvml: Any, h: Any, gi_profiles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id = {p["id"]: p["name"] for p in gi_profiles}
    out = []
    for slot in range(int(nvml.nvmlDeviceGetMaxMigDeviceCount(h))):
        try:
            mh = nvml.nvmlDeviceGetMigDeviceHandleByIndex(h, slot)
        except Exception as e:
            if nv.nvml_code(e) in (nv.NOT_FOUND, nv.INVALID_ARGUMENT):
                continue
            raise
        attrs = nvml.nvmlDeviceGetAttributes(mh)
        gi_id = int(nvml.nvmlDeviceGetGpuInstanceId(mh))
        ci_id = int(nvml.nvmlDeviceGetComputeInstanceId(mh))
        gi = nvml.nvmlDeviceGetGpuInstanceById(h, gi_id)
        profile_id = int(nvml.nvmlGpuInstanceGetInfo(gi).profileId)
        out.append(
            {
                "slot": slot,
                "profile": by_id.get(profile_id, f"id{profile_id}"),
                "uuid": _s(nvml.nvmlDeviceGetUUID(mh)),
                "giId": gi_id,
                "ciId": ci_id,
                "ciSlices": int(attrs.computeInstanceSliceCount),
                "attributes": {a: int(getattr(attrs, a)) for a in _ATTRS},
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m nfd.nvml_fake.record", description=__doc__)
    p.add_argument("--name", default="recorded", help="profile name stored in the file")
    p.add_argument("--host-root", default=None, help="read DMI/PCI sysfs under this root")
    args = p.parse_args(argv)


    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        print(f"record: cannot initialise NVML: {nv.describe(e)}", file=sys.stderr)
        return 1
    try:
        doc = record(
            pynvml, SysfsHost(DiscoveryContext(paths=HostPaths.detect(args.host_root))), name=args.name
        )
    finally:
        pynvml.nvmlShutdown()
    sys.stdout.write("# Recorded with python -m nfd.nvml_fake.record\n")
    yaml.safe_dump(doc, sys.stdout, sort_keys=False, default_flow_style=None, width=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
