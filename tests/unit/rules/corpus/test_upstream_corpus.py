"""Runs the upstream-checked corpus (cases/*.yaml, cases/*.jsonl) through ``nfd rules dryrun -o json``
(NodeFeatureGroup cases through ``nfd.nodestate.groups.evaluate_group``).

Every case holds NodeFeatureRule specs (object name -> rules), a feature set, and the output
upstream's own engine produced for them (see README.md). Outputs must match exactly; errors are
compared as the failing rules' names, not their wording.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfd.api.features import Features
from nfd.cli.rules import main
from nfd.nodestate.groups import evaluate_group
from nfd.rules.engine import compile_group_rules

CASES_DIR = Path(__file__).parent / "cases"


def _load() -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(CASES_DIR.iterdir()):
        if path.suffix == ".yaml":
            cases = yaml.safe_load(path.read_text(encoding="utf-8"))
        elif path.suffix == ".jsonl":
            cases = [
                json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
            ]
            cases = [c for c in cases if "comment" not in c]
        else:
            continue
        out.extend((f"{path.stem}: {c['name']}", c) for c in cases)
    return out


ALL = _load()
CASES = [(i, c) for i, c in ALL if "rules" in c]
GROUP_CASES = [(i, c) for i, c in ALL if "group" in c]


def _nodefeature(features: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeature",
        "metadata": {
            "name": "node-1",
            "namespace": "nfd",
            "labels": {"nfd.node.kubernetes.io/node-name": "node-1"},
        },
        "spec": {
            "features": {
                "flags": {k: {"elements": {e: {} for e in v}} for k, v in features.get("flags", {}).items()},
                "attributes": {k: {"elements": v} for k, v in features.get("attributes", {}).items()},
                "instances": {
                    k: {"elements": [{"attributes": a} for a in v]}
                    for k, v in features.get("instances", {}).items()
                },
            }
        },
    }


def _rule_docs(rules: dict[str, list[Any]]) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
            "kind": "NodeFeatureRule",
            "metadata": {"name": name},
            "spec": {"rules": spec},
        }
        for name, spec in rules.items()
    ]


def test_corpus_is_large_and_named_uniquely() -> None:
    ids = [i for i, _ in ALL]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 500 and len(GROUP_CASES) >= 100
    assert len(CASES) + len(GROUP_CASES) == len(ALL)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("corpus")


def _argv(case: dict[str, Any], rules_file: Path, nf_file: Path) -> list[str]:
    argv = ["dryrun", "-f", str(rules_file), "--nodefeature", str(nf_file), "-o", "json"]
    policy = case.get("policy")
    if policy is None:
        return [*argv, "--raw"]
    cfg = policy["config"]
    if cfg.get("enableTaints"):
        argv.append("--enable-taints")
    if cfg.get("disableAutoPrefix"):
        argv.append("--disable-auto-prefix")
    if "restrictions" in cfg:
        conf = rules_file.with_name("nfd-master.conf")
        conf.write_text(json.dumps({"restrictions": cfg["restrictions"]}), encoding="utf-8")
        argv.append(f"--config={conf}")
    for key, flag in (("denyLabelNs", "--deny-label-ns"), ("extraLabelNs", "--extra-label-ns")):
        if key in cfg:
            argv.append(f"{flag}={','.join(cfg[key])}")
    if "labelWhiteList" in cfg:
        argv.append(f"--label-whitelist={cfg['labelWhiteList']}")
    return argv


@pytest.mark.parametrize("case", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_matches_upstream(case: dict[str, Any], workdir: Path, capsys: Any) -> None:
    rules_file, nf_file = workdir / "rules.yaml", workdir / "nf.yaml"
    # JSON is YAML, and much faster to write than PyYAML's emitter
    rules_file.write_text("\n---\n".join(json.dumps(d) for d in _rule_docs(case["rules"])), encoding="utf-8")
    if "nodefeatures" in case:  # several objects for the node, merged like the master does
        nf_file.write_text("\n---\n".join(json.dumps(d) for d in case["nodefeatures"]), encoding="utf-8")
    else:
        nf = _nodefeature(case.get("features") or {})
        if case.get("policy") is not None:
            nf["spec"]["labels"] = case["policy"]["nodefeatureLabels"]
        nf_file.write_text(json.dumps(nf), encoding="utf-8")
    rc = main(_argv(case, rules_file, nf_file))
    got = json.loads(capsys.readouterr().out)
    # --raw (no policy) is the engine's output as upstream's; policy cases drop what the API
    # server would refuse
    want = case["expect"] if case.get("policy") is None else _without_what_the_apiserver_refuses(case["expect"])
    # an unknown field (the guide's shorthand terms) is an error of ours, as kubectl apply refuses
    # it; the engine ignores the field as upstream's decoder does, which is what is compared here
    unknown = [e for e in got["errors"] if ": unknown field" in e["message"]]
    engine = [e for e in got["errors"] if e not in unknown]
    assert sorted(e["rule"] for e in engine) == sorted(want.get("errors", [])), got["errors"]
    assert rc == (1 if want.get("errors") or unknown else 0)
    for key in ("labels", "annotations", "vars", "extendedResources"):
        assert got[key] == want.get(key, {}), key
    taints = [{"key": t["key"], "value": t.get("value", ""), "effect": t["effect"]} for t in got["taints"]]
    assert taints == want.get("taints", [])


def _without_what_the_apiserver_refuses(expect: dict[str, Any]) -> dict[str, Any]:
    """Upstream's output less the items kube-apiserver refuses in a Node update, which nfd drops
    before writing (docs/compatibility.md); everything else must match exactly."""
    from nfd.nodestate.outputpolicy import apiserver_extended_resource_error, apiserver_taint_error

    out = dict(expect)
    out["extendedResources"] = {k: v for k, v in (expect.get("extendedResources") or {}).items()
                                if apiserver_extended_resource_error(k, v) is None}
    taints, seen = [], set()
    for t in expect.get("taints") or []:
        if apiserver_taint_error(t["key"], t.get("value", "")) is None and (t["key"], t["effect"]) not in seen:
            seen.add((t["key"], t["effect"]))
            taints.append(t)
    out["taints"] = taints
    return out


def _features(f: dict[str, Any]) -> Features:
    return Features(
        flags={k: set(v) for k, v in f.get("flags", {}).items()},
        attributes={k: dict(v) for k, v in f.get("attributes", {}).items()},
        instances={k: [dict(a) for a in v] for k, v in f.get("instances", {}).items()},
    )


@pytest.mark.parametrize("case", [c for _, c in GROUP_CASES], ids=[i for i, _ in GROUP_CASES])
def test_group_matches_upstream(case: dict[str, Any]) -> None:
    group = compile_group_rules(
        {
            "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
            "kind": "NodeFeatureGroup",
            "metadata": {"name": "g"},
            "spec": {"featureGroupRules": case["group"]},
        }
    )
    results = evaluate_group(group, _features(case.get("features") or {}))
    want = case["expect"]
    assert [r.name for r in results if r.error is not None] == want.get("errors", [])
    assert [r.name for r in results if r.matched and r.error is None] == want.get("matched", [])
    got_vars: dict[str, str] = {}
    for r in results:
        if r.error is None:
            got_vars.update(r.output.vars)
    assert got_vars == want.get("vars", {})
