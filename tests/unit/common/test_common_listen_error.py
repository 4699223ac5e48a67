"""A daemon whose port is taken says so in one line and exits 1 (upstream's daemons exit with
"failed to listen"), rather than a traceback: nfd-worker, nfd-gc and nfd-topology-updater printed
one until this test (nfd-master already did this)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

KUBECONFIG = """apiVersion: v1
kind: Config
current-context: x
clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9', insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
"""


@pytest.mark.parametrize("module,extra", [
    ("nfd.worker", ["-config=/nonexistent.conf"]),
    ("nfd.gc", []),
    ("nfd.topology_updater", ["-config=/nonexistent.conf", "-kubelet-config-uri=file:///nonexistent",
                              "-podresources-socket=/nonexistent.sock"]),
    ("nfd.master", ["-config=/nonexistent.conf"]),
])
def test_a_taken_port_is_one_line_and_exit_1(module: str, extra: list[str], tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    with socket.create_server(("", 0)) as taken:
        port = taken.getsockname()[1]
        env = dict(os.environ, PYTHONPATH=str(REPO), NODE_NAME="listen-node")
        out = subprocess.run([sys.executable, "-m", module, f"-kubeconfig={kubeconfig}", f"-port={port}", *extra],
                             env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    lines = [ln for ln in out.stderr.splitlines() if f":{port}" in ln]
    assert len(lines) == 1 and ("cannot listen" in lines[0] or "cannot start" in lines[0]), out.stderr[-2000:]
    assert "in use" in lines[0], lines
