"""``kubectl nfd test`` against the real kube-apiserver: the node's NodeFeatures are listed with
a kubeconfig (flag or $KUBECONFIG, as kubectl), merged as nfd-master merges them, and the rules
run on the result."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
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
