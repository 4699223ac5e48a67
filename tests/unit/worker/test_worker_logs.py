"""The one-shot worker's log, read from the real process as a log pipeline reads it: upstream's
messages, keys and verbosity levels (docs/logging.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.support import klog

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "sysfs", "gpu-server", "root")
GO_DURATION = re.compile(r"^\d+(\.\d+)?(ns|µs|ms|s)$|^\d+m\d+(\.\d+)?s$")


def _run(v: int) -> str:
    env = {**os.environ, "NODE_NAME": "node-7", "KUBERNETES_NAMESPACE": "nfd-ns"}
    p = subprocess.run(
        [sys.executable, "-m", "nfd.worker", "-oneshot", "-no-publish", f"-v={v}", "-host-root", ROOT,
         "-config", "/nonexistent/nfd-worker.conf", "-feature-sources=cpu,kernel,pci", "-label-sources=cpu,pci"],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert p.returncode == 0, p.stderr
    return p.stderr


@pytest.fixture(scope="module")
def logs() -> dict[int, str]:
    return {v: _run(v) for v in (0, 1, 3)}


def test_default_verbosity_banner_config_and_completion(logs: dict[int, str]) -> None:
    text = logs[0]
    from nfd import __version__

    assert klog.find(text, "Node Feature Discovery Worker", version=__version__, nodeName="node-7",
                     namespace="nfd-ns"), text
    assert klog.find(text, "config file not found, using defaults", path="/nonexistent/nfd-worker.conf"), text
    (cfg,) = klog.find(text, "configuration successfully updated")
    core = json.loads(cfg.kv["configuration"])["core"]
    assert core["noPublish"] is True and core["featureSources"] == ["cpu", "kernel", "pci"]
    assert core["sleepInterval"] == "1m0s"
    assert klog.find(text, "starting feature discovery...")
    (done,) = klog.find(text, "feature discovery completed")
    assert done.severity == "I" and "labels" not in done.kv and done.file.endswith(".py")
    assert not klog.find(text, "feature discovery of all sources completed")  # V(2)


def test_labels_from_v1(logs: dict[int, str]) -> None:
    (fs,) = klog.find(logs[1], "enabled feature sources")
    assert json.loads(fs.kv["featureSources"]) == ["cpu", "kernel", "pci"]
    (ls,) = klog.find(logs[1], "enabled label sources")
    assert json.loads(ls.kv["labelSources"]) == ["cpu", "pci"]
    assert not klog.find(logs[0], "enabled feature sources")
    (done,) = klog.find(logs[1], "feature discovery completed")
    assert "feature.node.kubernetes.io/pci-0302_10de.present: \"true\"" in done.kv["labels"], done.raw
    assert not klog.find(logs[1], "feature discovery completed", featureSource="cpu")  # V(3)


def test_per_source_durations_from_v3(logs: dict[int, str]) -> None:
    text = logs[3]
    for src in ("cpu", "kernel", "pci"):
        (line,) = klog.find(text, "feature discovery completed", featureSource=src)
        assert GO_DURATION.match(line.kv["duration"]), line.raw
    (total,) = klog.find(text, "feature discovery of all sources completed")
    assert GO_DURATION.match(total.kv["duration"]), total.raw
