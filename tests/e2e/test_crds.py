"""The CRDs in crds/ against a real kube-apiserver.

Objects are created with fieldValidation=Strict, so a field our schema lacks is an
error instead of being silently pruned, and read back to check nothing was dropped.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from nfd.api.crds import load_crds
from tests.e2e.harness import HttpError, KubeCluster

pytestmark = pytest.mark.e2e

NFD = "/apis/nfd.k8s-sigs.io/v1alpha1"
NRT = "/apis/topology.node.k8s.io"

# An upstream-style NodeFeatureRule using every rule field and operator family.
SAMPLE_NFR = yaml.safe_load("""
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: sample-rule
spec:
  rules:
  - name: "complex rule"
    labels:
      my-complex-feature: "my-value"
      dyn: "@kernel.version.major"
    annotations:
      feature.node.kubernetes.io/note: "hello"
    taints:
    - effect: PreferNoSchedule
      key: feature.node.kubernetes.io/special-node
      value: "true"
    - effect: NoExecute
      key: feature.node.kubernetes.io/dedicated-node
      timeAdded: "2024-01-02T03:04:05Z"
    extendedResources:
      vendor.io/widgets: "@memory.numa.node_count"
      example.com/static: "4"
    vars:
      v1: "x"
    varsTemplate: |
      {{ range .cpu.cpuid }}{{ .Name }}=true
      {{ end }}
    labelsTemplate: |
      {{ range .pci.device }}vendor-{{ .vendor }}-present=true
      {{ end }}
    matchFeatures:
    - feature: cpu.cpuid
      matchExpressions:
        AVX512F: {op: Exists}
        AVX: {op: DoesNotExist}
    - feature: kernel.version
      matchExpressions:
        full: {op: Ge, value: ["5.15"], type: version}
        major: {op: GtLt, value: ["4", "7"]}
        minor: {op: GeLe, value: ["0", "20"]}
    - feature: kernel.config
      matchName: {op: InRegexp, value: ["^NO_HZ"]}
    - feature: system.osrelease
      matchExpressions:
        ID: {op: In, value: ["ubuntu", "debian"]}
        VERSION_ID: {op: NotIn, value: ["18.04"]}
    - feature: cpu.pstate
      matchExpressions:
        no_turbo: {op: IsFalse}
        status: {op: Lt, value: ["3"]}
        x: {op: Le, value: ["3"]}
        y: {op: Gt, value: ["1"]}
        z: {op: IsTrue}
    matchAny:
    - matchFeatures:
      - feature: kernel.loadedmodule
        matchExpressions:
          driver-module-x: {op: Exists}
    - matchFeatures:
      - feature: pci.device
        matchExpressions:
          vendor: {op: In, value: ["8086"]}
          class: {op: In, value: ["0200"]}
  - name: "static rule"
    labels:
      static: "true"
  - name: "cel rule"
    matchCEL:
    - "'AVX512F' in cpu.cpuid"
    labels:
      cel: "true"
""")

SAMPLE_NF = yaml.safe_load("""
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeature
metadata:
  name: node-1
  labels:
    nfd.node.kubernetes.io/node-name: node-1
spec:
  features:
    flags:
      cpu.cpuid:
        elements:
          AVX: {}
          AVX512F: {}
      kernel.loadedmodule:
        elements: {}
    attributes:
      kernel.version:
        elements:
          full: "6.1.0-18-amd64"
          major: "6"
    instances:
      pci.device:
        elements:
        - attributes:
            vendor: "8086"
            class: "0200"
        - attributes: {}
  labels:
    vendor-setting.example.com/feature: "true"
""")

SAMPLE_NFG = yaml.safe_load("""
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureGroup
metadata:
  name: group-1
spec:
  featureGroupRules:
  - name: "kernel group"
    vars: {a: b}
    varsTemplate: "x=y"
    matchFeatures:
    - feature: kernel.version
      matchExpressions:
        major: {op: Gt, value: ["4"]}
    matchAny:
    - matchFeatures:
      - feature: cpu.cpuid
        matchName: {op: In, value: ["AVX"]}
  - name: "cel group"
    matchCEL: ["kernel.version.major == '6'"]
""")

SAMPLE_NRT_V2 = yaml.safe_load("""
apiVersion: topology.node.k8s.io/v1alpha2
kind: NodeResourceTopology
metadata:
  name: node-1
attributes:
- {name: topologyManagerPolicy, value: single-numa-node}
- {name: topologyManagerScope, value: container}
topologyPolicies: ["SingleNUMANodeContainerLevel"]
zones:
- name: node-0
  type: Node
  parent: ""
  costs:
  - {name: node-0, value: 10}
  - {name: node-1, value: 21}
  attributes:
  - {name: cpuset, value: "0-3"}
  resources:
  - {name: cpu, capacity: 4, allocatable: "3", available: "2500m"}
  - {name: memory, capacity: "8Gi", allocatable: "7Gi", available: 1073741824}
- name: node-1
  type: Node
""")


@pytest.fixture
def cleanup(kube: KubeCluster) -> Iterator[list[str]]:
    """Paths of cluster-scoped objects to delete after the test (an NFR left behind would
    label the nodes of every later test that runs nfd-master)."""
    paths: list[str] = []
    yield paths
    for path in paths:
        with contextlib.suppress(HttpError):
            kube.request("DELETE", path)


def _create(kube: KubeCluster, path: str, obj: dict[str, Any],
            cleanup: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = kube.request("POST", path, body=obj, params={"fieldValidation": "Strict"})
    if cleanup is not None:
        cleanup.append(f"{path}/{out['metadata']['name']}")
    return out


def _rejected(kube: KubeCluster, path: str, obj: dict[str, Any]) -> HttpError:
    with pytest.raises(HttpError) as ei:
        kube.request("POST", path, body=obj, params={"fieldValidation": "Strict", "dryRun": "All"})
    return ei.value


def test_all_crds_established_with_our_versions(kube: KubeCluster) -> None:
    for crd in load_crds():
        name = crd["metadata"]["name"]
        served = kube.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        conds = {c["type"]: c["status"] for c in served["status"]["conditions"]}
        assert conds.get("Established") == "True", name
        assert conds.get("NamesAccepted") == "True", name
        assert conds.get("NonStructuralSchema") in (None, "False"), name
        want = [(v["name"], v["served"], v["storage"]) for v in crd["spec"]["versions"]]
        got = [(v["name"], v["served"], v["storage"]) for v in served["spec"]["versions"]]
        assert got == want
        assert served["status"]["storedVersions"] == [n for n, _, s in want if s]


def test_short_names_discoverable(kube: KubeCluster) -> None:
    short = {r["name"]: r.get("shortNames", []) for r in kube.get(NFD)["resources"]}
    assert short["nodefeaturerules"] == ["nfr"]
    assert short["nodefeaturegroups"] == ["nfg"]
    assert "nodefeaturegroups/status" in short
    nrt = {r["name"]: r for r in kube.get(f"{NRT}/v1alpha2")["resources"]}
    assert nrt["noderesourcetopologies"]["shortNames"] == ["node-res-topo"]
    assert nrt["noderesourcetopologies"]["namespaced"] is False


def test_nodefeaturerule_sample_roundtrips(kube: KubeCluster, cleanup: list[str]) -> None:
    obj = copy.deepcopy(SAMPLE_NFR)
    obj["metadata"]["name"] = kube.unique_name("nfr")
    created = _create(kube, f"{NFD}/nodefeaturerules", obj, cleanup)
    got = kube.get(f"{NFD}/nodefeaturerules/{created['metadata']['name']}")
    assert got["spec"] == obj["spec"]  # nothing pruned, no defaults injected (as upstream)


def test_nodefeature_sample_roundtrips(kube: KubeCluster, namespace: str) -> None:
    obj = copy.deepcopy(SAMPLE_NF)
    created = _create(kube, f"{NFD}/namespaces/{namespace}/nodefeatures", obj)
    assert created["spec"] == SAMPLE_NF["spec"]
    assert created["metadata"]["labels"] == SAMPLE_NF["metadata"]["labels"]


def test_nodefeature_elements_owned_whole(kube: KubeCluster, namespace: str) -> None:
    """Feature set elements are atomic: managedFields name the sets, not each element (a
    NodeFeature with 1,000 kernel config options would otherwise carry them all twice)."""
    import json

    obj = copy.deepcopy(SAMPLE_NF)
    obj["metadata"]["name"] = "atomic-elements"
    obj["spec"]["features"] = {
        "flags": {"cpu.cpuid": {"elements": {f"FLAG{i}": {} for i in range(50)}}},
        "attributes": {"kernel.config": {"elements": {f"CONFIG_OPT_{i}": "y" for i in range(200)}}},
        "instances": {"pci.device": {"elements": [{"attributes": {"vendor": "10de", "class": "0302"}}] * 3}},
    }
    created = _create(kube, f"{NFD}/namespaces/{namespace}/nodefeatures", obj)
    fields = json.dumps([m["fieldsV1"] for m in created["metadata"]["managedFields"]])
    for owned in ('"f:cpu.cpuid": {".": {}, "f:elements": {}}', '"f:kernel.config": {".": {}, "f:elements": {}}',
                  '"f:pci.device": {".": {}, "f:elements": {}}'):
        assert owned in fields
    for element in ('"f:FLAG1"', '"f:CONFIG_OPT_1"', '"f:vendor"'):
        assert element not in fields
    assert created["spec"] == obj["spec"]  # the values themselves are untouched


def test_nodefeaturegroup_spec_and_status_subresource(kube: KubeCluster, namespace: str) -> None:
    base = f"{NFD}/namespaces/{namespace}/nodefeaturegroups"
    created = _create(kube, base, copy.deepcopy(SAMPLE_NFG))
    assert created["spec"] == SAMPLE_NFG["spec"]
    # status is a subresource: a status written through the main resource is dropped...
    with_status = dict(created, status={"nodes": [{"name": "ignored"}]})
    updated = kube.request("PUT", f"{base}/group-1", body=with_status)
    assert "nodes" not in (updated.get("status") or {})
    # ...and the status endpoint accepts it, keyed by node name (listType map).
    patched = kube.request("PATCH", f"{base}/group-1/status",
                           body={"status": {"nodes": [{"name": "n1"}, {"name": "n2"}]}},
                           content_type="application/merge-patch+json")
    assert patched["status"]["nodes"] == [{"name": "n1"}, {"name": "n2"}]
    dup = kube.request("GET", f"{base}/group-1")
    dup["status"] = {"nodes": [{"name": "n1"}, {"name": "n1"}]}
    with pytest.raises(HttpError) as ei:
        kube.request("PUT", f"{base}/group-1/status", body=dup)
    assert ei.value.status == 422
    assert "status.nodes[1]" in ei.value.message and "Duplicate value" in ei.value.message


def test_noderesourcetopology_v1alpha2_and_v1alpha1(kube: KubeCluster, cleanup: list[str]) -> None:
    obj = copy.deepcopy(SAMPLE_NRT_V2)
    obj["metadata"]["name"] = kube.unique_name("nrt")
    created = _create(kube, f"{NRT}/v1alpha2/noderesourcetopologies", obj, cleanup)
    for key in ("attributes", "topologyPolicies", "zones"):
        assert created[key] == obj[key]
    # v1alpha1 is still served (not stored): topologyPolicies is required there.
    v1 = {"apiVersion": "topology.node.k8s.io/v1alpha1", "kind": "NodeResourceTopology",
          "metadata": {"name": kube.unique_name("nrt")}, "topologyPolicies": ["None"],
          "zones": [{"name": "node-0", "type": "Node"}]}
    _create(kube, f"{NRT}/v1alpha1/noderesourcetopologies", v1, cleanup)
    as_v2 = kube.get(f"{NRT}/v1alpha2/noderesourcetopologies/{v1['metadata']['name']}")
    assert as_v2["apiVersion"] == "topology.node.k8s.io/v1alpha2"
    assert as_v2["zones"] == v1["zones"]
    missing = dict(v1, metadata={"name": kube.unique_name("nrt")})
    del missing["topologyPolicies"]
    err = _rejected(kube, f"{NRT}/v1alpha1/noderesourcetopologies", missing)
    assert err.status == 422 and "topologyPolicies: Required value" in err.message


def _rule_with(expr: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
            "metadata": {"name": "bad"},
            "spec": {"rules": [{"name": "r", "matchFeatures": [
                {"feature": "cpu.cpuid", "matchExpressions": {"AVX": expr}}]}]}}


@pytest.mark.parametrize(
    ("mutate", "status", "needle"),
    [
        pytest.param(lambda o: _rule_with({"op": "Bogus"}), 422,
                     'spec.rules[0].matchFeatures[0].matchExpressions.AVX.op: Unsupported value: "Bogus"',
                     id="unknown-op"),
        pytest.param(lambda o: _rule_with({"value": ["x"]}), 422,
                     "spec.rules[0].matchFeatures[0].matchExpressions.AVX.op: Required value",
                     id="missing-op"),
        pytest.param(lambda o: _rule_with({"op": "In", "value": "x"}), 422,
                     "spec.rules[0].matchFeatures[0].matchExpressions.AVX.value: Invalid value",
                     id="value-not-list"),
        pytest.param(lambda o: {**o, "spec": {"rules": [{"labels": {"a": "b"}}]}}, 422,
                     "spec.rules[0].name: Required value", id="rule-without-name"),
        pytest.param(lambda o: {**o, "spec": {}}, 422, "spec.rules: Required value", id="no-rules"),
        pytest.param(lambda o: {k: v for k, v in o.items() if k != "spec"}, 422, "spec: Required value",
                     id="no-spec"),
        pytest.param(lambda o: {**o, "spec": {"rules": [{"name": "r", "taints": [{"key": "k"}]}]}}, 422,
                     "spec.rules[0].taints[0].effect: Required value", id="taint-without-effect"),
        pytest.param(lambda o: {**o, "spec": {"rules": [{"name": "r", "matchAny": [{}]}]}}, 422,
                     "spec.rules[0].matchAny[0].matchFeatures: Required value", id="empty-matchany"),
        pytest.param(lambda o: {**o, "spec": {"rules": [{"name": "r", "matchCEL": "true"}]}}, 422,
                     "spec.rules[0].matchCEL: Invalid value", id="matchcel-not-list"),
        pytest.param(lambda o: {**o, "spec": {"rules": [{"name": "r", "bogusField": 1}]}}, 400,
                     'unknown field "spec.rules[0].bogusField"', id="unknown-field-strict"),
    ],
)
def test_invalid_nodefeaturerule_rejected(kube: KubeCluster, mutate: Any, status: int, needle: str) -> None:
    obj = mutate(copy.deepcopy({**SAMPLE_NFR, "metadata": {"name": "bad"}}))
    err = _rejected(kube, f"{NFD}/nodefeaturerules", obj)
    assert err.status == status, err
    assert needle in err.message, err.message


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        pytest.param({"features": {"flags": {"cpu.cpuid": {}}}},
                     "spec.features.flags.cpu.cpuid.elements: Required value", id="flags-without-elements"),
        pytest.param({"features": {"attributes": {"kernel.version": {"elements": {"major": 6}}}}},
                     "spec.features.attributes.kernel.version.elements.major: Invalid value",
                     id="attribute-not-string"),
        pytest.param({"features": {"instances": {"pci.device": {"elements": [{}]}}}},
                     "spec.features.instances.pci.device.elements[0].attributes: Required value",
                     id="instance-without-attributes"),
        pytest.param({"labels": {"a": True}}, "spec.labels.a: Invalid value", id="label-not-string"),
    ],
)
def test_invalid_nodefeature_rejected(kube: KubeCluster, namespace: str, spec: dict[str, Any],
                                      needle: str) -> None:
    obj = {**SAMPLE_NF, "spec": spec}
    err = _rejected(kube, f"{NFD}/namespaces/{namespace}/nodefeatures", obj)
    assert err.status == 422, err
    assert needle in err.message, err.message


def test_invalid_nodefeaturegroup_and_nrt_rejected(kube: KubeCluster, namespace: str) -> None:
    nfg = {**SAMPLE_NFG, "spec": {"featureGroupRules": [{"name": "g", "matchFeatures": [{"matchName": {
        "op": "Exists"}}]}]}}
    err = _rejected(kube, f"{NFD}/namespaces/{namespace}/nodefeaturegroups", nfg)
    assert "spec.featureGroupRules[0].matchFeatures[0].feature: Required value" in err.message
    nrt = copy.deepcopy(SAMPLE_NRT_V2)
    nrt["zones"][0]["resources"][0]["available"] = "lots"
    err = _rejected(kube, f"{NRT}/v1alpha2/noderesourcetopologies", nrt)
    assert err.status == 422 and "zones[0].resources[0].available" in err.message
    nrt = copy.deepcopy(SAMPLE_NRT_V2)
    del nrt["zones"][1]["type"]
    err = _rejected(kube, f"{NRT}/v1alpha2/noderesourcetopologies", nrt)
    assert "zones[1].type: Required value" in err.message


def test_unknown_rule_fields_are_pruned_without_strict_validation(kube: KubeCluster, cleanup: list[str]) -> None:
    """What a client that does not ask for strict validation gets (fieldValidation=Warn, the
    server's default): the object is stored without the unknown field, and a warning header. So
    nfd-master, reading the stored object, never sees a typo such as ``matchFeature``; the
    offline tools (nfd rules, kubectl nfd) are where it is named (nfd.api.nodefeaturerule
    .unknown_fields); the master's own per-revision warning is tested on its code path in
    tests/unit/master/test_master_controller.py."""
    obj = copy.deepcopy(SAMPLE_NFR)
    obj["metadata"]["name"] = kube.unique_name("nfr")
    obj["spec"]["rules"] = [{"name": "r", "labels": {"a": "b"},
                             "matchFeature": [{"feature": "cpu.cpuid"}]}]
    out = kube.request("POST", f"{NFD}/nodefeaturerules", body=obj, params={"fieldValidation": "Warn"})
    cleanup.append(f"{NFD}/nodefeaturerules/{out['metadata']['name']}")
    got = kube.get(f"{NFD}/nodefeaturerules/{out['metadata']['name']}")
    assert got["spec"]["rules"] == [{"name": "r", "labels": {"a": "b"}}]
