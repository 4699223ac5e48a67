"""Image compatibility: spec decoding and non-fail-fast evaluation, as upstream's node validator."""

from __future__ import annotations

import json

import pytest

from nfd.api.features import Features
from nfd.compat.oci import ReferenceError_, parse_platform, parse_reference
from nfd.compat.spec import SpecError, parse_spec
from nfd.compat.validator import to_json_text, validate


def features() -> Features:
    f = Features()
    f.add_flags("cpu.cpuid", ["AVX", "AVX2", "SSE4"])
    f.add_attributes("cpu.model", {"vendor_id": "Intel", "family": "6"})
    f.add_flags("kernel.loadedmodule", ["vfio_pci"])
    f.add_instances("pci.device", [{"vendor": "8086", "class": "0200"}, {"vendor": "10de", "class": "0302"}])
    return f


def run(spec: str, **kw: object) -> list[dict[str, object]]:
    return json.loads(to_json_text(validate(parse_spec(spec, source="t"), features(), **kw)))  # type: ignore[arg-type]


def statuses(rule: dict[str, object]) -> list[tuple[str, str, bool]]:
    return [(m["feature"], m["name"], m["isMatch"]) for m in rule["matchedExpressions"]]  # type: ignore[index,union-attr]


def test_every_expression_is_evaluated() -> None:
    out = run("""
version: v1alpha1
compatibilities:
- rules:
  - name: r
    matchFeatures:
    - feature: cpu.model
      matchExpressions:
        vendor_id: {op: In, value: [AMD]}
        family: {op: Gt, value: ["5"]}
    - feature: kernel.loadedmodule
      matchExpressions: {vfio_pci: {op: Exists}, nouveau: {op: DoesNotExist}, e1000: {op: Exists}}
    - feature: gone.feature
      matchExpressions: {x: {op: Exists}}
""")
    rule = out[0]["rules"][0]  # type: ignore[index]
    assert rule["isMatch"] is False
    # sorted by feature, name; every expression has its own status (no fail-fast)
    assert statuses(rule) == [
        ("cpu.model", "family", True), ("cpu.model", "vendor_id", False),
        ("gone.feature", "x", False),
        ("kernel.loadedmodule", "e1000", False), ("kernel.loadedmodule", "nouveau", True),
        ("kernel.loadedmodule", "vfio_pci", True),
    ]


def test_instances_union_and_matchname_after_expressions() -> None:
    out = run("""
version: v1alpha1
compatibilities:
- rules:
  - name: nic
    matchFeatures:
    - feature: pci.device
      matchExpressions: {vendor: {op: In, value: ["8086"]}, class: {op: In, value: ["0302"]}}
  - name: names
    matchFeatures:
    - feature: cpu.cpuid
      matchName: {op: InRegexp, value: ["^AVX"]}
  - name: name-not-tried
    matchFeatures:
    - feature: cpu.cpuid
      matchExpressions: {AVX512F: {op: Exists}}
      matchName: {op: InRegexp, value: ["^AVX"]}
""")
    nic, names, skipped = out[0]["rules"]  # type: ignore[index,misc]
    # each expression matched some instance, but no instance matched both
    assert nic["isMatch"] is False and statuses(nic) == [("pci.device", "class", True), ("pci.device", "vendor", True)]
    assert names["isMatch"] is True
    assert names["matchedExpressions"][0] == {"feature": "cpu.cpuid", "name": "", "expression":
                                              {"op": "InRegexp", "value": ["^AVX"]},
                                              "matcherType": "matchName", "isMatch": True}
    assert [m["isMatch"] for m in skipped["matchedExpressions"]] == [False, False]


def test_vars_feed_rule_matched_across_sets_and_tags() -> None:
    spec = """
version: v1alpha1
compatibilities:
- tag: a
  weight: 3
  description: first
  rules:
  - {name: setter, vars: {ready: "true"}}
- tag: b
  rules:
  - name: reader
    matchFeatures:
    - feature: rule.matched
      matchExpressions: {ready: {op: IsTrue}}
"""
    out = run(spec)
    assert out[0] == {"rules": [{"name": "setter", "isMatch": True}], "description": "first", "weight": 3, "tag": "a"}
    assert out[1]["rules"][0]["isMatch"] is True  # type: ignore[index]
    assert [s["tag"] for s in run(spec, tags=["b"])] == ["b"]


def test_expression_error_fails_only_its_rule() -> None:
    out = run("""
version: v1alpha1
compatibilities:
- rules:
  - name: bad
    matchFeatures:
    - feature: cpu.model
      matchExpressions: {vendor_id: {op: Gt, value: ["1"]}}
  - name: good
    matchFeatures:
    - feature: cpu.model
      matchExpressions: {family: {op: In, value: ["6"]}}
""")
    bad, good = out[0]["rules"]  # type: ignore[index,misc]
    assert bad["isMatch"] is False and "Intel" in bad["error"]
    assert good == {"name": "good", "isMatch": True, "matchedExpressions": [
        {"feature": "cpu.model", "name": "family", "expression": {"op": "In", "value": ["6"]},
         "matcherType": "matchExpression", "isMatch": True}]}


def test_json_text_is_go_compact() -> None:
    text = to_json_text(validate(parse_spec("version: v1alpha1\ncompatibilities: [{description: '<&>'}]",
                                            source="t"), features()))
    assert text == '[{"rules":null,"description":"\\u003c\\u0026\\u003e"}]'


@pytest.mark.parametrize("text, msg", [
    ("[1, 2]", "must be a mapping"),
    ("version: v1alpha1\ncompatibilities: [{weight: 1.5}]", "weight: must be an integer"),
    ("version: v1alpha1\ncompatibilities: [{tag: [x]}]", "tag: must be a string"),
    ("version: v1alpha1\ncompatibilities: [{rules: [{matchAny: 3}]}]", "matchAny"),
    ("version: v1alpha1\ncompatibilities: [{rules: [{matchFeatures: [{feature: a.b, matchExpressions: "
     "{x: {op: InRegexp, value: ['(']}}}]}]}]", "matchExpressions.x"),
    ("", "empty compatibility spec"),
])
def test_malformed_specs(text: str, msg: str) -> None:
    with pytest.raises(SpecError, match=None) as e:
        parse_spec(text.encode(), source="artifact sha256:x")
    assert msg in str(e.value) and str(e.value).startswith("artifact sha256:x")


def test_reference_and_platform_parsing() -> None:
    r = parse_reference("127.0.0.1:5000/team/app:v1.2")
    assert (r.registry, r.repository, r.tag, r.reference) == ("127.0.0.1:5000", "team/app", "v1.2", "v1.2")
    d = "sha256:" + "a" * 64
    assert parse_reference(f"reg.example/app@{d}").reference == d
    for bad in ("ubuntu:22.04", "reg/UPPER:v1", "reg/app:bad tag", "reg/app@nodigest"):
        with pytest.raises(ReferenceError_):
            parse_reference(bad)
    p = parse_platform("linux/arm/v7:10.0")
    assert p is not None and (p.os, p.architecture, p.variant, p.os_version) == ("linux", "arm", "v7", "10.0")
    assert parse_platform("") is None
    with pytest.raises(ValueError, match="expected format"):
        parse_platform("a/b/c/d")


def test_docs_sample_spec_is_valid() -> None:
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "docs" / "examples" / "image-compatibility.yaml"
    spec = parse_spec(path.read_bytes(), source=str(path))
    assert [c.tag for c in spec.compatibilities] == ["sriov", "gpu"]


def test_pflag_booleans_and_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    from nfd.cli.compat import _pflag_bools, main

    assert _pflag_bools(["--plain-http=true", "--output-json=false", "--image=x"]) == ["--plain-http", "--image=x"]
    assert main(["validate-node", "--image", "reg/app:v1", "--plain-http=maybe"]) == 1
    assert "invalid argument" in capsys.readouterr().err
    assert main(["validate-node", "--image", "reg/app:v1", "--platform", "a/b/c/d"]) == 1
    assert "expected format" in capsys.readouterr().err


def test_validate_node_with_a_local_spec_file(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """--spec-file checks a spec being written against this node, with no registry."""
    from pathlib import Path

    from nfd.cli.compat import main

    repo = Path(__file__).resolve().parents[3]
    spec = repo / "docs" / "examples" / "image-compatibility.yaml"
    sriov = repo / "tests" / "fixtures" / "sysfs" / "sriov-host" / "root"
    gpu = repo / "tests" / "fixtures" / "sysfs" / "gpu-server" / "root"
    results = {}
    for name, root in (("sriov", sriov), ("gpu", gpu)):
        assert main(["validate-node", "--spec-file", str(spec), "--host-root", str(root), "--output-json"]) == 0
        sets = json.loads(capsys.readouterr().out)
        results[name] = {s["tag"]: [r["isMatch"] for r in s["rules"]] for s in sets}
    assert results["sriov"]["sriov"][1] is True and results["sriov"]["gpu"] == [False]
    assert results["gpu"]["gpu"] == [True]
    # the table form, and the tag filter, as with --image
    assert main(["validate-node", "--spec-file", str(spec), "--host-root", str(gpu), "--tags", "gpu"]) == 0
    out = capsys.readouterr().out
    assert "RULE: AN NVIDIA GPU -  OK" in out and "SR-IOV" not in out
    # bad inputs: one line each, non-zero
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: v9\n")
    assert main(["validate-node", "--spec-file", str(bad)]) == 5
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"Error: malformed compatibility spec: {bad}: version")
    assert main(["validate-node", "--spec-file", str(tmp_path / "none.yaml")]) == 1
    assert "--spec-file" in capsys.readouterr().err
    assert main(["validate-node", "--spec-file", str(spec), "--image", "reg.io/a:b"]) == 1
    assert "cannot be used together" in capsys.readouterr().err
    assert main(["validate-node"]) == 1
    assert 'required flag(s) "image" not set' in capsys.readouterr().err
