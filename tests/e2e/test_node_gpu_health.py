"""GPU health on the real node (tests/e2e/node.py), with the mock NVML library (issue 47).

nfd-worker and nfd-master run beside the kubelet as host processes under their ServiceAccounts
(deploy/base/rbac), as in tests/e2e/test_node_dra.py: the worker with the mock libnvidia-ml.so.1
(tests/tools/mocknvml) on LD_LIBRARY_PATH, eight healthy H100s with 18 NVLinks each
(mocknvml.healthy_nvlink_profile), `core.sleepInterval: 2s`, only the nvml source, GPU health on
with a short XID window; the master with `-enable-taints` and the shipped NodeFeatureRule
deploy/nodefeaturerule/nvidia-gpu-health. Faults are injected into the running worker through
the mock: its runtime state file (mocknvml.set_state: health readings, fabric, a lost GPU) and
its event file (mocknvml.inject_event: XIDs).

Checked, each fault on GPU 3 of 8:

- uncorrected volatile ECC, retired pages pending, row remap pending, row remap failed, GPU lost,
  fabric (registration failed; route unhealthy), NVLink down: within SET_WITHIN_S of the
  injection the node carries `nvidia.com/gpu.unhealthy=<reason>:NoSchedule` and
  `nvidia.com/gpu.healthy.count` drops to 7 (`unhealthy.count` 1); cleared, both go within
  SET_WITHIN_S;
- two faults at once: the taint's value is the more severe reason, then the other's;
- a critical XID (94) taints for the XID window, then clears; an application XID (13) never taints;
- an XID whose recovery is a GPU reset (79) holds past the window, until the GPU is seen reset
  (lost, then answering again);
- degraded signals (hardware-slowdown clock event reason, PCIe link below its width and
  generation) reach the NodeFeature after `degradedPasses` passes and clear as slowly, and never
  taint the node nor change its counts (docs/gpu-health.md: degraded is not unhealthy);
- a pod without the toleration stays Pending (Unschedulable: an untolerated taint) while the node
  is tainted, one with it runs; the first schedules once the fault clears.

The bound, SET_WITHIN_S = 2 x INTERVAL_S + SLACK_S: a fault lands anywhere in the worker's
cycle; the worker starts its next pass one interval after the last one ended, so the pass that
sees the fault starts at most an interval plus the rest of the pass in progress (which may have
read GPU 3 before the change) later; its NodeFeature write, the master's watch event, rule
evaluation and Node patch follow. A pass here takes milliseconds and the rest well under a
second on an idle machine: one interval of margin and SLACK_S absorb a loaded 2-core machine.
Each measured latency is printed.

The node is left as it was found, a test failing or not: after each test the mock goes back to
healthy and the node must be untainted again (the worker is restarted, forgetting held XIDs, if
not); at the end the rule is deleted, the processes stopped, the NodeFeature deleted and any
taint, label or annotation of ours still on the Node removed.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.build import BuildError
from tests.e2e.harness import REPO_ROOT, HttpError, ManagedProcess, free_port
from tests.e2e.node import RealNode, real_node
from tests.e2e.test_real_node import APPS_NS, app_pod, delete_pod, nfd_labels, pod_state, ready
from tests.support import mocknvml

pytestmark = [pytest.mark.node, pytest.mark.slow]
__all__ = ["real_node"]  # fixture

NS = "node-feature-discovery"
NFD_API = "/apis/nfd.k8s-sigs.io/v1alpha1"
RULE_FILE = REPO_ROOT / "deploy" / "nodefeaturerule" / "nvidia-gpu-health" / "nvidia-gpu-health.yaml"
TAINT_KEY = "nvidia.com/gpu.unhealthy"
HEALTHY = "nvidia.com/gpu.healthy.count"
UNHEALTHY = "nvidia.com/gpu.unhealthy.count"
GPUS = 8
GPU = 3  # the faulty one
INTERVAL_S = 2
SLACK_S = 3.0
SET_WITHIN_S = 2 * INTERVAL_S + SLACK_S
XID_WINDOW_S = 8
DEGRADED_PASSES = 2
#: a degraded reason needs DEGRADED_PASSES passes in a row to set (and as many to clear)
DEGRADED_WITHIN_S = DEGRADED_PASSES * INTERVAL_S + SET_WITHIN_S
#: 94: contained ECC error (neither ignored nor a reset XID: held for the window); 13: graphics
#: engine exception (an application XID, ignored); 79: fallen off the bus (held until a reset)
CRITICAL_XID, APPLICATION_XID, RESET_XID = 94, 13, 79


@dataclass(frozen=True)
class Fault:
    name: str
    health: dict[str, Any]  # mocknvml.with_health's keys on GPU 3
    reason: str


FAULTS = [
    Fault("ecc-uncorrected-volatile", {"eccUncorrectedVolatile": 2}, "ecc-uncorrected"),
    Fault("retired-pages-pending", {"retiredPagesPending": True}, "pages-pending"),
    Fault("row-remap-pending", {"remappedRows": {"uncorrected": 1, "pending": True}}, "row-remap-pending"),
    Fault("row-remap-failure", {"remappedRows": {"uncorrected": 3, "failed": True}}, "row-remap-failed"),
    Fault("gpu-lost", {"lost": True}, "gpu-lost"),
    # registered with the fabric manager, failed (status NVML_ERROR_UNKNOWN)
    Fault("fabric-failed", {"fabric": {"state": 3, "status": 999}}, "fabric"),
    # the health mask's route-unhealthy field TRUE (bits 4-5 = 1)
    Fault("fabric-route-unhealthy", {"fabric": {"state": 3, "status": 0, "healthMask": 1 << 4}}, "fabric"),
    Fault("nvlink-down", {"nvlinks": [1] * 17 + [0]}, "nvlink-down"),
]
DEGRADED = [
    Fault("clocks-hw-slowdown", {"clocksEventReasons": 0x8}, "clocks-hw-slowdown"),
    Fault("pcie-link-degraded", {"pcie": {"width": 8, "gen": 4}}, "pcie-width,pcie-gen"),
]

NodeView = tuple[list[dict[str, str]], dict[str, str]]  # our taints, the two count labels


@dataclass
class Env:
    node: RealNode
    workdir: Path
    doc: dict[str, Any]
    worker_argv: list[str]
    worker_env: dict[str, str]
    worker_kubeconfig: str
    processes: dict[str, ManagedProcess] = field(default_factory=dict)
    pods: list[str] = field(default_factory=list)
    latencies: dict[str, float] = field(default_factory=dict)
    restarts: int = 0
    say: Callable[[str], None] = print  # past pytest's capture: the latencies belong in CI's log

    @property
    def kube(self) -> Any:
        return self.node.kube

    @property
    def state(self) -> Path:
        return self.workdir / mocknvml.STATE_FILE

    @property
    def events(self) -> Path:
        return self.workdir / mocknvml.EVENTS_FILE

    def start_worker(self) -> ManagedProcess:
        name = "nfd-worker-gpu-health" + (f"-{self.restarts}" if self.restarts else "")
        p = self.kube.start_process(self.worker_argv, kubeconfig=self.worker_kubeconfig, name=name,
                                    env=self.worker_env)
        self.processes["worker"] = p
        return p

    def restart_worker(self) -> None:
        self.processes["worker"].stop()
        self.restarts += 1
        self.start_worker()

    def fault(self, **health: Any) -> None:
        mocknvml.set_state(self.state, mocknvml.with_health(self.doc, GPU, **health))

    def clear(self) -> None:
        mocknvml.set_state(self.state, None)

    def view(self) -> NodeView:
        node = self.node.node()
        labels = node["metadata"].get("labels") or {}
        taints = [{k: t.get(k, "") for k in ("key", "value", "effect")} for t in node["spec"].get("taints") or []
                  if t["key"] == TAINT_KEY]
        return taints, {k: labels[k] for k in (HEALTHY, UNHEALTHY) if k in labels}

    def health(self) -> tuple[dict[str, str], list[dict[str, str]]]:
        """nvml.health_summary and the nvml.health instances of the worker's NodeFeature."""
        nf = self.kube.get_or_none(f"{NFD_API}/namespaces/{NS}/nodefeatures/{self.node.name}") or {}
        features = (nf.get("spec") or {}).get("features") or {}
        summary = ((features.get("attributes") or {}).get("nvml.health_summary") or {}).get("elements") or {}
        gpus = ((features.get("instances") or {}).get("nvml.health") or {}).get("elements") or []
        return summary, [g.get("attributes") or {} for g in gpus]

    def logs(self) -> str:
        return "\n".join(f"--- {n}:\n{p.logs()[-3000:]}" for n, p in self.processes.items())

    def wait(self, what: str, cond: Callable[[], bool], within: float, *, began: float,
             always: Callable[[], None] | None = None, quiet: bool = False) -> float:
        """Poll until cond() (calling always() on each poll: what must hold meanwhile); the
        seconds since `began`, recorded and (unless quiet) printed; AssertionError past `within`."""
        while True:
            if always is not None:
                always()
            if cond():
                took = time.monotonic() - began
                if not quiet:
                    self.latencies[what] = took
                    self.say(f"{what}: {took:.2f}s")
                return took
            if time.monotonic() - began > within:
                summary, _ = self.health()
                raise AssertionError(f"{what}: not within {within:.0f}s; node {self.view()}, "
                                     f"nvml.health_summary {summary}\n{self.logs()}")
            for name, p in self.processes.items():
                assert p.running, f"{name} exited ({p.returncode}):\n{p.logs()[-3000:]}"
            time.sleep(0.1)

    def wait_node(self, what: str, *, reason: str | None, healthy: int, within: float = SET_WITHIN_S,
                  began: float, quiet: bool = False) -> float:
        taints = [] if reason is None else [{"key": TAINT_KEY, "value": reason, "effect": "NoSchedule"}]
        labels = {HEALTHY: str(healthy), UNHEALTHY: str(GPUS - healthy)}
        return self.wait(what, lambda: self.view() == (taints, labels), within, began=began, quiet=quiet)

    def assert_healthy_node(self) -> None:
        assert self.view() == ([], {HEALTHY: str(GPUS), UNHEALTHY: "0"}), self.view()


def untaint(node: RealNode) -> None:
    """Remove from the Node whatever of ours is left: our taint, the rule's and nfd's labels,
    nfd's annotations (the later real-node tests start from a node without them)."""
    n = node.node()
    meta = n["metadata"]
    taints = n["spec"].get("taints") or []
    kept = [t for t in taints if t["key"] != TAINT_KEY]
    labels = {k: None for k in meta.get("labels") or {}
              if k in (HEALTHY, UNHEALTHY) or k.startswith("nvidia.com/") or k in nfd_labels(meta.get("labels") or {})}
    annotations = {k: None for k in meta.get("annotations") or {} if k.startswith("nfd.node.kubernetes.io/")}
    body: dict[str, Any] = {"metadata": {"labels": labels, "annotations": annotations}}
    if kept != taints:
        body["spec"] = {"taints": kept or None}
    node.kube.request("PATCH", f"/api/v1/nodes/{node.name}", content_type="application/merge-patch+json", body=body)


@pytest.fixture(scope="module")
def env(real_node: RealNode, tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[Env]:
    try:
        lib_dir = mocknvml.build()
    except (BuildError, mocknvml.MockNvmlUnavailable) as err:
        pytest.fail(f"cannot build the mock NVML library: {err}", pytrace=False)
    kube = real_node.kube
    assert not [t for t in real_node.node()["spec"].get("taints") or [] if t["key"] == TAINT_KEY], \
        "the node is tainted before the test"
    kube.create_namespace(NS, exist_ok=True)
    kube.create_namespace(APPS_NS, exist_ok=True)
    kube.apply_manifest_dir(REPO_ROOT / "deploy" / "base" / "rbac")
    tmp = tmp_path_factory.mktemp("gpu-health")
    workdir = real_node.tmp / "gpu-health"
    doc = mocknvml.healthy_nvlink_profile()
    mock_env = mocknvml.prepare(doc, workdir, lib_dir=lib_dir)
    (tmp / "nfd-master.conf").write_text("{}\n")
    (tmp / "nfd-worker.conf").write_text(yaml.safe_dump({
        "core": {"sleepInterval": f"{INTERVAL_S}s", "featureSources": ["nvml"], "labelSources": []},
        "sources": {"nvml": {"health": {"enabled": True, "xidEvents": True, "xidWindow": XID_WINDOW_S,
                                        "degradedPasses": DEGRADED_PASSES}}}}))
    common = {"KUBERNETES_NAMESPACE": NS}
    e = Env(node=real_node, workdir=workdir, doc=doc,
            worker_argv=["nfd-worker", f"-port={free_port()}", "-owner-refs=", f"-config={tmp / 'nfd-worker.conf'}"],
            worker_env=dict(common, NODE_NAME=real_node.name,
                            **{k: mock_env[k] for k in ("LD_LIBRARY_PATH", mocknvml.DATA_ENV, "NFD_HOST_ROOT")}),
            worker_kubeconfig=kube.serviceaccount_kubeconfig(NS, "nfd-worker"))
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")

    def say(msg: str) -> None:
        ctx = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
        with ctx:
            print(f"gpu health e2e: {msg}", file=sys.stderr, flush=True)

    e.say = say
    rule = yaml.safe_load(RULE_FILE.read_text())
    try:
        e.processes["master"] = kube.start_process(
            ["nfd-master", "-enable-taints", f"-port={free_port()}", "-bind-address=127.0.0.1",
             f"-config={tmp / 'nfd-master.conf'}"],
            kubeconfig=kube.serviceaccount_kubeconfig(NS, "nfd-master"), name="nfd-master-gpu-health",
            env=dict(common, NODE_NAME=""))
        kube.apply_objects([rule])
        began = time.monotonic()
        e.start_worker()
        e.wait_node("started: eight healthy GPUs labelled", reason=None, healthy=GPUS, within=120, began=began)
        yield e
    finally:
        e.clear()
        for name in e.pods:
            with contextlib.suppress(HttpError, TimeoutError):
                delete_pod(real_node, name)
        with contextlib.suppress(HttpError):
            kube.request("DELETE", f"{NFD_API}/nodefeaturerules/{rule['metadata']['name']}")
        with contextlib.suppress(TimeoutError, AssertionError):  # the master takes its taint and labels back
            e.wait("rule deleted: the master's taint and labels gone",
                   lambda: e.view() == ([], {}), 30, began=time.monotonic())
        for name in ("worker", "master"):
            p = e.processes.get(name)
            if p is not None:
                p.stop()
        with contextlib.suppress(HttpError):
            kube.request("DELETE", f"{NFD_API}/namespaces/{NS}/nodefeatures/{real_node.name}")
        untaint(real_node)
        e.say(f"latencies (s) {({k: round(v, 2) for k, v in e.latencies.items()})}, worker restarts {e.restarts}")
        left = real_node.node()
        assert not [t for t in left["spec"].get("taints") or [] if t["key"] == TAINT_KEY], left["spec"]
        assert not [k for k in left["metadata"].get("labels") or {} if k.startswith("nvidia.com/")], left["metadata"]


@pytest.fixture(autouse=True)
def healthy_after(env: Env) -> Iterator[None]:
    """Each test starts and ends with a healthy, untainted node, whatever it did: the mock back to
    healthy; a node still tainted (an XID held after a failed test) gets a fresh worker."""
    env.assert_healthy_node()
    yield
    env.clear()
    began = time.monotonic()
    try:
        env.wait_node("settled", reason=None, healthy=GPUS, within=XID_WINDOW_S + SET_WITHIN_S, began=began,
                      quiet=True)
    except AssertionError:
        env.restart_worker()
        env.wait_node("settled after a worker restart", reason=None, healthy=GPUS, within=120, began=time.monotonic())


def xid_watcher_registered(env: Env) -> None:
    env.kube.wait_until(lambda: f"GPU {GPU} (" in env.processes["worker"].logs()
                        and "registered for events" in env.processes["worker"].logs(),
                        timeout=60, interval=0.2, message="the worker's XID watcher registered with the mock")


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
def test_a_fault_taints_with_its_reason_and_drops_the_healthy_count_then_clears(env: Env, fault: Fault) -> None:
    began = time.monotonic()
    env.fault(**fault.health)
    env.wait_node(f"{fault.name}: tainted {fault.reason}, 7 healthy", reason=fault.reason, healthy=GPUS - 1,
                  began=began)
    summary, gpus = env.health()
    assert summary["unhealthy_gpus"] == str(GPU) and gpus[GPU]["reasons"] == fault.reason, (summary, gpus[GPU])
    began = time.monotonic()
    env.clear()
    env.wait_node(f"{fault.name}: cleared", reason=None, healthy=GPUS, began=began)


def test_two_faults_taint_with_the_more_severe_reason_then_the_other(env: Env) -> None:
    began = time.monotonic()
    doc = mocknvml.with_health(env.doc, GPU, eccUncorrectedVolatile=1)
    mocknvml.set_state(env.state, mocknvml.with_health(doc, 5, remappedRows={"uncorrected": 2, "failed": True}))
    env.wait_node("two faults: row-remap-failed", reason="row-remap-failed", healthy=GPUS - 2, began=began)
    began = time.monotonic()
    mocknvml.set_state(env.state, doc)  # GPU 5 replaced: GPU 3's reason is the taint's value
    env.wait_node("two faults: the other one's reason", reason="ecc-uncorrected", healthy=GPUS - 1, began=began)


def test_a_critical_xid_taints_for_its_window_and_an_application_xid_never(env: Env) -> None:
    xid_watcher_registered(env)
    began = time.monotonic()
    mocknvml.inject_event(env.events, 2, APPLICATION_XID)
    env.wait(f"XID {APPLICATION_XID}: no taint for {SET_WITHIN_S:.0f}s", lambda: time.monotonic() - began > SET_WITHIN_S,
             SET_WITHIN_S + 5, began=began, always=env.assert_healthy_node)
    began = time.monotonic()
    mocknvml.inject_event(env.events, GPU, CRITICAL_XID)
    env.wait_node(f"XID {CRITICAL_XID}: tainted xid", reason="xid", healthy=GPUS - 1, began=began)
    _, gpus = env.health()
    assert gpus[GPU]["xids"] == str(CRITICAL_XID), gpus[GPU]
    took = env.wait_node(f"XID {CRITICAL_XID}: cleared after its {XID_WINDOW_S}s window", reason=None, healthy=GPUS,
                         within=XID_WINDOW_S + SET_WITHIN_S, began=began)
    assert took >= XID_WINDOW_S, f"the XID went after {took:.1f}s, before its {XID_WINDOW_S}s window"


def test_a_reset_xid_holds_past_the_window_until_the_gpu_is_seen_reset(env: Env) -> None:
    xid_watcher_registered(env)
    began = time.monotonic()
    mocknvml.inject_event(env.events, GPU, RESET_XID)
    env.wait_node(f"XID {RESET_XID}: tainted xid", reason="xid", healthy=GPUS - 1, began=began)
    held = XID_WINDOW_S + SET_WITHIN_S

    def still_held() -> None:
        assert env.view() == ([{"key": TAINT_KEY, "value": "xid", "effect": "NoSchedule"}],
                              {HEALTHY: str(GPUS - 1), UNHEALTHY: "1"}), f"XID {RESET_XID} let go before a reset"

    env.wait(f"XID {RESET_XID}: still held {held:.0f}s on", lambda: time.monotonic() - began > held, held + 5,
             began=began, always=still_held)
    began = time.monotonic()
    env.fault(lost=True)  # off the bus ...
    env.wait_node(f"XID {RESET_XID}: GPU lost", reason="gpu-lost", healthy=GPUS - 1, began=began)
    began = time.monotonic()
    env.clear()  # ... and back: reset
    env.wait_node(f"XID {RESET_XID}: GPU reset, cleared", reason=None, healthy=GPUS, began=began)


@pytest.mark.parametrize("fault", DEGRADED, ids=[f.name for f in DEGRADED])
def test_a_degraded_gpu_is_in_the_nodefeature_after_its_passes_and_never_taints(env: Env, fault: Fault) -> None:
    def degraded(on: bool) -> Callable[[], bool]:
        def check() -> bool:
            summary, gpus = env.health()
            want = (str(int(on)), fault.reason if on else "")
            return (summary.get("degraded_count"), gpus[GPU].get("degraded") if gpus else None) == want
        return check

    began = time.monotonic()
    env.fault(**fault.health)
    env.wait(f"{fault.name}: degraded {fault.reason}", degraded(True), DEGRADED_WITHIN_S, began=began,
             always=env.assert_healthy_node)
    began = time.monotonic()
    env.clear()
    env.wait(f"{fault.name}: no longer degraded", degraded(False), DEGRADED_WITHIN_S, began=began,
             always=env.assert_healthy_node)


def test_a_pod_without_the_toleration_waits_while_tainted_then_schedules(env: Env) -> None:
    kube = env.kube
    began = time.monotonic()
    env.fault(eccUncorrectedVolatile=4)
    env.wait_node("pod: tainted", reason="ecc-uncorrected", healthy=GPUS - 1, began=began)
    waiting, tolerating = "gpu-health-waits", "gpu-health-tolerates"
    body = app_pod(tolerating)
    body["spec"]["tolerations"] = [{"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    for name, manifest in ((waiting, app_pod(waiting)), (tolerating, body)):
        env.pods.append(name)
        kube.request("POST", f"/api/v1/namespaces/{APPS_NS}/pods", body=manifest)

    def pod(name: str) -> dict[str, Any]:
        p: dict[str, Any] = kube.get(f"/api/v1/namespaces/{APPS_NS}/pods/{name}")
        return p

    def unschedulable() -> bool:
        conds = {c["type"]: c for c in pod(waiting)["status"].get("conditions") or []}
        c = conds.get("PodScheduled") or {}
        # "0/1 nodes are available: 1 node(s) had untolerated taint(s). ..." (v1.35 names no taint)
        return c.get("status") == "False" and c.get("reason") == "Unschedulable" and "untolerated taint" in c.get(
            "message", "")

    try:
        kube.wait_until(lambda: ready(pod(tolerating)), timeout=120, interval=0.5, message="the tolerating pod running")
        kube.wait_until(unschedulable, timeout=60, interval=0.5, message="the scheduler: untolerated taint")
    except TimeoutError:
        raise AssertionError(f"{pod_state(env.node, APPS_NS)}\n{env.node.describe()}") from None
    def pending() -> None:
        p = pod(waiting)
        assert p["status"].get("phase") == "Pending" and not p["spec"].get("nodeName"), \
            f"the pod without the toleration was scheduled on a tainted node: {p['status']}"

    # still waiting a few worker passes later
    env.wait("pod: Pending while tainted", lambda: time.monotonic() - began > 2 * INTERVAL_S + 5, 30, began=began,
             always=pending)
    began = time.monotonic()
    env.clear()
    env.wait_node("pod: cleared", reason=None, healthy=GPUS, began=began)
    try:
        kube.wait_until(lambda: ready(pod(waiting)), timeout=120, interval=0.25, message="the waiting pod running")
    except TimeoutError:
        raise AssertionError(f"{pod_state(env.node, APPS_NS)}\n{env.node.describe()}") from None
    env.latencies["pod: running after the clear"] = took = time.monotonic() - began
    env.say(f"pod: running {took:.2f}s after the clear")
    for name in (waiting, tolerating):
        delete_pod(env.node, name)
        env.pods.remove(name)
