"""nfd-worker as a real process, under its ServiceAccount, against the real kube-apiserver.

It publishes its node's NodeFeature, follows features.d changes and config reloads, makes no
writes (and no reads) in steady state, and a restart neither deletes nor empties the object.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import REPO_ROOT, KubeCluster, ManagedProcess, free_port

pytestmark = pytest.mark.e2e

NS = "node-feature-discovery"
NFD = "/apis/nfd.k8s-sigs.io/v1alpha1"
FIXTURE = REPO_ROOT / "tests" / "fixtures" / "sysfs" / "gpu-server"
CONF = "core:\n  sleepInterval: 1s\n  featureSources: [all, -nvml]\n  labelSources: [all, -nvml]\n"


@pytest.fixture(scope="module")
def rbac(kube: KubeCluster) -> Iterator[KubeCluster]:
    kube.apply_manifest_dir(REPO_ROOT / "deploy" / "base" / "rbac")
    yield kube


class WorkerEnv:
    def __init__(self, kube: KubeCluster, tmp: Path) -> None:
        self.kube = kube
        self.node = kube.unique_name("node")
        kube.create_node(self.node, labels={"kubernetes.io/hostname": self.node})
        self.pod_name = kube.unique_name("nfd-worker")
        pod = kube.create_pod(NS, self.pod_name, node_name=self.node, service_account="nfd-worker")
        self.pod_uid = pod["metadata"]["uid"]
        self.kubeconfig = kube.serviceaccount_kubeconfig(NS, "nfd-worker", bound_pod=(NS, self.pod_name))
        self.root = tmp / "root"
        shutil.copytree(FIXTURE / "root", self.root)
        self.features_d = self.root / "etc/kubernetes/node-feature-discovery/features.d"
        self.conf = tmp / "nfd-worker.conf"
        self.conf.write_text(CONF)
        self.port = free_port()
        self.proc: ManagedProcess | None = None

    @property
    def path(self) -> str:
        return f"{NFD}/namespaces/{NS}/nodefeatures/{self.node}"

    def start(self) -> ManagedProcess:
        self.proc = self.kube.start_process(
            ["nfd-worker", "-host-root", str(self.root), "-config", str(self.conf), "-port", str(self.port)],
            kubeconfig=self.kubeconfig,
            env={"NODE_NAME": self.node, "KUBERNETES_NAMESPACE": NS, "POD_NAME": self.pod_name,
                 "POD_UID": self.pod_uid},
        )
        return self.proc

    def stop(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGTERM)
        assert self.proc.wait(timeout=20) == 0, self.proc.logs()

    def nodefeature(self) -> dict[str, Any] | None:
        obj: dict[str, Any] | None = self.kube.get_or_none(self.path)
        return obj

    def metrics(self) -> dict[str, float]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                k, _, v = line.rpartition(" ")
                out[k] = float(v)
        return out

    def wait_metrics(self) -> dict[str, float]:
        return self.kube.wait_until(self._try_metrics, timeout=30, message="worker /metrics")

    def _try_metrics(self) -> dict[str, float] | None:
        try:
            return self.metrics()
        except OSError:
            return None


@pytest.fixture
def wenv(rbac: KubeCluster, tmp_path: Path) -> Iterator[WorkerEnv]:
    env = WorkerEnv(rbac, tmp_path)
    yield env
    if env.proc is not None and env.proc.running:
        env.proc.stop()
    rbac.delete_node(env.node)


def _expected_labels() -> dict[str, str]:
    lines = (FIXTURE / "expected-labels.txt").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines)


def test_worker_publishes_follows_changes_and_survives_restart(wenv: WorkerEnv) -> None:
    kube = wenv.kube
    wenv.start()
    obj = kube.wait_until(wenv.nodefeature, timeout=60, message="NodeFeature created")
    meta = obj["metadata"]
    assert meta["labels"] == {"nfd.node.kubernetes.io/node-name": wenv.node}
    assert meta["annotations"]["nfd.node.kubernetes.io/worker.pod.uid"] == wenv.pod_uid
    assert "nfd.node.kubernetes.io/worker.version" in meta["annotations"]
    assert [(r["kind"], r["name"], r["uid"]) for r in meta["ownerReferences"]] == [
        ("Pod", wenv.pod_name, wenv.pod_uid)]
    assert obj["spec"]["labels"] == _expected_labels()
    feats = obj["spec"]["features"]
    assert len(feats["instances"]["pci.device"]["elements"]) == 7
    assert feats["attributes"]["system.name"]["elements"] == {"nodename": wenv.node}

    # a features.d change is published without waiting for anything else
    (wenv.features_d / "zone").write_text("topology.example.com/zone=z1\n")
    obj = kube.wait_until(
        lambda: (o := wenv.nodefeature()) and o["spec"]["labels"].get("topology.example.com/zone") == "z1" and o,
        timeout=20, message="features.d label published")

    # steady state: discovery keeps running, but no reads and no writes of the object
    m1 = wenv.wait_metrics()
    rv = obj["metadata"]["resourceVersion"]
    count_key = next(k for k in m1 if k.startswith("nfd_worker_feature_discovery_duration_seconds_count"))
    kube.wait_until(lambda: wenv.metrics()[count_key] >= m1[count_key] + 3, timeout=30,
                    message="three more discovery passes")
    m2 = wenv.metrics()
    for verb in ("GET", "UPDATE", "CREATE"):
        k = f'nfd_worker_api_requests_total{{verb="{verb}"}}'
        assert m2.get(k, 0) == m1.get(k, 0), (verb, m1.get(k), m2.get(k))
    assert wenv.nodefeature()["metadata"]["resourceVersion"] == rv

    # an invalid config is reported and the previous one stays in force
    wenv.conf.write_text("core:\n  labelWhiteList: '('\n")
    kube.wait_until(lambda: wenv.metrics().get("nfd_worker_config_reload_errors_total") == 1, timeout=20,
                    message="config reload error counted")
    assert wenv.proc is not None and wenv.proc.running
    assert wenv.nodefeature()["metadata"]["resourceVersion"] == rv
    wenv.conf.write_text(CONF)

    # restart: the object is neither deleted nor emptied, and identical content is not rewritten
    wenv.stop()
    after_stop = wenv.nodefeature()
    assert after_stop is not None and after_stop["spec"] == obj["spec"]
    wenv.start()
    wenv.wait_metrics()
    time.sleep(2)  # let the new process finish its first pass and (not) write
    again = wenv.nodefeature()
    assert again["metadata"]["resourceVersion"] == rv
    assert again["spec"]["labels"]["topology.example.com/zone"] == "z1"
    assert "publishing NodeFeature failed" not in wenv.proc.logs()


def test_worker_oneshot_no_owner_refs(wenv: WorkerEnv) -> None:
    kube = wenv.kube
    proc = kube.start_process(
        ["nfd-worker", "-oneshot", "-owner-refs=", "-host-root", str(wenv.root), "-config", str(wenv.conf)],
        kubeconfig=wenv.kubeconfig,
        env={"NODE_NAME": wenv.node, "KUBERNETES_NAMESPACE": NS},
    )
    assert proc.wait(timeout=60) == 0, proc.logs()
    obj = wenv.nodefeature()
    assert obj is not None and obj["metadata"].get("ownerReferences", []) == []
    assert "nfd.node.kubernetes.io/worker.pod.uid" not in obj["metadata"]["annotations"]
    assert obj["spec"]["labels"]["rdma.capable"] == "true"


def test_worker_restarted_while_sources_are_unreadable_keeps_what_it_published(wenv: WorkerEnv) -> None:
    """features.d and sys/bus/pci/devices unreadable right after a restart: the worker publishes
    those sources' features as it last published them (the API is the last good state), so the
    master removes nothing; they are re-read once readable."""
    kube = wenv.kube
    (wenv.features_d / "zone").write_text("topology.example.com/zone=z1\n")
    wenv.start()
    obj = kube.wait_until(
        lambda: (o := wenv.nodefeature()) and o["spec"]["labels"].get("topology.example.com/zone") == "z1" and o,
        timeout=60, message="NodeFeature with the features.d label")
    before = obj["spec"]
    wenv.stop()

    pci = wenv.root / "sys/bus/pci/devices"
    hidden_pci, hidden_d = pci.with_name("devices.hidden"), wenv.features_d.with_name("features.d.hidden")
    pci.rename(hidden_pci)
    pci.write_text("")  # a file where the directory was: listing it fails (ENOTDIR), as root too
    wenv.features_d.rename(hidden_d)
    wenv.features_d.write_text("")
    proc = wenv.start()
    kube.wait_until(lambda: "publishing its features as last published" in proc.logs(), timeout=30,
                    message="the worker noticed the failing sources")
    time.sleep(2)
    during = wenv.nodefeature()["spec"]
    assert during["labels"] == before["labels"]
    assert len(during["features"]["instances"]["pci.device"]["elements"]) == 7
    assert during["features"]["attributes"].get("local.label") == before["features"]["attributes"].get("local.label")

    # readable again, with a change: the real content is published
    pci.unlink()
    hidden_pci.rename(pci)
    wenv.features_d.unlink()
    hidden_d.rename(wenv.features_d)
    (wenv.features_d / "zone").write_text("topology.example.com/zone=z2\n")
    kube.wait_until(
        lambda: (o := wenv.nodefeature()) and o["spec"]["labels"].get("topology.example.com/zone") == "z2",
        timeout=90, message="features.d re-read after it became readable")


def test_worker_survives_deep_config_and_a_deep_custom_d_file(wenv: WorkerEnv) -> None:
    """A deeply nested nfd-worker.conf (start and live reload) and a deeply nested custom.d file:
    named errors, the worker keeps running and publishing, the good custom.d file's label stays
    (before: a RecursionError crash-loop, and the whole custom source lost)."""
    kube = wenv.kube
    custom_d = wenv.root / "etc/kubernetes/node-feature-discovery/custom.d"
    custom_d.mkdir(parents=True, exist_ok=True)
    (custom_d / "good.yaml").write_text(
        "- name: good\n  labels: {custom-good: 'yes'}\n  matchFeatures:\n"
        "    - feature: system.name\n      matchExpressions: {nodename: {op: Exists}}\n")
    (custom_d / "deep.yaml").write_text("- name: deep\n  labels: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n")
    wenv.conf.write_text(CONF.replace("core:\n", "core:\n  deep: " + "[" * 5000 + "]" * 5000 + "\n"))
    proc = wenv.start()
    kube.wait_until(lambda: (o := wenv.nodefeature()) and o["spec"]["labels"].get("custom-good") == "yes",
                    timeout=60, message="published with the good custom.d label")
    logs = proc.logs()
    assert "nfd-worker.conf: line 2: nesting deeper than 100 levels" in logs, logs[-2000:]
    assert "deep.yaml" in logs and "nesting deeper than 100 levels" in logs
    # a valid config, then a deep one on live reload: reported, the previous one stays in force
    wenv.conf.write_text(CONF)
    kube.wait_until(lambda: '"configuration successfully updated"' in proc.logs(), timeout=30,
                    message="valid config reloaded")
    wenv.conf.write_text("core:\n  x: " + "{a: " * 4000 + "1" + "}" * 4000 + "\n")
    kube.wait_until(lambda: proc.logs().count("nesting deeper than 100 levels") >= 3, timeout=30,
                    message="deep config on reload reported")
    time.sleep(2)
    assert proc.running
    assert wenv.nodefeature()["spec"]["labels"].get("custom-good") == "yes"
    assert "Traceback" not in proc.logs() and "RecursionError" not in proc.logs()


def test_worker_logs_upstream_structured_lines(wenv: WorkerEnv) -> None:
    """What operators grep for, as upstream writes it (docs/logging.md): the banner, the config,
    discovery completed, the NodeFeature created then updated, the http server, the shutdown."""
    from tests.support import klog

    kube = wenv.kube
    proc = wenv.start()
    kube.wait_until(wenv.nodefeature, timeout=60, message="NodeFeature created")
    ref = f"{NS}/{wenv.node}"
    proc.wait_log(f'"creating NodeFeature object" nodefeature="{ref}"', timeout=20)
    (wenv.features_d / "zone").write_text("topology.example.com/zone=z2\n")
    proc.wait_log(f'"updating NodeFeature object" nodefeature="{ref}"', timeout=20)
    wenv.stop()
    text = proc.logs()
    assert klog.find(text, "Node Feature Discovery Worker", nodeName=wenv.node, namespace=NS), text[-3000:]
    assert klog.find(text, "configuration file parsed", path=str(wenv.conf))
    (cfg,) = klog.find(text, "configuration successfully updated")
    assert json.loads(cfg.kv["configuration"])["core"]["sleepInterval"] == "1s"
    assert klog.find(text, "feature discovery completed")
    assert klog.find(text, "http server starting", port=f":{wenv.port}")
    assert klog.find(text, "shutting down nfd-worker")
    assert not klog.find(text, "NodeFeature object created")  # V(4)
