"""The profile recorder: record -> YAML -> replay gives back the same snapshot."""

from __future__ import annotations

import copy

import pytest
import yaml
from nvml_help import labels_of, make_fake, snap_of

from nfd.nvml_fake import available_profiles, load_profile
from nfd.nvml_fake.profiles import check_profile
from nfd.nvml_fake.record import main, record


@pytest.mark.parametrize("name", available_profiles())
def test_record_then_replay_is_lossless(name: str) -> None:
    if load_profile(name).get("errors") or any(g.get("errors") for g in load_profile(name)["gpus"]):
        pytest.skip(f"{name} states NVML errors: the recorder stores answers, a failing call has none")
    fake = make_fake(name)
    fake.nvmlInit()
    doc = record(fake, fake.host, name=name)
    fake.nvmlShutdown()
    replayed = yaml.safe_load(yaml.safe_dump(doc, sort_keys=False))
    check_profile(replayed, name)
    assert snap_of(replayed) == snap_of(copy.deepcopy(load_profile(name)))


def test_record_keeps_not_supported_as_null() -> None:
    fake = make_fake("a100-40gb")  # numaNode NOT_SUPPORTED, no fabric
    fake.nvmlInit()
    doc = record(fake, fake.host)
    assert doc["gpus"][0]["numaNode"] is None
    assert doc["gpus"][0]["fabric"] is None
    assert doc["gpus"][0]["migMode"] == [0, 0]
    assert [p["id"] for p in doc["models"]["a100-sxm4-40gb"]["giProfiles"]] == [19, 14, 9, 5, 0, 20, 15]


def test_record_without_nvml_fails_with_one_line(capsys) -> None:
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this machine has NVML")
    assert main([]) == 1
    err = capsys.readouterr().err
    assert err.startswith("record: cannot initialise NVML") and err.count("\n") == 1


def _with_ci_table(name: str, shift: int) -> dict:
    """A shipped MIG profile whose models report compute-instance profile ids != indices."""
    doc = copy.deepcopy(load_profile(name))
    for model in doc["models"].values():
        if model.get("giProfiles"):
            model["ciProfiles"] = [{"index": i, "id": i + shift, "sliceCount": s}
                                   for i, s in ((0, 1), (1, 2), (2, 3), (3, 4), (4, 7))]
    return doc


@pytest.mark.parametrize("name", ["a100-mig-mixed", "h100-mig-mixed"])
def test_compute_instance_profile_ids_other_than_indices(name: str) -> None:
    doc = _with_ci_table(name, 10)
    check_profile(doc, name)
    # MIG names come from the table index, found by the id NVML reports: the same labels
    assert labels_of(doc, "mixed") == labels_of(name, "mixed")
    fake = make_fake(doc)
    fake.nvmlInit()
    recorded = record(fake, fake.host, name=name)
    fake.nvmlShutdown()
    tables = [m["ciProfiles"] for m in recorded["models"].values() if "ciProfiles" in m]
    assert tables and all(p["id"] == p["index"] + 10 for t in tables for p in t)
    assert snap_of(yaml.safe_load(yaml.safe_dump(recorded))) == snap_of(doc)


def test_mig_device_on_a_named_compute_instance_profile() -> None:
    doc = _with_ci_table("a100-mig-mixed", 0)
    gpu = next(g for g in doc["gpus"] if g.get("migDevices"))
    mig = gpu["migDevices"][0]
    gp = next(p for p in doc["models"][gpu["model"]]["giProfiles"] if p["name"] == mig["profile"])
    if int(gp["sliceCount"]) < 2:
        pytest.skip("the first MIG device is a 1-slice instance")
    mig["ciProfile"] = 0  # a 1-slice compute instance inside it
    mig["ciSlices"] = 1
    snap = snap_of(doc)
    names = {m.profile for g in snap.gpus for m in g.mig_devices}
    assert any(n.startswith("1c.") for n in names), names


def test_bad_ci_profile_table_is_refused() -> None:
    doc = _with_ci_table("a100-mig-mixed", 0)
    next(m for m in doc["models"].values() if "ciProfiles" in m)["ciProfiles"][0]["id"] = "x"
    with pytest.raises(ValueError, match="ciProfiles"):
        check_profile(doc, "bad")
