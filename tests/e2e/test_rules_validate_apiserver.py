"""The offline validation refuses what the real kube-apiserver refuses (issue 40): every rule and
group object of the newcomer's file and the ten mistakes of tests/fixtures/rules/ is created
with ``dryRun=All`` against the test apiserver (the CRDs from crds/ installed), and the server
refuses it exactly when nfd.api.schema (with the metadata name check) finds a problem; each
field our check names is named in the server's refusal too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nfd.api.schema import object_schema, schema_problems
from nfd.api.validation import dns1123_subdomain_errors
from nfd.rules.files import load_documents
from tests.e2e.harness import HttpError, KubeCluster

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rules"
API = "nfd.k8s-sigs.io/v1alpha1"


def objects() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for p in [FIXTURES / "newcomer.yaml", *sorted((FIXTURES / "mistakes").glob("*.yaml"))]:
        for i, d in enumerate(load_documents(str(p))):
            if isinstance(d, dict) and d.get("kind") in ("NodeFeatureRule", "NodeFeatureGroup"):
                # a wrong apiVersion is a 404 (not served): the rest of the object is still checked
                out.append((f"{p.name}#{i}", dict(d, apiVersion=API)))
    return out


def ours(obj: dict[str, Any]) -> list[str]:
    """The fields our offline check says the API server refuses."""
    fields = [p for p, _ in schema_problems(obj, object_schema(obj["kind"]))
              if p.split(".")[0] not in ("apiVersion", "kind", "metadata")]
    if dns1123_subdomain_errors(obj["metadata"]["name"]):
        fields.append("metadata.name")
    return fields


@pytest.mark.parametrize("ident, obj", objects(), ids=[i for i, _ in objects()])
def test_the_api_server_refuses_what_validate_refuses(kube: KubeCluster, ident: str, obj: dict[str, Any]) -> None:
    ns = (obj.get("metadata") or {}).get("namespace")
    if obj["kind"] == "NodeFeatureGroup" and ns:
        kube.create_namespace(ns, exist_ok=True)
    want = ours(obj)
    try:
        kube.request("POST", kube.object_path(obj, name=False), body=obj, params={"dryRun": "All"})
        refused = ""
    except HttpError as e:
        assert e.status == 422, e
        refused = str(e)
    assert bool(refused) == bool(want), (ident, want, refused)
    for field in want:
        # the server names a map key in brackets: spec.rules[0].labels[example.com/count]
        head = field.split(".example.com/")[0].split(".kubernetes.io/")[0]
        assert head.split("[")[0] in refused, (field, refused)


TYPOS = """
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: typos}
spec:
  rule: []
  rules:
  - name: r
    labels: {example.com/a: "1"}
    matchFeature:
    - feature: cpu.cpuid
    matchAny:
    - matchFeatures:
      - feature: system.osrelease
        matchExpressions:
          NAME: {op: InRegexp, values: ["^openSUSE"], value: ["x"]}
        matchNames: {op: Exists}
      matchFeature: []
    taints: [{key: example.com/t, effect: NoSchedule, valu: x}]
  - name: g
    labelsTemplates: "x=y"
"""


def test_unknown_fields_are_exactly_what_strict_field_validation_refuses(kube: KubeCluster) -> None:
    """kubectl apply asks for fieldValidation=Strict: the server refuses every unknown field, and
    ours names the same ones (nfd.api.nodefeaturerule.unknown_field_problems)."""
    import re

    import yaml

    from nfd.api.nodefeaturerule import unknown_field_problems

    obj = yaml.safe_load(TYPOS)
    ours = {p for p, _ in unknown_field_problems(obj)}
    with pytest.raises(HttpError) as e:
        kube.request("POST", f"/apis/{API}/nodefeaturerules", body=obj,
                     params={"dryRun": "All", "fieldValidation": "Strict"})
    theirs = set(re.findall(r'unknown field "([^"]+)"', str(e.value)))
    assert ours == theirs, (ours, theirs)
    assert len(ours) == 7
