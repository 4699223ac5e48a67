"""The profile recorder: record -> YAML -> replay gives back the same snapshot."""

from __future__ import annotations

import copy

import pytest
import yaml
from conftest import make_fake, snap_of

from nfd.nvml_fake import available_profiles, load_profile
from nfd.nvml_fake.profiles import check_profile
from nfd.nvml_fake.record import main, record


@pytest.mark.parametrize("name", available_profiles())
def test_record_then_replay_is_lossless(name: str) -> None:
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
