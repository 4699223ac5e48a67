"""The mock libnvidia-ml.so.1's runtime state file (tests/tools/mocknvml/state.c), through pynvml.

The data file is read once, at a process's first nvmlInit; nfd-worker keeps NVML initialised
(its XID watcher holds a reference), so a fault that appears or clears while it runs comes
through the state file (tests.support.mocknvml.set_state): per GPU its health readings, its
fabric record, and whether it is lost. Checked here in a fresh process under the mock that keeps
NVML initialised throughout: each fault's switch reaches pynvml's answer, the next handle lookup
sees a change, removing the file restores the data file's answers, a malformed record is
reported and passed over; and the nvml source running with health on (its XID watcher holding
NVML) reports each fault the pass after it was set, with the same health features the Python
fake gives for that profile, and healthy again once cleared.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import mocknvml

#: each fault as profile health keys (tests.support.mocknvml.with_health) on GPU 3, and the
#: reason the nvml source gives for it
FAULTS: dict[str, tuple[dict[str, Any], str]] = {
    "ecc": ({"eccUncorrectedVolatile": 2}, "ecc-uncorrected"),
    "pages": ({"retiredPagesPending": True}, "pages-pending"),
    "remap-pending": ({"remappedRows": {"uncorrected": 1, "pending": True}}, "row-remap-pending"),
    "remap-failed": ({"remappedRows": {"uncorrected": 3, "failed": True}}, "row-remap-failed"),
    "fabric": ({"fabric": {"state": 3, "status": 999, "cliqueId": 0}}, "fabric"),
    "nvlink": ({"nvlinks": [1] * 16 + [0, 0]}, "nvlink-down"),
    "lost": ({"lost": True}, "gpu-lost"),
}


profile = mocknvml.healthy_nvlink_profile

SCRIPT = r"""
import ctypes, json, sys, time
import pynvml
from pathlib import Path
from tests.support import mocknvml
from tests.unit.sources.nvml.test_nvml_mocklib_state import FAULTS, profile

state = Path(sys.argv[1])
doc = profile()
out = {}
pynvml.nvmlInit()  # held to the end, as the worker's XID watcher holds NVML


def read(i):
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        info = pynvml.c_nvmlGpuFabricInfoV_t()
        try:
            pynvml.nvmlDeviceGetGpuFabricInfoV(h, ctypes.byref(info))
            fabric = [info.state, info.status]
        except pynvml.NVMLError as e:
            fabric = str(e)
        return {"ecc": pynvml.nvmlDeviceGetTotalEccErrors(h, 1, 0),
                "pages": pynvml.nvmlDeviceGetRetiredPagesPendingStatus(h),
                "rows": list(pynvml.nvmlDeviceGetRemappedRows(h)),
                "clocks": pynvml.nvmlDeviceGetCurrentClocksEventReasons(h),
                "pcie": [pynvml.nvmlDeviceGetCurrPcieLinkWidth(h), pynvml.nvmlDeviceGetCurrPcieLinkGeneration(h)],
                "nvlinks": [pynvml.nvmlDeviceGetNvLinkState(h, link) for link in range(18)],
                "fabric": fabric, "name": pynvml.nvmlDeviceGetName(h)}
    except pynvml.NVMLError as e:
        return str(e)


out["base"] = read(3)
for name, (health, _) in FAULTS.items():
    mocknvml.set_state(state, mocknvml.with_health(doc, 3, **health))
    out[name] = [read(3), read(2)]
mocknvml.set_state(state, mocknvml.with_health(doc, 3, clocksEventReasons=0x8, pcie={"width": 8, "gen": 4}))
out["degraded"] = read(3)
# a handle taken before the change answers the new state once any lookup has seen it
h3 = pynvml.nvmlDeviceGetHandleByIndex(3)
mocknvml.set_state(state, mocknvml.with_health(doc, 3, eccUncorrectedVolatile=5))
out["old_handle_before_lookup"] = pynvml.nvmlDeviceGetTotalEccErrors(h3, 1, 0)
pynvml.nvmlDeviceGetCount()
out["old_handle_after_lookup"] = pynvml.nvmlDeviceGetTotalEccErrors(h3, 1, 0)
mocknvml.set_state(state, None)
out["removed"] = read(3)
state.write_text("health\t3\tnot enough fields\nlost\t99\nlost\t4\n")
out["malformed"] = [read(3), read(4)]
mocknvml.set_state(state, None)

# the nvml source with health and its XID watcher on, across faults set and cleared
from nfd.hostpaths import HostPaths
from nfd.sources.base import DiscoveryContext
from nfd.sources.nvml.source import NvmlSource

ctx = DiscoveryContext(paths=HostPaths.detect())
src = NvmlSource()
cfg = src.parse_config({"health": {"enabled": True, "xidEvents": True}}, path="sources.nvml")


def health():
    f = src.discover(ctx, cfg).to_json()
    summary = f["attributes"]["nvml.health_summary"]["elements"]
    gpus = [i["attributes"] for i in f["instances"]["nvml.health"]["elements"]]
    return summary, gpus


out["source_base"] = health()[0]
out["watcher"] = src._watcher is not None and src._watcher.running
out["source"] = {}
for name, (h, _) in FAULTS.items():
    mocknvml.set_state(state, mocknvml.with_health(doc, 3, **h))
    summary, gpus = health()
    mocknvml.set_state(state, None)
    out["source"][name] = [summary, gpus[3], health()[0]]
src.close()
pynvml.nvmlShutdown()
print(json.dumps(out))
"""



@pytest.fixture(scope="module")
def run(lib_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("state")
    env = mocknvml.prepare(profile(), tmp, lib_dir=lib_dir)
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp / mocknvml.STATE_FILE)], env=env,
                       cwd=mocknvml.REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out: dict[str, Any] = json.loads(r.stdout)
    out["stderr"] = r.stderr
    return out


def test_the_data_files_answers_without_a_state_file(run: dict[str, Any]) -> None:
    base = run["base"]
    assert base["ecc"] == 0 and base["pages"] == 0 and base["rows"] == [0, 0, 0, 0] and base["clocks"] == 0
    assert base["pcie"] == [16, 5] and base["nvlinks"] == [1] * 18 and base["fabric"] == "Not Supported"


def test_each_faults_switch_reaches_pynvml_on_its_gpu_only(run: dict[str, Any]) -> None:
    base = run["base"]
    want = {"ecc": {"ecc": 2}, "pages": {"pages": 1}, "remap-pending": {"rows": [0, 1, 1, 0]},
            "remap-failed": {"rows": [0, 3, 0, 1]}, "fabric": {"fabric": [3, 999]},
            "nvlink": {"nvlinks": [1] * 16 + [0, 0]}}
    for name, changed in want.items():
        gpu3, gpu2 = run[name]
        assert gpu3 == {**base, **changed}, name
        assert gpu2 == base, name  # the other GPUs answer as before
    assert run["lost"] == ["GPU is lost", base]  # every call on a lost GPU, its handle lookup first
    assert run["degraded"] == {**base, "clocks": 0x8, "pcie": [8, 4]}


def test_a_change_is_seen_at_the_next_handle_lookup(run: dict[str, Any]) -> None:
    assert run["old_handle_before_lookup"] == 0
    assert run["old_handle_after_lookup"] == 5


def test_removing_the_file_restores_the_data_files_answers(run: dict[str, Any]) -> None:
    assert run["removed"] == run["base"]


def test_a_malformed_record_is_reported_and_passed_over(run: dict[str, Any]) -> None:
    assert run["malformed"] == [run["base"], "GPU is lost"]
    assert "bad state record health" in run["stderr"] and "bad state record lost" in run["stderr"]


def test_the_nvml_source_sees_each_fault_the_pass_after_it_was_set_and_clears(run: dict[str, Any]) -> None:
    """While its XID watcher holds NVML (the data file is never read again), each fault reaches
    the source's next pass with the features the Python fake gives for the same profile."""
    assert run["watcher"]
    assert run["source_base"]["healthy_count"] == "8" and run["source_base"]["reason"] == "none"
    for name, (health, reason) in FAULTS.items():
        summary, gpu3, cleared = run["source"][name]
        assert (summary["reason"], summary["healthy_count"], summary["unhealthy_gpus"]) == (reason, "7", "3"), name
        fake = mocknvml.fake_view(mocknvml.with_health(profile(), 3, **health))["features"]
        fake_gpu3 = fake["instances"]["nvml.health"]["elements"][3]["attributes"]
        if name == "lost":  # the fake's GPU was lost from the start: never named
            gpu3 = {**gpu3, "uuid": "", "pci_bus_id": "", "numa_node": fake_gpu3.get("numa_node")}
            gpu3 = {k: v for k, v in gpu3.items() if v is not None}
        assert gpu3 == fake_gpu3, name
        assert (cleared["reason"], cleared["healthy_count"]) == ("none", "8"), name
