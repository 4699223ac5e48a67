"""``kubectl-nfd validate|dryrun``: upstream's flags, messages, sections and exit codes."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

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
        "unprefixed=x",  # nfd-master publishes it as feature.node.kubernetes.io/unprefixed: no error
        "***\tExtended Resources\t***",
        "example.com/cores=6",
        "***\tAnnotations\t***",
        "example.com/note=hello",
        f'NodeFeatureRule "{rules}" is valid for NodeFeature "{nf}"',
    ]


def test_dryrun_exit_status_follows_validation_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A section's validation errors make the dry run fail: it never says "is valid" after them
    (nfd-master would not publish the label)."""
    rules = write(tmp_path, "r.yaml", """
        apiVersion: nfd.k8s-sigs.io/v1alpha1
        kind: NodeFeatureRule
        metadata: {name: long}
        spec:
          rules:
          - name: long-value
            labels: {example.com/long: "%s"}
        """ % ("x" * 64))
    nf = write(tmp_path, "nf.yaml", NODEFEATURE)
    assert main(["dryrun", "-f", rules, "-n", nf]) == 1
    cap = capsys.readouterr()
    lines = cap.out.splitlines()
    i = lines.index("\t-Validation errors-")
    assert lines[i + 1].startswith('invalid label "example.com/long":')
    assert lines[-1] == f'NodeFeatureRule "{rules}" is not valid for NodeFeature "{nf}"'
    assert not any(line.endswith(" is valid for NodeFeature " + f'"{nf}"') for line in lines)
    assert cap.err.startswith('Labels: invalid label "example.com/long":')


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
    assert cap.out.splitlines() == [f"Validating NodeFeatureRule {bad}", "Validating rule:  ",
                                    f"NodeFeatureRule {bad} is not valid"]
    # what the master would refuse, each with its field path (nfd.rules.lint.check_object)
    assert cap.err.splitlines() == [
        "spec.rules[0].name: required",
        "spec.rules[0].labelsTemplate: failed to parse template: template: :1: unclosed action",
        'spec.rules[0].matchFeatures[0].feature: invalid feature name "cpuid" (not <domain>.<feature>)',
        "spec.rules[0].labels.kubernetes.io/x: namespace is not allowed",
        'spec.rules[0].extendedResources.example.com/n: invalid value "lots": quantities must match '
        "the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        'spec.rules[0].taints[0]: invalid taint effect "Sometimes": must be one of NoSchedule, '
        "PreferNoSchedule, NoExecute",
    ]


BAD_RULES = {
    "operator": 'matchFeatures: [{feature: cpu.cpuid, matchExpressions: {AVX: {op: Equals}}}]',
    "regexp": 'matchFeatures: [{feature: cpu.model, matchExpressions: {vendor_id: {op: InRegexp, value: ["("]}}}]',
    "cel": 'matchCEL: ["flags[\\"cpu.cpuid\\"].AVX &&"]',
    "template": 'labelsTemplate: "{{ .x "',
    "label": 'labels: {"kubernetes.io/x": "1"}',
    "values": 'matchFeatures: [{feature: cpu.model, matchExpressions: {family: {op: Gt}}}]',
}


@pytest.mark.parametrize("what", sorted(BAD_RULES))
def test_validate_finds_what_nfd_rules_validate_finds(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      what: str) -> None:
    """Both validators report the same problems, each what nfd-master would refuse; upstream's
    plugin says "is valid" for an unknown operator, a bad regexp or CEL."""
    from nfd.cli.rules import main as rules_main

    path = write(tmp_path, "r.yaml", f"""
        apiVersion: nfd.k8s-sigs.io/v1alpha1
        kind: NodeFeatureRule
        metadata: {{name: bad}}
        spec:
          rules:
          - name: r
            {BAD_RULES[what]}
        """)
    assert main(["validate", "-f", path]) == 1
    ours = capsys.readouterr().err.splitlines()
    assert ours and not any(line.startswith("Warning") for line in ours)
    assert rules_main(["validate", "-f", path]) == 1
    theirs = [line.removeprefix(f"{path}: NodeFeatureRule 'bad': ") for line in capsys.readouterr().out.splitlines()]
    assert theirs[-1] == f"{len(ours)} problem(s) found"  # the summary, on stdout
    assert ours == theirs[:-1]


@pytest.mark.parametrize("text, msg", [
    ("", "no NodeFeatureRule or NodeFeatureGroup object found (the file is empty)"),
    (RULES.replace("nfd.k8s-sigs.io/v1alpha1", "nfd.k8s-sigs.io/v1"), "apiVersion: must be 'nfd.k8s-sigs.io/v1alpha1'"),
    (RULES.replace("kind: NodeFeatureRule", "kind: NodeFeature"), "kind: must be 'NodeFeatureRule' or 'NodeFeatureGroup', got 'NodeFeature'"),
])
def test_validate_refuses_empty_files_and_wrong_kinds(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      text: str, msg: str) -> None:
    path = write(tmp_path, "r.yaml", text)
    assert main(["validate", "-f", path]) == 1
    cap = capsys.readouterr()
    assert cap.out.splitlines()[-1] == f"NodeFeatureRule {path} is not valid"
    assert msg in cap.err


def test_unknown_fields_are_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = write(tmp_path, "r.yaml", """
        apiVersion: nfd.k8s-sigs.io/v1alpha1
        kind: NodeFeatureRule
        metadata: {name: typo}
        spec:
          rules:
          - name: r
            labels: {example.com/x: "1"}
            matchFeature: [{feature: cpu.cpuid, matchExpressions: {AVX512F: {op: Exists}}}]
        """)
    msg = ("spec.rules[0].matchFeature: unknown field; did you mean matchFeatures? "
           "(as written, the rule has no match term and matches every node)")
    assert main(["validate", "-f", rules]) == 1  # kubectl apply refuses it (strict field validation)
    cap = capsys.readouterr()
    assert cap.err == msg + "\n"
    assert cap.out.splitlines()[-1] == f"NodeFeatureRule {rules} is not valid"
    nf = write(tmp_path, "nf.yaml", NODEFEATURE)
    assert main(["dryrun", "-f", rules, "-n", nf]) == 1
    cap = capsys.readouterr()
    assert cap.err == msg + "\n"
    assert "example.com/x=1" in cap.out  # the typo made the rule match every node: hence the error
    assert cap.out.splitlines()[-1] == f'NodeFeatureRule "{rules}" is not valid for NodeFeature "{nf}"'


def test_dryrun_refuses_a_rule_file_as_the_nodefeature(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = write(tmp_path, "r.yaml", RULES)
    assert main(["dryrun", "-f", rules, "-n", rules]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"error parsing NodeFeature: {rules}: the document is a NodeFeatureRule, not a NodeFeature"]
    nf = write(tmp_path, "nf.yaml", NODEFEATURE)
    assert main(["dryrun", "-f", nf, "-n", nf]) == 1
    assert "the document is a NodeFeature, not a NodeFeatureRule" in capsys.readouterr().err


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
    wrong = write(tmp_path, "wrong.yaml", "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\n"
                                          "metadata: {name: w}\nspec: {rules: 3}\n")
    assert main(["validate", "-f", wrong]) == 1
    assert "spec.rules: must be a list" in capsys.readouterr().err


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    for cmd in ("dryrun", "test", "validate"):
        assert cmd in out


def test_fleet_test_names_unknown_fields_as_kubectl_apply_refuses_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``test -A`` predicts an apply: an unknown field is an error (exit 1), the report is for
    the object as the API server stores it without strict validation (the field pruned)."""
    import json

    from nfd.cli import fleet

    seen: list[Any] = []

    def fetch_and_plan(**kw: Any) -> fleet.FleetReport:
        seen.append(kw["file_rules"])
        return fleet.FleetReport(nodes=["n1"])

    monkeypatch.setattr(fleet, "fetch_and_plan", fetch_and_plan)
    rules = write(tmp_path, "r.yaml", """
        apiVersion: nfd.k8s-sigs.io/v1alpha1
        kind: NodeFeatureRule
        metadata: {name: typo}
        spec:
          rules:
          - name: r
            labels: {example.com/x: "1"}
            matchFeature: [{feature: cpu.cpuid, matchExpressions: {AVX512F: {op: Exists}}}]
        """)
    assert main(["test", "-f", rules, "-A"]) == 1
    cap = capsys.readouterr()
    assert cap.err == ("error: NodeFeatureRule 'typo': spec.rules[0].matchFeature: unknown field; did you mean "
                       "matchFeatures? (as written, the rule has no match term and matches every node) (kubectl apply "
                       "refuses the object; the report is for it without the field)\n")
    assert "1 node(s)" in cap.out and seen
    assert main(["test", "-f", rules, "-A", "-o", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["unknownFields"] == [
        "NodeFeatureRule 'typo': spec.rules[0].matchFeature: unknown field; did you mean matchFeatures? "
        "(as written, the rule has no match term and matches every node)"]
