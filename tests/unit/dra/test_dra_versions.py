"""DRA version attributes as semver, DRA-style CEL selectors, and the compact device form.

Version attributes are typed as the DRA scheduler types them (Kubernetes' CEL ``semver``:
the pre-release counts, build metadata does not); the same attribute's ``dra.device`` text is
the version as published, for ``type: version`` matchExpressions (upstream's loose parse, the
pre-release dropped). The compact form (one tuple of values per device, keys shared) must give
exactly what a plain reading of the slice gives.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfd.api.features import Features
from nfd.dra.pools import DraIndex
from nfd.dra.slices import META_KEYS, parse_slice
from nfd.lang.cel.values import Semver
from nfd.rules.cel import CelEvalError, compile_expressions
from nfd.rules.devices import NODE_DEVICES
from nfd.rules.engine import compile_nodefeaturerule, iter_process_rule_sets, run_to_end

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "dra"


def fixture(name: str, node: str = "n1") -> list[dict[str, Any]]:
    return [o for o in yaml.safe_load_all((FIXTURES / name).read_text().replace("NODE", node)) if o]


def devices_of(*names: str) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    idx = DraIndex()
    for n in names:
        for o in fixture(n):
            idx.upsert(parse_slice(o))
    nd = idx.node_devices("n1", {})
    return nd.instances, nd.cel


def matches(expr: str, devices: list[dict[str, Any]]) -> bool:
    m = compile_expressions([f"devices.exists(device, {expr})"], path="matchCEL")
    token = NODE_DEVICES.set(devices)
    try:
        return m.evaluate(Features(), node_name="n1")[0]
    finally:
        NODE_DEVICES.reset(token)


NV = 'device.attributes["gpu.nvidia.com"]'
EX = 'device.attributes["gpu.example.com"]'


def test_version_attributes_are_semver_values() -> None:
    _, nvidia = devices_of("nvidia-gpu-h100x8.yaml")
    a = nvidia[0]["attributes"]["gpu.nvidia.com"]
    for key in ("driverVersion", "cudaDriverVersion", "cudaComputeCapability"):
        assert type(a[key]) is Semver, key
    assert (a["driverVersion"].major, a["driverVersion"].minor, a["driverVersion"].patch) == (550, 54, 15)
    # one value object per distinct version, shared by every device
    assert a["driverVersion"] is nvidia[7]["attributes"]["gpu.nvidia.com"]["driverVersion"]
    _, beta = devices_of("example-driver-beta.yaml")
    v = beta[0]["attributes"]["gpu.example.com"]["driverVersion"]
    assert (v.pre, v.build) == (("beta", 2), ("build", "7"))


@pytest.mark.parametrize(("fixture_name", "expr", "want"), [
    ("nvidia-gpu-h100x8.yaml", f'{NV}.driverVersion.compareTo(semver("550.0.0")) >= 0', True),
    ("nvidia-gpu-h100x8.yaml", f'{NV}.driverVersion.compareTo(semver("550.54.15")) == 0', True),
    ("nvidia-gpu-h100x8.yaml", f'{NV}.driverVersion.compareTo(semver("560.0.0")) >= 0', False),
    ("nvidia-gpu-h100x8.yaml", f'{NV}.driverVersion.isGreaterThan(semver("550.54.14"))', True),
    ("nvidia-gpu-h100x8.yaml", f'{NV}.driverVersion.isGreaterThan(semver("550.54.15"))', False),
    ("nvidia-gpu-h100x8.yaml", f'{NV}.cudaDriverVersion.isLessThan(semver("12.5.0")) && {NV}.cudaDriverVersion.minor() == 4', True),
    ("nvidia-gpu-h100x8.yaml", f'{NV}.driverVersion == semver("550.54.15")', True),
    ("nvidia-gpu-h100x8.yaml",
     f'cel.bind(a, {NV}, a.cudaComputeCapability.major() >= 9 && a.productName.startsWith("NVIDIA H100"))', True),
    ("nvidia-gpu-h100x8.yaml",
     f'cel.bind(a, {NV}, a.cudaComputeCapability.isLessThan(semver("9.0.0")))', False),
    ("nvidia-gpu-h100x8.yaml",
     'device.driver == "gpu.nvidia.com" && cel.bind(mem, device.capacity["gpu.nvidia.com"].memory, '
     'mem.compareTo(quantity("40Gi")) >= 0 && mem.compareTo(quantity("80Gi")) < 0)', True),
    ("nvidia-gpu-h100x8.yaml", 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
    # a domain the device lacks: optional access reads none, no error
    ("nvidia-gpu-h100x8.yaml", f'{EX}.?driverVersion.orValue(semver("0.0.0")).major() == 0', True),
    ("nvidia-gpu-h100x8.yaml", f'{NV}.?driverVersion.hasValue() && isSemver("550.54.15") && !isSemver("550.54")', True),
    # the pre-release counts (1.1.0-beta.2 < 1.1.0), build metadata does not
    ("example-driver-beta.yaml", f'{EX}.driverVersion.isLessThan(semver("1.1.0"))', True),
    ("example-driver-beta.yaml", f'{EX}.driverVersion.isGreaterThan(semver("1.1.0-beta.1"))', True),
    ("example-driver-beta.yaml", f'{EX}.driverVersion.isGreaterThan(semver("1.1.0-alpha"))', True),
    ("example-driver-beta.yaml", f'{EX}.driverVersion == semver("1.1.0-beta.2")', True),
    ("example-driver-beta.yaml", f'{EX}.driverVersion.compareTo(semver("1.1.0-beta.2+other.9")) == 0', True),
    ("example-driver-beta.yaml", f'{EX}.driverVersion.compareTo(semver("1.1.0")) >= 0', False),
    ("example-driver-beta.yaml", f'{EX}.driverVersion.major() == 1 && {EX}.driverVersion.minor() == 1 && '
                                 f'{EX}.driverVersion.patch() == 0', True),
])
def test_semver_selectors(fixture_name: str, expr: str, want: bool) -> None:
    _, devices = devices_of(fixture_name)
    assert matches(expr, devices) is want


def test_version_does_not_compare_with_a_semver_attribute() -> None:
    # DRA has no version(); nfd's version() does not mix with a semver attribute: attribute
    # values are dyn, so it is an error when the rule runs, naming both types
    _, devices = devices_of("nvidia-gpu-h100x8.yaml")
    with pytest.raises(CelEvalError, match=r"no matching overload for 'compareTo' applied to \(kubernetes.Semver, version\)"):
        matches(f'{NV}.driverVersion.compareTo(version("550.0.0")) >= 0', devices)


def version_rule(expressions: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "v"},
            "spec": {"rules": [{"name": "v", "labels": {"matched": "true"},
                                "matchFeatures": [{"feature": "dra.device", "matchExpressions": expressions}]}]}}


def match_features(expressions: dict[str, Any], instances: list[dict[str, str]]) -> bool:
    f = Features()
    f.add_instances("dra.device", instances)
    res = run_to_end(iter_process_rule_sets([compile_nodefeaturerule(version_rule(expressions))], f, node_name="n1"))
    assert res.errors == []
    return res.master_output.labels.get("feature.node.kubernetes.io/matched") == "true"


@pytest.mark.parametrize(("fixture_name", "expressions", "want"), [
    ("nvidia-gpu-h100x8.yaml", {"driverVersion": {"op": "Gt", "value": ["550.0.0"], "type": "version"}}, True),
    ("nvidia-gpu-h100x8.yaml", {"driverVersion": {"op": "Lt", "value": ["550.54.15"], "type": "version"}}, False),
    ("nvidia-gpu-h100x8.yaml", {"gpu.nvidia.com/driverVersion": {"op": "Ge", "value": ["550.54.15"], "type": "version"}}, True),
    ("nvidia-gpu-h100x8.yaml", {"cudaComputeCapability": {"op": "GtLt", "value": ["8.0", "9.1"], "type": "version"}}, True),
    ("nvidia-gpu-h100x8.yaml", {"cudaDriverVersion": {"op": "GeLe", "value": ["12", "12.4"], "type": "version"}}, True),
    ("nvidia-gpu-h100x8.yaml", {"driverVersion": {"op": "In", "value": ["550.54.15"]}}, True),
    # upstream's type: version drops the pre-release: 1.1.0-beta.2 counts as 1.1.0 here, while
    # semver (CEL, the DRA scheduler) has it below 1.1.0 (docs/dra.md)
    ("example-driver-beta.yaml", {"driverVersion": {"op": "Ge", "value": ["1.1.0"], "type": "version"}}, True),
    ("example-driver-beta.yaml", {"driverVersion": {"op": "Lt", "value": ["1.1.0"], "type": "version"}}, False),
    ("example-driver-beta.yaml", {"driverVersion": {"op": "In", "value": ["1.1.0-beta.2+build.7"]}}, True),
])
def test_version_text_for_type_version_match_expressions(fixture_name: str, expressions: dict[str, Any],
                                                         want: bool) -> None:
    instances, _ = devices_of(fixture_name)
    assert match_features(expressions, instances) is want


# -- the compact form gives what a plain reading of the slice gives --------------------------------


def plain_reading(obj: dict[str, Any]) -> list[tuple[dict[str, str], dict[str, dict[str, Any]], dict[str, dict[str, str]]]]:
    """Per device: the dra.device element, attribute texts by domain and capacity texts by domain,
    read straight from the slice as docs/dra.md describes them."""
    spec = obj["spec"]
    driver, pool = spec["driver"], spec["pool"]["name"]
    out = []
    for dev in spec["devices"]:
        inst = {"driver": driver, "pool": pool, "device": dev["name"]}
        attrs: dict[str, dict[str, Any]] = {}
        caps: dict[str, dict[str, str]] = {}
        for q, raw in (dev.get("attributes") or {}).items():
            domain, _, ident = q.rpartition("/")
            domain = domain or driver
            (kind, v), = raw.items()
            text = ("true" if v else "false") if kind == "bool" else str(v)
            attrs.setdefault(domain, {})[ident] = (kind, v)
            inst[f"{domain}/{ident}"] = text
            if domain == driver and ident not in META_KEYS:
                inst[ident] = text
        for q, raw in (dev.get("capacity") or {}).items():
            domain, _, ident = q.rpartition("/")
            domain = domain or driver
            caps.setdefault(domain, {})[ident] = raw["value"]
            inst[f"capacity.{domain}/{ident}"] = raw["value"]
            if domain == driver:
                inst[f"capacity.{ident}"] = raw["value"]
        out.append((inst, attrs, caps))
    return out


INTERLEAVED = {"metadata": {"name": "odd", "resourceVersion": "1"}, "spec": {
    "driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
    "devices": [
        {"name": "d0", "allowMultipleAllocations": True, "attributes": {
            "model": {"string": "A"}, "other.io/numa": {"int": 1}, "healthy": {"bool": True},
            "other.io/fw": {"version": "2.0.0-rc.1"}, "gpu.example.com/model": {"string": "B"},
            "device": {"string": "meta-named"}, "other.io/tag": {"string": "t"}},
         "capacity": {"memory": {"value": "1Gi"}, "other.io/lanes": {"value": "16"}}},
        {"name": "d1", "attributes": {"model": {"string": "C"}}},
        {"name": "d2"},
    ]}}


@pytest.mark.parametrize("obj", [*fixture("nvidia-gpu-h100x8.yaml"), *fixture("example-driver-gpus.yaml"),
                                 *fixture("dranet-nics.yaml"), *fixture("example-driver-beta.yaml"), INTERLEAVED],
                         ids=lambda o: o["metadata"]["name"])
def test_compact_form_equals_a_plain_reading(obj: dict[str, Any]) -> None:
    s = parse_slice(obj)
    assert s.warnings == []
    want = plain_reading(obj)
    assert len(s.devices) == len(want)
    for d, (inst, attrs, caps) in zip(s.devices, want, strict=True):
        got = d.instance
        # quantities show in base units when integral (docs/dra.md), the rest as published
        assert {k: v for k, v in got.items() if not k.startswith("capacity.")} == \
               {k: v for k, v in inst.items() if not k.startswith("capacity.")}
        assert list(got) == list(inst)  # same keys, same order
        cel = d.cel
        assert cel["driver"] == obj["spec"]["driver"]
        raw_dev = next(x for x in obj["spec"]["devices"] if x["name"] == d.name)
        assert cel["allowMultipleAllocations"] is (raw_dev.get("allowMultipleAllocations") is True)
        assert {dom: list(ids) for dom, ids in cel["attributes"].items()} == {dom: list(ids) for dom, ids in attrs.items()}
        for dom, ids in attrs.items():
            for ident, (kind, v) in ids.items():
                typed = cel["attributes"][dom][ident]
                if kind == "version":
                    assert typed == Semver.parse(v) and type(typed) is Semver
                else:
                    assert typed == v and type(typed) is type(v)
        assert {dom: sorted(ids) for dom, ids in cel["capacity"].items()} == {dom: sorted(ids) for dom, ids in caps.items()}


def test_interleaved_domains_and_duplicate_names() -> None:
    d0 = parse_slice(INTERLEAVED).devices[0]
    inst = d0.instance
    # "model" and "gpu.example.com/model" are one attribute: the later value wins, both keys show it
    assert inst["model"] == inst["gpu.example.com/model"] == "B"
    assert inst["device"] == "d0" and inst["gpu.example.com/device"] == "meta-named"  # meta keys stay meta
    assert inst["other.io/numa"] == "1" and inst["healthy"] == "true" and inst["other.io/fw"] == "2.0.0-rc.1"
    assert inst["capacity.memory"] == str(2**30) and inst["capacity.other.io/lanes"] == "16"
    assert "capacity.lanes" not in inst and "numa" not in inst
    cel = d0.cel
    assert cel["attributes"]["other.io"] == {"numa": 1, "fw": Semver.parse("2.0.0-rc.1"), "tag": "t"}
    assert cel["attributes"]["gpu.example.com"]["model"] == "B" and cel["allowMultipleAllocations"] is True


def test_reads_are_fresh_values() -> None:
    # consumers may keep or change what they get: the device itself never changes
    d = parse_slice(fixture("nvidia-gpu-h100x8.yaml")[0]).devices[0]
    inst, cel = d.instance, d.cel
    inst["productName"] = "changed"
    cel["attributes"]["gpu.nvidia.com"]["productName"] = "changed"
    del cel["capacity"]["gpu.nvidia.com"]
    assert d.instance["productName"] == "NVIDIA H100 80GB HBM3"
    assert d.cel["attributes"]["gpu.nvidia.com"]["productName"] == "NVIDIA H100 80GB HBM3"
    assert "memory" in d.cel["capacity"]["gpu.nvidia.com"]


def test_devices_of_one_driver_share_their_layout() -> None:
    a = parse_slice(fixture("nvidia-gpu-h100x8.yaml", "node-a")[0])
    b = parse_slice(fixture("nvidia-gpu-h100x8.yaml", "node-b")[0])
    shapes = {id(d._shape) for d in (*a.devices, *b.devices)}  # noqa: SLF001 - what keeps slices small
    assert len(shapes) == 1
    assert a.devices[0].instance["pool"] == "node-a" and b.devices[0].instance["pool"] == "node-b"


def test_memory_held_per_slice_stays_small() -> None:
    # 8 H100s per slice, as the NVIDIA driver publishes them; the plain form held about 20 kB
    # each slice decoded inside the measurement, as the informer has it, and the raw form dropped
    texts = [json.dumps(fixture("nvidia-gpu-h100x8.yaml", f"node-{i}")[0]) for i in range(60)]
    parse_slice(json.loads(texts[0]))  # warm the shared values (shapes, interned strings, cached versions)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = [parse_slice(json.loads(t)) for t in texts[1:]]
        per_slice = (tracemalloc.get_traced_memory()[0] - before) / len(held)
    finally:
        tracemalloc.stop()
    assert len(held[0].devices) == 8
    assert per_slice < 6 * 1024, f"{per_slice:.0f} bytes per slice"
