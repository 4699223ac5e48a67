"""``kubectl-nfd validate|dryrun``: upstream's flags, messages, sections and exit codes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nfd.cli.kubectl_nfd import main

RULES = """
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: sample}
spec:
  rules:
  - name: cpu
    labels:
      example.com/avx: "true"
      example.com/vendor: "@cpu.model.vendor_id"
      unprefixed: x
    annotations: {example.com/note: hello}
    taints: [{key: example.com/t, value: v, effect: NoSchedule}]
    extendedResources: {example.com/cores: "@cpu.model.family"}
    matchFeatures:
    - feature: cpu.cpuid
      matchExpressions: {AVX: {op: Exists}}
  - name: not-matching
    labels: {example.com/never: "true"}
    matchFeatures:
    - feature: cpu.cpuid
      matchExpressions: {AVX512F: {op: Exists}}
"""

NODEFEATURE = """
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeature
metadata: {name: node-1}
spec:
  features:
    flags:
      cpu.cpuid: {elements: {AVX: {}}}
    attributes:
      cpu.model: {elements: {vendor_id: Intel, family: "6"}}
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def test_dryrun_sections_as_upstream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules, nf = write(tmp_path, "r.yaml", RULES), write(tmp_path, "nf.yaml", NODEFEATURE)
    assert main(["dryrun", "-f", rules, "-n", nf]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        f'Evaluating NodeFeatureRule "{rules}" against NodeFeature "{nf}"',
        "Processing rule:  cpu",
        "Processing rule:  not-matching",
        "***\tTaints\t***",
        "{example.com/t v NoSchedule <nil>}",
        "***\tLabels\t***",
        "example.com/avx=true",
        "example.com/vendor=Intel",
        "unprefixed=x",
        "\t-Validation errors-",
        'invalid label "unprefixed":"x" unprefixed keys are not allowed',
        "***\tExtended Resources\t***",
        "example.com/cores=6",
        "***\tAnnotations\t***",
        "example.com/note=hello",
        f'NodeFeatureRule "{rules}" is valid for NodeFeature "{nf}"',
    ]


def test_dryrun_long_flags_and_rule_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = write(tmp_path, "r.yaml", RULES + textwrap.indent(textwrap.dedent("""
        - name: broken
          labels: {example.com/b: "1"}
          matchFeatures:
          - feature: cpu.model
            matchExpressions: {family: {op: Gt, value: ["six"]}}
        - name: missing-dynamic
          labels: {example.com/d: "@cpu.model.nope"}
        """), "  "))
    nf = write(tmp_path, "nf.yaml", NODEFEATURE)
    assert main(["dryrun", "--nodefeaturerule-file", rules, "--nodefeature-file", nf]) == 1
    cap = capsys.readouterr()
    assert f'NodeFeatureRule "{rules}" is not valid for NodeFeature "{nf}"' in cap.out
    err = cap.err.splitlines()
    assert err[0].startswith('failed to process rule: "broken" - ') and "six" in err[0]
    assert err[1] == ('failed to get dynamic value for label "example.com/d": '
                      "element nope not found on feature cpu.model")


def test_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path, "good.yaml", """
        apiVersion: nfd.k8s-sigs.io/v1alpha1
        kind: NodeFeatureRule
        metadata: {name: ok}
        spec:
          rules:
          - name: r1
            labels: {example.com/x: "@cpu.model.family"}
            extendedResources: {example.com/n: "@cpu.model.family"}
            matchFeatures: [{feature: cpu.cpuid, matchExpressions: {AVX: {op: Exists}}}]
        """)
    assert main(["validate", "-f", good]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"Validating NodeFeatureRule {good}", "Validating rule:  r1", f"NodeFeatureRule {good} is valid"]
    bad = write(tmp_path, "bad.yaml", """
        apiVersion: nfd.k8s-sigs.io/v1alpha1
        kind: NodeFeatureRule
        metadata: {name: bad}
        spec:
          rules:
          - labels: {kubernetes.io/x: "y"}
            annotations: {nope: v}
            taints: [{key: example.com/t, effect: Sometimes}]
            extendedResources: {example.com/n: "lots"}
            labelsTemplate: "{{ .x "
            matchFeatures: [{feature: cpuid, matchExpressions: {AVX: {op: Exists}}}]
        """)
    assert main(["validate", "--nodefeaturerule-file", bad]) == 1
    cap = capsys.readouterr()
    assert cap.out.splitlines()[-1] == f"NodeFeatureRule {bad} is not valid"
    err = cap.err.splitlines()
    assert err[0] == "rule name cannot be empty"
    assert err[1] == 'invalid annotation "nope":"v" unprefixed keys are not allowed'
    assert err[2] == 'invalid label "kubernetes.io/x":"y" namespace is not allowed'
    assert err[3] == "invalid taint example.com/t=:Sometimes: invalid taint effect"
    assert err[4].startswith('invalid extended resource "example.com/n":"lots" invalid value')
    assert len(err) == 7 and err[6] == (
        "invalid feature name cpuid (not <domain>.<feature>), cannot be used for templating")


@pytest.mark.parametrize("argv, missing", [
    (["validate"], '"nodefeaturerule-file"'),
    (["dryrun", "-f", "x"], '"nodefeature-file"'),
    (["test", "-f", "x"], '"nodename"'),
])
def test_required_flags_exit_1(argv: list[str], missing: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 1
    assert f"Error: required flag(s) {missing} not set" in capsys.readouterr().err


def test_unreadable_files_exit_1_without_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-f", str(tmp_path / "none.yaml")]) == 1
    assert "error reading NodeFeatureRule file" in capsys.readouterr().err
    notyaml = write(tmp_path, "bad.yaml", "a: [\n")
    assert main(["dryrun", "-f", notyaml, "-n", notyaml]) == 1
    assert "not valid YAML" in capsys.readouterr().err
    wrong = write(tmp_path, "wrong.yaml", "spec: {rules: 3}\n")
    assert main(["validate", "-f", wrong]) == 1
    assert "spec.rules" in capsys.readouterr().err


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    for cmd in ("dryrun", "test", "validate"):
        assert cmd in out
