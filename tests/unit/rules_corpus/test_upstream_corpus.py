"""Runs the upstream-checked corpus (cases/*.yaml, cases/*.jsonl) through ``nfd rules dryrun --raw -o json``.

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

from nfd.cli.rules import main

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


CASES = _load()


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
    ids = [i for i, _ in CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 500


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
    nf = _nodefeature(case.get("features") or {})
    if case.get("policy") is not None:
        nf["spec"]["labels"] = case["policy"]["nodefeatureLabels"]
    nf_file.write_text(json.dumps(nf), encoding="utf-8")
    rc = main(_argv(case, rules_file, nf_file))
    got = json.loads(capsys.readouterr().out)
    want = case["expect"]
    assert sorted(e["rule"] for e in got["errors"]) == sorted(want.get("errors", [])), got["errors"]
    assert rc == (1 if want.get("errors") else 0)
    for key in ("labels", "annotations", "vars", "extendedResources"):
        assert got[key] == want.get(key, {}), key
    taints = [{"key": t["key"], "value": t.get("value", ""), "effect": t["effect"]} for t in got["taints"]]
    assert taints == want.get("taints", [])
