"""The install journey on a real node (tests/e2e/node.py): the project's image built from the
Dockerfile, run by containerd under a real kubelet, installed with `kustomize build` of
deploy/overlays/master-worker-topologyupdater (the default install plus the topology-updater)
and only the test overlay (tests/e2e/node-overlay: the test image's tag): pods on the node's pod
network, reaching the API through the `kubernetes` Service.

The tests share one install and run in file order; then the kustomize install is replaced by
the Helm chart's (plus the same test overlay), and the last test deletes the Node.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.harness import HttpError, RestClient
from tests.e2e.netns import POD_CIDR
from tests.e2e.node import PAUSE_REF, RealNode, real_node
from tests.e2e.tools import CHART_DIR, DEPLOY_DIR, helm_bin, kustomize_bin

pytestmark = [pytest.mark.node, pytest.mark.slow]
__all__ = ["helm_bin", "kustomize_bin", "real_node"]  # fixtures

NS = "node-feature-discovery"
APPS_NS = "nfd-e2e-apps"
OVERLAY = Path(__file__).resolve().parent / "node-overlay"
NFD_API = "/apis/nfd.k8s-sigs.io/v1alpha1"
NRT_API = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
NFD_LABEL_NS = ("feature.node.kubernetes.io/", "profile.node.kubernetes.io/")
WIDGET = "feature.node.kubernetes.io/e2e-widget"


def render(kustomize: Path, base: Path | None = None, *, apiserver_port: int | None = None,
           manifests: str | None = None) -> list[dict[str, Any]]:
    """`kustomize build` of `base` (a deploy/ overlay) or of rendered `manifests` (Helm's), plus
    the test overlay. (`apiserver_port` is no longer used: the pods reach the API through the
    `kubernetes` Service.)"""
    with tempfile.TemporaryDirectory(prefix="nfd-node-overlay-") as d:
        if manifests is not None:
            (Path(d) / "rendered.yaml").write_text(manifests)
        resources = ["rendered.yaml"] if base is None else [os.path.relpath(base, d)]  # only relative paths
        (Path(d) / "kustomization.yaml").write_text(yaml.safe_dump({
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": resources, "components": [os.path.relpath(OVERLAY, d)]}))
        proc = subprocess.run([str(kustomize), "build", d], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"kustomize build {base} + test overlay: {proc.stderr}"
    return [o for o in yaml.safe_load_all(proc.stdout) if isinstance(o, dict) and o.get("kind")]


def pods(node: RealNode, namespace: str = NS) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = node.kube.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
    return items


def ready(pod: dict[str, Any]) -> bool:
    conds = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions") or []}
    return pod["status"].get("phase") == "Running" and conds.get("Ready") == "True"


def component(pod: dict[str, Any]) -> str:
    """nfd-master, nfd-worker, nfd-gc or nfd-topology-updater: what the pod runs (kustomize and
    Helm name the pods differently)."""
    return str(pod["spec"]["containers"][0]["command"][0])


def pod_state(node: RealNode, namespace: str = NS) -> str:
    out = []
    for p in pods(node, namespace):
        cs = [(c["name"], c.get("ready"), c.get("restartCount"), c.get("state")) for c in
              p["status"].get("containerStatuses") or []]
        out.append(f"{p['metadata']['name']}: {p['status'].get('phase')} {cs} "
                   f"{[c for c in p['status'].get('conditions') or [] if c['status'] != 'True']}")
    return "\n".join(out)


def nfd_labels(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k.startswith(NFD_LABEL_NS)}


def app_pod(name: str, *, node_selector: dict[str, str] | None = None, requests: dict[str, str] | None = None,
            limits: dict[str, str] | None = None) -> dict[str, Any]:
    """A pod that runs the pause image on the pod network."""
    container: dict[str, Any] = {"name": "app", "image": PAUSE_REF, "imagePullPolicy": "Never",
                                 "resources": {"requests": dict(requests or {"cpu": "10m", "memory": "16Mi"})}}
    if limits:
        container["resources"]["limits"] = dict(limits)
    spec: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": 1}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": APPS_NS}, "spec": spec}


def run_pod(node: RealNode, body: dict[str, Any], *, timeout: float = 120) -> dict[str, Any]:
    kube = node.kube
    kube.request("POST", f"/api/v1/namespaces/{APPS_NS}/pods", body=body)
    name = body["metadata"]["name"]
    try:
        pod: dict[str, Any] = kube.wait_until(
            lambda: (p := kube.get(f"/api/v1/namespaces/{APPS_NS}/pods/{name}")) and ready(p) and p,
            timeout=timeout, interval=0.5, message=f"pod {name} running")
    except TimeoutError:
        raise AssertionError(f"pod {name} not running:\n{pod_state(node, APPS_NS)}\n{node.describe()}") from None
    return pod


def delete_pod(node: RealNode, name: str, *, wait: bool = True) -> None:
    kube = node.kube
    kube.request("DELETE", f"/api/v1/namespaces/{APPS_NS}/pods/{name}", params={"gracePeriodSeconds": "0"})
    if wait:
        kube.wait_until(lambda: kube.get_or_none(f"/api/v1/namespaces/{APPS_NS}/pods/{name}") is None,
                        timeout=60, interval=0.5, message=f"pod {name} gone")


class NodeWatch:
    """Every version of the Node the apiserver sends from now on (a watch in a thread)."""

    def __init__(self, node: RealNode) -> None:
        self.events: list[dict[str, Any]] = []
        kube = node.kube
        rv = kube.get(f"/api/v1/nodes/{node.name}")["metadata"]["resourceVersion"]
        url = (f"{kube.server}/api/v1/nodes?watch=1&fieldSelector=metadata.name%3D{node.name}"
               f"&resourceVersion={rv}&timeoutSeconds=600")
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {kube.admin_token}"})
        self._resp = urllib.request.urlopen(req, context=ssl.create_default_context(cafile=kube.ca_file))
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for line in self._resp:
                self.events.append(json.loads(line))
        except Exception:  # noqa: BLE001 - closed by close(): the events so far are the answer
            return

    def close(self) -> None:
        self._resp.close()


@pytest.fixture(scope="module")
def installed(real_node: RealNode, kustomize_bin: Path) -> Iterator[list[dict[str, Any]]]:
    kube = real_node.kube
    objs = render(kustomize_bin, DEPLOY_DIR / "overlays" / "master-worker-topologyupdater")
    kube.apply_objects(objs)
    kube.create_namespace(APPS_NS, exist_ok=True)
    yield objs


def test_every_component_pod_is_ready_on_its_probes(real_node: RealNode, installed: list[dict[str, Any]]) -> None:
    kube = real_node.kube
    want = {"nfd-master", "nfd-worker", "nfd-gc", "nfd-topology-updater"}
    began = time.monotonic()
    try:
        kube.wait_until(lambda: {component(p) for p in pods(real_node) if ready(p)} >= want,
                        timeout=300, interval=1, message="nfd pods Ready")
    except TimeoutError:
        raise AssertionError(f"nfd pods not Ready:\n{pod_state(real_node)}\n{real_node.describe()}") from None
    print(f"nfd pods Ready {time.monotonic() - began:.1f}s after the install", file=sys.__stderr__)
    by = {component(p): p for p in pods(real_node)}
    for name in want:
        p = by[name]
        spec = p["spec"]
        assert spec["nodeName"] == real_node.name and not spec.get("hostNetwork")
        assert ipaddress.ip_address(p["status"]["podIP"]) in ipaddress.ip_network(POD_CIDR), p["status"]
        (c,) = spec["containers"]
        assert c["image"] == "nfd:e2e" and c.get("readinessProbe") and c.get("livenessProbe"), name
        status = p["status"]["containerStatuses"][0]
        assert status["ready"] and status["restartCount"] == 0, (name, status, real_node.pod_log(NS, p["metadata"]["name"]))
        # the image, not a copy on the host: containerd ran docker.io/library/nfd:e2e
        assert status["image"].endswith("nfd:e2e"), status["image"]
        # its metrics answer on the pod's own address, through the apiserver's pod proxy
        port = c["ports"][0]["containerPort"]
        metrics = kube.request("GET", f"/api/v1/namespaces/{NS}/pods/{p['metadata']['name']}:{port}/proxy/metrics")
        assert "# HELP" in str(metrics), (name, str(metrics)[:500])


def test_worker_in_its_container_publishes_this_machines_labels(real_node: RealNode,
                                                                installed: list[dict[str, Any]]) -> None:
    """The node's labels are `nfd export labels` on the host: the hostPath mounts show the
    worker this machine, under a non-root user and a read-only root."""
    proc = subprocess.run([sys.executable, "-m", "nfd.cli", "export", "labels", "-o", "json"],
                          capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0 or not proc.stdout.strip().startswith("{"):
        proc = subprocess.run([sys.executable, "-m", "nfd.cli", "export", "labels"],
                              capture_output=True, text=True, timeout=120, check=True)
        host = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    else:
        host = json.loads(proc.stdout)
    host = nfd_labels(host)
    assert host, "nfd export labels printed no label on the host"
    kube = real_node.kube
    try:
        kube.wait_until(lambda: nfd_labels(real_node.node()["metadata"]["labels"]) == host, timeout=180,
                        interval=1, message="node labels = nfd export labels")
    except TimeoutError:
        got = nfd_labels(real_node.node()["metadata"]["labels"])
        diff = {k: (host.get(k), got.get(k)) for k in set(host) | set(got) if host.get(k) != got.get(k)}
        worker = next(p for p in pods(real_node) if component(p) == "nfd-worker")
        raise AssertionError(f"node labels differ from the host's (host, node): {diff}\n"
                             f"{real_node.pod_log(NS, worker['metadata']['name'])[-3000:]}") from None
    nf = kube.get(f"{NFD_API}/namespaces/{NS}/nodefeatures/{real_node.name}")
    assert nf["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"] == real_node.name


def test_pods_scheduled_on_a_label_and_an_advertised_extended_resource_run(
        real_node: RealNode, installed: list[dict[str, Any]]) -> None:
    kube = real_node.kube
    kube.apply_objects([{
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "e2e-widgets"},
        "spec": {"rules": [{"name": "widgets", "extendedResources": {WIDGET: "2"},
                            "matchFeatures": [{"feature": "kernel.version",
                                               "matchExpressions": {"major": {"op": "Exists"}}}]}]}}])
    try:
        kube.wait_until(lambda: real_node.node()["status"].get("allocatable", {}).get(WIDGET) == "2",
                        timeout=120, interval=1, message=f"{WIDGET} advertised")
    except TimeoutError:
        raise AssertionError(f"{WIDGET} not in the node's allocatable: "
                             f"{real_node.node()['status'].get('allocatable')}") from None
    labels = real_node.node()["metadata"]["labels"]
    key = "feature.node.kubernetes.io/kernel-version.major"
    assert key in labels, sorted(nfd_labels(labels))
    run_pod(real_node, app_pod("on-label", node_selector={key: labels[key]}))
    run_pod(real_node, app_pod("on-widget", requests={"cpu": "10m", "memory": "16Mi", WIDGET: "1"},
                               limits={WIDGET: "1"}))
    # The scheduler really filters on them: no node has the label value, nor 2 more widgets.
    for body in (app_pod("off-label", node_selector={key: "no-such-version"}),
                 app_pod("off-widget", requests={WIDGET: "2"}, limits={WIDGET: "2"})):
        kube.request("POST", f"/api/v1/namespaces/{APPS_NS}/pods", body=body)
        name = body["metadata"]["name"]

        def unschedulable(name: str = name) -> bool:
            p = kube.get(f"/api/v1/namespaces/{APPS_NS}/pods/{name}")
            return any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"
                       for c in p["status"].get("conditions") or [])

        kube.wait_until(unschedulable, timeout=60, interval=0.5, message=f"{name} unschedulable")
    for name in ("on-label", "on-widget", "off-label", "off-widget"):
        delete_pod(real_node, name, wait=False)


def _nrt_available(real_node: RealNode) -> dict[str, dict[str, Any]]:
    nrt = real_node.kube.get_or_none(f"{NRT_API}/{real_node.name}")
    if nrt is None:
        return {}
    return {z["name"]: {r["name"]: r for r in z.get("resources") or []} for z in nrt.get("zones") or []}


def _cpu_list(text: str) -> set[int]:
    out: set[int] = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def test_topology_updater_reports_a_guaranteed_pods_exclusive_cpu(real_node: RealNode,
                                                                   installed: list[dict[str, Any]]) -> None:
    kube = real_node.kube
    kube.wait_until(lambda: _nrt_available(real_node), timeout=180, interval=1,
                    message="the NodeResourceTopology published")
    nrt = kube.get(f"{NRT_API}/{real_node.name}")
    # configz read from the real kubelet: its topology manager settings are the NRT's attributes
    attrs = {a["name"]: a["value"] for a in nrt.get("attributes") or []}
    assert attrs.get("topologyManagerPolicy") == "best-effort", nrt
    assert attrs.get("topologyManagerScope") == "container", nrt
    (zone,) = [z for z in _nrt_available(real_node).values() if "cpu" in z]
    before = int(zone["cpu"]["available"])
    guaranteed = {"cpu": "1", "memory": "64Mi"}
    pod = run_pod(real_node, app_pod("guaranteed", requests=guaranteed, limits=guaranteed))
    assert pod["status"]["qosClass"] == "Guaranteed"
    state = real_node.cpu_manager_state()
    assert state["policyName"] == "static"
    given = _cpu_list(state["entries"][pod["metadata"]["uid"]]["app"])
    assert len(given) == 1 and given.isdisjoint(_cpu_list(state["defaultCpuSet"])), state

    def shows(n: int) -> bool:
        zones = [z for z in _nrt_available(real_node).values() if "cpu" in z]
        return len(zones) == 1 and int(zones[0]["cpu"]["available"]) == n

    try:
        kube.wait_until(lambda: shows(before - len(given)), timeout=120, interval=1,
                        message="the pod's CPU taken from the zone")
    except TimeoutError:
        raise AssertionError(f"NRT zones {_nrt_available(real_node)} after the kubelet gave CPU {given}") from None
    delete_pod(real_node, "guaranteed")
    kube.wait_until(lambda: shows(before), timeout=120, interval=1, message="the pod's CPU back in the zone")


def test_rollout_restart_changes_no_label(real_node: RealNode, installed: list[dict[str, Any]]) -> None:
    kube = real_node.kube
    labels = real_node.node()["metadata"]["labels"]
    watch = NodeWatch(real_node)
    old = {component(p): p["metadata"]["uid"] for p in pods(real_node)}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    restart = {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": now}}}}}
    for path in (f"/apis/apps/v1/namespaces/{NS}/daemonsets/nfd-worker",
                 f"/apis/apps/v1/namespaces/{NS}/deployments/nfd-master"):
        kube.request("PATCH", path, body=restart, content_type="application/strategic-merge-patch+json")

    def restarted() -> bool:
        now_pods = {component(p): p for p in pods(real_node)}
        return all(c in now_pods and now_pods[c]["metadata"]["uid"] != old[c] and ready(now_pods[c])
                   for c in ("nfd-worker", "nfd-master"))

    try:
        kube.wait_until(restarted, timeout=240, interval=1, message="worker and master restarted")
    except TimeoutError:
        raise AssertionError(f"rollout not done:\n{pod_state(real_node)}") from None
    time.sleep(10)  # a new worker's first publication and the new master's first pass are over
    watch.close()
    for ev in watch.events:
        got = ev["object"]["metadata"].get("labels") or {}
        assert nfd_labels(got) == nfd_labels(labels), (ev["type"], set(nfd_labels(got)) ^ set(nfd_labels(labels)))
    assert real_node.node()["metadata"]["labels"] == labels


def test_confinement_holds_for_the_worker_pods_projected_token(real_node: RealNode,
                                                                installed: list[dict[str, Any]]) -> None:
    """The token the kubelet projected into the worker's pod carries the node claim; with it the
    worker may write its own node's NodeFeature and no other."""
    kube = real_node.kube
    worker = next(p for p in pods(real_node) if component(p) == "nfd-worker" and ready(p))
    uid = worker["metadata"]["uid"]
    (token_file,) = list((real_node.root_dir / "pods" / uid / "volumes" / "kubernetes.io~projected").glob("*/token"))
    client = RestClient(server=kube.server, ca_file=kube.ca_file, token=token_file.read_text().strip())
    who = client.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                         body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    info = who["status"]["userInfo"]
    assert info["username"] == f"system:serviceaccount:{NS}:nfd-worker"
    assert info["extra"]["authentication.kubernetes.io/node-name"] == [real_node.name]
    assert info["extra"]["authentication.kubernetes.io/pod-uid"] == [uid]
    base = f"{NFD_API}/namespaces/{NS}/nodefeatures"
    own = client.request("GET", f"{base}/{real_node.name}")
    client.request("PUT", f"{base}/{real_node.name}", body=own)  # its own: allowed
    other = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
             "metadata": {"name": "other-node", "labels": {"nfd.node.kubernetes.io/node-name": "other-node"}},
             "spec": {"labels": {"feature.node.kubernetes.io/e2e": "hijacked"}}}
    with pytest.raises(HttpError) as ei:
        client.request("POST", base, body=other)
    assert ei.value.status == 403 and "ValidatingAdmissionPolicy" in ei.value.message, ei.value
    hijack = dict(own, spec=dict(own["spec"], labels={"feature.node.kubernetes.io/e2e": "hijacked"}),
                  metadata=dict(own["metadata"], labels={"nfd.node.kubernetes.io/node-name": "other-node"}))
    with pytest.raises(HttpError) as ei:
        client.request("PUT", f"{base}/{real_node.name}", body=hijack)
    assert ei.value.status == 403, ei.value


def test_helm_chart_installs_the_same(real_node: RealNode, installed: list[dict[str, Any]], helm_bin: Path,
                                      kustomize_bin: Path, tmp_path: Path) -> None:
    """The kustomize install removed as a user would (its objects, CRDs aside), the node's nfd
    labels stripped, then the Helm chart (topology-updater on) plus the same test overlay:
    every pod Ready, the labels published again."""
    kube = real_node.kube
    # Read before the uninstall: the namespace's deletion removes the NodeFeature while the old
    # master may still run, and after its grace period that master removes the labels (evidence).
    labels = real_node.node()["metadata"]["labels"]
    for o in reversed(installed):
        if o["kind"] != "CustomResourceDefinition":
            with contextlib.suppress(HttpError):
                kube.request("DELETE", kube.object_path(o))
    kube.wait_until(lambda: kube.get_or_none(f"/api/v1/namespaces/{NS}") is None, timeout=240, interval=1,
                    message=f"namespace {NS} deleted")
    left = real_node.node()["metadata"]["labels"]
    kube.request("PATCH", f"/api/v1/nodes/{real_node.name}", content_type="application/merge-patch+json",
                 body={"metadata": {"labels": {k: None for k in nfd_labels(left)}}})
    # --no-hooks: as `helm install` does, not its post-delete prune Job, which would strip the labels
    argv = [str(helm_bin), "template", "nfd", str(CHART_DIR), "--namespace", NS, "--no-hooks", "--set", "image.tag=e2e",
            "--set", "topologyUpdater.enable=true"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    objs = render(kustomize_bin,
                  manifests=yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
                  + "---\n" + proc.stdout)
    kube.apply_objects(objs)
    want = {"nfd-master", "nfd-worker", "nfd-gc", "nfd-topology-updater"}
    try:
        kube.wait_until(lambda: {component(p) for p in pods(real_node) if ready(p)} >= want,
                        timeout=300, interval=1, message="nfd pods (Helm) Ready")
    except TimeoutError:
        raise AssertionError(f"Helm's nfd pods not Ready:\n{pod_state(real_node)}") from None
    assert all(p["spec"]["containers"][0]["image"] == "nfd:e2e" for p in pods(real_node))
    try:
        kube.wait_until(lambda: nfd_labels(real_node.node()["metadata"]["labels"]) == nfd_labels(labels),
                        timeout=180, interval=1, message="labels published again by the Helm install")
    except TimeoutError:
        want_labels, got = nfd_labels(labels), nfd_labels(real_node.node()["metadata"]["labels"])
        diff = {k: (want_labels.get(k), got.get(k)) for k in set(want_labels) | set(got)
                if want_labels.get(k) != got.get(k)}
        logs = "\n".join(f"--- {p['metadata']['name']}:\n{real_node.pod_log(NS, p['metadata']['name'])[-2500:]}"
                         for p in pods(real_node) if component(p) in ("nfd-master", "nfd-worker"))
        raise AssertionError(f"labels (kustomize install, Helm install) differ: {diff}\n{logs}") from None
    kube.wait_until(lambda: _nrt_available(real_node), timeout=180, interval=1,
                    message="the NodeResourceTopology published (Helm)")


@pytest.mark.deletes_node
def test_deleting_the_node_makes_gc_remove_its_objects(real_node: RealNode, installed: list[dict[str, Any]]) -> None:
    """Last (the deletes_node marker): the Node goes (the kubelet does not register it again)."""
    kube = real_node.kube
    nf = f"{NFD_API}/namespaces/{NS}/nodefeatures/{real_node.name}"
    nrt = f"{NRT_API}/{real_node.name}"
    uids = {path: kube.request("GET", path)["metadata"]["uid"] for path in (nf, nrt)}

    def gc_pods_settled() -> list[dict[str, Any]]:
        """The gc pods once none is starting or terminating. Sorted last, this test can run in
        a fresh module set-up: `installed` applied again over the Helm install rolls pods."""
        gcs = [p for p in pods(real_node) if component(p) == "nfd-gc"]
        settled = all(ready(p) and not p["metadata"].get("deletionTimestamp") for p in gcs)
        return gcs if gcs and settled else []

    gcs = kube.wait_until(gc_pods_settled, timeout=180, interval=1, message="nfd-gc pods Ready, none terminating")
    kube.request("DELETE", f"/api/v1/nodes/{real_node.name}")
    began = time.monotonic()

    def deleted(path: str) -> bool:
        """Gone, or there again under another uid: the worker and the topology-updater still
        run on this machine (the pod garbage collector removes the orphaned pods only after its
        40 s quarantine) and write back the object they own within an interval
        (docs/gc.md)."""
        obj = kube.get_or_none(path)
        return obj is None or obj["metadata"]["uid"] != uids[path]

    # nfd-gc acts on the Node's deletion
    kube.wait_until(lambda: deleted(nf) and deleted(nrt), timeout=30,
                    interval=0.2, message="NodeFeature and NodeResourceTopology deleted")
    print(f"nfd-gc removed the node's objects {time.monotonic() - began:.1f}s after its deletion",
          file=sys.__stderr__)

    def gc_logged_the_node() -> bool:
        """containerd writes a container's output to its log file after the write returns: the
        line may land after the objects are seen gone."""
        return any(real_node.name in real_node.pod_log(NS, p["metadata"]["name"]) for p in gcs)

    try:
        kube.wait_until(gc_logged_the_node, timeout=30, interval=0.5, message="nfd-gc logged the node")
    except TimeoutError:
        logs = "\n".join(real_node.pod_log(NS, p["metadata"]["name"])[-1500:] for p in gcs)
        raise AssertionError(f"no nfd-gc pod logged {real_node.name}:\n{logs}") from None
