"""NodeFeatureGroups outside the master's namespace, and spec.materializePolicy, against the real
kube-apiserver with nfd-master under its ServiceAccount (deploy/base/rbac)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import REPO_ROOT, HttpError, KubeCluster
from tests.e2e.test_master import NFD, Env, features_for, nodefeature, wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture
def env(kube: KubeCluster, tmp_path: Path) -> Iterator[Env]:
    kube.apply_manifest_dir(REPO_ROOT / "deploy" / "base" / "rbac")
    e = Env(kube, tmp_path)
    try:
        yield e
    finally:
        e.close()


def group(env: Env, name: str, namespace: str, policy: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"featureGroupRules": [{"name": "avx512", "matchFeatures": [
        {"feature": "e2e.tag", "matchExpressions": {env.tag: {"op": "Exists"}}},
        {"feature": "cpu.cpuid", "matchExpressions": {"AVX512F": {"op": "Exists"}}}]}]}
    if policy is not None:
        spec["materializePolicy"] = policy
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureGroup",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def test_groups_in_other_namespaces_and_count_only(env: Env, namespace: str) -> None:
    other = env.kube.unique_name("e2e")
    env.kube.create_namespace(other)
    try:
        nodes = [env.node(f"n{i}") for i in range(3)]
        for n in nodes:
            env.put_nf(nodefeature(n, n, **features_for(env.tag)))
        full = group(env, f"{env.tag}-full", namespace)
        count = group(env, f"{env.tag}-count", other, policy="CountOnly")
        for g in (full, count):
            env.kube.request("POST", f"{NFD}/namespaces/{g['metadata']['namespace']}/nodefeaturegroups", body=g)
        # the CRD takes only the policies the master implements
        with pytest.raises(HttpError) as ei:
            env.kube.request("POST", f"{NFD}/namespaces/{other}/nodefeaturegroups",
                             body=group(env, f"{env.tag}-labels", other, policy="Labels"))
        assert ei.value.status == 422 and "materializePolicy" in str(ei.value)

        m = env.start_master("-feature-gates=NodeFeatureGroupAPI=true")

        def status(g: dict[str, Any]) -> dict[str, Any]:
            meta = g["metadata"]
            obj = env.kube.get(f"{NFD}/namespaces/{meta['namespace']}/nodefeaturegroups/{meta['name']}")
            return obj.get("status") or {}

        wait_for(lambda: status(full) == {"nodes": [{"name": n} for n in sorted(nodes)], "nodeCount": 3},
                 what=f"the group in {namespace} lists the three nodes")
        wait_for(lambda: status(count) == {"nodes": [], "nodeCount": 3}, what=f"the group in {other} counts them")
        # one node loses the feature: both follow
        env.put_nf(nodefeature(nodes[0], nodes[0], **features_for(env.tag, avx512=False)))
        wait_for(lambda: status(count) == {"nodes": [], "nodeCount": 2}, what="the count follows")
        wait_for(lambda: [x["name"] for x in status(full)["nodes"]] == sorted(nodes[1:]), what="the list follows")
        assert status(full)["nodeCount"] == 2
        assert "Traceback" not in m.logs()
    finally:
        env.kube.delete_namespace(other)
