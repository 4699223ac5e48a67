"""Runs corpus_dryrun.yaml through ``nfd rules dryrun --raw -o json`` (see the file header)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfd.cli.rules import main

CASES = yaml.safe_load((Path(__file__).parent / "corpus_dryrun.yaml").read_text())


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
            "labels": features.get("labels", {}),
            "features": {
                "flags": {k: {"elements": {e: {} for e in v}} for k, v in features.get("flags", {}).items()},
                "attributes": {k: {"elements": v} for k, v in features.get("attributes", {}).items()},
                "instances": {
                    k: {"elements": [{"attributes": a} for a in v]}
                    for k, v in features.get("instances", {}).items()
                },
            },
        },
    }


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_corpus_case(case: dict[str, Any], tmp_path: Path, capsys: Any) -> None:
    docs = [
        {
            "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
            "kind": "NodeFeatureRule",
            "metadata": {"name": n},
            "spec": {"rules": r},
        }
        for n, r in case["rules"].items()
    ]
    rp, np_ = tmp_path / "rules.yaml", tmp_path / "nf.yaml"
    rp.write_text(yaml.safe_dump_all(docs))
    np_.write_text(yaml.safe_dump(_nodefeature(case["features"])))
    rc = main(["dryrun", "-f", str(rp), "--nodefeature", str(np_), "--raw", "-o", "json"])
    out = json.loads(capsys.readouterr().out)
    exp = case["expect"]
    assert [e["rule"] for e in out["errors"]] == exp.get("errors", []), out["errors"]
    assert rc == (1 if exp.get("errors") else 0)
    for key in ("labels", "vars", "annotations", "extendedResources"):
        assert out[key] == exp.get(key, {}), key
    assert out["taints"] == exp.get("taints", [])
