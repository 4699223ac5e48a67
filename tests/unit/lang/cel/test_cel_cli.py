"""matchCEL through ``nfd rules validate`` and ``nfd rules dryrun``: errors name the rule and the
position, and a dry run names the CEL expression that was false."""

from __future__ import annotations

from pathlib import Path

import pytest

from nfd.cli.rules import main

NFR = """\
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: gpu
spec:
  rules:
    - name: nvidia
      labels: {example.com/nvidia: "true"}
      matchCEL:
        - instances["pci.device"].exists(d, d.vendor == "10de")
        - attributes["kernel.version"]["major"] >= "5"
    - name: numa
      labels: {example.com/numa: "true"}
      matchCEL:
        - %s
"""

NODEFEATURE = """\
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeature
metadata:
  name: n1
  namespace: node-feature-discovery
  labels: {nfd.node.kubernetes.io/node-name: n1}
spec:
  features:
    attributes:
      kernel.version: {elements: {full: "4.18.0", major: "4", minor: "18", revision: "0"}}
      memory.numa: {elements: {is_numa: "true", node_count: "2"}}
    instances:
      pci.device: {elements: [{attributes: {class: "0302", vendor: "10de", device: "20b5"}}]}
"""


def _write(tmp_path: Path, numa_expr: str) -> tuple[str, str]:
    rules = tmp_path / "nfr.yaml"
    rules.write_text(NFR % numa_expr)
    nf = tmp_path / "nf.yaml"
    nf.write_text(NODEFEATURE)
    return str(rules), str(nf)


def test_validate_reports_rule_and_position(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules, _ = _write(tmp_path, 'int(attributes["memory.numa"]["node_count"]) > "1"')
    assert main(["validate", "-f", rules]) == 1
    out = capsys.readouterr()
    text = out.out + out.err
    assert "spec.rules[1].matchCEL[0]: 1:46: no matching overload for '>' applied to (int, string)" in text


def test_validate_accepts_good_expressions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules, _ = _write(tmp_path, 'int(attributes["memory.numa"]["node_count"]) > 1')
    assert main(["validate", "-f", rules]) == 0


def test_dryrun_names_the_false_expression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules, nf = _write(tmp_path, 'int(attributes["memory.numa"]["node_count"]) > 1')
    assert main(["dryrun", "-f", rules, "--nodefeature", nf]) == 0
    out = capsys.readouterr().out
    assert "not matched: matchCEL: 'attributes[\"kernel.version\"][\"major\"] >= \"5\"' is not true" in out
    assert "feature.node.kubernetes.io/numa" not in out  # example.com is not auto-prefixed
    assert "example.com/numa" in out


def test_dryrun_reports_runtime_error_of_one_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules, nf = _write(tmp_path, 'int(attributes["kernel.version"]["full"]) > 1')
    assert main(["dryrun", "-f", rules, "--nodefeature", nf]) == 1
    out = capsys.readouterr().out
    assert "cannot convert '4.18.0' to int" in out
