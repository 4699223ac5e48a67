"""NVML events in the mock libnvidia-ml.so.1 (tests/tools/mocknvml/events.c), through pynvml.

The device plugin's health check waits on an event set for XIDs; a test injects them by
appending lines to the event control file (tests.support.mocknvml.inject_event). Checked here in
a fresh process under the mock: what a set receives (registered GPU and type only, each event
once, only what happened after the set was created), the event's fields (a MIG device's XID
names its parent GPU with the instance ids), the timeout honoured, an event arriving during a
wait ending it at once, every set receiving every event, and a malformed line passed over.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import mocknvml

SCRIPT = r"""
import json, sys, threading, time
import pynvml
from tests.support.mocknvml import inject_event

events = sys.argv[1]
out = {}
inject_event(events, 1, 79)  # before any set: never delivered
pynvml.nvmlInit()
gpu0, gpu1 = pynvml.nvmlDeviceGetHandleByIndex(0), pynvml.nvmlDeviceGetHandleByIndex(1)
uuid1 = pynvml.nvmlDeviceGetUUID(gpu1)
mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu0, 0)
out["mig"] = [pynvml.nvmlDeviceGetUUID(mig), pynvml.nvmlDeviceGetGpuInstanceId(mig),
              pynvml.nvmlDeviceGetComputeInstanceId(mig)]
out["supported"] = pynvml.nvmlDeviceGetSupportedEventTypes(gpu1)
xid = pynvml.nvmlEventTypeXidCriticalError
s1 = pynvml.nvmlEventSetCreate()
s2 = pynvml.nvmlEventSetCreate()
pynvml.nvmlDeviceRegisterEvents(gpu0, xid, s1)
pynvml.nvmlDeviceRegisterEvents(gpu1, xid | pynvml.nvmlEventTypeDoubleBitEccError, s1)
pynvml.nvmlDeviceRegisterEvents(gpu1, xid, s2)


def wait(s, ms):
    began = time.monotonic()
    try:
        e = pynvml.nvmlEventSetWait_v2(s, ms)
    except pynvml.NVMLError as err:
        return [str(err), round(time.monotonic() - began, 2)]
    return [pynvml.nvmlDeviceGetUUID(e.device), e.eventType, e.eventData, e.gpuInstanceId, e.computeInstanceId,
            round(time.monotonic() - began, 2)]


out["timeout"] = wait(s1, 300)
out["timeout_zero"] = wait(s1, 0)
inject_event(events, 0, 13, kind="dbe")  # gpu0 did not register double-bit ECC on s1
inject_event(events, uuid1, 79)
inject_event(events, 1, 0, kind="dbe")
open(events, "a").write("xid nonexistent-gpu 48\n")
inject_event(events, out["mig"][0], 48)
inject_event(events, 0, 94, instance=(5, 0))
out["s1"] = [wait(s1, 1000) for _ in range(5)]
out["s2"] = [wait(s2, 0) for _ in range(2)]
threading.Timer(0.3, inject_event, (events, 1, 48)).start()
out["during_wait"] = wait(s2, 5000)
open(events, "a").write("xid 1")  # half a line: not yet
out["half_line"] = wait(s2, 100)
open(events, "a").write(" 63\n")
out["whole_line"] = wait(s2, 100)
pynvml.nvmlEventSetFree(s1)
pynvml.nvmlEventSetFree(s2)
pynvml.nvmlShutdown()
print(json.dumps(out))
"""



@pytest.fixture(scope="module")
def run(lib_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("events")
    env = mocknvml.prepare("h100-mig-mixed", tmp, lib_dir=lib_dir, with_host=False)
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp / mocknvml.EVENTS_FILE)], env=env,
                       cwd=mocknvml.REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out: dict[str, Any] = json.loads(r.stdout)
    out["stderr"] = r.stderr
    return out


XID, DBE = 8, 2
NONE = 0xFFFFFFFF


def uuid1(run: dict[str, Any]) -> str:
    return str(run["s2"][0][0])


def test_a_wait_with_nothing_injected_times_out_after_its_timeout(run: dict[str, Any]) -> None:
    assert run["timeout"][0] == "Timeout" and 0.28 <= run["timeout"][1] < 1.0, run["timeout"]
    assert run["timeout_zero"][0] == "Timeout" and run["timeout_zero"][1] < 0.1


def test_a_set_receives_the_registered_events_in_order_each_once(run: dict[str, Any]) -> None:
    gpu1 = uuid1(run)
    mig_uuid, gi, ci = run["mig"]
    parent = run["s1"][2][0]
    got = [e[:5] for e in run["s1"]]
    # the XID on gpu1 (by UUID), gpu1's DBE, the MIG device's XID as its parent's with its
    # instance ids, an XID with explicit ids; gpu0's DBE (not registered) and the unknown GPU passed over
    assert got[:4] == [[gpu1, XID, 79, NONE, NONE], [gpu1, DBE, 0, NONE, NONE], [parent, XID, 48, gi, ci],
                       [parent, XID, 94, 5, 0]], got
    assert run["s1"][4][0] == "Timeout"
    assert parent != gpu1 and mig_uuid.startswith("MIG-")


def test_the_event_before_the_set_existed_is_not_delivered_and_every_set_gets_its_own(run: dict[str, Any]) -> None:
    # s2 registered only gpu1's XIDs: the one injected after it was created, not the first line
    assert [e[1:3] for e in run["s2"][:1]] == [[XID, 79]]
    assert run["s2"][1][0] == "Timeout"


def test_an_event_during_a_wait_ends_it_at_once(run: dict[str, Any]) -> None:
    e = run["during_wait"]
    assert e[1:3] == [XID, 48] and e[5] < 2.0, e


def test_a_line_is_read_only_once_complete(run: dict[str, Any]) -> None:
    assert run["half_line"][0] == "Timeout"
    assert run["whole_line"][1:3] == [XID, 63]


def test_a_malformed_line_is_reported_and_passed_over(run: dict[str, Any]) -> None:
    assert "bad event line" in run["stderr"] and "nonexistent-gpu" in run["stderr"]


def test_supported_event_types_include_xids_and_ecc(run: dict[str, Any]) -> None:
    assert run["supported"] & (XID | DBE | 1) == XID | DBE | 1
