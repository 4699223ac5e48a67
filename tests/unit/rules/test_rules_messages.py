"""Messages that teach (issue 48): each names what to write instead.

- ``Lt``/``Gt``/... on a value that is no integer but reads as a version points at
  ``type: version`` (upstream's MatchExpression ``type``: the ordering operators compare versions
  with it, integers without), in validation and when a node's value is compared;
- a CEL field selection on a feature map (``attributes.kernel.version.major``) says how to index
  it (``attributes["kernel.version"]["major"]``), at compile time and at run time;
- a term's feature that no source publishes (``nvml.gpus``) names the nearest published one,
  from the sources' own ``features`` (nfd.sources.registry.published_features).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nfd.api.errors import ValidationError
from nfd.api.features import Features
from nfd.cli.rules import main as rules_main
from nfd.rules.cel import CelEvalError, compile_expressions
from nfd.rules.engine import compile_nodefeaturerule, process_rule_sets
from nfd.rules.lint import check_object
from nfd.sources import registry

HINT = "the ordering operators compare integers: to compare versions, add type: version to the expression"
FIXTURE_HOSTS = sorted(d / "root" for d in (Path(__file__).resolve().parents[2] / "fixtures" / "sysfs").iterdir()
                       if (d / "root").is_dir())


def nfr(*rules: dict) -> dict:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "m"},
            "spec": {"rules": list(rules)}}


def kver(op: str, *values: str, **extra: str) -> dict:
    return {"name": "r", "labels": {"example.com/k": "1"}, "matchFeatures": [
        {"feature": "kernel.version", "matchExpressions": {"full": {"op": op, "value": list(values), **extra}}}]}


@pytest.mark.parametrize("op, values", [("Lt", ["5.15"]), ("Ge", ["6.8.0"]), ("GtLt", ["5.4", "6.1"])])
def test_an_integer_comparison_of_a_version_points_at_type_version(op: str, values: list[str]) -> None:
    problems = check_object(nfr(kver(op, *values))).problems
    assert len(problems) == 1
    path, msg = problems[0]
    assert path == "spec.rules[0].matchFeatures[0].matchExpressions.full.value"
    assert msg.startswith(f'not a number "{values[0]}" in ') and msg.endswith(HINT)
    # with type: version, it is valid
    assert check_object(nfr(kver(op, *values, type="version"))).problems == []


def test_a_bound_that_is_no_version_either_gets_no_hint() -> None:
    (_, msg), = check_object(nfr(kver("Lt", "five"))).problems
    assert msg == 'not a number "five" in {op: "Lt", value: ["five"]}'


def test_a_node_value_that_is_a_version_points_at_type_version() -> None:
    f = Features()
    f.attributes["kernel.version"] = {"full": "5.15.0-105-generic"}
    res = process_rule_sets([compile_nodefeaturerule(nfr(kver("Gt", "5")))], f)
    assert res.errors == [("r", 'spec.rules[0].matchFeatures[0].matchExpressions.full: not a number '
                                '"5.15.0-105-generic"; ' + HINT)]
    f.attributes["kernel.version"] = {"full": "weird"}
    res = process_rule_sets([compile_nodefeaturerule(nfr(kver("Gt", "5")))], f)
    assert res.errors == [("r", 'spec.rules[0].matchFeatures[0].matchExpressions.full: not a number "weird"')]


@pytest.mark.parametrize("expr, hint", [
    ('attributes.kernel.version.major == "5"',
     'index it, attributes["kernel.version"]["major"], not attributes.kernel.version.major'),
    ('"AVX2" in flags.cpu.cpuid', 'index it, flags["cpu.cpuid"], not flags.cpu.cpuid'),
    ('instances.pci.device.exists(d, d.vendor == "10de")', 'index it, instances["pci.device"], not instances.pci.device'),
])
def test_a_field_selection_on_a_feature_map_says_how_to_index_it(expr: str, hint: str) -> None:
    with pytest.raises(ValidationError) as e:
        compile_expressions([expr], path="spec.rules[0].matchCEL")
    msg = str(e.value)
    assert "does not support field selection" in msg
    assert "is a map keyed by feature name (<domain>.<feature>, with a dot)" in msg and msg.endswith(hint)


def test_a_field_selection_that_fails_at_run_time_says_how_to_index_it() -> None:
    m = compile_expressions(['attributes.kernel.version == "5"'], path="spec.rules[0].matchCEL")
    with pytest.raises(CelEvalError) as e:
        m.evaluate(Features(), node_name="n")
    assert str(e.value).endswith("no such key: 'version'; attributes is a map keyed by feature name "
                                 '(<domain>.<feature>, with a dot): index it, attributes["kernel.version"], '
                                 "not attributes.kernel.version")
    # an expression that indexes the map has no hint
    with pytest.raises(CelEvalError) as e:
        compile_expressions(['attributes["kernel.version"]["nope"] == "5"'], path="p").evaluate(
            Features(), node_name="n")
    assert "index it" not in str(e.value)


def test_published_features_are_the_sources_own() -> None:
    published = registry.published_features()
    assert {"nvml.gpu", "nvml.mig", "cpu.cpuid", "pci.device", "kernel.version", "local.label"} <= published
    for name in registry.names():
        src = registry.get(name)
        assert src is not None
        assert all(f.startswith(name + ".") and f.count(".") == 1 for f in src.features), name
        assert bool(src.features) == src.is_feature_source, name  # custom is label-only


@pytest.mark.parametrize("root", FIXTURE_HOSTS, ids=[p.parent.name for p in FIXTURE_HOSTS])
def test_every_feature_a_source_discovers_is_declared(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The declared ``features`` are what discover() publishes, on every fixture host (the nvml
    source with a recorded profile, fake with its defaults)."""
    from nfd.hostpaths import HostPaths
    from nfd.sources.base import DiscoveryContext

    monkeypatch.setenv("NFD_NVML_PROFILE", "h100x8")
    for name in registry.names():
        src = registry.get(name)
        assert src is not None
        if not src.is_feature_source:
            continue
        ctx = DiscoveryContext(paths=HostPaths.under(str(root)), node_name="n1")
        try:
            f = src.discover(ctx, src.parse_config(None, path=f"sources.{name}"))
        except OSError:  # the host lacks what the whole source needs (no sys/class/net)
            continue
        found = set(f.flags) | set(f.attributes) | set(f.instances)
        assert found <= set(src.features), (name, found - set(src.features))


def test_a_feature_no_source_publishes_names_the_nearest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "r.yaml"
    p.write_text(textwrap.dedent("""\
        apiVersion: nfd.k8s-sigs.io/v1alpha1
        kind: NodeFeatureRule
        metadata: {name: gpu}
        spec:
          rules:
          - name: gpu
            labels: {example.com/gpu: "true", example.com/count: "@nvml.gpus.count"}
            extendedResources: {example.com/gpus: "@pci.count.10de", example.com/ok: "@rule.matched.x"}
            matchCEL:
            - instances["pci.devices"].exists(d, d.vendor == "10de") && attributes["kernel.version"].major == "6"
            matchFeatures:
            - feature: nvml.gpus
              matchExpressions: {count: {op: Gt, value: ["0"]}}
            matchAny:
            - matchFeatures:
              - feature: pci.zzz
            - matchFeatures:
              - feature: vendor.example      # another producer's domain: not judged
              - feature: rule.matched
              - feature: CPU.cpuid           # looked up lower-cased, as the engine does
        """))
    assert rules_main(["validate", "-f", str(p)]) == 1
    out = capsys.readouterr().out.splitlines()
    head = f"{p}: NodeFeatureRule 'gpu': "
    assert out == [
        f'{head}spec.rules[0].labels.example.com/count: "@nvml.gpus.count": no source publishes feature "nvml.gpus"; '
        "did you mean nvml.gpu?",
        f'{head}spec.rules[0].extendedResources.example.com/gpus: "@pci.count.10de": no source publishes feature '
        '"pci.count" (the pci source publishes pci.device)',
        f'{head}spec.rules[0].matchFeatures[0].feature: no source publishes feature "nvml.gpus"; did you mean nvml.gpu?',
        f'{head}spec.rules[0].matchAny[0].matchFeatures[0].feature: no source publishes feature "pci.zzz" '
        "(the pci source publishes pci.device)",
        f'{head}spec.rules[0].matchCEL[0]: instances["pci.devices"]: no source publishes feature "pci.devices"; '
        "did you mean pci.device?",
        "5 problem(s) found",
    ]
    from nfd.cli.kubectl_nfd import main as kubectl_main

    assert kubectl_main(["validate", "-f", str(p)]) == 1
    err = capsys.readouterr().err
    assert 'spec.rules[0].matchFeatures[0].feature: no source publishes feature "nvml.gpus"; did you mean nvml.gpu?' in err


def test_the_hints_reach_the_validate_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "r.yaml"
    p.write_text(textwrap.dedent("""\
        apiVersion: nfd.k8s-sigs.io/v1alpha1
        kind: NodeFeatureRule
        metadata: {name: k}
        spec:
          rules:
          - name: k
            labels: {example.com/k: "1"}
            matchFeatures:
            - feature: kernel.version
              matchExpressions: {full: {op: Lt, value: ["5.15"]}}
            matchCEL:
            - attributes.kernel.version.major == "5"
        """))
    assert rules_main(["validate", "-f", str(p)]) == 1
    out = capsys.readouterr().out
    assert HINT in out and 'attributes["kernel.version"]["major"]' in out
