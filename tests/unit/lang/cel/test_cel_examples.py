"""The worked examples of docs/cel.md, each written in upstream syntax and in CEL, evaluated side
by side through the rule engine on the same nodes: same match, same error (and the same labels)."""

from __future__ import annotations

from typing import Any

import pytest

from nfd.api.features import Features
from nfd.rules.engine import compile_rule, evaluate_rule


def _node(pci: list[dict[str, str]], kernel: str | None, numa_nodes: int | None, flags: list[str]) -> Features:
    f = Features()
    f.add_instances("pci.device", pci)
    if kernel is not None:
        major, minor = kernel.split(".")[:2]
        f.add_attributes("kernel.version", {"full": kernel, "major": major, "minor": minor, "revision": ""})
    if numa_nodes is not None:
        f.add_attributes("memory.numa", {"is_numa": str(numa_nodes > 1).lower(), "node_count": str(numa_nodes)})
    f.add_flags("cpu.cpuid", flags)
    return f


A100 = {"class": "0302", "vendor": "10de", "device": "20b5", "subsystem_vendor": "10de", "subsystem_device": "1533"}
T4 = {"class": "0302", "vendor": "10de", "device": "1eb8", "subsystem_vendor": "10de", "subsystem_device": "12a2"}
BRIDGE = {"class": "0600", "vendor": "8086", "device": "a70d", "subsystem_vendor": "8086", "subsystem_device": "0000"}
CX6_PF = {"class": "0200", "vendor": "15b3", "device": "101b", "subsystem_vendor": "15b3",
          "subsystem_device": "0007", "sriov_totalvfs": "16"}
E1000 = {"class": "0200", "vendor": "8086", "device": "10d3", "subsystem_vendor": "8086",
         "subsystem_device": "a01f", "sriov_totalvfs": "0"}
BAD_VFS = {"class": "0200", "vendor": "1af4", "device": "1041", "subsystem_vendor": "1af4",
           "subsystem_device": "1100", "sriov_totalvfs": "n/a"}

NODES = {
    "gpu-a100": _node([BRIDGE, A100, CX6_PF], "5.15.0-91-generic", 2, ["AVX", "AVX2", "AVX512F"]),
    "gpu-t4": _node([BRIDGE, T4, E1000], "6.8.0-1015-azure", 1, ["AVX", "AVX2"]),
    "cpu-only": _node([BRIDGE, E1000], "7.0.1", 4, ["AVX"]),
    "old-kernel": _node([BRIDGE], "4.18.0-553.el8_10.x86_64", None, []),  # not a valid version
    "odd-nic": _node([BAD_VFS, CX6_PF], "5.4.0", 2, []),
    "bare": Features(),
}

EXAMPLES: dict[str, tuple[list[dict[str, Any]], list[str]]] = {
    # an NVIDIA A100 (PCI vendor 10de, display controller class 03xx, A100 device IDs)
    "gpu-model": (
        [{"feature": "pci.device", "matchExpressions": {
            "vendor": {"op": "In", "value": ["10de"]},
            "class": {"op": "InRegexp", "value": ["^03"]},
            "device": {"op": "In", "value": ["20b0", "20b2", "20b5"]},
        }}],
        ['instances["pci.device"].exists(d, d.vendor == "10de" && d.class.startsWith("03")'
         ' && d.device in ["20b0", "20b2", "20b5"])'],
    ),
    # kernel 5.15 or newer, but older than 7 (upstream `type: version` drops the -91-generic part)
    "kernel-version": (
        [{"feature": "kernel.version", "matchExpressions": {
            "full": {"op": "Ge", "value": ["5.15"], "type": "version"},
            "major": {"op": "Lt", "value": ["7"]},
        }}],
        ['"full" in attributes["kernel.version"]'
         ' && version(attributes["kernel.version"]["full"]) >= version("5.15")'
         ' && int(attributes["kernel.version"]["major"]) < 7'],
    ),
    # a NIC (class 0200) that can expose at least 8 SR-IOV virtual functions
    "sriov-vfs": (
        [{"feature": "pci.device", "matchExpressions": {
            "class": {"op": "In", "value": ["0200"]},
            "sriov_totalvfs": {"op": "Gt", "value": ["7"]},
        }}],
        ['instances["pci.device"].exists(d, d.class == "0200"'
         ' && "sriov_totalvfs" in d && int(d.sriov_totalvfs) > 7)'],
    ),
    # more than one NUMA node
    "numa-count": (
        [{"feature": "memory.numa", "matchExpressions": {"node_count": {"op": "Gt", "value": ["1"]}}}],
        ['"node_count" in attributes["memory.numa"] && int(attributes["memory.numa"]["node_count"]) > 1'],
    ),
    # AVX-512 and a GPU on the same node: two terms ANDed, two expressions ANDed
    "avx512-and-gpu": (
        [{"feature": "cpu.cpuid", "matchExpressions": {"AVX512F": {"op": "Exists"}}},
         {"feature": "pci.device", "matchExpressions": {"vendor": {"op": "In", "value": ["10de"]}}}],
        ['"AVX512F" in flags["cpu.cpuid"]', 'instances["pci.device"].exists(d, d.vendor == "10de")'],
    ),
}


# CEL's exists() is true when any element satisfies the predicate, even if evaluating it on
# another element failed; upstream aborts the rule on the first instance whose value is not an
# integer. docs/cel.md and docs/compatibility.md record this.
DOCUMENTED_DIFFERENCES = {("sriov-vfs", "odd-nic")}


def _outcome(rule: dict[str, Any], features: Features, node: str) -> tuple[bool, bool, dict[str, str]]:
    res = evaluate_rule(compile_rule(rule, path="spec.rules[0]"), features, node_name=node)
    return res.matched, res.error is not None, res.output.labels


@pytest.mark.parametrize(
    ("example", "node"),
    [(e, n) for e in sorted(EXAMPLES) for n in sorted(NODES) if (e, n) not in DOCUMENTED_DIFFERENCES],
)
def test_cel_and_upstream_syntax_agree(example: str, node: str) -> None:
    match_features, match_cel = EXAMPLES[example]
    labels = {f"example.com/{example}": "true"}
    upstream = {"name": example, "labels": labels, "matchFeatures": match_features}
    cel = {"name": example, "labels": labels, "matchCEL": match_cel}
    assert _outcome(cel, NODES[node], node) == _outcome(upstream, NODES[node], node)


def test_examples_are_not_trivial() -> None:
    """Every example matches some node and misses another, and some node makes both error."""
    seen: dict[str, set[tuple[bool, bool]]] = {}
    for example, (match_features, _) in EXAMPLES.items():
        for node, f in NODES.items():
            rule = {"name": example, "labels": {"x.io/y": "z"}, "matchFeatures": match_features}
            matched, error, _ = _outcome(rule, f, node)
            seen.setdefault(example, set()).add((matched, error))
    for example, outcomes in seen.items():
        assert (True, False) in outcomes and (False, False) in outcomes, example
    assert any((False, True) in o for o in seen.values())


def test_cel_is_anded_with_match_features() -> None:
    rule = {
        "name": "both",
        "labels": {"example.com/both": "true"},
        "matchFeatures": EXAMPLES["gpu-model"][0],
        "matchCEL": ['node.name.startsWith("gpu-")'],
    }
    assert _outcome(rule, NODES["gpu-a100"], "gpu-a100")[0] is True
    assert _outcome(rule, NODES["gpu-a100"], "a100-node")[0] is False
    assert _outcome(rule, NODES["gpu-t4"], "gpu-t4")[0] is False


def test_exists_absorbs_an_error_upstream_aborts_on() -> None:
    match_features, match_cel = EXAMPLES["sriov-vfs"]
    node = NODES["odd-nic"]  # one NIC reports sriov_totalvfs "n/a", another 16
    assert _outcome({"name": "u", "matchFeatures": match_features}, node, "n")[:2] == (False, True)
    assert _outcome({"name": "c", "matchCEL": match_cel}, node, "n")[:2] == (True, False)
    # all() has no true element to decide on, so the error surfaces like upstream's
    strict = ['instances["pci.device"].all(d, d.class != "0200" || int(d.sriov_totalvfs) > 7)']
    assert _outcome({"name": "c", "matchCEL": strict}, node, "n")[:2] == (False, True)


def test_every_matchcel_in_the_docs_compiles() -> None:
    import re
    from pathlib import Path

    import yaml

    from nfd.rules.cel import compile_expressions

    doc = (Path(__file__).resolve().parents[4] / "docs" / "cel.md").read_text()
    found = 0
    for block in re.findall(r"```yaml\n(.*?)```", doc, re.S):
        obj = yaml.safe_load(block)
        stack = [obj]
        while stack:
            o = stack.pop()
            if isinstance(o, dict):
                if "matchCEL" in o:
                    compile_expressions(o["matchCEL"], path="docs")
                    found += len(o["matchCEL"])
                stack.extend(o.values())
            elif isinstance(o, list):
                stack.extend(o)
    assert found >= 10


def test_backreference_through_rule_matched() -> None:
    from nfd.rules.engine import compile_nodefeaturerule, process_rule_sets

    nfr = {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureRule",
        "metadata": {"name": "chain"},
        "spec": {"rules": [
            {"name": "gpu", "labels": {"gpu.a100": "true"}, "vars": {"gpus": "1"},
             "matchCEL": EXAMPLES["gpu-model"][1]},
            {"name": "gpu-and-numa", "labels": {"gpu.numa": "true"},
             "matchCEL": ['"gpu.a100" in attributes["rule.matched"] && attributes["rule.matched"]["gpu.a100"] == "true"',
                          'int(attributes["rule.matched"]["gpus"]) == 1',
                          '"node_count" in attributes["memory.numa"]'
                          ' && int(attributes["memory.numa"]["node_count"]) > 1']},
            {"name": "broken", "labels": {"broken": "true"},
             "matchCEL": ['attributes["rule.matched"]["no-such-label"] == "x"']},
        ]},
    }
    rs = compile_nodefeaturerule(nfr)
    res = process_rule_sets([rs], NODES["gpu-a100"], node_name="gpu-a100")
    assert res.output.labels == {"gpu.a100": "true", "gpu.numa": "true"}
    # a runtime error fails that rule only, reported like other rule errors
    assert [name for name, _ in res.errors] == ["broken"]
    assert "no such key: 'no-such-label'" in res.errors[0][1]
    # where the first rule did not match, the guarded lookup is false and the dry-run reason
    # names the expression; the unguarded lookup of a missing label is an error
    res = process_rule_sets([rs], NODES["gpu-t4"], node_name="gpu-t4")
    assert res.output.labels == {}
    assert res.results[1].error is None and res.results[1].reason is not None
    assert res.results[1].reason.startswith("matchCEL: '\"gpu.a100\" in attributes[\"rule.matched\"]")
    assert [name for name, _ in res.errors] == ["broken"]


def test_node_feature_group_rules_take_matchcel() -> None:
    from nfd.rules.engine import compile_group_rules

    nfg = {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureGroup",
        "metadata": {"name": "a100-nodes", "namespace": "node-feature-discovery"},
        "spec": {"featureGroupRules": [
            {"name": "a100", "matchCEL": EXAMPLES["gpu-model"][1]},
        ]},
    }
    rs = compile_group_rules(nfg)
    [rule] = rs.rules
    members = [n for n, f in sorted(NODES.items()) if evaluate_rule(rule, f, node_name=n).matched]
    assert members == ["gpu-a100"]
    bad = {**nfg, "spec": {"featureGroupRules": [{"name": "a100", "matchCEL": ["node.name > 1"]}]}}
    [broken] = compile_group_rules(bad).rules
    res = evaluate_rule(broken, NODES["gpu-a100"], node_name="gpu-a100")
    assert res.error is not None and "spec.featureGroupRules[0].matchCEL[0]: 1:11" in res.error
