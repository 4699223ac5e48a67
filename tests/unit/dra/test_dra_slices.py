"""ResourceSlices -> typed devices, pools as DRA defines them, and the sample rules' labels."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfd.api.features import Features
from nfd.dra.pools import ALL_NODES, DraIndex
from nfd.dra.slices import compile_node_selector, parse_slice
from nfd.rules.cel import compile_expressions
from nfd.rules.devices import NODE_DEVICES
from nfd.rules.engine import compile_nodefeaturerule, iter_process_rule_sets, run_to_end

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "dra"
SAMPLES = ROOT / "deploy" / "nodefeaturerule" / "samples"


def fixture(name: str, node: str = "n1") -> list[dict[str, Any]]:
    return [o for o in yaml.safe_load_all((FIXTURES / name).read_text().replace("NODE", node)) if o]


def slice_obj(name: str, *, pool: str = "p", gen: int = 1, count: int = 1, node: str | None = "n1",
              devices: list[str] | None = None, rv: str = "1", **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"driver": "gpu.example.com", "pool": {"name": pool, "generation": gen, "resourceSliceCount": count},
                         "devices": [{"name": d, "attributes": {"model": {"string": name}}} for d in devices or ["gpu-0"]]}
    if node is not None:
        s["nodeName"] = node
    s.update(spec)
    return {"metadata": {"name": name, "resourceVersion": rv}, "spec": s}


def devices_of(idx: DraIndex, node: str = "n1", labels: dict[str, str] | None = None) -> list[str]:
    return sorted(f"{i['pool']}/{i['device']}@{i['model']}" if "model" in i else i["device"]
                  for i in idx.node_devices(node, labels or {}).instances)


# -- parsing ------------------------------------------------------------------------------------


def test_nvidia_slice_types_values_as_the_dra_scheduler() -> None:
    s = parse_slice(fixture("nvidia-gpu-h100x8.yaml")[0])
    assert s.warnings == [] and s.usable and len(s.devices) == 8
    d = s.devices[0]
    assert d.instance["productName"] == d.instance["gpu.nvidia.com/productName"] == "NVIDIA H100 80GB HBM3"
    assert d.instance["resource.kubernetes.io/pcieRoot"] == "pci0000:17"
    assert "pcieRoot" not in d.instance  # another domain: only qualified
    assert d.instance["capacity.memory"] == str(81559 * 2**20)
    assert (d.instance["driver"], d.instance["pool"], d.instance["device"]) == ("gpu.nvidia.com", "n1", "gpu-0")
    attrs = d.cel["attributes"]
    assert attrs["gpu.nvidia.com"]["productName"] == "NVIDIA H100 80GB HBM3"
    assert type(attrs["gpu.nvidia.com"]["driverVersion"]).__name__ == "Semver"  # as the DRA scheduler types it
    assert attrs["not.there"] == {}  # a missing domain reads as an empty map, as in DRA
    ex = parse_slice(fixture("example-driver-gpus.yaml")[0]).devices[3]
    assert ex.cel["attributes"]["gpu.example.com"]["index"] == 3 and ex.instance["index"] == "3"


@pytest.mark.parametrize(("attr", "why"), [
    ({"quantity": "1"}, "unknown attribute type (fields: quantity"),
    ({}, "unknown attribute type (fields: none"),
    ({"int": 1, "string": "x"}, "more than one value (int, string)"),
    ({"version": "v1.2"}, "is not a semantic version"),
    ({"int": "7"}, "is not an integer"),
    ("x", "must be an object"),
])
def test_bad_attribute_is_left_out_with_a_named_warning(attr: Any, why: str) -> None:
    obj = slice_obj("s1")
    obj["spec"]["devices"][0]["attributes"]["odd"] = attr
    s = parse_slice(obj)
    assert len(s.warnings) == 1, s.warnings
    assert s.warnings[0].startswith("ResourceSlice s1: spec.devices[gpu-0].attributes[odd]: ") and why in s.warnings[0]
    assert s.devices[0].instance["model"] == "s1"  # the rest of the device still counts
    assert "odd" not in s.devices[0].instance


@pytest.mark.parametrize("spec", [None, "x", {"driver": "d"}, {"driver": "d", "pool": {"name": "p"}}])
def test_malformed_slice_is_ignored_never_raises(spec: Any) -> None:
    s = parse_slice({"metadata": {"name": "bad"}, "spec": spec})
    assert not s.usable and s.warnings and s.warnings[0].startswith("ResourceSlice bad:")


def test_bad_capacity_and_unknown_node_selection() -> None:
    obj = slice_obj("s1")
    obj["spec"]["devices"][0]["capacity"] = {"memory": {"value": "lots"}}
    s = parse_slice(obj)
    assert "capacity[memory]: invalid quantity 'lots'" in s.warnings[0]
    s = parse_slice(slice_obj("s2", node=None))
    assert not s.usable and "no nodeName, nodeSelector, allNodes" in s.warnings[0]


def test_node_selector_semantics() -> None:
    sel = compile_node_selector({"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a", "b"]},
                              {"key": "rack", "operator": "Gt", "values": ["3"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["special"]}]},
        {},  # an empty term selects nothing
    ]}, path="x")
    assert sel("n", {"gpu": "a", "rack": "4"})
    assert not sel("n", {"gpu": "a", "rack": "3"}) and not sel("n", {"gpu": "a", "rack": "x"})
    assert not sel("n", {"rack": "9"}) and sel("special", {})
    with pytest.raises(ValueError, match=r"x.nodeSelectorTerms\[0\].matchExpressions\[0\].operator: unknown operator 'Like'"):
        compile_node_selector({"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Like"}]}]}, path="x")


# -- pools ----------------------------------------------------------------------------------------


def test_pool_split_over_slices_counts_once_complete() -> None:
    idx = DraIndex()
    assert idx.upsert(parse_slice(slice_obj("a", count=2, devices=["gpu-0"]))) == set()
    assert devices_of(idx) == []  # 1 of 2 slices: never complete, nothing in force
    assert idx.pool_problems() and "generation 1 has 1 of 2 slices (a)" in idx.pool_problems()[0]
    assert idx.upsert(parse_slice(slice_obj("b", count=2, devices=["gpu-1"]))) == {"n1"}
    assert devices_of(idx) == ["p/gpu-0@a", "p/gpu-1@b"] and idx.pool_problems() == []


def test_newer_generation_replaces_once_complete_last_complete_stays_meanwhile() -> None:
    idx = DraIndex()
    idx.upsert(parse_slice(slice_obj("a", count=2, devices=["gpu-0"])))
    idx.upsert(parse_slice(slice_obj("b", count=2, devices=["gpu-1"])))
    # the driver rewrites slice a with generation 2: gen 2 has 1 of 2 slices
    assert idx.upsert(parse_slice(slice_obj("a", gen=2, count=2, devices=["gpu-0"], rv="5"))) == set()
    assert devices_of(idx) == ["p/gpu-0@a", "p/gpu-1@b"]  # generation 1 stays in force
    assert "generation 1 stays in force" in idx.pool_problems()[0]
    assert idx.upsert(parse_slice(slice_obj("b", gen=2, count=2, devices=["gpu-7"], rv="6"))) == {"n1"}
    assert devices_of(idx) == ["p/gpu-0@a", "p/gpu-7@b"]
    # an older generation arriving late changes nothing
    assert idx.upsert(parse_slice(slice_obj("c", gen=1, count=2, devices=["gpu-9"]))) == set()
    assert devices_of(idx) == ["p/gpu-0@a", "p/gpu-7@b"]
    # all slices of the pool deleted: its devices are gone
    for n in ("a", "b", "c"):
        idx.remove(n)
    assert devices_of(idx) == [] and idx.node_devices("n1", {}).key == ()


def test_duplicate_device_names_make_the_pool_invalid(caplog: pytest.LogCaptureFixture) -> None:
    idx = DraIndex()
    with caplog.at_level(logging.WARNING, logger="nfd.dra.pools"):
        idx.upsert(parse_slice(slice_obj("a", count=2, devices=["gpu-0"])))
        idx.upsert(parse_slice(slice_obj("b", count=2, devices=["gpu-0"])))
    assert devices_of(idx) == []
    assert "ResourceSlice pool gpu.example.com/p: duplicate device names gpu-0" in caplog.text


def test_selector_slices_all_nodes_and_per_device_selection() -> None:
    idx = DraIndex()
    sel = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}]}
    assert idx.upsert(parse_slice(slice_obj("net", pool="fabric", node=None, nodeSelector=sel))) == {ALL_NODES}
    idx.upsert(parse_slice(slice_obj("all", pool="shared", node=None, allNodes=True)))
    per = slice_obj("per", pool="per", node=None, perDeviceNodeSelection=True, devices=["d0", "d1"])
    per["spec"]["devices"][0]["nodeName"] = "n1"
    per["spec"]["devices"][1]["nodeSelector"] = sel
    idx.upsert(parse_slice(per))
    assert devices_of(idx, "n1", {"zone": "z1"}) == ["fabric/gpu-0@net", "per/d0@per", "per/d1@per", "shared/gpu-0@all"]
    assert devices_of(idx, "n2", {"zone": "z2"}) == ["shared/gpu-0@all"]
    assert devices_of(idx, "n2", {"zone": "z1"}) == ["fabric/gpu-0@net", "per/d1@per", "shared/gpu-0@all"]
    assert idx.node_devices("n2", {"zone": "z1"}).key != idx.node_devices("n2", {"zone": "z2"}).key


# -- rules: matchFeatures on dra.device, matchCEL on devices, the shipped samples -------------------


def node_features(*names: str) -> tuple[Features, list[dict[str, Any]]]:
    idx = DraIndex()
    for n in names:
        for o in fixture(n):
            idx.upsert(parse_slice(o))
    nd = idx.node_devices("n1", {})
    f = Features()
    f.add_instances("dra.device", nd.instances)
    return f, nd.cel


def labels_from(samples: list[str], f: Features, devices: list[dict[str, Any]]) -> dict[str, str]:
    rules = [compile_nodefeaturerule(yaml.safe_load((SAMPLES / s).read_text())) for s in samples]
    res = run_to_end(iter_process_rule_sets(rules, f, node_name="n1", devices=devices))
    assert res.errors == []
    return res.master_output.labels


def test_nvidia_sample_pastes_a_cel_selector() -> None:
    """The sample is the pasted DeviceClass selector; GFD's labels are the shipped rule's
    (tests/unit/dra/test_dra_gpu_labels.py)."""
    f, devs = node_features("nvidia-gpu-h100x8.yaml")
    assert labels_from(["dra-nvidia-gpu.yaml"], f, devs) == {"nvidia.com/gpu.memory-40gi-plus": "true"}
    # the example driver's GPUs are not NVIDIA's
    f, devs = node_features("example-driver-gpus.yaml")
    assert labels_from(["dra-nvidia-gpu.yaml"], f, devs) == {}


def test_dranet_sample_gives_nic_labels() -> None:
    f, devs = node_features("dranet-nics.yaml", "nvidia-gpu-h100x8.yaml")
    labels = labels_from(["dra-dranet-nics.yaml"], f, devs)
    assert labels == {
        "feature.node.kubernetes.io/rdma.capable": "true",
        "feature.node.kubernetes.io/network-rdma.count": "2",
        "feature.node.kubernetes.io/network-rdma.vendor": "Mellanox-Technologies",
        "feature.node.kubernetes.io/network-rdma.jumbo-frames": "true",
    }


@pytest.mark.parametrize(("expr", "want"), [
    ('devices.exists(device, device.attributes["gpu.example.com"].model == "LATEST-GPU-MODEL")', True),
    ('devices.exists(device, device.capacity["gpu.example.com"].memory.compareTo(quantity("80Gi")) == 0)', True),
    ('devices.exists(device, device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("80Gi")))', False),
    ('devices.filter(d, d.attributes["gpu.example.com"].index >= 6).size() == 2', True),
    ('devices.all(d, d.driver == "gpu.example.com" && !d.allowMultipleAllocations)', True),
    ('devices.exists(d, has(d.attributes["gpu.nvidia.com"].productName))', False),  # missing domain: empty map
    ('devices.exists(d, "gpu.example.com" in d.attributes && !("gpu.nvidia.com" in d.attributes))', True),
    ('devices.exists(d, d.attributes["gpu.example.com"].driverVersion.major() == 1)', True),
])
def test_dra_cel_selectors(expr: str, want: bool) -> None:
    _, devs = node_features("example-driver-gpus.yaml")
    m = compile_expressions([expr], path="matchCEL")
    token = NODE_DEVICES.set(devs)
    try:
        assert m.evaluate(Features(), node_name="n1")[0] is want
    finally:
        NODE_DEVICES.reset(token)
    assert m.evaluate(Features(), node_name="n1")[0] is ("all(" in expr)  # no devices: exists false, all true
