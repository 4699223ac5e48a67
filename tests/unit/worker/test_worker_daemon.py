"""The worker's publishing contract and its robustness, against an in-memory API."""

from __future__ import annotations

import asyncio
import os
import shutil

import pytest
from worker_fakeapi import FakeApi

from nfd.api import NODE_NAME_LABEL, WORKER_POD_UID_ANNOTATION, WORKER_VERSION_ANNOTATION
from nfd.worker.daemon import Worker
from nfd.worker.flags import parse_flags
from nfd.worker.metrics import serve_http
from nfd.worker.publish import Publisher, desired_object, same_content

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "sysfs")
NF_PATH = "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/nfd/nodefeatures/node-1"


@pytest.fixture
def host(tmp_path):
    """A writable copy of the sriov-host fixture root."""
    root = tmp_path / "root"
    shutil.copytree(os.path.join(FIXTURES, "sriov-host", "root"), root)
    (root / "etc/kubernetes/node-feature-discovery/features.d").mkdir(parents=True)
    return root


def make_worker(host, tmp_path, *args: str, env: dict | None = None):
    conf = tmp_path / "nfd-worker.conf"
    if not conf.exists():
        conf.write_text("core:\n  featureSources: [all, -nvml]\n  labelSources: [all, -nvml]\n")
    flags = parse_flags(["-host-root", str(host), "-config", str(conf), *args])
    api = FakeApi()
    env = {"NODE_NAME": "node-1", "KUBERNETES_NAMESPACE": "nfd", "POD_NAME": "w-1", "POD_UID": "p-uid", **(env or {})}
    w = Worker(flags, env=env, api=api)
    return w, api, conf


def run(coro):
    return asyncio.run(coro)


def test_desired_object_shape():
    from nfd.api.features import Features

    f = Features()
    f.add_flags("kernel.loadedmodule", ["ice"])
    obj = desired_object(node_name="n", namespace="ns", features=f, labels={"b": "2", "a": "1"},
                         owner_refs=[{"kind": "Node"}], pod_uid="u")
    assert obj["metadata"]["labels"] == {NODE_NAME_LABEL: "n"}
    assert set(obj["metadata"]["annotations"]) == {WORKER_VERSION_ANNOTATION, WORKER_POD_UID_ANNOTATION}
    assert obj["spec"] == {"features": f.to_json(), "labels": {"a": "1", "b": "2"}}
    assert same_content(obj, dict(obj, metadata=dict(obj["metadata"], resourceVersion="9", managedFields=[])))
    assert not same_content(obj, dict(obj, spec={"features": {}, "labels": {}}))


def test_publish_writes_only_on_change(host, tmp_path):
    w, api, _ = make_worker(host, tmp_path)

    async def go():
        w.reload_config()
        w.run_discovery()
        assert await w.publish()
        assert [m for m, _ in api.calls] == ["GET", "GET", "POST"]  # pod (ds owner), own object, create
        api.calls.clear()
        for _ in range(3):  # steady state: no reads, no writes
            w.run_discovery()
            assert await w.publish()
        assert api.calls == []
        lf = host / "etc/kubernetes/node-feature-discovery/features.d/zone"
        lf.write_text("zone=a\n")
        w.run_discovery(["local"])
        assert await w.publish()
        assert api.calls == [("PUT", NF_PATH)]

    run(go())
    obj = api.objects[NF_PATH]
    assert obj["spec"]["labels"]["zone"] == "a"
    assert obj["spec"]["labels"]["feature.node.kubernetes.io/network-sriov.configured"] == "true"
    assert obj["metadata"]["labels"] == {NODE_NAME_LABEL: "node-1"}
    assert obj["metadata"]["annotations"][WORKER_POD_UID_ANNOTATION] == "p-uid"
    assert obj["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "w-1", "uid": "p-uid", "blockOwnerDeletion": False}]
    assert obj["spec"]["features"]["instances"]["pci.device"]["elements"]


def test_existing_object_is_adopted_and_conflicts_retried(host, tmp_path):
    w, api, _ = make_worker(host, tmp_path, "-owner-refs", "")
    api.put_object(NF_PATH, {"metadata": {"name": "node-1", "labels": {"stale": "x"}}, "spec": {}})

    async def go():
        w.reload_config()
        w.run_discovery()
        api.fail_next = [("PUT", 409, "Conflict")]  # someone else wrote in between: re-read and retry
        api.calls.clear()
        assert await w.publish()

    run(go())
    assert [m for m, _ in api.calls] == ["GET", "PUT", "GET", "PUT"]
    assert api.objects[NF_PATH]["metadata"]["labels"] == {NODE_NAME_LABEL: "node-1"}
    assert api.objects[NF_PATH]["metadata"]["ownerReferences"] == []


def test_deleted_behind_our_back_is_recreated(host, tmp_path):
    w, api, _ = make_worker(host, tmp_path, "-owner-refs=")

    async def go():
        w.reload_config()
        w.run_discovery()
        await w.publish()
        del api.objects[NF_PATH]
        (host / "etc/kubernetes/node-feature-discovery/features.d/f").write_text("k=v\n")
        w.run_discovery(["local"])
        assert await w.publish()

    run(go())
    assert api.objects[NF_PATH]["spec"]["labels"]["k"] == "v"


def test_api_outage_keeps_state_and_counts(host, tmp_path):
    w, api, _ = make_worker(host, tmp_path, "-owner-refs=")

    async def go():
        w.reload_config()
        w.run_discovery()
        api.fail_next = [("*", 500, "InternalError")]
        assert not await w.publish()
        assert w.metrics.publish_errors == 1 and w._dirty
        assert await w.publish()

    run(go())
    assert NF_PATH in api.objects


def test_failing_source_never_shrinks_published_features(host, tmp_path, monkeypatch):
    from nfd.sources import registry

    w, api, _ = make_worker(host, tmp_path, "-owner-refs=")

    async def go():
        w.reload_config()
        w.run_discovery()
        await w.publish()
        before = api.objects[NF_PATH]["spec"]
        pci = registry.get("pci")
        monkeypatch.setattr(pci, "discover", lambda *a, **k: (_ for _ in ()).throw(OSError("EIO")))
        api.calls.clear()
        w.run_discovery()
        await w.publish()
        assert api.calls == []  # nothing changed, nothing written
        assert api.objects[NF_PATH]["spec"] == before
        assert w.metrics.source_errors["pci"] == 1

    run(go())
    assert "nfd_worker_source_errors_total{source=\"pci\"} 1" in w.metrics.render()


def test_config_live_reload_and_bad_config_keeps_previous(host, tmp_path):
    w, api, conf = make_worker(host, tmp_path, "-no-publish")
    assert w.reload_config()
    w.run_discovery()
    assert any(k.startswith("feature.node.kubernetes.io/cpu-") for k in w.labels)
    conf.write_text("core:\n  labelWhiteList: '^(network|pci)-'\n  featureSources: [all, -nvml]\n")
    assert w.reload_config()
    w.run_discovery()
    assert w.labels and all(k.split("/")[1].startswith(("network-", "pci-")) for k in w.labels)
    conf.write_text("core:\n  labelWhiteList: '('\n")  # invalid: previous config stays
    assert not w.reload_config()
    assert w.metrics.config_reload_errors == 1
    assert w.cfg.label_whitelist is not None and w.cfg.label_whitelist.pattern
    assert not w.reload_config()  # unchanged file: not re-read


def test_missing_config_is_read_once_and_again_when_it_appears(host, tmp_path):
    """Upstream runs on defaults without a config file; a missing file must not count as a
    change on every tick (that re-ran discovery each second)."""
    w, _, conf = make_worker(host, tmp_path, "-no-publish")
    conf.unlink()
    assert w.reload_config()  # first load: defaults
    assert not w.reload_config()
    assert not w.reload_config()
    conf.write_text("core:\n  labelSources: [pci]\n")
    assert w.reload_config()
    assert w.cfg.label_sources == ["pci"]
    conf.unlink()  # removed: back to defaults once
    assert w.reload_config()
    assert w.cfg.label_sources == ["all"]
    assert not w.reload_config()


def test_flags_override_config(host, tmp_path):
    w, _, conf = make_worker(host, tmp_path, "-feature-sources=pci,system", "-label-sources=pci")
    conf.write_text("core:\n  featureSources: [cpu]\n  noPublish: true\n  sleepInterval: 100ms\n")
    w.reload_config()
    assert w.feature_source_names() == ["pci", "system"] and w.label_source_names() == ["pci"]
    assert w.cfg.no_publish and w.cfg.sleep_interval == 1.0  # 0 < interval < 1s is forced to 1s
    w.run_discovery()
    assert set(w.labels) == {"feature.node.kubernetes.io/pci-0300_102b.present",
                             "feature.node.kubernetes.io/pci-0b40_8086.present",
                             "feature.node.kubernetes.io/pci-0b40_8086.sriov.capable"}


def test_no_publish_features_stripped_after_labels(host, tmp_path):
    w, api, conf = make_worker(host, tmp_path, "-owner-refs=")
    conf.write_text("core:\n  featureSources: [pci, kernel]\n  labelSources: [pci, kernel]\n"
                    "  noPublishFeatures: ['pci.*', kernel.config]\n")

    async def go():
        w.reload_config()
        w.run_discovery()
        await w.publish()

    run(go())
    spec = api.objects[NF_PATH]["spec"]
    assert "pci.device" not in spec["features"]["instances"]
    assert "kernel.config" not in spec["features"]["attributes"]
    assert "feature.node.kubernetes.io/pci-0300_102b.present" in spec["labels"]
    assert "feature.node.kubernetes.io/kernel-config.NO_HZ" in spec["labels"]


def test_oneshot_run(host, tmp_path):
    w, api, _ = make_worker(host, tmp_path, "-oneshot", "-owner-refs=")
    assert run(w.run()) == 0
    assert NF_PATH in api.objects


def test_daemon_loop_reacts_to_features_d(host, tmp_path, monkeypatch):
    monkeypatch.setattr("nfd.worker.daemon.TICK_S", 0.05)
    w, api, _ = make_worker(host, tmp_path, "-owner-refs=", "-port", "0")

    async def go():
        task = asyncio.create_task(w.run())
        for _ in range(200):
            await asyncio.sleep(0.02)
            if NF_PATH in api.objects:
                break
        (host / "etc/kubernetes/node-feature-discovery/features.d/new").write_text("hot=1\n")
        for _ in range(200):
            await asyncio.sleep(0.02)
            if api.objects[NF_PATH]["spec"]["labels"].get("hot") == "1":
                break
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass

    run(go())
    assert api.objects[NF_PATH]["spec"]["labels"]["hot"] == "1"
    assert sum(1 for m, _ in api.calls if m in ("POST", "PUT")) == 2


def test_metrics_and_healthz_http():
    from nfd.worker.metrics import WorkerMetrics

    m = WorkerMetrics("node-1")
    m.discovery.observe(0.03)

    async def go():
        server = await serve_http(0, m.render, host="127.0.0.1")
        port = server.sockets[0].getsockname()[1]
        out = {}
        for path in ("/metrics", "/healthz", "/nope"):
            r, wr = await asyncio.open_connection("127.0.0.1", port)
            wr.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            await wr.drain()
            out[path] = (await r.read()).decode()
            wr.close()
        server.close()
        return out

    out = run(go())
    assert out["/healthz"].startswith("HTTP/1.1 200") and out["/healthz"].endswith("ok")
    assert out["/nope"].startswith("HTTP/1.1 404")
    body = out["/metrics"]
    assert 'nfd_worker_build_info{version="' in body
    assert 'nfd_worker_feature_discovery_duration_seconds_bucket{node="node-1",le="0.05"} 1' in body
    assert 'nfd_worker_feature_discovery_duration_seconds_bucket{node="node-1",le="0.025"} 0' in body
    assert 'nfd_worker_feature_discovery_duration_seconds_count{node="node-1"} 1' in body


def test_publisher_gives_up_on_endless_conflicts():
    api = FakeApi()
    pub = Publisher(api, namespace="nfd", node_name="node-1")
    api.put_object(NF_PATH, {"metadata": {"name": "node-1"}, "spec": {}})
    api.fail_next = [("PUT", 409, "Conflict")] * 20
    desired = {"metadata": {"name": "node-1", "labels": {"a": "b"}}, "spec": {"features": {}, "labels": {}}}
    with pytest.raises(Exception, match="Conflict|gave up"):
        run(pub.publish(desired))


def test_missing_config_file_is_no_change_every_tick(host, tmp_path, monkeypatch, caplog):
    """A missing config file (the default path on most nodes) is loaded once as defaults; the
    daemon then discovers every sleepInterval, not on every tick, and logs no reload."""
    monkeypatch.setattr("nfd.worker.daemon.TICK_S", 0.02)
    conf = tmp_path / "absent.conf"
    flags = parse_flags(["-host-root", str(host), "-config", str(conf), "-owner-refs=", "-port", "0",
                         "-feature-sources=cpu", "-label-sources=cpu"])
    w = Worker(flags, env={"NODE_NAME": "node-1", "KUBERNETES_NAMESPACE": "nfd"}, api=FakeApi())
    calls: list[object] = []
    real = w.run_discovery
    monkeypatch.setattr(w, "run_discovery", lambda only=None: (calls.append(only), real(only))[1])

    async def go():
        task = asyncio.create_task(w.run())
        await asyncio.sleep(0.6)  # ~30 ticks
        assert not w.reload_config()  # still missing: no change
        conf.write_text("core:\n  featureSources: [cpu]\n")
        await asyncio.sleep(0.2)  # the file appearing is a change: one more discovery
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass

    with caplog.at_level("INFO"):
        run(go())
    assert calls == [None, None], calls
    msgs = [r.getMessage() for r in caplog.records]
    assert sum('"config file not found, using defaults"' in m for m in msgs) == 1, msgs
    assert sum('"configuration file parsed"' in m for m in msgs) == 1, msgs
    assert sum('"configuration successfully updated"' in m for m in msgs) == 2, msgs


def test_own_nodefeature_deleted_or_overwritten_is_written_again_echo_is_not(host, tmp_path):
    w, api, _ = make_worker(host, tmp_path)

    async def go():
        w.reload_config()
        w.run_discovery()
        assert await w.publish()
        written = api.objects[NF_PATH]
        api.calls.clear()
        w._on_own_change(dict(written, metadata={**written["metadata"], "resourceVersion": "99"}))  # echo
        assert not w._dirty
        w._on_own_change(None)  # deleted by someone
        assert w._dirty and w.publisher.current is None
        api.objects.pop(NF_PATH)
        assert await w.publish()
        assert [m for m, _ in api.calls] == ["GET", "POST"]
        api.calls.clear()
        forged = dict(api.objects[NF_PATH], spec={"labels": {"forged": "1"}, "features": {}})
        api.put_object(NF_PATH, forged)
        w._on_own_change(api.objects[NF_PATH])  # overwritten by someone
        assert w._dirty
        assert await w.publish()
        assert api.calls == [("PUT", NF_PATH)]
        assert api.objects[NF_PATH]["spec"]["labels"] == written["spec"]["labels"]

    run(go())


def test_gpu_health_is_written_when_it_changes_and_only_then(host, tmp_path, monkeypatch):
    """GPU health through the worker: a steady node is not written to, a fault is written by
    the next cycle, and its clearing by the cycle after the evidence went."""
    from nfd.nvml_fake import FakeNvml, load_profile
    from nfd.sources import registry
    from nfd.sources.nvml.source import NvmlSource

    fake = FakeNvml(load_profile("h100x8"))
    src = NvmlSource(backend=fake, host=fake.host)
    monkeypatch.setitem(registry._loaded, "nvml", src)
    conf = tmp_path / "nfd-worker.conf"
    conf.write_text("core:\n  featureSources: [nvml]\n  labelSources: [nvml]\n"
                    "sources:\n  nvml:\n    health: {xidEvents: false}\n")
    w, api, _ = make_worker(host, tmp_path)

    def health() -> dict:
        return api.objects[NF_PATH]["spec"]["features"]["attributes"]["nvml.health_summary"]["elements"]

    async def go():
        w.reload_config()
        w.run_discovery()
        assert await w.publish()
        assert health()["healthy"] == "true"
        api.calls.clear()
        for _ in range(3):  # nothing changes: nothing is written
            w.run_discovery()
            assert await w.publish()
        assert api.calls == []
        fake.set_health(2, remappedRows={"uncorrected": 1, "pending": True})
        w.run_discovery()
        assert await w.publish()
        assert api.calls == [("PUT", NF_PATH)] and health()["reason"] == "row-remap-pending"
        api.calls.clear()
        for _ in range(3):  # the fault stays: no more writes
            w.run_discovery()
            assert await w.publish()
        assert api.calls == []
        fake.set_health(2, remappedRows={})  # the reset applied the remap
        w.run_discovery()
        assert await w.publish()
        assert api.calls == [("PUT", NF_PATH)] and health()["healthy"] == "true"

    run(go())
