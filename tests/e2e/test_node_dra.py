"""DRA with a real driver on the real node (tests/e2e/node.py).

The DRA kubelet plugin Kubernetes' own e2e suite uses (k8s.io/kubernetes
test/e2e/dra/test-driver, built with the node's binaries) runs beside the kubelet: it registers
with the kubelet's plugin watcher and publishes the node's ResourceSlice (driver
`test-driver.cdi.k8s.io`, pool = the node, devices `device-00`...). nfd-master and nfd-worker run
beside it as host processes under their ServiceAccounts (deploy/base/rbac): the worker publishes
the node's features, the master's `dra` source reads the slices (docs/dra.md).

- a pod with a ResourceClaim (DeviceClass + ResourceClaimTemplate, resource.k8s.io/v1) is
  allocated a device of that slice by the kube-scheduler, prepared by the kubelet through the
  driver (NodePrepareResources: the driver writes the claim's CDI spec) and runs; its end
  unprepares the claim (the CDI spec goes);
- a NodeFeatureRule on `dra.device` labels the node from the slice;
- the driver stopped: its slices stay until the kubelet wipes them (30 s after the driver went),
  and the label stays with them; once they are deleted the label goes, and no other label of
  the node ever left (every Node version the API server sent is checked).

CDI: the kubelet hands the claim's CDI device ids to the runtime in the CRI's `CDIDevices`;
containerd injects them only from 1.7 with `enable_cdi` (default on from 2.0). The test reads
the container's OCI spec and asserts the edit is there exactly when the installed containerd
can make it (Debian 12's 1.6.20 cannot: the pod runs without the driver's env variable).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.e2e.harness import REPO_ROOT, HttpError, ManagedProcess, free_port
from tests.e2e.node import RealNode, real_node
from tests.e2e.test_node_device_plugin import container_env
from tests.e2e.test_real_node import APPS_NS, NodeWatch, app_pod, delete_pod, nfd_labels, run_pod

pytestmark = [pytest.mark.node, pytest.mark.slow]
__all__ = ["real_node"]  # fixture

NS = "node-feature-discovery"
NFD_API = "/apis/nfd.k8s-sigs.io/v1alpha1"
RESOURCE_API = "/apis/resource.k8s.io/v1"
DRIVER = "test-driver.cdi.k8s.io"
DEVICES = 2
CLASS = "nfd-e2e-test-driver"
LABEL = "feature.node.kubernetes.io/e2e-dra-test-driver"
#: the kubelet wipes a gone driver's slices after 30 s (pkg/kubelet/cm/dra defaultWipingDelay)
WIPE_WITHIN_S = 120


def containerd_version() -> tuple[int, int]:
    out = subprocess.run(["containerd", "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\sv?(\d+)\.(\d+)\.", out)
    assert m, out
    return int(m.group(1)), int(m.group(2))


@dataclass
class Env:
    node: RealNode
    processes: dict[str, ManagedProcess] = field(default_factory=dict)
    cdi_dir: str = ""
    claim: dict[str, Any] = field(default_factory=dict)

    @property
    def kube(self) -> Any:
        return self.node.kube

    def slices(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.kube.get(f"{RESOURCE_API}/resourceslices")["items"]
        return [s for s in items if s["spec"].get("driver") == DRIVER and s["spec"].get("nodeName") == self.node.name]

    def labels(self) -> dict[str, str]:
        return dict(self.node.node()["metadata"].get("labels") or {})

    def start_driver(self) -> ManagedProcess:
        # the driver makes --datadir's parent, not its own socket directory (its README: mkdir -p)
        (self.node.root_dir / "plugins" / DRIVER).mkdir(parents=True, exist_ok=True)
        p = self.kube.start_process(
            [str(self.node.bins["dra-test-driver"]), "-v=3", "kubelet-plugin", f"--node-name={self.node.name}",
             f"--num-devices={DEVICES}", f"--cdi-dir={self.cdi_dir}"],
            kubeconfig=self.kube.kubeconfig, name="dra-test-driver")
        self.processes["driver"] = p
        return p

    def logs(self) -> str:
        return "\n".join(f"--- {n}:\n{p.logs()[-2500:]}" for n, p in self.processes.items())


@pytest.fixture(scope="module")
def env(real_node: RealNode, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    kube = real_node.kube
    kube.create_namespace(NS, exist_ok=True)
    kube.create_namespace(APPS_NS, exist_ok=True)
    kube.apply_manifest_dir(REPO_ROOT / "deploy" / "base" / "rbac")
    tmp = tmp_path_factory.mktemp("dra")
    (tmp / "nfd-master.conf").write_text("{}\n")
    (tmp / "nfd-worker.conf").write_text("{}\n")
    e = Env(node=real_node, cdi_dir=str(tmp / "cdi"))
    common = {"KUBERNETES_NAMESPACE": NS}
    e.processes["master"] = kube.start_process(
        ["nfd-master", f"-port={free_port()}", "-bind-address=127.0.0.1", f"-config={tmp / 'nfd-master.conf'}"],
        kubeconfig=kube.serviceaccount_kubeconfig(NS, "nfd-master"), name="nfd-master-host",
        env=dict(common, NODE_NAME=""))
    e.processes["worker"] = kube.start_process(
        ["nfd-worker", f"-port={free_port()}", "-owner-refs=", f"-config={tmp / 'nfd-worker.conf'}"],
        kubeconfig=kube.serviceaccount_kubeconfig(NS, "nfd-worker"), name="nfd-worker-host",
        env=dict(common, NODE_NAME=real_node.name))
    try:
        yield e
    finally:
        for name in ("driver", "worker", "master"):
            p = e.processes.get(name)
            if p is not None:
                p.stop()
        for path in (f"{NFD_API}/nodefeaturerules/e2e-dra", f"{RESOURCE_API}/deviceclasses/{CLASS}",
                     f"{NFD_API}/namespaces/{NS}/nodefeatures/{real_node.name}"):
            with contextlib.suppress(HttpError):
                kube.request("DELETE", path)
        for s in e.slices():
            with contextlib.suppress(HttpError):
                kube.request("DELETE", f"{RESOURCE_API}/resourceslices/{s['metadata']['name']}")
        # the later real-node tests start from a node without nfd's labels and bookkeeping
        meta = real_node.node()["metadata"]
        kube.request("PATCH", f"/api/v1/nodes/{real_node.name}", content_type="application/merge-patch+json",
                     body={"metadata": {
                         "labels": {k: None for k in nfd_labels(meta.get("labels") or {})},
                         "annotations": {k: None for k in meta.get("annotations") or {}
                                         if k.startswith("nfd.node.kubernetes.io/")}}})


def test_the_drivers_slice_labels_the_node_through_a_rule(env: Env) -> None:
    kube = env.kube
    try:
        kube.wait_until(lambda: nfd_labels(env.labels()), timeout=120, interval=0.5,
                        message="the worker's labels on the node")
    except TimeoutError:
        raise AssertionError(f"no nfd label on the node:\n{env.logs()}") from None
    kube.apply_objects([{
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "e2e-dra"},
        "spec": {"rules": [{"name": "dra test driver", "labels": {LABEL: "true"},
                            "matchFeatures": [{"feature": "dra.device",
                                               "matchExpressions": {"driver": {"op": "In", "value": [DRIVER]},
                                                                    "device": {"op": "In", "value": ["device-00"]}}}]}]}}])
    time.sleep(2)
    assert LABEL not in env.labels(), "labelled before any driver published a slice"
    began = time.monotonic()
    env.start_driver()
    try:
        kube.wait_until(lambda: env.slices(), timeout=120, interval=0.5, message="the driver's ResourceSlice")
    except TimeoutError:
        raise AssertionError(f"no ResourceSlice from the driver:\n{env.logs()}\n{env.node.describe()}") from None
    (s,) = env.slices()
    assert s["spec"]["pool"]["name"] == env.node.name
    assert [d["name"] for d in s["spec"]["devices"]] == [f"device-{i:02d}" for i in range(DEVICES)]
    kube.wait_until(lambda: env.labels().get(LABEL) == "true", timeout=60, interval=0.5,
                    message=f"{LABEL} from the slice")
    print(f"DRA e2e: driver started -> slice -> label in {time.monotonic() - began:.1f}s", file=sys.__stderr__)


def test_a_pod_with_a_resource_claim_is_allocated_prepared_and_runs(env: Env) -> None:
    kube = env.kube
    kube.apply_objects([
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "one-device", "namespace": APPS_NS},
         "spec": {"spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": CLASS}}]}}}},
    ])
    body = app_pod("with-claim")
    body["spec"]["resourceClaims"] = [{"name": "dev", "resourceClaimTemplateName": "one-device"}]
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "dev"}]
    pod = run_pod(env.node, body)
    (status,) = pod["status"]["resourceClaimStatuses"]
    claim = kube.get(f"{RESOURCE_API}/namespaces/{APPS_NS}/resourceclaims/{status['resourceClaimName']}")
    env.claim = claim
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert (result["driver"], result["pool"], result["request"]) == (DRIVER, env.node.name, "dev"), result
    assert result["device"] in {f"device-{i:02d}" for i in range(DEVICES)}
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["with-claim"]
    # prepared: the driver wrote the claim's CDI spec when the kubelet called NodePrepareResources
    spec_file = f"{env.cdi_dir}/{DRIVER}-{claim['metadata']['uid']}-dev.json"
    with open(spec_file) as f:
        cdi = f.read()
    variable = re.sub(r"[^a-zA-Z0-9]", "_", f"claim_{claim['metadata']['name']}_dev")  # as the driver names it
    assert f"{variable}=true" in cdi, cdi
    injected = container_env(env.node, pod).get(variable) == "true"
    version = containerd_version()
    print(f"DRA e2e: containerd {version[0]}.{version[1]}: the claim's CDI edit "
          f"{'was' if injected else 'was NOT'} injected into the container", file=sys.__stderr__)
    assert injected == (version >= (2, 0)), (version, container_env(env.node, pod))
    delete_pod(env.node, "with-claim")
    kube.wait_until(lambda: not os.path.exists(spec_file), timeout=60, interval=0.5,
                    message="the claim unprepared (its CDI spec removed)")


def test_the_label_follows_the_slices_not_the_driver_process_and_nothing_else_moves(env: Env) -> None:
    kube = env.kube
    before = nfd_labels(env.labels())
    assert before.get(LABEL) == "true"
    others = {k: v for k, v in before.items() if k != LABEL}
    assert others, "the worker's labels are the ones that must stay"
    watch = NodeWatch(env.node)
    try:
        driver = env.processes["driver"]
        driver.stop()
        stopped = time.monotonic()
        seen_with_slice = 0
        while env.slices():
            assert env.labels().get(LABEL) == "true", "label removed while the driver's slice is still there"
            seen_with_slice += 1
            assert time.monotonic() - stopped < WIPE_WITHIN_S, "the kubelet did not wipe the gone driver's slice"
            time.sleep(1)
        wiped = time.monotonic() - stopped
        kube.wait_until(lambda: LABEL not in env.labels(), timeout=60, interval=0.5,
                        message=f"{LABEL} removed with the slice")
        print(f"DRA e2e: driver stopped; its slice gone (the kubelet wipes it) after {wiped:.1f}s "
              f"(label kept meanwhile, {seen_with_slice} checks); label removed "
              f"{time.monotonic() - stopped - wiped:.1f}s later", file=sys.__stderr__)
        time.sleep(2)
    finally:
        watch.close()
    assert nfd_labels(env.labels()) == others
    for ev in watch.events:
        labels = ev["object"]["metadata"].get("labels") or {}
        missing = {k for k in others if labels.get(k) != others[k]}
        assert not missing, f"{missing} changed in a Node version ({ev['type']})"
    assert env.processes["master"].running and env.processes["worker"].running
