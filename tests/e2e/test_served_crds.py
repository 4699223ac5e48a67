"""An older NFD's CRDs served by the real kube-apiserver (issue 48): the GPU Operator bundles NFD
0.19's CRDs, and Helm does not upgrade CRDs, so a cluster may store NodeFeatureRules under a
schema without ``matchCEL``. The test replaces our two rule CRDs with a copy of ours without
``matchCEL`` (written here, nothing fetched), then:

- shows what that does: a rule created without strict field validation is stored without its
  ``matchCEL`` (so it matches every node);
- ``kubectl nfd validate --cluster`` reads the served CRDs and names the pruned field and the rule
  that would match every node (and says "is valid" against our CRDs);
- nfd-master, under its ServiceAccount and the RBAC of deploy/base/rbac, reads the CRDs at start
  and says once what they lack: a log line, a Warning Event on the CRD and
  ``nfd_master_crd_missing_fields``; when the CRDs are upgraded while it runs (it watches them),
  it says so and the gauge goes back to 0.

The CRDs are restored afterwards, whatever happens.
"""

from __future__ import annotations

import copy
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nfd.cli.kubectl_nfd import main as kubectl_main
from tests.e2e.harness import REPO_ROOT, HttpError, KubeCluster, free_port

pytestmark = pytest.mark.e2e

NS = "node-feature-discovery"
NFD = "/apis/nfd.k8s-sigs.io/v1alpha1"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
NAMES = {"nodefeaturerules.nfd.k8s-sigs.io": "rules", "nodefeaturegroups.nfd.k8s-sigs.io": "featureGroupRules"}

RULES = textwrap.dedent("""\
    apiVersion: nfd.k8s-sigs.io/v1alpha1
    kind: NodeFeatureRule
    metadata: {name: served-crds-cel}
    spec:
      rules:
      - name: a100
        labels: {example.com/a100: "true"}
        matchCEL:
        - instances["pci.device"].exists(d, d.vendor == "10de" && d.device == "20b0")
    """)


def _without_match_cel(crd: dict[str, Any]) -> dict[str, Any]:
    crd = copy.deepcopy(crd)
    for v in crd["spec"]["versions"]:
        rule = v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][NAMES[crd["metadata"]["name"]]]
        rule["items"]["properties"].pop("matchCEL")
    return crd


def _put_spec(kube: KubeCluster, name: str, spec: dict[str, Any]) -> None:
    for _ in range(10):
        cur = kube.get(f"{CRDS}/{name}")
        cur["spec"] = spec
        try:
            kube.request("PUT", f"{CRDS}/{name}", body=cur)
            return
        except HttpError as e:
            if e.status != 409:
                raise
    raise AssertionError(f"could not update {name}")


def _match_cel_served(kube: KubeCluster) -> bool:
    """Whether the server now keeps matchCEL (a strict dry-run create tells)."""
    obj = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
           "metadata": {"name": kube.unique_name("probe")},
           "spec": {"rules": [{"name": "r", "matchCEL": ["true"]}]}}
    try:
        kube.request("POST", f"{NFD}/nodefeaturerules", body=obj, params={"dryRun": "All", "fieldValidation": "Strict"})
        return True
    except HttpError as e:
        assert "matchCEL" in str(e), e
        return False


@pytest.fixture
def older_crds(kube: KubeCluster) -> Iterator[dict[str, dict[str, Any]]]:
    """Our rule CRDs replaced by copies without matchCEL; the originals restored afterwards."""
    originals = {n: kube.get(f"{CRDS}/{n}")["spec"] for n in NAMES}
    try:
        for n in NAMES:
            _put_spec(kube, n, _without_match_cel({"metadata": {"name": n}, "spec": originals[n]})["spec"])
        kube.wait_until(lambda: not _match_cel_served(kube), timeout=30, message="matchCEL pruned")
        yield originals
    finally:
        for n, spec in originals.items():
            _put_spec(kube, n, spec)
        kube.wait_until(lambda: _match_cel_served(kube), timeout=30, message="matchCEL served again")


def test_kubectl_nfd_validate_against_the_cluster(kube: KubeCluster, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "rule.yaml"
    path.write_text(RULES)
    # the cluster serves our CRDs: valid
    assert kubectl_main(["validate", "-f", str(path), "--cluster", "-k", kube.kubeconfig]) == 0, capsys.readouterr()
    assert capsys.readouterr().out.splitlines()[-1] == f"NodeFeatureRule {path} is valid"


def test_older_crds_prune_match_cel_and_validate_says_so(kube: KubeCluster, older_crds: Any, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    # what the server does with such a rule without strict validation: matchCEL is gone
    obj = yaml.safe_load(RULES)
    obj["metadata"]["name"] = kube.unique_name("cel")
    stored = kube.request("POST", f"{NFD}/nodefeaturerules", body=obj, params={"fieldValidation": "Ignore"})
    try:
        assert stored["spec"]["rules"] == [{"name": "a100", "labels": {"example.com/a100": "true"}}]
    finally:
        kube.request("DELETE", f"{NFD}/nodefeaturerules/{obj['metadata']['name']}")
    path = tmp_path / "rule.yaml"
    path.write_text(RULES)
    assert kubectl_main(["validate", "-f", str(path), "--cluster", "-k", kube.kubeconfig]) == 1
    cap = capsys.readouterr()
    assert cap.out.splitlines()[-1] == f"NodeFeatureRule {path} is not valid"
    assert cap.err.splitlines() == [
        "spec.rules[0].matchCEL: not in the schema of the cluster's CRDs: the API server prunes this field, so "
        "nfd-master never sees it; upgrade the CRDs: kubectl apply --server-side --force-conflicts -k crds/",
        "spec.rules[0]: with matchCEL pruned by the cluster's CRDs, the rule has no match term left and matches "
        "every node",
    ]


def _metric(port: int, crd: str) -> float | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(f'nfd_master_crd_missing_fields{{crd="{crd}"}} '):
            return float(line.split()[-1])
    return None


def test_master_says_once_what_the_served_crds_lack(kube: KubeCluster, older_crds: dict[str, Any]) -> None:
    kube.apply_manifest_dir(REPO_ROOT / "deploy" / "base" / "rbac")
    kube.create_namespace(NS, exist_ok=True)
    port = free_port()
    started = time.time()
    master = kube.start_process(["nfd-master", f"-port={port}"],
                                kubeconfig=kube.serviceaccount_kubeconfig(NS, "nfd-master"),
                                env={"KUBERNETES_NAMESPACE": NS, "NODE_NAME": ""})
    try:
        rules_crd = "nodefeaturerules.nfd.k8s-sigs.io"
        text = master.wait_log(f"the served CRD {rules_crd} lacks fields this nfd-master evaluates: "
                               "spec.rules[].matchCEL;", timeout=60)
        assert "the served CRD nodefeaturegroups.nfd.k8s-sigs.io lacks fields this nfd-master evaluates: " \
               "spec.featureGroupRules[].matchCEL;" in master.wait_log("nodefeaturegroups.nfd.k8s-sigs.io lacks")
        assert "upgrade the CRDs: kubectl apply --server-side --force-conflicts -k crds/" in text
        assert "cannot read the CustomResourceDefinition" not in text  # the RBAC of deploy/ allows it
        kube.wait_until(lambda: _metric(port, rules_crd) == 1.0, timeout=30, message="gauge set")

        def events() -> list[dict[str, Any]]:
            items = kube.get("/api/v1/namespaces/default/events")["items"]
            return [e for e in items if e.get("reason") == "OutdatedCRD"
                    and e["involvedObject"]["name"] == rules_crd
                    and e["involvedObject"]["kind"] == "CustomResourceDefinition"]

        ev = kube.wait_until(events, timeout=30, message="Warning Event on the CRD")
        assert ev[0]["type"] == "Warning" and "spec.rules[].matchCEL" in ev[0]["message"]
        # once: more watching says nothing new
        time.sleep(2)
        assert master.logs().count(f"the served CRD {rules_crd} lacks") == 1
        assert len(events()) == len(ev)
        # the CRDs upgraded while it runs: it watches them
        for n, spec in older_crds.items():
            _put_spec(kube, n, spec)
        master.wait_log(f"the served CRD {rules_crd} now has every field this nfd-master evaluates", timeout=30)
        kube.wait_until(lambda: _metric(port, rules_crd) == 0.0, timeout=30, message="gauge back to 0")
        assert time.time() - started < 120
    finally:
        master.stop()
