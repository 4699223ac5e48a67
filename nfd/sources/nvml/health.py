"""GPU health from NVML: per-GPU readings, XID events, and the state that sets and clears reasons.

Three parts (docs/gpu-health.md):

- :func:`read_health`: one pass of health reads on an initialised NVML (ECC, retired pages, row
  remapping, clock-event reasons, PCIe link, NVLink, fabric health), each NOT_SUPPORTED read
  left out (a consumer GPU without ECC is not unhealthy), GPU_IS_LOST from any of them -> lost;
- :class:`XidWatcher`: a background thread waiting on NVML's XID events in bounded waits, which
  survives NVML errors (it frees its event set, backs off and registers again);
- :class:`HealthTracker`: across passes, turns readings and XIDs into reasons: evidence reasons
  are set and cleared by the pass that sees them; an XID holds for a window, or, for XIDs that
  need a GPU reset, until the GPU is seen reset; "degraded" signals (clock events, PCIe link)
  need ``degradedPasses`` passes in a row to set and as many without to clear.
"""

from __future__ import annotations

import ctypes
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nfd.sources.nvml import backend as nv

log = logging.getLogger("nfd.sources.nvml")


#: application XIDs NVIDIA's device plugin ignores by default (its health check's skip list)
DEFAULT_IGNORED_XIDS = (13, 31, 43, 45, 68, 109)
#: XIDs whose recovery, per NVIDIA's XID catalog, is a GPU reset (or node reboot): held until the
#: GPU is seen reset, not aged out. 48 DBE ECC, 63/64 row remapping (pending / failed), 74 NVLink,
#: 79 fallen off the bus, 95 uncontained ECC, 119/120 GSP RPC timeout / error, 140 unrecovered ECC.
DEFAULT_RESET_XIDS = (48, 63, 64, 74, 79, 95, 119, 120, 140)
DEFAULT_XID_WINDOW = 3600

TIMEOUT = 10  # NVML_ERROR_TIMEOUT
XID_EVENT = 0x8  # nvmlEventTypeXidCriticalError
ECC_UNCORRECTED = 1  # NVML_MEMORY_ERROR_TYPE_UNCORRECTED
ECC_VOLATILE = 0  # NVML_VOLATILE_ECC
CLOCKS_HW_SLOWDOWN = 0x8
CLOCKS_SW_THERMAL = 0x20
CLOCKS_HW_THERMAL = 0x40
CLOCKS_POWER_BRAKE = 0x80
NVLINK_MAX_LINKS = 18
FABRIC_COMPLETED = 3

# reasons, most severe first: the summary's `reason` is the first that applies
UNHEALTHY_REASONS = (
    "gpu-lost", "row-remap-failed", "xid", "ecc-uncorrected", "row-remap-pending", "pages-pending",
    "fabric", "nvlink-down",
)
DEGRADED_REASONS = ("clocks-hw-slowdown", "clocks-thermal", "clocks-power-brake", "pcie-width", "pcie-gen")


@dataclass
class Reading:
    """One GPU's health reads of one pass; None: NOT_SUPPORTED (or not read)."""

    index: int
    uuid: str = ""
    pci_bus_id: str = ""
    numa_node: int | None = None
    lost: bool = False
    ecc_uncorrected: int | None = None
    pages_pending: bool | None = None
    remap_pending: bool | None = None
    remap_failed: bool | None = None
    clocks: int | None = None
    pcie: tuple[int, int, int, int] | None = None  # width, max width, gen, max gen
    nvlink_present: int | None = None
    nvlink_active: int | None = None
    fabric: tuple[int, int, int, int] | None = None  # state, status, health mask, clique
    errors: list[str] = field(default_factory=list)


class _Lost(Exception):
    pass


def _s(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes | bytearray) else str(v)


def _ask(nvml: Any, r: Reading, name: str, *args: Any) -> Any:
    """One read: None on NOT_SUPPORTED / FUNCTION_NOT_FOUND / other errors (recorded); _Lost on GPU_IS_LOST."""
    fn = getattr(nvml, name, None)
    if fn is None:
        return None
    try:
        return fn(*args)
    except Exception as e:
        code = nv.nvml_code(e)
        if code is None:
            raise
        if code == nv.GPU_IS_LOST:
            raise _Lost() from e
        if code not in (nv.NOT_SUPPORTED, nv.FUNCTION_NOT_FOUND, nv.INVALID_ARGUMENT):
            r.errors.append(f"{name} (GPU {r.index}): {nv.describe(e)}")
        return None


def read_gpu(nvml: Any, index: int, identity: tuple[str, str, int | None] | None, nvlink_links: int) -> Reading:
    r = Reading(index=index)
    if identity is not None:
        r.uuid, r.pci_bus_id, r.numa_node = identity
    try:
        h = _ask(nvml, r, "nvmlDeviceGetHandleByIndex", index)
        if h is None:
            r.errors.append(f"GPU {index}: no handle")
            return r
        if identity is None:
            uuid = _ask(nvml, r, "nvmlDeviceGetUUID", h)
            r.uuid = _s(uuid) if uuid is not None else ""
            pci = _ask(nvml, r, "nvmlDeviceGetPciInfo", h)
            r.pci_bus_id = _s(pci.busId) if pci is not None else ""
            numa = _ask(nvml, r, "nvmlDeviceGetNumaNodeId", h)
            r.numa_node = int(numa) if numa is not None and int(numa) >= 0 else None
        ecc = _ask(nvml, r, "nvmlDeviceGetTotalEccErrors", h, ECC_UNCORRECTED, ECC_VOLATILE)
        r.ecc_uncorrected = None if ecc is None else int(ecc)
        pending = _ask(nvml, r, "nvmlDeviceGetRetiredPagesPendingStatus", h)
        r.pages_pending = None if pending is None else bool(pending)
        rows = _ask(nvml, r, "nvmlDeviceGetRemappedRows", h)
        if rows is not None:
            r.remap_pending, r.remap_failed = bool(rows[2]), bool(rows[3])
        clocks_call = ("nvmlDeviceGetCurrentClocksEventReasons" if hasattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons")
                       else "nvmlDeviceGetCurrentClocksThrottleReasons")
        clocks = _ask(nvml, r, clocks_call, h)
        r.clocks = None if clocks is None else int(clocks)
        pcie = [_ask(nvml, r, c, h) for c in ("nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetMaxPcieLinkWidth",
                                                 "nvmlDeviceGetCurrPcieLinkGeneration",
                                                 "nvmlDeviceGetMaxPcieLinkGeneration")]
        if all(v is not None for v in pcie):
            r.pcie = (int(pcie[0]), int(pcie[1]), int(pcie[2]), int(pcie[3]))
        present = active = 0
        for link in range(nvlink_links):
            state = _ask(nvml, r, "nvmlDeviceGetNvLinkState", h, link)
            if state is None:
                if link == 0:
                    break  # no NVLink on this GPU: one call, not eighteen
                continue
            present += 1
            active += int(state) == 1
        if present:
            r.nvlink_present, r.nvlink_active = present, active
        r.fabric = _fabric(nvml, r, h)
    except _Lost:
        r.lost = True
    return r


def _fabric(nvml: Any, r: Reading, h: Any) -> tuple[int, int, int, int] | None:
    cls = getattr(nvml, "c_nvmlGpuFabricInfoV_t", None)
    fn = getattr(nvml, "nvmlDeviceGetGpuFabricInfoV", None)
    if cls is None or fn is None:
        return None
    info = cls()
    if _ask(nvml, r, "nvmlDeviceGetGpuFabricInfoV", h, ctypes.byref(info)) is None:
        return None
    return int(info.state), int(info.status), int(getattr(info, "healthMask", 0)), int(info.cliqueId)


def read_health(nvml: Any, identities: dict[int, tuple[str, str, int | None]], nvlink_links: int) -> list[Reading]:
    """Every GPU's health reads on an initialised NVML (raises the NVML error of the count)."""
    count = int(nvml.nvmlDeviceGetCount())
    return [read_gpu(nvml, i, identities.get(i), nvlink_links) for i in range(count)]


def fabric_unhealthy(state: int, status: int, mask: int) -> bool:
    """Registered with the fabric manager but failed, or a health-mask field saying degraded
    bandwidth / route unhealthy (each 2-bit field: 1 TRUE, 2 FALSE, 0 not supported)."""
    if state == FABRIC_COMPLETED and status != 0:
        return True
    degraded_bw = mask & 0x3
    route_unhealthy = (mask >> 4) & 0x3
    return degraded_bw == 1 or route_unhealthy == 1


@dataclass
class HealthSettings:
    ignored_xids: frozenset[int] = frozenset(DEFAULT_IGNORED_XIDS)
    reset_xids: frozenset[int] = frozenset(DEFAULT_RESET_XIDS)
    xid_window: float = DEFAULT_XID_WINDOW
    nvlink_expected: int = 0
    degraded_passes: int = 3


@dataclass
class _GpuState:
    #: XID -> (last seen, needs reset)
    xids: dict[int, tuple[float, bool]] = field(default_factory=dict)
    #: degraded reason -> consecutive passes seen (positive) or not seen (negative) while set
    streak: dict[str, int] = field(default_factory=dict)
    degraded: set[str] = field(default_factory=set)
    was_lost: bool = False


class HealthTracker:
    """Health state across passes, keyed by GPU UUID (index where the UUID is unknown)."""

    def __init__(self, clock: Callable[[], float] = time.time):
        self.clock = clock
        self._lock = threading.Lock()
        self._pending: list[tuple[str, int, float]] = []  # XIDs from the watcher: (uuid, xid, when)
        self._gpus: dict[str, _GpuState] = {}

    # -- XIDs (any thread) ---------------------------------------------------------------------
    def record_xid(self, uuid: str, xid: int, when: float | None = None) -> None:
        with self._lock:
            self._pending.append((uuid, int(xid), self.clock() if when is None else when))

    def reset_all(self) -> None:
        """Evidence that every GPU was reset: the driver was reloaded (NVML came back)."""
        with self._lock:
            for st in self._gpus.values():
                st.xids = {x: v for x, v in st.xids.items() if not v[1]}

    # -- a pass ------------------------------------------------------------------------------------
    def update(self, readings: list[Reading], settings: HealthSettings) -> tuple[list[dict[str, str]], dict[str, str]]:
        now = self.clock()
        with self._lock:
            pending, self._pending = self._pending, []
        instances: list[dict[str, str]] = []
        reasons_all: list[str] = []
        healthy = unhealthy = degraded_count = 0
        for r in readings:
            key = r.uuid or f"index-{r.index}"
            st = self._gpus.setdefault(key, _GpuState())
            for uuid, xid, when in pending:
                if uuid == r.uuid and xid not in settings.ignored_xids:
                    st.xids[xid] = (when, xid in settings.reset_xids)
            if st.was_lost and not r.lost:
                # a lost GPU answering again was reset (or re-attached): its reset XIDs are void
                st.xids = {x: v for x, v in st.xids.items() if not v[1] or v[0] > now}
            st.was_lost = r.lost
            st.xids = {x: v for x, v in st.xids.items() if v[1] or now - v[0] < settings.xid_window}
            inst, reasons = self._instance(r, st, settings)
            instances.append(inst)
            if reasons:
                unhealthy += 1
                reasons_all.extend(reasons)
            else:
                healthy += 1
            degraded_count += bool(st.degraded)
        seen = {r.uuid or f"index-{r.index}" for r in readings}
        for key, st in self._gpus.items():
            if key not in seen:  # gone from enumeration: coming back is evidence of a reset
                st.was_lost = True
        ordered = [x for x in UNHEALTHY_REASONS if x in reasons_all]
        summary = {
            "gpu_count": str(healthy + unhealthy),
            "healthy_count": str(healthy),
            "unhealthy_count": str(unhealthy),
            "degraded_count": str(degraded_count),
            "healthy": "true" if not unhealthy else "false",
            "reasons": ",".join(ordered),
            "reason": ordered[0] if ordered else "none",
            "unhealthy_gpus": ",".join(i["index"] for i in instances if i["healthy"] == "false"),
        }
        return instances, summary

    def _instance(self, r: Reading, st: _GpuState, s: HealthSettings) -> tuple[dict[str, str], list[str]]:
        b = {True: "true", False: "false"}
        inst = {"index": str(r.index), "uuid": r.uuid, "pci_bus_id": r.pci_bus_id, "lost": b[r.lost]}
        if r.numa_node is not None:
            inst["numa_node"] = str(r.numa_node)
        reasons: set[str] = set()
        seen_degraded: set[str] = set()
        if r.lost:
            reasons.add("gpu-lost")
        if r.ecc_uncorrected is not None:
            inst["ecc_uncorrected_volatile"] = str(r.ecc_uncorrected)
            if r.ecc_uncorrected > 0:
                reasons.add("ecc-uncorrected")
        if r.pages_pending is not None:
            inst["retired_pages_pending"] = b[r.pages_pending]
            if r.pages_pending:
                reasons.add("pages-pending")
        if r.remap_pending is not None:
            inst["row_remap_pending"] = b[bool(r.remap_pending)]
            inst["row_remap_failed"] = b[bool(r.remap_failed)]
            if r.remap_pending:
                reasons.add("row-remap-pending")
            if r.remap_failed:
                reasons.add("row-remap-failed")
        if r.fabric is not None:
            state, status, mask, clique = r.fabric
            inst.update(fabric_state=str(state), fabric_status=str(status), fabric_health_mask=str(mask),
                        fabric_clique_id=str(clique))
            if fabric_unhealthy(state, status, mask):
                reasons.add("fabric")
        if r.nvlink_present is not None and r.nvlink_active is not None:
            expected = s.nvlink_expected or r.nvlink_present
            down = max(expected - r.nvlink_active, 0)
            inst.update(nvlink_active=str(r.nvlink_active), nvlink_expected=str(expected), nvlink_down=str(down))
            if down:
                reasons.add("nvlink-down")
        elif s.nvlink_expected and not r.lost:
            inst.update(nvlink_active="0", nvlink_expected=str(s.nvlink_expected), nvlink_down=str(s.nvlink_expected))
            reasons.add("nvlink-down")
        if r.clocks is not None:
            if r.clocks & CLOCKS_HW_SLOWDOWN:
                seen_degraded.add("clocks-hw-slowdown")
            if r.clocks & (CLOCKS_HW_THERMAL | CLOCKS_SW_THERMAL):
                seen_degraded.add("clocks-thermal")
            if r.clocks & CLOCKS_POWER_BRAKE:
                seen_degraded.add("clocks-power-brake")
        if r.pcie is not None:
            width, max_width, gen, max_gen = r.pcie
            inst.update(pcie_width_max=str(max_width), pcie_gen_max=str(max_gen))
            if width < max_width:
                seen_degraded.add("pcie-width")
            if gen < max_gen:
                seen_degraded.add("pcie-gen")
        if not r.lost:  # a lost GPU answers nothing: its degraded state stays as it was
            self._hysteresis(st, seen_degraded, s.degraded_passes)
        xids = sorted(st.xids)
        inst["xids"] = ",".join(map(str, xids))
        if xids:
            reasons.add("xid")
        ordered = [x for x in UNHEALTHY_REASONS if x in reasons]
        inst["reasons"] = ",".join(ordered)
        inst["healthy"] = b[not ordered]
        inst["degraded"] = ",".join(x for x in DEGRADED_REASONS if x in st.degraded)
        return inst, ordered

    @staticmethod
    def _hysteresis(st: _GpuState, seen: set[str], passes: int) -> None:
        """A degraded reason sets after ``passes`` passes in a row that see it, clears after as
        many that do not: a reading that comes and goes between passes changes nothing."""
        passes = max(passes, 1)
        for reason in DEGRADED_REASONS:
            on = reason in seen
            if on == (reason in st.degraded):
                st.streak.pop(reason, None)
                continue
            n = st.streak.get(reason, 0) + 1
            if n >= passes:
                st.streak.pop(reason, None)
                (st.degraded.add if on else st.degraded.discard)(reason)
            else:
                st.streak[reason] = n


class XidWatcher:
    """Waits on NVML's XID events in a daemon thread (bounded waits) and records each critical
    XID in a :class:`HealthTracker`. Any NVML error ends the session: the event set is freed,
    NVML shut down, and after a back-off (1 s doubling to 60 s) it registers again."""

    def __init__(self, nvml: Any, tracker: HealthTracker, *, wait_ms: int = 1000, max_backoff: float = 60.0):
        self.nvml = nvml
        self.tracker = tracker
        self.wait_ms = wait_ms
        self.max_backoff = max_backoff
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.sessions = 0
        self.errors = 0
        self.registered = 0
        self._last_error = ""

    def start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="nvml-xid-watcher", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        backoff = 1.0
        while not self._stop.is_set():
            try:
                self._session()
                backoff = 1.0
            except Exception as e:  # noqa: BLE001 - the watcher must outlive anything NVML does
                self.errors += 1
                msg = nv.describe(e)
                if msg != self._last_error:
                    log.warning("nvml: XID watcher: %s; registering again in %.0fs", msg, backoff)
                    self._last_error = msg
                if self._stop.wait(backoff):
                    return
                backoff = min(backoff * 2, self.max_backoff)

    def _session(self) -> None:
        nvml = self.nvml
        nvml.nvmlInit()
        evset = None
        try:
            self.sessions += 1
            evset = nvml.nvmlEventSetCreate()
            self.registered = 0
            for i in range(int(nvml.nvmlDeviceGetCount())):
                try:
                    h = nvml.nvmlDeviceGetHandleByIndex(i)
                    nvml.nvmlDeviceRegisterEvents(h, XID_EVENT, evset)
                    self.registered += 1
                except Exception as e:
                    if nv.nvml_code(e) in (nv.NOT_SUPPORTED, nv.GPU_IS_LOST):
                        continue  # no events from this GPU; the others still count
                    raise
            if self._last_error:
                log.info("nvml: XID watcher registered again (%d GPU(s))", self.registered)
                self._last_error = ""
            wait = getattr(nvml, "nvmlEventSetWait_v2", None) or nvml.nvmlEventSetWait
            while not self._stop.is_set():
                try:
                    data = wait(evset, self.wait_ms)
                except Exception as e:
                    if nv.nvml_code(e) == TIMEOUT:
                        continue
                    raise
                if int(data.eventType) & XID_EVENT:
                    try:
                        uuid = _s(nvml.nvmlDeviceGetUUID(data.device))
                    except Exception:  # noqa: BLE001 - a lost GPU: its handle cannot be named
                        continue
                    self.tracker.record_xid(uuid, int(data.eventData))
        finally:
            if evset is not None:
                try:
                    nvml.nvmlEventSetFree(evset)
                except Exception as e:  # noqa: BLE001
                    log.debug("nvml: nvmlEventSetFree: %s", e)
            try:
                nvml.nvmlShutdown()
            except Exception as e:  # noqa: BLE001
                log.debug("nvml: nvmlShutdown: %s", e)
