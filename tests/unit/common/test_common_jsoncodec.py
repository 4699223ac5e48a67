"""nfd.common.jsoncodec: the same answers with and without orjson, and its gaps covered."""

from __future__ import annotations

import json

import pytest

from nfd.common import jsoncodec


@pytest.fixture(params=["orjson", "stdlib"])
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "stdlib":
        monkeypatch.setattr(jsoncodec, "_orjson", None)
    elif jsoncodec._orjson is None:
        pytest.skip("orjson not installed")
    return str(request.param)


DOC = {"kind": "NodeFeature", "spec": {"labels": {"a/b": "ü"}, "n": [1, 2.5, None, True]}}


def test_round_trip(codec: str) -> None:
    raw = jsoncodec.dumps(DOC)
    assert isinstance(raw, bytes)
    assert b" " not in raw  # compact
    assert jsoncodec.loads(raw) == DOC
    assert jsoncodec.loads(raw.decode()) == DOC
    assert jsoncodec.loads(memoryview(raw)) == DOC
    assert json.loads(raw) == DOC


def test_integers_beyond_64_bits(codec: str) -> None:
    big = 2**70
    assert jsoncodec.loads(f'{{"v": {big}}}'.encode()) == {"v": big}
    assert json.loads(jsoncodec.dumps({"v": big})) == {"v": big}


def test_non_string_keys_encode_as_json_does(codec: str) -> None:
    assert json.loads(jsoncodec.dumps({1: "a"})) == {"1": "a"}


@pytest.mark.parametrize("bad", [b"", b"{", b'{"a": }', b"\xff"])
def test_malformed_input_is_a_value_error(codec: str, bad: bytes) -> None:
    with pytest.raises(ValueError):
        jsoncodec.loads(bad)
