"""Exec credential plugins (the kubeconfig form EKS, GKE and AKS write) against the real
kube-apiserver: a plugin written here mints a ServiceAccount token per run (TokenRequest) and claims a short lifetime; deleting and
recreating the ServiceAccount revokes the tokens minted before.

- a long-running process (nfd-master renewing its leader Lease every 2 s) runs the plugin again
  each time the credential expires, and keeps renewing;
- a token revoked before its claimed expiry gets a 401, one new run of the plugin and a retry;
- ``kubectl nfd test`` authenticates with the plugin.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.harness import KubeCluster, ManagedProcess
from tests.e2e.test_kubectl_nfd import kubectl_nfd, run

LEASE = "nfd-master.nfd.kubernetes.io"
SA = "exec-auth"

PLUGIN = '''\
import datetime, json, os, ssl, sys, time, urllib.request

server, ca, admin = os.environ["E2E_SERVER"], os.environ["E2E_CA"], os.environ["E2E_ADMIN_TOKEN"]
ns, sa, state = os.environ["E2E_NS"], os.environ["E2E_SA"], os.environ["E2E_STATE"]
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
assert info["kind"] == "ExecCredential" and info["spec"]["interactive"] is False, info
ctx = ssl.create_default_context(cafile=ca)

def call(method, path, body=None):
    req = urllib.request.Request(server + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"Authorization": "Bearer " + admin, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
        return json.loads(r.read())

n = len(os.listdir(state)) + 1
tr = call("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token",
          {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})
with open(os.path.join(state, f"run-{n:03d}"), "w") as f:
    json.dump({"at": time.time()}, f)
expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=float(os.environ["E2E_LIFETIME"]))
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {"token": tr["status"]["token"],
                             "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}}))
'''


def exec_kubeconfig(kube: KubeCluster, tmp: Path, *, namespace: str, lifetime_s: float) -> tuple[str, Path]:
    """(kubeconfig path, the plugin's state directory: one file per run)."""
    sa = SA
    kube.create_serviceaccount(namespace, sa, exist_ok=True)
    kube.apply_objects([{
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{namespace}-exec-auth"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}],
    }])
    plugin = tmp / "plugin.py"
    plugin.write_text(PLUGIN)
    state = tmp / "runs"
    state.mkdir()
    env = {"E2E_SERVER": kube.server, "E2E_CA": kube.ca_file, "E2E_ADMIN_TOKEN": kube.admin_token,
           "E2E_NS": namespace, "E2E_SA": sa, "E2E_STATE": str(state), "E2E_LIFETIME": str(lifetime_s)}
    cfg = {
        "apiVersion": "v1", "kind": "Config", "current-context": "e2e",
        "clusters": [{"name": "e2e", "cluster": {"server": kube.server, "certificate-authority": kube.ca_file}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "plugin", "namespace": namespace}}],
        "users": [{"name": "plugin", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable, "args": [str(plugin)],
            "env": [{"name": k, "value": v} for k, v in env.items()], "interactiveMode": "Never",
            "installHint": "the e2e plugin is written by the test"}}}],
    }
    path = tmp / "exec-kubeconfig.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path), state


def runs(state: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(state.iterdir())]


def renew_time(kube: KubeCluster, namespace: str) -> str | None:
    lease = kube.get_or_none(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{LEASE}")
    return None if lease is None else lease["spec"].get("renewTime")


def start_master(kube: KubeCluster, kubeconfig: str, namespace: str, tmp: Path) -> ManagedProcess:
    config = tmp / "nfd-master.conf"
    config.write_text("{}\n")
    return kube.start_process(["nfd-master", "-port=0", f"-config={config}", "-enable-leader-election"],
                              kubeconfig=kubeconfig, env={"KUBERNETES_NAMESPACE": namespace, "NODE_NAME": ""})


def wait_renewed_after(kube: KubeCluster, namespace: str, since: float, *, timeout: float = 30.0) -> None:
    """Until the Lease's renewTime is later than ``since`` (wall clock)."""
    from datetime import datetime

    def renewed() -> bool:
        t = renew_time(kube, namespace)
        return t is not None and datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() > since

    kube.wait_until(renewed, timeout=timeout, message="the leader Lease renewed")


def test_long_running_process_runs_the_plugin_again_when_its_credential_expires(
        kube: KubeCluster, namespace: str, tmp_path: Path) -> None:
    kubeconfig, state = exec_kubeconfig(kube, tmp_path, namespace=namespace, lifetime_s=2)
    master = start_master(kube, kubeconfig, namespace, tmp_path)
    try:
        master.wait_log("Successfully acquired lease", timeout=60)
        first = len(runs(state))
        time.sleep(8)  # four lifetimes; the Lease is renewed every 2 s
        wait_renewed_after(kube, namespace, time.time() - 3)
        done = runs(state)
        # one run per expiry (not one per request: ~20 requests went out meanwhile)
        assert len(done) - first >= 3, done
        assert len(done) <= first + 8, done
        assert master.running, master.logs()
        assert "Unauthorized" not in master.logs(), master.logs()
    finally:
        master.stop()


def test_a_revoked_token_gets_one_new_plugin_run_and_a_retry(
        kube: KubeCluster, namespace: str, tmp_path: Path) -> None:
    kubeconfig, state = exec_kubeconfig(kube, tmp_path, namespace=namespace, lifetime_s=3600)
    master = start_master(kube, kubeconfig, namespace, tmp_path)
    try:
        master.wait_log("Successfully acquired lease", timeout=60)
        assert len(runs(state)) == 1
        # a new ServiceAccount of the same name: tokens of the old one are refused (after the
        # API server's 10 s cache of a token's authentication), new ones work
        kube.request("DELETE", f"/api/v1/namespaces/{namespace}/serviceaccounts/{SA}")
        kube.create_serviceaccount(namespace, SA)
        try:
            kube.wait_until(lambda: len(runs(state)) >= 2, timeout=40, message="the plugin run after the 401")
        except TimeoutError:
            pytest.fail(f"no second plugin run; nfd-master's log:\n{master.logs()}")
        wait_renewed_after(kube, namespace, runs(state)[1]["at"] + 0.5)
        assert len(runs(state)) == 2, runs(state)
        assert "lost leadership" not in master.logs(), master.logs()
        assert master.running, master.logs()
    finally:
        master.stop()


def test_kubectl_nfd_test_authenticates_with_the_plugin(kube: KubeCluster, namespace: str, tmp_path: Path) -> None:
    assert kubectl_nfd()
    kubeconfig, state = exec_kubeconfig(kube, tmp_path, namespace=namespace, lifetime_s=60)
    rules = tmp_path / "r.yaml"
    rules.write_text(textwrap.dedent("""
        kind: NodeFeatureRule
        spec:
          rules:
          - name: static
            labels: {example.com/s: 'y'}
        """))
    r = run("test", "-f", str(rules), "-n", "no-such-node", "-k", kubeconfig)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "example.com/s=y" in r.stdout
    assert len(runs(state)) == 1


def test_a_failing_plugin_is_one_line_naming_it(kube: KubeCluster, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc.yaml"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "e2e",
        "clusters": [{"name": "e2e", "cluster": {"server": kube.server, "certificate-authority": kube.ca_file}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "plugin"}}],
        "users": [{"name": "plugin", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": "nfd-no-such-plugin",
            "installHint": "install nfd-no-such-plugin"}}}],
    }))
    rules = tmp_path / "r.yaml"
    rules.write_text("kind: NodeFeatureRule\nspec:\n  rules:\n  - name: s\n    labels: {example.com/s: 'y'}\n")
    r = run("test", "-f", str(rules), "-n", "n", "-k", str(kubeconfig))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "nfd-no-such-plugin" in r.stderr and "install nfd-no-such-plugin" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.fixture(autouse=True)
def _no_leftover_binding(kube: KubeCluster, namespace: str) -> Any:
    yield
    if kube.get_or_none(f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{namespace}-exec-auth"):
        kube.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{namespace}-exec-auth")
