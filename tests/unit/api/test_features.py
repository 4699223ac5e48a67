from nfd.api.features import Features
from nfd.api.nodefeature import NodeFeature


def test_roundtrip_upstream_json() -> None:
    f = Features()
    f.add_flags("cpu.cpuid", ["AVX2", "SSE4"])
    f.add_attributes("kernel.version", {"major": "6", "full": "6.1.0"})
    f.add_instances("pci.device", [{"vendor": "10de", "class": "0302"}])
    j = f.to_json()
    assert j["flags"]["cpu.cpuid"] == {"elements": {"AVX2": {}, "SSE4": {}}}
    assert j["instances"]["pci.device"]["elements"][0]["attributes"]["vendor"] == "10de"
    assert Features.from_json(j) == f


def test_nodefeature_rejects_bad_field_with_path() -> None:
    import pytest

    from nfd.api.errors import ValidationError

    obj = {
        "kind": "NodeFeature",
        "metadata": {"name": "n1"},
        "spec": {"features": {"attributes": {"x.y": {"elements": {"a": ["no"]}}}}},
    }
    with pytest.raises(ValidationError) as e:
        NodeFeature.from_json(obj)
    assert e.value.path == "spec.features.attributes.x.y.elements.a"


def test_from_json_converts_non_string_values_and_keys() -> None:
    j = {
        "attributes": {"a.b": {"elements": {"s": "x", "n": 3, "t": True, "z": None}}},
        "instances": {"i.j": {"elements": [{"attributes": {"s": "x", "n": 1.5}}, {"attributes": {1: "k"}}]}},
    }
    f = Features.from_json(j)
    assert f.attributes["a.b"] == {"s": "x", "n": "3", "t": "true", "z": ""}
    assert f.instances["i.j"] == [{"s": "x", "n": "1.5"}, {"1": "k"}]
    plain = {"attributes": {"a.b": {"elements": {"s": "x"}}}}
    g = Features.from_json(plain)
    assert g.attributes["a.b"] == {"s": "x"}
    g.attributes["a.b"]["s"] = "changed"  # a copy, not the caller's dict
    assert plain["attributes"]["a.b"]["elements"]["s"] == "x"
