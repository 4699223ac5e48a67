"""The mock NVML library (tests/tools/mocknvml): build it, feed it a device profile, run under it.

``libnvidia-ml.so.1`` is compiled from tests/tools/mocknvml/mocknvml.c against go-nvml's
``nvml.h``, taken at build time from the Go module that tests/tools/mocknvml/go.mod pins
(``go mod download``; nothing fetched is stored in the repository). The library is cached
outside the repository, keyed by the C source, the header, the module files and the compiler:
``${NFD_TEST_TOOLS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/nfd-test-tools}/mocknvml-<key>/``.

A profile of nfd/nvml_fake/device_profiles reaches the library as a data file
(:func:`data_text`), whose every answer is the one ``nfd.nvml_fake.FakeNvml`` gives for that
profile, faults included; :func:`host_root` writes the host facts the profile states (DMI name,
PCI class, vGPU capability, ``/proc/driver/nvidia``) as a host root, so the worker reads them
through its own sysfs code. :func:`environment` puts the two together: with it, a process's
``pynvml`` loads the mock through its ordinary ``CDLL("libnvidia-ml.so.1")``
(``LD_LIBRARY_PATH``), and Go programs through go-nvml's ``dlopen``. Faults that come and go
while a process runs: XID events through the event control file (:func:`inject_event`), health
readings, fabric state and lost GPUs through the runtime state file (:func:`set_state`).

From a checkout, without a GPU::

    python -m tests.support.mocknvml h100x8 -- nfd export labels --sources nvml
    python -m tests.support.mocknvml a100-mig-mixed --faults 'nvmlDeviceGetName@1=GPU_IS_LOST' -- nfd export features --sources nvml
"""

from __future__ import annotations

import argparse
import copy
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOL_DIR = REPO_ROOT / "tests" / "tools" / "mocknvml"
SOURCE = TOOL_DIR / "mocknvml.c"
EVENTS_ENV = "NFD_MOCK_NVML_EVENTS"
LIBRARY = "libnvidia-ml.so.1"
DATA_ENV = "NFD_MOCK_NVML_DATA"
GO_NVML = "github.com/NVIDIA/go-nvml"
CFLAGS = ("-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-fvisibility=hidden", "-pthread", f"-Wl,-soname,{LIBRARY}")


#: the C symbols pynvml (nvidia-ml-py) looks up for the calls the nvml source and the profile
#: recorder make (pynvml picks the versioned names itself: nvmlDeviceGetCount -> ..._v2, ...)
PYNVML_SYMBOLS = (
    "nvmlInitWithFlags", "nvmlShutdown", "nvmlErrorString", "nvmlSystemGetDriverVersion",
    "nvmlSystemGetCudaDriverVersion", "nvmlSystemGetNVMLVersion", "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetBrand",
    "nvmlDeviceGetArchitecture", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetCudaComputeCapability",
    "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetNumaNodeId", "nvmlDeviceGetMigMode", "nvmlDeviceGetMaxMigDeviceCount",
    "nvmlDeviceGetMigDeviceHandleByIndex", "nvmlDeviceGetAttributes_v2", "nvmlDeviceGetGpuInstanceId",
    "nvmlDeviceGetComputeInstanceId", "nvmlDeviceGetGpuInstanceById", "nvmlGpuInstanceGetInfo",
    "nvmlGpuInstanceGetComputeInstanceById", "nvmlComputeInstanceGetInfo_v2",
    "nvmlDeviceGetGpuInstanceProfileInfoV", "nvmlDeviceGetGpuInstanceProfileInfo",
    "nvmlGpuInstanceGetComputeInstanceProfileInfoV", "nvmlGpuInstanceGetComputeInstanceProfileInfo",
    "nvmlDeviceGetGpuFabricInfoV", "nvmlDeviceGetGpuFabricInfo",
    # GPU health (nvml.health) and its XID watcher
    "nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetRetiredPagesPendingStatus", "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetMaxPcieLinkWidth", "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetNvLinkState",
)
#: what gpu-feature-discovery and nvidia-device-plugin v0.17.4 call through go-nvml v0.12.9-0 and
#: go-nvlib v0.7.4 (their Go sources, grepped for go-nvml's methods) beyond the above; go-nvml
#: binds the unversioned name when a versioned one is missing, so both are exported
GO_SYMBOLS = (
    "nvmlInit_v2", "nvmlInit", "nvmlSystemGetCudaDriverVersion_v2", "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetHandleByUUID", "nvmlDeviceGetHandleByPciBusId_v2",
    "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetAttributes", "nvmlComputeInstanceGetInfo", "nvmlDeviceGetMinorNumber",
    "nvmlDeviceIsMigDeviceHandle", "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", "nvmlDeviceGetMemoryInfo_v2",
    "nvmlDeviceGetSupportedEventTypes", "nvmlDeviceRegisterEvents", "nvmlEventSetCreate", "nvmlEventSetWait_v2",
    "nvmlEventSetWait", "nvmlEventSetFree", "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetGraphicsRunningProcesses_v3",
    # go-gpuallocator, the device plugin's GetPreferredAllocation (tests/tools/mocknvml/topology.c)
    "nvmlDeviceGetTopologyCommonAncestor", "nvmlDeviceGetNvLinkState", "nvmlDeviceGetNvLinkRemotePciInfo_v2",
    "nvmlDeviceGetNvLinkRemotePciInfo",
)


class MockNvmlUnavailable(RuntimeError):
    """No Go (for the header) or no C compiler: the mock cannot be built here."""


def _cache_root() -> Path:
    env = os.environ.get("NFD_TEST_TOOLS_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nfd-test-tools"


def compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise MockNvmlUnavailable("no C compiler (gcc or $CC) to build the mock NVML library")
    return cc


def header_dir() -> Path:
    """The directory of go-nvml's nvml.h, from the module the tool's go.mod pins."""
    from tests.e2e.build import find_go

    go = find_go()
    if go is None:
        raise MockNvmlUnavailable("Go is not installed: the mock NVML library needs go-nvml's nvml.h")
    env = {**os.environ, "GOFLAGS": "-mod=readonly"}
    proc = subprocess.run([go, "mod", "download", "-json", GO_NVML], cwd=TOOL_DIR, env=env,
                          capture_output=True, text=True, check=False, timeout=600)
    try:
        info = json.loads(proc.stdout)
    except ValueError:
        info = {}
    if proc.returncode != 0 or not info.get("Dir"):
        raise RuntimeError(f"go mod download {GO_NVML} failed: {(info.get('Error') or proc.stderr).strip()}")
    return Path(info["Dir"]) / "pkg" / "nvml"


def sources() -> list[Path]:
    """The library's source files: every ``*.c`` of tests/tools/mocknvml (mocknvml.c, events.c,
    ...), and the headers they share."""
    return sorted(TOOL_DIR.glob("*.c")) + sorted(TOOL_DIR.glob("*.h"))


def build(*, log: Callable[[str], None] = lambda _m: None) -> Path:
    """The directory holding the built ``libnvidia-ml.so.1``, building it first if needed."""
    cc = compiler()
    include = header_dir()
    header = (include / "nvml.h").read_bytes()
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False).stdout
    h = hashlib.sha256()
    files = sources()
    for part in (*(f.name.encode() + b"\0" + f.read_bytes() for f in files), header,
                 (TOOL_DIR / "go.mod").read_bytes(), (TOOL_DIR / "go.sum").read_bytes(),
                 cc.encode(), version.encode(), " ".join(CFLAGS).encode()):
        h.update(part + b"\0")
    out = _cache_root() / f"mocknvml-{h.hexdigest()[:16]}"
    lib = out / LIBRARY
    if lib.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if lib.exists():
            return out
        start = time.monotonic()
        tmp = out / f".{LIBRARY}.{os.getpid()}.tmp"
        proc = subprocess.run([cc, *CFLAGS, "-I", str(include), "-I", str(TOOL_DIR), "-o", str(tmp),
                               *(str(f) for f in files if f.suffix == ".c")],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise RuntimeError(f"building the mock NVML library failed:\n{proc.stderr.strip()}")
        os.replace(tmp, lib)
        log(f"built {lib} in {time.monotonic() - start:.1f}s")
    return out


# ---- profile -> the library's data file ---------------------------------------------------------


def _field(value: Any) -> str:
    text = str(value)
    if "\t" in text or "\n" in text:
        raise ValueError(f"mock NVML data: a value with a tab or newline: {text!r}")
    return text


def _fake(doc: dict[str, Any], faults: str = "") -> Any:
    from nfd.nvml_fake import FakeNvml

    fake = FakeNvml(copy.deepcopy(doc))
    if faults:
        fake.inject_spec(faults)
    return fake


def data_text(doc: dict[str, Any], faults: str = "", events: Path | None = None, state: Path | None = None) -> str:
    """The mock library's data file for profile ``doc`` (and ``NFD_NVML_FAULTS``-style faults):
    every value as the Python fake answers it, so the two fakes cannot drift apart. ``events``:
    the event control file (:func:`inject_event`); ``state``: the runtime state file
    (:func:`set_state`)."""
    import pynvml

    from nfd.nvml_fake.fakenvml import ci_profile_table

    fake = _fake(doc, faults)
    answers = _fake(doc)
    answers.clear_faults()  # the values themselves; the faults go in as "error" records
    answers.nvmlInit()

    def ask(call: str, *args: Any) -> Any:
        try:
            return getattr(answers, call)(*args)
        except pynvml.NVMLError as e:
            if e.value != pynvml.NVML_ERROR_NOT_SUPPORTED:
                raise
            return None

    system = doc["system"]
    lines = ["# nfd mock NVML data: written by tests/support/mocknvml.py from profile "
             + _field(doc.get("name", "?")),
             "\t".join(["system", _field(answers.nvmlSystemGetDriverVersion()),
                        str(answers.nvmlSystemGetCudaDriverVersion()), _field(system.get("nvmlVersion", ""))])]
    na = "!"
    for g in fake.gpus:
        mem = ask("nvmlDeviceGetMemoryInfo", g)
        cc = ask("nvmlDeviceGetCudaComputeCapability", g)
        brand = ask("nvmlDeviceGetBrand", g)
        arch = ask("nvmlDeviceGetArchitecture", g)
        numa = ask("nvmlDeviceGetNumaNodeId", g)
        pci = answers.nvmlDeviceGetPciInfo(g)
        mig = ask("nvmlDeviceGetMigMode", g)
        max_mig = ask("nvmlDeviceGetMaxMigDeviceCount", g)
        lines.append("\t".join(_field(v) for v in (
            "gpu", answers.nvmlDeviceGetName(g), answers.nvmlDeviceGetUUID(g),
            na if brand is None else brand, na if arch is None else arch,
            na if mem is None else mem.total,
            na if cc is None else cc[0], na if cc is None else cc[1],
            pci.busId, pci.pciDeviceId & 0xFFFFFFFF, na if numa is None else numa,
            int(mig is not None), mig[0] if mig else 0, mig[1] if mig else 0, max_mig or 0)))
        fabric = _fabric_fields(g)
        if fabric is not None:
            lines.append("\t".join(["fabric", *fabric]))
        lines.append(_health_record(ask, g))
        for p in g.model.get("giProfiles") or []:
            lines.append("\t".join(_field(v) for v in (
                "gip", p["index"], p["id"], p["sliceCount"], p.get("instanceCount", 0),
                p.get("multiprocessorCount", 0), p.get("copyEngineCount", 0), p.get("decoderCount", 0),
                p.get("encoderCount", 0), p.get("jpegCount", 0), p.get("ofaCount", 0), p.get("memorySizeMB", 0),
                "MIG " + str(p["name"]))))
        if g.model.get("migCapable", False):
            for p in ci_profile_table(g.model):
                lines.append("\t".join(_field(v) for v in (
                    "cip", p["index"], p["id"], p["sliceCount"], p.get("instanceCount", 0),
                    p.get("multiprocessorCount", 0), p.get("sharedCopyEngineCount", 0),
                    p.get("sharedDecoderCount", 0), p.get("sharedEncoderCount", 0), p.get("sharedJpegCount", 0),
                    p.get("sharedOfaCount", 0), f"MIG {p['sliceCount']}c")))
        for m in g.migs:
            a = m.attrs
            lines.append("\t".join(_field(v) for v in (
                "mig", m.slot, m.uuid, m.gi_id, m.ci_id, m.gi_profile["id"], m.ci_profile_id,
                a["gpuInstanceSliceCount"], a["multiprocessorCount"], a["sharedCopyEngineCount"],
                a["sharedDecoderCount"], a["sharedEncoderCount"], a["sharedJpegCount"], a["sharedOfaCount"],
                a["computeInstanceSliceCount"], a["memorySizeMB"], answers.nvmlDeviceGetName(m))))
    if events is not None:
        lines.append("\t".join(["events", _field(events)]))
    if state is not None:
        lines.append("\t".join(["state", _field(state)]))
    for f in fake.faults:
        lines.append("\t".join(_field(v) for v in (
            "error", f.call, -1 if f.device is None else f.device, f.code, -1 if f.times is None else f.times,
            f.after)))
    return "\n".join(lines) + "\n"


def _fabric_fields(g: Any) -> list[str] | None:
    """The GPU's ``fabric`` record's fields (STATE STATUS CLIQUE UUIDHEX32 HEALTHMASK), or None:
    NOT_SUPPORTED."""
    import uuid as uuidlib

    fabric = g.spec.get("fabric", g.model.get("fabric"))
    if fabric is None:
        return None
    raw = uuidlib.UUID(str(fabric.get("clusterUuid", "00000000-0000-0000-0000-000000000000"))).bytes
    return [str(int(fabric.get("state", 3))), str(int(fabric.get("status", 0))), str(int(fabric.get("cliqueId", 0))),
            raw.hex(), str(int(fabric.get("healthMask", 0)))]


def _health_record(ask: Callable[..., Any], g: Any) -> str:
    """The GPU's ``health`` record (tests/tools/mocknvml/health.c): the Python fake's answers."""
    na = "!"
    ecc = ask("nvmlDeviceGetTotalEccErrors", g, 1, 0)
    pages = ask("nvmlDeviceGetRetiredPagesPendingStatus", g)
    rows = ask("nvmlDeviceGetRemappedRows", g)
    clocks = ask("nvmlDeviceGetCurrentClocksEventReasons", g)
    pcie = [ask(c, g) for c in ("nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetMaxPcieLinkWidth",
                                "nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkGeneration")]
    links = g.health("nvlinks", None)
    fields = [ecc, pages, *(rows if rows is not None else (None,) * 4), clocks, *pcie]
    return "\t".join(["health", *(na if v is None else str(int(v)) for v in fields),
                      na if links is None else "".join("1" if x else "0" for x in links)])


# ---- profile -> a host root with the profile's host facts ---------------------------------------


def _vgpu_config(version: str, branch: str) -> bytes:
    """PCI config space carrying NVIDIA's vGPU vendor capability (signature "VF") with one
    record: the host driver's version and branch (nfd.sources.nvml.hostinfo reads it back)."""
    config = bytearray(256)
    config[0x06] = 0x10  # capability list present
    config[0x34] = 0x40
    record = bytes([0, 22]) + version.encode()[:10].ljust(10, b"\0") + branch.encode()[:10].ljust(10, b"\0")
    cap = bytes([0x09, 0x00, 5 + len(record)]) + b"VF" + record
    config[0x40:0x40 + len(cap)] = cap
    return bytes(config)


def _mig_minors(fake: Any, path: Path) -> None:
    """The driver's MIG capability minors (/proc/driver/nvidia-caps/mig-minors), which
    nvidia-device-plugin reads for a MIG device's /dev/nvidia-caps nodes: the config and monitor
    capabilities, then every GPU instance and compute instance of the profile's MIG devices, by the
    GPU's minor number (its index, as the mock's nvmlDeviceGetMinorNumber answers)."""
    lines = ["config 1", "monitor 2"]
    for g in fake.gpus:
        for m in g.migs:
            gi = f"gpu{g.index}/gi{m.gi_id}/access"
            if not any(line.startswith(gi + " ") for line in lines):
                lines.append(f"{gi} {len(lines) + 1}")
            lines.append(f"gpu{g.index}/gi{m.gi_id}/ci{m.ci_id}/access {len(lines) + 1}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def host_root(doc: dict[str, Any], root: Path) -> Path:
    """Write the profile's host facts under ``root`` as the host's /sys and /proc: what the
    Python fake's FakeHost answers, read back by the worker's own sysfs code."""
    import pynvml

    from nfd.sources.nvml.hostinfo import sysfs_bus_id

    fake = _fake(doc)
    fake.clear_faults()
    fake.nvmlInit()
    (root / "proc" / "driver" / "nvidia").mkdir(parents=True, exist_ok=True)
    machine = fake.host.machine_type()
    dmi = root / "sys" / "class" / "dmi" / "id"
    dmi.mkdir(parents=True, exist_ok=True)
    if machine is not None:
        (dmi / "product_name").write_text(machine + "\n")
    _mig_minors(fake, root / "proc" / "driver" / "nvidia-caps" / "mig-minors")
    vgpu = fake.host.vgpu()
    devices = root / "sys" / "bus" / "pci" / "devices"
    devices.mkdir(parents=True, exist_ok=True)
    for g in fake.gpus:
        pci = fake.nvmlDeviceGetPciInfo(g)
        bus = str(pci.busId)
        dev = devices / sysfs_bus_id(bus)
        dev.mkdir(parents=True, exist_ok=True)
        (dev / "vendor").write_text("0x10de\n")
        (dev / "device").write_text(f"0x{int(pci.pciDeviceId) >> 16 & 0xFFFF:04x}\n")
        # what else a PCI function's sysfs directory shows and go-nvlib's nvpci (GFD) reads
        try:
            numa = int(fake.nvmlDeviceGetNumaNodeId(g))
        except pynvml.NVMLError:
            numa = -1
        (dev / "numa_node").write_text(f"{numa}\n")
        (dev / "resource").write_text("0x0000000000000000 0x0000000000000000 0x0000000000000000\n")
        cls = fake.host.pci_class(bus)
        if cls is not None:
            (dev / "class").write_text(f"0x{cls:06x}\n")
        if vgpu is None:  # the scan fails: config space not readable in full (an unprivileged container)
            (dev / "config").write_bytes(bytes(64))
        elif vgpu.present:
            (dev / "config").write_bytes(_vgpu_config(vgpu.host_driver_version, vgpu.host_driver_branch))
        else:
            (dev / "config").write_bytes(bytes(256))
    return root


def environment(lib_dir: Path, data: Path, root: Path | None = None,
                base: dict[str, str] | None = None) -> dict[str, str]:
    """A process environment in which NVML is the mock answering from ``data`` (and the host is
    ``root``). The Python fake's variables are removed, so pynvml is what runs."""
    env = dict(os.environ if base is None else base)
    for var in ("NFD_NVML_PROFILE", "NFD_NVML_FAULTS"):
        env.pop(var, None)
    env["LD_LIBRARY_PATH"] = os.pathsep.join([str(lib_dir), *filter(None, [env.get("LD_LIBRARY_PATH")])])
    env[DATA_ENV] = str(data)
    if root is not None:
        env["NFD_HOST_ROOT"] = str(root)
    return env


EVENTS_FILE = "nvml.events"

#: names of the event types in the event control file (tests/tools/mocknvml/events.c)
EVENT_TYPES = ("xid", "sbe", "dbe", "pstate", "clock")


def inject_event(events: Path, device: int | str, data: int = 0, *, kind: str = "xid",
                 instance: tuple[int, int] | None = None) -> None:
    """Make NVML raise an event: append it to the event control file ``events`` (for a workdir
    of :func:`prepare`, ``workdir / EVENTS_FILE``). ``device``: a GPU's index or UUID, or a MIG
    device's UUID; ``data``: the XID for ``kind="xid"``; ``instance``: (GI, CI) ids. Every event
    set created before the call receives it once from nvmlEventSetWait, if it registered that
    GPU for that type."""
    if kind not in EVENT_TYPES and not kind.isdigit():
        raise ValueError(f"event type {kind!r}: one of {EVENT_TYPES} or an nvmlEventType bit")
    fields = [kind, str(device), str(data), *(str(i) for i in instance or ())]
    with open(events, "a") as f:  # one write of one whole line: a reader never sees half of it
        f.write(" ".join(fields) + "\n")


STATE_FILE = "nvml.state"


def state_text(doc: dict[str, Any]) -> str:
    """The runtime state file (tests/tools/mocknvml/state.c) that makes the mock answer as profile
    ``doc`` for what can change while a process keeps NVML initialised: every GPU's health
    readings and fabric record, and which GPUs are lost (``health: {lost: true}``), as the Python
    fake answers them. The other answers (names, memory, MIG, ...) stay the data file's; ``doc``
    must have the data file's GPUs, in its order."""
    fake = _fake(doc)
    fake.clear_faults()  # the values themselves; a lost GPU is a "lost" record
    fake.nvmlInit()

    def ask(call: str, *args: Any) -> Any:
        import pynvml

        try:
            return getattr(fake, call)(*args)
        except pynvml.NVMLError as e:
            if e.value != pynvml.NVML_ERROR_NOT_SUPPORTED:
                raise
            return None

    lines = ["# nfd mock NVML state: written by tests/support/mocknvml.py from profile " + _field(doc.get("name", "?"))]
    for g in fake.gpus:
        index = str(g.index)
        lines.append(_health_record(ask, g).replace("health\t", f"health\t{index}\t", 1))
        fabric = _fabric_fields(g)
        lines.append("\t".join(["fabric", index, *(fabric if fabric is not None else ["!"])]))
        if g.health("lost"):
            lines.append(f"lost\t{index}")
    return "\n".join(lines) + "\n"


def set_state(state: Path, doc: dict[str, Any] | None) -> None:
    """Make the mock answer as profile ``doc`` from now on (:func:`state_text`), in every process
    running under it: the file ``state`` (for a workdir of :func:`prepare`, ``workdir /
    STATE_FILE``) replaced whole, in one rename. None: remove it, back to the data file's answers.
    A process sees the change at its next nvmlDeviceGetCount or nvmlDeviceGetHandleBy* call."""
    if doc is None:
        state.unlink(missing_ok=True)
        return
    tmp = state.with_name(f".{state.name}.{os.getpid()}.tmp")
    tmp.write_text(state_text(doc))
    os.replace(tmp, state)


def with_health(doc: dict[str, Any], index: int, **values: Any) -> dict[str, Any]:
    """A copy of profile ``doc`` with GPU ``index``'s ``health:`` readings changed (the profile
    keys of nfd.nvml_fake: eccUncorrectedVolatile, retiredPagesPending, remappedRows,
    clocksEventReasons, pcie, nvlinks, lost), or its ``fabric`` with ``fabric=``."""
    out = copy.deepcopy(doc)
    gpu = out["gpus"][index]
    if "fabric" in values:
        gpu["fabric"] = values.pop("fabric")
    if values:
        gpu["health"] = {**(gpu.get("health") or {}), **values}
    return out


def healthy_nvlink_profile() -> dict[str, Any]:
    """h100x8-unhealthy without its faults: eight healthy H100s, each with 18 NVLinks up (h100x8's
    GPUs answer no NVLink state), the profile the runtime faults of set_state start from."""
    from nfd.nvml_fake import load_profile

    doc = load_profile("h100x8-unhealthy")
    doc["name"] = "h100x8-nvlink"
    for g in doc["gpus"]:
        g.pop("health", None)
    return doc


def prepare(profile: str | dict[str, Any], workdir: Path, *, faults: str = "", lib_dir: Path | None = None,
            with_host: bool = True) -> dict[str, str]:
    """Build (if needed), write the profile's data file and host root under ``workdir``, and
    return the environment to run a process under the mock. Its event control file is
    ``workdir / EVENTS_FILE`` (:func:`inject_event`), its runtime state file ``workdir /
    STATE_FILE`` (:func:`set_state`; none at first)."""
    from nfd.nvml_fake import load_profile

    doc = load_profile(profile) if isinstance(profile, str) else profile
    lib_dir = lib_dir or build()
    workdir.mkdir(parents=True, exist_ok=True)
    data = workdir / "nvml.data"
    data.write_text(data_text(doc, faults, events=workdir / EVENTS_FILE, state=workdir / STATE_FILE))
    root = host_root(doc, workdir / "host") if with_host else None
    return environment(lib_dir, data, root)


# ---- what the worker makes of it -----------------------------------------------------------------

STRATEGIES = ("none", "single", "mixed")
TIMESTAMP = 1724632719


def worker_view(fake: Callable[[], Any] | None = None) -> dict[str, Any]:
    """The nvml source's result on this process's NVML (``fake``: makes a Python fake, whose host
    facts come with it; None: pynvml and the host root of ``NFD_HOST_ROOT``, as the worker runs), once per MIG
    strategy, each with a fresh source as a worker so configured: the features (strategy
    ``none``), the labels, and the error each counted, in JSON-able form."""
    from nfd.hostpaths import HostPaths
    from nfd.sources.base import DiscoveryContext
    from nfd.sources.nvml.source import NvmlSource

    view: dict[str, Any] = {"labels": {}, "errors_total": {}, "last_error": {}}
    for strategy in STRATEGIES:
        backend = fake() if fake is not None else None
        source = NvmlSource(backend=backend, host=getattr(backend, "host", None), clock=lambda: TIMESTAMP)
        ctx = DiscoveryContext(paths=HostPaths.detect())
        config = {**source.default_config(), "migStrategy": strategy}
        features = source.discover(ctx, config)
        if strategy == "none":
            view["features"] = features.to_json()
        view["labels"][strategy] = source.labels(features, config, ctx)
        source.close()
        view["errors_total"][strategy] = source.errors_total
        view["last_error"][strategy] = source.last_error
        if backend is None:
            import pynvml

            lib = getattr(pynvml, "nvmlLib", None)
            view["library"] = getattr(lib, "_name", None)
            view["backend"] = getattr(source._backend, "__name__", type(source._backend).__name__)
    return view


VIEW_SCRIPT = "import json, sys; from tests.support.mocknvml import worker_view; json.dump(worker_view(), sys.stdout)"


def mock_view(env: dict[str, str]) -> dict[str, Any]:
    """:func:`worker_view` in a fresh process under the mock (``env`` from :func:`prepare`)."""
    proc = subprocess.run([sys.executable, "-c", VIEW_SCRIPT], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, check=False, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"worker under the mock NVML failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    view: dict[str, Any] = json.loads(proc.stdout)
    view["stderr"] = proc.stderr
    return view


def fake_view(profile: str | dict[str, Any], faults: str = "") -> dict[str, Any]:
    """:func:`worker_view` on the Python fake (in this process)."""
    from nfd.nvml_fake import load_profile

    doc = load_profile(profile) if isinstance(profile, str) else profile
    return worker_view(lambda: _fake(doc, faults))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.mocknvml", description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", help="a profile of nfd/nvml_fake/device_profiles, or a path")
    parser.add_argument("--faults", default="", help="call[@gpu]=ERROR[*times],... as NFD_NVML_FAULTS")
    parser.add_argument("--no-host", action="store_true", help="leave the host's own /sys and /proc (no NFD_HOST_ROOT)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS... (default: print the environment)")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        lib_dir = build(log=lambda m: print(m, file=sys.stderr))
    except MockNvmlUnavailable as e:
        print(f"mocknvml: {e}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="nfd-mocknvml-") as tmp:
        env = prepare(args.profile, Path(tmp), faults=args.faults, lib_dir=lib_dir, with_host=not args.no_host)
        if not command:
            for var in ("LD_LIBRARY_PATH", DATA_ENV, "NFD_HOST_ROOT"):
                if var in env:
                    print(f"{var}={env[var]}")
            print("(removed with this temporary directory; pass -- COMMAND to run one)", file=sys.stderr)
            return 0
        return subprocess.run(command, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
