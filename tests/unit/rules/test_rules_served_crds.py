"""Validation against the CRDs a cluster serves when they are not ours (issue 48): an older
NFD's CRDs (the GPU Operator bundles NFD 0.19's, and Helm does not upgrade CRDs) prune
``matchCEL``, which leaves a rule that matches every node. ``nfd rules validate --crds DIR`` and
``kubectl nfd validate --crds DIR`` name every field the served schema would prune, the rules
that would then match every node, and what that schema refuses. The older CRDs are written
here as a copy of ours without the fields (no upstream file is fetched)."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfd.api.crds import load_crds
from nfd.api.schema import object_schema, pruned_fields
from nfd.cli.kubectl_nfd import main as kubectl_main
from nfd.cli.rules import main as rules_main

RULES = textwrap.dedent("""\
    apiVersion: nfd.k8s-sigs.io/v1alpha1
    kind: NodeFeatureRule
    metadata: {name: cel}
    spec:
      rules:
      - name: a100
        labels: {example.com/a100: "true"}
        matchCEL:
        - instances["pci.device"].exists(d, d.vendor == "10de")
      - name: both
        labels: {example.com/both: "true"}
        matchCEL: ["true"]
        matchFeatures: [{feature: cpu.cpuid, matchExpressions: {AVX: {op: Exists}}}]
      - name: plain
        labels: {example.com/plain: "true"}
        matchFeatures: [{feature: kernel.version, matchExpressions: {major: {op: Ge, value: ["5"]}}}]
    """)
GROUP = textwrap.dedent("""\
    apiVersion: nfd.k8s-sigs.io/v1alpha1
    kind: NodeFeatureGroup
    metadata: {name: g, namespace: default}
    spec:
      featureGroupRules:
      - name: g
        matchFeatures: [{feature: cpu.cpuid, matchExpressions: {AVX: {op: Exists}}}]
    """)


def older_crds(tmp_path: Path, *, drop_ops: tuple[str, ...] = (), only: tuple[str, ...] = ()) -> Path:
    """Our CRDs without matchCEL (and without ``drop_ops`` in the operator enum; only the kinds
    ``only`` when given), as an older release's files."""
    out = []
    for crd in load_crds():
        crd = copy.deepcopy(crd)
        kind = crd["spec"]["names"]["kind"]
        if only and kind not in only:
            continue
        for v in crd["spec"]["versions"]:
            spec = v["schema"]["openAPIV3Schema"]["properties"].get("spec", {}).get("properties", {})
            for lf in ("rules", "featureGroupRules"):
                if lf in spec:
                    rule = spec[lf]["items"]["properties"]
                    rule.pop("matchCEL", None)
                    expr = rule["matchFeatures"]["items"]["properties"]["matchExpressions"]["additionalProperties"]
                    expr["properties"]["op"]["enum"] = [o for o in expr["properties"]["op"]["enum"] if o not in drop_ops]
        out.append(crd)
    d = tmp_path / "crds-old"
    d.mkdir()
    (d / "nfd-api-crds.yaml").write_text(yaml.safe_dump_all(out))
    return d


def write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_pruned_fields() -> None:
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"a": {"type": "string"}, "l": {"type": "array", "items": {
            "type": "object", "properties": {"x": {"type": "string"}}}}, "m": {"type": "object",
                                                                               "additionalProperties": {"type": "string"}},
            "keep": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}
    obj: dict[str, Any] = {"apiVersion": "v", "kind": "K", "metadata": {"name": "n"}, "other": 1,
                           "spec": {"a": "1", "b": 2, "l": [{"x": "1", "y": 2}], "m": {"k": "v"}, "keep": {"z": 1}}}
    assert pruned_fields(obj, schema) == ["other", "spec.b", "spec.l[0].y"]
    # ours prune nothing of a valid rule
    assert pruned_fields(yaml.safe_load(RULES), object_schema("NodeFeatureRule")) == []


def test_validate_against_older_crds_names_what_they_prune(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = older_crds(tmp_path)
    rules = write(tmp_path, "r.yaml", RULES)
    assert rules_main(["validate", "-f", rules]) == 0  # against ours: valid
    capsys.readouterr()
    assert rules_main(["validate", "-f", rules, "--crds", str(old)]) == 1
    out = capsys.readouterr().out.splitlines()
    head = f"{rules}: NodeFeatureRule 'cel': "
    pruned = (f": not in the schema of the CRDs in {old}: the API server prunes this field, so nfd-master never "
              "sees it; upgrade the CRDs: kubectl apply --server-side --force-conflicts -k crds/")
    assert out == [
        f"{head}spec.rules[0].matchCEL{pruned}",
        f"{head}spec.rules[0]: with matchCEL pruned by the CRDs in {old}, the rule has no match term left and "
        "matches every node",
        f"{head}spec.rules[1].matchCEL{pruned}",  # still has matchFeatures: it matches more nodes, not all
        "3 problem(s) found",
    ]
    # kubectl nfd validate says the same
    assert kubectl_main(["validate", "-f", rules, "--crds", str(old)]) == 1
    cap = capsys.readouterr()
    assert cap.err.splitlines() == [line.removeprefix(head) for line in out[:-1]]
    assert cap.out.splitlines()[-1] == f"NodeFeatureRule {rules} is not valid"


def test_what_the_served_schema_refuses_and_a_kind_it_does_not_serve(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    old = older_crds(tmp_path, drop_ops=("Ge", "Le", "GeLe"), only=("NodeFeatureRule",))
    rules = write(tmp_path, "r.yaml", RULES.replace('matchCEL: ["true"]\n    ', "") + "---\n" + GROUP)
    assert rules_main(["validate", "-f", rules, "--crds", str(old)]) == 1
    out = capsys.readouterr().out
    assert ("spec.rules[2].matchFeatures[0].matchExpressions.major.op: unsupported value \"Ge\": supported values: "
            f'"In", "NotIn", "InRegexp", "Exists", "DoesNotExist", "Gt", "Lt", "GtLt", "IsTrue", "IsFalse" '
            f"(the CRDs in {old})") in out
    assert (f"NodeFeatureGroup 'g': the CRDs in {old} serve no NodeFeatureGroup nfd.k8s-sigs.io/v1alpha1: the API "
            "server refuses the object; upgrade the CRDs") in out


def test_a_crd_directory_that_cannot_be_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = write(tmp_path, "r.yaml", RULES)
    assert rules_main(["validate", "-f", rules, "--crds", str(tmp_path / "nope")]) == 2
    assert "--crds" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert rules_main(["validate", "-f", rules, "--crds", str(tmp_path / "empty")]) == 2
    assert "no CustomResourceDefinition" in capsys.readouterr().err
    assert kubectl_main(["validate", "-f", rules, "--crds", str(tmp_path / "empty")]) == 1
    assert "no CustomResourceDefinition" in capsys.readouterr().err
