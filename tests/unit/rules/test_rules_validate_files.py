"""One offline validation behind ``nfd rules validate`` and ``kubectl nfd validate`` (issue 40):
the two agree on every rule file of the docs, the fixtures and the deploy examples; the
newcomer's twelve-rule file passes and dry-runs; each of ten deliberate mistakes is caught with
every problem named; dryrun shows NodeFeatureGroups, conflicts and everything in JSON.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nfd.cli.kubectl_nfd import main as kubectl_main
from nfd.cli.rules import main as rules_main

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "rules"
NEWCOMER = FIXTURES / "newcomer.yaml"
GPU_NODE = FIXTURES / "gpu-node-features.yaml"
RULE_KIND = re.compile(r"^kind:\s*(NodeFeatureRule|NodeFeatureGroup)\s*$", re.M)


def rule_files(tmp: Path) -> list[Path]:
    """Every YAML file with a NodeFeatureRule/NodeFeatureGroup under docs/, tests/fixtures/ and
    deploy/ (the CRD manifests name the kinds but are CRDs), and every such YAML block of the
    docs' Markdown, written out to ``tmp``."""
    out: list[Path] = []
    for top in ("docs", "tests/fixtures", "deploy"):
        for p in sorted((ROOT / top).rglob("*")):
            if p.suffix in (".yaml", ".yml") and RULE_KIND.search(p.read_text(errors="replace")) \
                    and "CustomResourceDefinition" not in p.read_text(errors="replace"):
                out.append(p)
    for md in sorted((ROOT / "docs").rglob("*.md")):
        for i, block in enumerate(re.findall(r"```ya?ml\n(.*?)```", md.read_text(), re.S)):
            if RULE_KIND.search(block) and "apiVersion:" in block:
                p = tmp / f"{md.stem}-{i}.yaml"
                p.write_text(block)
                out.append(p)
    return out


def rules_validate(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, set[str], list[str]]:
    """(exit status, problem lines without the file and object, warning lines)."""
    rc = rules_main(["validate", "-f", str(path)])
    cap = capsys.readouterr()
    problems, warnings = set(), []
    lines = cap.out.splitlines()
    # the summary is the last line of stdout (the object count, or the problem count)
    assert lines and re.fullmatch(r"\d+ (object\(s\) valid|problem\(s\) found)", lines[-1]) or rc == 2, cap
    for line in lines[:-1] if rc != 2 else lines:
        line = line.removeprefix(f"{path}: ")
        body = re.sub(r"^(NodeFeatureRule|NodeFeatureGroup) '[^']*': ", "", line)
        if body.startswith("warning: "):
            warnings.append(body.removeprefix("warning: "))
        else:
            problems.add(body)
    if rc == 2:
        problems.add(cap.err.strip())
    return rc, problems, warnings


def kubectl_validate(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, set[str]]:
    rc = kubectl_main(["validate", "-f", str(path)])
    cap = capsys.readouterr()
    problems = set()
    for line in cap.err.splitlines():
        if line.startswith("Warning: "):
            continue
        problems.add(re.sub(r"^(NodeFeatureRule|NodeFeatureGroup) '[^']*': ", "", line))
    return rc, problems


def test_the_two_validators_agree_on_every_rule_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = rule_files(tmp_path)
    assert len(files) >= 25, files  # docs, samples, fixtures: the walk found them
    for path in files:
        rc, ours, _ = rules_validate(path, capsys)
        krc, theirs = kubectl_validate(path, capsys)
        assert (rc == 0) == (krc == 0), (path, ours, theirs)
        if rc == 1:
            assert ours == theirs, path


def test_the_newcomers_twelve_rules_validate_and_dry_run(capsys: pytest.CaptureFixture[str]) -> None:
    rc, problems, warnings = rules_validate(NEWCOMER, capsys)
    assert (rc, problems, warnings) == (0, set(), [])
    assert kubectl_main(["validate", "-f", str(NEWCOMER)]) == 0
    capsys.readouterr()
    assert rules_main(["dryrun", "-f", str(NEWCOMER), "--nodefeature", str(GPU_NODE), "--enable-taints",
                       "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["rules"]) == 11 and all(r["matched"] for r in out["rules"])
    assert out["labels"]["example.com/gpu-2330"] == "true" and out["labels"]["example.com/kernel-major"] == "6"
    assert out["extendedResources"] == {"example.com/gpus": "2"}
    assert out["taints"] == [{"key": "example.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert out["groups"] == [{
        "group": "newcomer-gpu-nodes", "namespace": "node-feature-discovery", "member": True,
        "memberName": "gpu-node-1", "rules": [{"ruleSet": "newcomer-gpu-nodes", "rule": "nvidia gpu nodes",
                                               "matched": True}]}]


# Every problem of each mistake file, as `nfd rules validate` prints it after the object's name.
MISTAKES: dict[str, list[str]] = {
    "01-duplicate-keys.yaml": [
        'line 11: mapping key "example.com/a" already defined at line 10',
        'line 16: mapping key "matchExpressions" already defined at line 14',
    ],
    "02-operators-and-values.yaml": [
        'spec.rules[0].matchFeatures[0].matchExpressions.vendor_id.op: unknown operator "Equals"',
        "spec.rules[0].matchFeatures[0].matchExpressions.family.value: invalid expression, 'value' field must "
        'contain exactly one element for Op "Gt" (have [6 7])',
        "spec.rules[0].matchFeatures[0].matchExpressions.id.value: invalid expression, 'value' field must be "
        'non-empty for Op "In"',
        "spec.rules[0].matchFeatures[0].matchExpressions.model.value: invalid expression, 'value' field must be "
        'empty for Op "Exists" (have [x])',
    ],
    "03-regexps.yaml": [
        "spec.rules[0].matchFeatures[0].matchExpressions.class.value[0]: error parsing regexp: missing closing ): "
        "`^03(`",
        "spec.rules[0].matchFeatures[0].matchExpressions.class.value[1]: error parsing regexp: missing closing ]: "
        "`[0-9`",
        "spec.rules[0].matchFeatures[0].matchName.value[0]: error parsing regexp: missing argument to repetition "
        "operator: `*`",
    ],
    "04-cel.yaml": [
        'spec.rules[0].matchFeatures[0].feature: invalid feature name "cpu" (not <domain>.<feature>)',
        "spec.rules[0].matchCEL[0]: 1:34: syntax error: unexpected ')' in \"flags['cpu.cpuid'].exists(x, x ==)\"",
        "spec.rules[0].matchCEL[1]: 1:36: syntax error: unexpected end of expression in "
        "\"attributes['kernel.version'].major >\"",
    ],
    "05-features.yaml": [
        "spec.rules[0].matchFeatures[0].feature: required",
        'spec.rules[0].matchFeatures[1].feature: invalid feature name "cpuid" (not <domain>.<feature>)',
        'spec.rules[0].matchAny[0].matchFeatures[0].feature: invalid feature name "kernel.version.major" '
        "(not <domain>.<feature>)",
    ],
    "06-types.yaml": [
        "spec.rules[0].name: must be a string, got number",
        "spec.rules[0].labels.example.com/count: must be a string, got number",
        "spec.rules[0].matchFeatures[0].matchExpressions.major.value: must be a list of strings, got string",
        "spec.rules[1].vars: must be a map of strings, got list",
        "spec.rules[1].matchAny: must be a list, got object",
    ],
    "07-taints.yaml": [
        "spec.rules[0].taints[2].effect: required",
        'spec.rules[0].taints[0]: invalid taint effect "NoScheduling": must be one of NoSchedule, '
        "PreferNoSchedule, NoExecute",
        "spec.rules[0].taints[1]: unprefixed keys are not allowed",
        "spec.rules[0].taints[3]: namespace is not allowed",
    ],
    "08-outputs.yaml": [
        'spec.rules[0].labelsTemplate: failed to parse template: template: :1: unexpected "}" in operand',
        'spec.rules[0].labels.example.com/long: invalid value "this-label-value-is-much-longer-than-sixty-three-'
        'characters-allowed-by-kubernetes": must be no more than 63 characters',
        "spec.rules[0].labels.kubernetes.io/gpu: namespace is not allowed",
        'spec.rules[0].labels.example.com/spaces: invalid value "not valid": a valid label must be an empty '
        "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        "spec.rules[0].labels.example.com/dynamic: value @kernel.version is not in the form of "
        "'@domain.feature.element'",
        "spec.rules[0].annotations.nfd.node.kubernetes.io/note: namespace is not allowed",
        'spec.rules[0].extendedResources.example.com/gpus: invalid value "lots": quantities must match the '
        "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ],
    "09-groups.yaml": [
        "spec.featureGroupRules: required",
        'spec.materializePolicy: unsupported value "Some": supported values: "Full", "CountOnly"',
        "spec.featureGroupRules[0].name: required",
        "spec.featureGroupRules[0].matchFeatures[0].matchExpressions.vendor.value: invalid expression, 'value' "
        'field must be non-empty for Op "In"',
        "spec.featureGroupRules[1].matchCEL[0]: 1:3: syntax error: unexpected end of expression in '1 +'",
    ],
    "10-object.yaml": [
        "apiVersion: must be 'nfd.k8s-sigs.io/v1alpha1', got 'nfd.k8s-sigs.io/v1'",
        "spec.rules[0].name: required",
    ],
}


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_each_mistake_is_caught_with_every_problem_named(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / "mistakes" / name
    rc, ours, warnings = rules_validate(path, capsys)
    krc, theirs = kubectl_validate(path, capsys)
    want = set(MISTAKES[name])
    if name == "10-object.yaml":  # the name's DNS-subdomain message is long: its field is enough
        ours = {p for p in ours if not p.startswith("metadata.name: a lowercase RFC 1123 subdomain")}
        theirs = {p for p in theirs if not p.startswith("metadata.name: a lowercase RFC 1123 subdomain")}
        assert 'spec.rules[2].name: "same" is also the name of spec.rules[1]' in warnings
        assert any(w.startswith('conflict: where both rules match, label "example.com/tier" is written with '
                                'different values by My_Rules/same ("gold"), My_Rules/same ("silver"); '
                                'nfd-master applies "silver"') for w in warnings)
    assert (rc, ours) == (1, want)
    assert (krc, theirs) == (1, want)


def test_validate_names_a_noexecute_taint_and_an_unresolved_at_in_an_annotation(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "r.yaml"
    p.write_text("""apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: notes}
spec:
  rules:
  - name: r
    taints: [{key: example.com/gpu, effect: NoExecute}]
    annotations: {example.com/vendor: "@cpu.model.vendor_id"}
""")
    rc, problems, warnings = rules_validate(p, capsys)
    assert (rc, problems) == (0, set())
    assert warnings[0].startswith("spec.rules[0].taints[0]: a NoExecute taint evicts the running pods that do "
                                  "not tolerate it: before enabling taints, make sure to edit nfd-worker daemonset "
                                  "to tolerate the taints to be created")
    assert warnings[1] == ("spec.rules[0].annotations.example.com/vendor: annotation values are published as "
                           "written, '@' is not resolved: the '@<feature-name>.<element-name>' format injects "
                           "feature values into labels and extended resources only")


TIERS = """apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: tier-b}
spec:
  rules:
  - name: silver
    labels: {tier: silver}
---
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: tier-a}
spec:
  rules:
  - name: gold
    labels: {tier: gold}
"""
TIER_CONFLICT = ('label "feature.node.kubernetes.io/tier" is written with different values by tier-a/gold ("gold"), '
                 'tier-b/silver ("silver"); nfd-master applies "silver" from tier-b/silver (NodeFeatureRules by '
                 "name, then rules in order; the last one wins)")


def test_validate_and_dryrun_name_conflicts_between_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "tiers.yaml"
    p.write_text(TIERS)
    rc, problems, warnings = rules_validate(p, capsys)
    assert (rc, problems) == (0, set())
    assert warnings == [f"conflict: where both rules match, {TIER_CONFLICT}"]
    assert rules_main(["dryrun", "-f", str(p), "--nodefeature", str(GPU_NODE), "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["labels"]["feature.node.kubernetes.io/tier"] == "silver"
    assert out["conflicts"] == [{
        "kind": "label", "key": "feature.node.kubernetes.io/tier",
        "writers": [{"rule": "tier-a/gold", "value": "gold"}, {"rule": "tier-b/silver", "value": "silver"}],
        "applied": {"rule": "tier-b/silver", "value": "silver"}, "message": TIER_CONFLICT}]
    assert rules_main(["dryrun", "-f", str(p), "--nodefeature", str(GPU_NODE)]) == 0
    assert f"Conflicts between rules:\n  {TIER_CONFLICT}\n" in capsys.readouterr().out


GROUP = """apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureGroup
metadata: {name: amd-nodes, namespace: nfd}
spec:
  featureGroupRules:
  - name: amd
    matchFeatures: [{feature: pci.device, matchExpressions: {vendor: {op: In, value: ["1002"]}}}]
"""


def test_dryrun_shows_group_membership(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    only = tmp_path / "group.yaml"
    only.write_text(GROUP)
    assert rules_main(["dryrun", "-f", str(only), "--nodefeature", str(GPU_NODE)]) == 0
    text = capsys.readouterr().out
    assert "NodeFeatureGroups:\n  nfd/amd-nodes: not a member\n    amd: not matched: " in text
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(TIERS + "---\n" + GROUP.replace('"1002"', '"10de"'))
    assert rules_main(["dryrun", "-f", str(mixed), "--nodefeature", str(GPU_NODE), "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(g["group"], g["member"], g["memberName"]) for g in out["groups"]] == [("amd-nodes", True, "gpu-node-1")]


def test_dryrun_json_carries_rejections_and_each_rules_outcome(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "r.yaml"
    p.write_text("""apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: j}
spec:
  rules:
  - name: long
    labels: {example.com/long: "@kernel.version.full"}
    taints: [{key: example.com/t, effect: NoSchedule}]
  - name: avx9
    labels: {example.com/avx9: "true"}
    matchFeatures: [{feature: cpu.cpuid, matchExpressions: {AVX9: {op: Exists}}}]
  - name: flag
    labels: {example.com/avx: "@cpu.cpuid.AVX512F"}
""")
    nf = tmp_path / "nf.yaml"
    nf.write_text(GPU_NODE.read_text().replace("6.8.0-45-generic", "6.8.0-" + "x" * 70))
    assert rules_main(["dryrun", "-f", str(p), "--nodefeature", str(nf), "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rejected = {(r["kind"], r["key"]): r["reason"] for r in out["rejected"]}
    assert rejected[("label", "example.com/long")].endswith("must be no more than 63 characters")
    assert rejected[("taint", "example.com/t:NoSchedule")] == "enableTaints is off"
    # '@' on a flag says why: '@' reads attribute features only
    assert rejected[("label", "example.com/avx")] == (
        "element AVX512F of feature cpu.cpuid is a flag, which has no value: '@' reads attribute features only "
        "(match the flag with {op: Exists} and write a literal value)")
    assert out["rules"][0] == {"ruleSet": "j", "rule": "long", "matched": True}
    avx9 = out["rules"][1]
    assert (avx9["rule"], avx9["matched"]) == ("avx9", False) and "AVX9" in avx9["reason"]
    assert out["node"] == "gpu-node-1"
    # the text says the same things
    assert rules_main(["dryrun", "-f", str(p), "--nodefeature", str(nf)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Node 'gpu-node-1' (system.name): what nfd-master would apply\n")
    for r in out["rejected"]:
        assert f"  {r['kind']} {r['key']}: {r['reason']}\n" in text
    assert f"  j/avx9: not matched: {out['rules'][1]['reason']}\n" in text


def test_dryrun_of_exported_features_without_a_node_name_names_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nf = tmp_path / "features.yaml"
    nf.write_text("flags:\n  cpu.cpuid:\n    elements: {AVX: {}}\n")
    p = tmp_path / "r.yaml"
    p.write_text(TIERS)
    assert rules_main(["dryrun", "-f", str(p), "--nodefeature", str(nf)]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head == f"The features in {nf}: what nfd-master would apply" and "Node ''" not in head


def test_the_same_rejection_is_worded_the_same_in_validate_and_dryrun(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "r.yaml"
    p.write_text("""apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: w}
spec:
  rules:
  - name: r
    labels: {example.com/form: "@kernel.version", example.com/v: "not valid"}
    taints: [{key: example.com/t, effect: Sometimes}]
""")
    rc, problems, _ = rules_validate(p, capsys)
    assert rc == 1
    assert rules_main(["dryrun", "-f", str(p), "--nodefeature", str(GPU_NODE), "--enable-taints", "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for r in out["rejected"]:
        field = {"label": "labels", "taint": "taints"}[r["kind"]]
        assert any(line.endswith(f": {r['reason']}") and f".{field}" in line for line in problems), (r, problems)


def test_a_cel_runtime_error_names_its_field_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "r.yaml"
    p.write_text("""apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: c}
spec:
  rules:
  - name: ok
    labels: {a: "1"}
  - name: bad
    labels: {b: "1"}
    matchCEL: ["attributes['kernel.version']['nope'] == 'x'"]
""")
    assert rules_main(["dryrun", "-f", str(p), "--nodefeature", str(GPU_NODE), "-o", "json"]) == 1
    err = json.loads(capsys.readouterr().out)["errors"][0]["message"]
    assert err.startswith("spec.rules[1].matchCEL[0] ") and "spec.rules[1]: " not in err


def test_duplicate_keys_are_refused_by_both_dryruns(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / "mistakes" / "01-duplicate-keys.yaml"
    assert rules_main(["dryrun", "-f", str(path), "--nodefeature", str(GPU_NODE)]) == 2
    assert 'line 11: mapping key "example.com/a" already defined at line 10' in capsys.readouterr().err
    assert kubectl_main(["dryrun", "-f", str(path), "-n", str(GPU_NODE)]) == 1
    assert 'line 11: mapping key "example.com/a" already defined at line 10' in capsys.readouterr().err
