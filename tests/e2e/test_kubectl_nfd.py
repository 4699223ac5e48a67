"""``kubectl nfd test`` against the real kube-apiserver: the node's NodeFeatures are listed with
a kubeconfig (flag or $KUBECONFIG, as kubectl), merged as nfd-master merges them, and the rules
run on the result."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import KubeCluster, free_port

NFD_API = "/apis/nfd.k8s-sigs.io/v1alpha1"
MASTER_NS = "node-feature-discovery"

RULES = """
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: e2e-kubectl-nfd}
spec:
  rules:
  - name: avx
    labels: {example.com/avx: "true", example.com/vendor: "@cpu.model.vendor_id"}
    matchFeatures:
    - feature: cpu.cpuid
      matchExpressions: {AVX: {op: Exists}}
  - name: from-second-object
    labels: {example.com/vfio: "true"}
    matchFeatures:
    - feature: kernel.loadedmodule
      matchExpressions: {vfio-pci: {op: Exists}}
  - name: nics
    labels: {example.com/nics: "@network.count.nics"}
    matchFeatures:
    - feature: pci.device
      matchExpressions: {class: {op: In, value: ["0200"]}}
"""


def kubectl_nfd() -> str:
    exe = Path(sys.executable).parent / "kubectl-nfd"
    found = str(exe) if exe.exists() else shutil.which("kubectl-nfd")
    assert found, "the kubectl-nfd console script is not installed (pip install -e .)"
    return found


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    full["HOME"] = os.environ.get("HOME", "/tmp")
    full.update(env or {})
    return subprocess.run([kubectl_nfd(), *args], capture_output=True, text=True, env=full, timeout=120,
                          check=False)


def nodefeature(name: str, ns: str, node: str, features: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
            "metadata": {"name": name, "namespace": ns, "labels": {"nfd.node.kubernetes.io/node-name": node}},
            "spec": {"features": features}}


@pytest.fixture
def cluster_objects(kube: KubeCluster, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """A node with two NodeFeatures (the master's namespace and a third-party one) plus a
    NodeFeature of another node; yields (node, third-party namespace, rules file)."""
    kube.create_namespace(MASTER_NS, exist_ok=True)
    other_ns = kube.unique_name("e2e-vendor")
    kube.create_namespace(other_ns)
    node = kube.unique_name("kn")
    made = [
        (MASTER_NS, nodefeature(node, MASTER_NS, node, {
            "flags": {"cpu.cpuid": {"elements": {"AVX": {}}}},
            "attributes": {"cpu.model": {"elements": {"vendor_id": "Intel"}},
                           "network.count": {"elements": {"nics": "1"}}},
            "instances": {"pci.device": {"elements": [{"attributes": {"class": "0300", "vendor": "10de"}}]}}})),
        (other_ns, nodefeature("a-vendor-extra", other_ns, node, {
            "flags": {"kernel.loadedmodule": {"elements": {"vfio-pci": {}}}},
            "attributes": {"network.count": {"elements": {"nics": "4"}}},
            "instances": {"pci.device": {"elements": [{"attributes": {"class": "0200", "vendor": "8086"}}]}}})),
        (MASTER_NS, nodefeature(kube.unique_name("elsewhere"), MASTER_NS, "some-other-node", {
            "attributes": {"cpu.model": {"elements": {"vendor_id": "AMD"}}}})),
    ]
    for ns, obj in made:
        kube.request("POST", f"{NFD_API}/namespaces/{ns}/nodefeatures", body=obj)
    rules = tmp_path / "rules.yaml"
    rules.write_text(textwrap.dedent(RULES))
    try:
        yield node, other_ns, str(rules)
    finally:
        for ns, obj in made:
            kube.request("DELETE", f"{NFD_API}/namespaces/{ns}/nodefeatures/{obj['metadata']['name']}")
        kube.delete_namespace(other_ns)


def labels_section(out: str) -> dict[str, str]:
    lines = out.splitlines()
    start = lines.index("***\tLabels\t***") + 1
    got = {}
    for line in lines[start:]:
        if line.startswith(("***", "\t", "NodeFeatureRule")):
            break
        k, _, v = line.partition("=")
        got[k] = v
    return got


def test_test_merges_the_nodes_nodefeatures_like_the_master(kube: KubeCluster,
                                                              cluster_objects: tuple[str, str, str]) -> None:
    node, other_ns, rules = cluster_objects
    r = run("test", "-f", rules, "-n", node, "-k", kube.kubeconfig)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"Evaluating NodeFeatureRule against Node {node}"
    # listed across namespaces, only this node's objects
    assert lines[1].startswith(f'Found 2 NodeFeature objects for node "{node}": ')
    assert set(lines[1].split(": ", 1)[1].split(", ")) == {f"{MASTER_NS}/{node}", f"{other_ns}/a-vendor-extra"}
    assert lines[-1] == f"NodeFeatureRule is valid for Node {node}"
    # the master's namespace first, so the third-party object's attribute wins; flags union,
    # instances append
    assert labels_section(r.stdout) == {"example.com/avx": "true", "example.com/vendor": "Intel",
                                        "example.com/vfio": "true", "example.com/nics": "4"}
    assert r.stderr == ""


def test_namespace_flag_changes_which_object_wins(kube: KubeCluster,
                                                  cluster_objects: tuple[str, str, str]) -> None:
    node, other_ns, rules = cluster_objects
    r = run("test", "--nodefeaturerule-file", rules, "--nodename", node, "--kubeconfig", kube.kubeconfig,
            "-s", other_ns)
    assert r.returncode == 0, r.stdout + r.stderr
    assert labels_section(r.stdout)["example.com/nics"] == "1"


def test_kubeconfig_from_the_environment(kube: KubeCluster, cluster_objects: tuple[str, str, str]) -> None:
    node, _, rules = cluster_objects
    r = run("test", "-f", rules, "-n", node, env={"KUBECONFIG": kube.kubeconfig})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "example.com/vfio=true" in r.stdout


def test_node_without_nodefeatures(kube: KubeCluster, tmp_path: Path) -> None:
    rules = tmp_path / "r.yaml"
    rules.write_text("kind: NodeFeatureRule\nspec:\n  rules:\n  - name: static\n    labels: {example.com/s: 'y'}\n")
    r = run("test", "-f", str(rules), "-n", "no-such-node", "-k", kube.kubeconfig)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'Found 0 NodeFeature objects for node "no-such-node": ' in r.stdout
    assert "example.com/s=y" in r.stdout


def test_errors_are_messages_with_exit_1(kube: KubeCluster, cluster_objects: tuple[str, str, str],
                                         tmp_path: Path) -> None:
    node, _, rules = cluster_objects
    bad = tmp_path / "kubeconfig"
    bad.write_text("apiVersion: v1\nkind: Config\ncurrent-context: nowhere\n")
    r = run("test", "-f", rules, "-n", node, "-k", str(bad))
    assert r.returncode == 1 and "error building kubeconfig" in r.stderr and "Traceback" not in r.stderr
    assert f"NodeFeatureRule is not valid for Node {node}" in r.stdout

    dead = tmp_path / "dead.yaml"
    dead.write_text(Path(kube.kubeconfig).read_text().replace(kube.server, f"https://127.0.0.1:{free_port()}"))
    r = run("test", "-f", rules, "-n", node, "-k", str(dead))
    assert r.returncode == 1 and f'failed to get NodeFeature resources for node "{node}"' in r.stderr
    assert "Traceback" not in r.stderr

    failing = tmp_path / "failing.yaml"
    failing.write_text(textwrap.dedent("""
        kind: NodeFeatureRule
        spec:
          rules:
          - name: bad-number
            labels: {example.com/x: "y"}
            matchFeatures:
            - feature: network.count
              matchExpressions: {nics: {op: Gt, value: ["many"]}}
        """))
    r = run("test", "-f", str(failing), "-n", node, "-k", kube.kubeconfig)
    assert r.returncode == 1 and 'failed to process rule: "bad-number"' in r.stderr


# -- the fleet form: test -A / -l ---------------------------------------------------------------

FQ = "feature.node.kubernetes.io"
FLEET_RULES = """
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: NAME}
spec:
  rules:
  - name: intel
    labels: {intel: "true"}
    matchFeatures:
    - feature: cpu.model
      matchExpressions: {vendor_id: {op: In, value: [Intel]}}
  - name: gpu
    taints: [{key: example.com/gpu, value: "yes", effect: NoExecute}]
    extendedResources: {example.com/gpus: "@gpu.count.n"}
    matchFeatures:
    - feature: gpu.count
      matchExpressions: {n: {op: Gt, value: ["0"]}}
"""


@pytest.fixture
def fleet(kube: KubeCluster, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Three selected nodes (and one outside the selector), their NodeFeatures, an older revision
    of the rule object in the cluster, and pods with and without tolerations."""
    kube.create_namespace(MASTER_NS, exist_ok=True)
    pods_ns = kube.unique_name("e2e-fleet-pods")
    kube.create_namespace(pods_ns)
    sel = kube.unique_name("fleet")
    name = kube.unique_name("e2e-fleet-rules")
    a, b, c, outside = (kube.unique_name(x) for x in ("fa", "fb", "fc", "fout"))
    managed = {"nfd.node.kubernetes.io/feature-labels": "intel,e2e-fleet-old"}
    kube.create_node(a, labels={"pool": sel})
    # b carries labels from the cluster's older revision: "e2e-fleet-old" goes, "intel" changes value
    kube.create_node(b, labels={"pool": sel, f"{FQ}/intel": "maybe", f"{FQ}/e2e-fleet-old": "1"}, annotations=managed)
    kube.create_node(c, labels={"pool": sel, f"{FQ}/e2e-fleet-old": "1"}, annotations=managed)
    kube.create_node(outside, labels={f"{FQ}/e2e-fleet-old": "1"}, annotations=managed)
    feats = {
        a: {"cpu.model": {"elements": {"vendor_id": "Intel"}}, "gpu.count": {"elements": {"n": "4"}}},
        b: {"cpu.model": {"elements": {"vendor_id": "Intel"}}, "gpu.count": {"elements": {"n": "0"}}},
        c: {"cpu.model": {"elements": {"vendor_id": "AMD"}}, "gpu.count": {"elements": {"n": "0"}}},
        outside: {"cpu.model": {"elements": {"vendor_id": "Intel"}}, "gpu.count": {"elements": {"n": "8"}}},
    }
    for n, attrs in feats.items():
        kube.request("POST", f"{NFD_API}/namespaces/{MASTER_NS}/nodefeatures",
                     body=nodefeature(n, MASTER_NS, n, {"attributes": attrs}))
    old = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": name},
           "spec": {"rules": [{"name": "old", "labels": {"e2e-fleet-old": "1"}}]}}
    kube.request("POST", f"{NFD_API}/nodefeaturerules", body=old)
    kube.create_pod(pods_ns, "plain", node_name=a)
    tolerant = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "tolerant", "namespace": pods_ns},
                "spec": {"nodeName": a, "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
                         "tolerations": [{"key": "example.com/gpu", "operator": "Exists", "effect": "NoExecute"}]}}
    kube.request("POST", f"/api/v1/namespaces/{pods_ns}/pods", body=tolerant)
    kube.create_pod(pods_ns, "on-outside", node_name=outside)
    rules = tmp_path / "fleet.yaml"
    rules.write_text(textwrap.dedent(FLEET_RULES).replace("NAME", name))
    try:
        yield {"selector": f"pool={sel}", "nodes": (a, b, c), "outside": outside, "rules": str(rules),
               "pods_ns": pods_ns, "nfr": name}
    finally:
        for n in feats:
            kube.request("DELETE", f"{NFD_API}/namespaces/{MASTER_NS}/nodefeatures/{n}")
            kube.delete_node(n)
        kube.request("DELETE", f"{NFD_API}/nodefeaturerules/{name}")
        kube.delete_namespace(pods_ns)


def _versions(kube: KubeCluster, names: Iterable[str]) -> dict[str, str]:
    return {n: kube.get(f"/api/v1/nodes/{n}")["metadata"]["resourceVersion"] for n in names}


def test_fleet_form_counts_gains_changes_losses_and_evictions(kube: KubeCluster, fleet: dict[str, Any]) -> None:
    import json

    a, b, c = fleet["nodes"]
    before = _versions(kube, [*fleet["nodes"], fleet["outside"]])
    nfr_rv = kube.get(f"{NFD_API}/nodefeaturerules/{fleet['nfr']}")["metadata"]["resourceVersion"]
    r = run("test", "-f", fleet["rules"], "-l", fleet["selector"], "-k", kube.kubeconfig, "--enable-taints",
            "-o", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads(r.stdout)
    assert rep["nodes"] == 3
    items = {(i["kind"], i["key"]): (i["gain"], i["change"], i["lose"]) for i in rep["items"]}
    assert items == {
        ("label", f"{FQ}/intel"): ([a], [b], []),
        # the file replaces the cluster's revision that produced "e2e-fleet-old"; the node outside the
        # selector is not counted
        ("label", f"{FQ}/e2e-fleet-old"): ([], [], sorted([b, c])),
        ("extended resource", "example.com/gpus"): ([a], [], []),
        ("taint", "example.com/gpu:NoExecute"): ([a], [], []),
    }
    assert rep["evictions"] == [{"pod": f"{fleet['pods_ns']}/plain", "node": a,
                                 "taint": "example.com/gpu=yes:NoExecute", "afterSeconds": None}]
    # read-only: no Node and no rule object written
    assert _versions(kube, [*fleet["nodes"], fleet["outside"]]) == before
    assert kube.get(f"{NFD_API}/nodefeaturerules/{fleet['nfr']}")["metadata"]["resourceVersion"] == nfr_rv

    r = run("test", "-f", fleet["rules"], "-A", "-k", kube.kubeconfig, "--enable-taints", "--show-nodes")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert out.startswith(f'Evaluating NodeFeatureRule "{fleet["rules"]}" against every node: ')
    # -A takes the node outside the selector too: it gains the taint, its pod is evicted
    assert f"  {fleet['pods_ns']}/on-outside on {fleet['outside']}: example.com/gpu=yes:NoExecute" in out
    lose_line = next(line for line in out.splitlines() if line.startswith(f"  {FQ}/e2e-fleet-old: "))
    total = int(out.splitlines()[0].rsplit(": ", 1)[1].split(" ")[0])  # every node of the shared cluster
    assert lose_line.endswith(f"lose 3 (of {total} nodes)"), lose_line
    assert f"    lose: {', '.join(sorted([b, c, fleet['outside']]))}" in out


def test_fleet_form_refusals_are_one_line(kube: KubeCluster, fleet: dict[str, Any], tmp_path: Path) -> None:
    r = run("test", "-f", str(tmp_path / "missing.yaml"), "-A", "-k", kube.kubeconfig)
    assert r.returncode == 1 and r.stderr.startswith("error: ") and "cannot read" in r.stderr
    assert "Traceback" not in r.stderr
    dead = tmp_path / "dead.yaml"
    dead.write_text(Path(kube.kubeconfig).read_text().replace(kube.server, f"https://127.0.0.1:{free_port()}"))
    r = run("test", "-f", fleet["rules"], "-A", "-k", str(dead))
    assert r.returncode == 1 and r.stderr.startswith("error: failed to list Nodes: "), r.stderr
    r = run("test", "-f", fleet["rules"], "-A", "-n", "x", "-k", kube.kubeconfig)
    assert r.returncode == 1 and "cannot be combined" in r.stderr


def test_fleet_form_evaluates_the_files_groups_against_their_status(kube: KubeCluster, fleet: dict[str, Any],
                                                                    tmp_path: Path) -> None:
    """A NodeFeatureGroup in the file is not skipped: its members among the selected nodes, and
    who joins and leaves against the group's status in the cluster."""
    import json

    a, b, c = fleet["nodes"]
    name = kube.unique_name("e2e-fleet-group")
    group = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureGroup",
             "metadata": {"name": name, "namespace": MASTER_NS},
             "spec": {"featureGroupRules": [{"name": "intel", "matchFeatures": [
                 {"feature": "cpu.model", "matchExpressions": {"vendor_id": {"op": "In", "value": ["Intel"]}}}]}]}}
    kube.request("POST", f"{NFD_API}/namespaces/{MASTER_NS}/nodefeaturegroups", body=group)
    try:
        # the status a master wrote earlier: c (AMD) is listed, a is not
        kube.request("PATCH", f"{NFD_API}/namespaces/{MASTER_NS}/nodefeaturegroups/{name}/status",
                     content_type="application/merge-patch+json",
                     body={"status": {"nodes": [{"name": b}, {"name": c}]}})
        rv = kube.get(f"{NFD_API}/namespaces/{MASTER_NS}/nodefeaturegroups/{name}")["metadata"]["resourceVersion"]
        both = tmp_path / "both.yaml"
        both.write_text(Path(fleet["rules"]).read_text() + "---\n" + json.dumps(group))
        r = run("test", "-f", str(both), "-l", fleet["selector"], "-k", kube.kubeconfig, "-o", "json")
        assert r.returncode == 0, r.stdout + r.stderr
        (g,) = json.loads(r.stdout)["groups"]
        assert (g["group"], g["namespace"], g["exists"]) == (name, MASTER_NS, True)
        assert (sorted(g["members"]), g["join"], g["leave"]) == (sorted([a, b]), [a], [c])
        r = run("test", "-f", str(both), "-l", fleet["selector"], "-k", kube.kubeconfig, "--show-nodes")
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"  {MASTER_NS}/{name}: 2 member(s) of 3 nodes (now 2; join 1, leave 1)\n" in r.stdout, r.stdout
        assert f"    join: {a}\n    leave: {c}\n" in r.stdout, r.stdout
        # a file of groups only is taken too; nothing was written
        only = tmp_path / "only.yaml"
        only.write_text(json.dumps(group | {"metadata": {"name": name + "-new", "namespace": MASTER_NS}}))
        r = run("test", "-f", str(only), "-l", fleet["selector"], "-k", kube.kubeconfig, "-o", "json")
        assert r.returncode == 0, r.stdout + r.stderr
        (g,) = json.loads(r.stdout)["groups"]
        assert g["exists"] is False and sorted(g["members"]) == sorted([a, b])
        assert kube.get(f"{NFD_API}/namespaces/{MASTER_NS}/nodefeaturegroups/{name}")["metadata"]["resourceVersion"] == rv
    finally:
        kube.request("DELETE", f"{NFD_API}/namespaces/{MASTER_NS}/nodefeaturegroups/{name}")
