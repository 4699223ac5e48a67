"""What each worker mode imports, in a fresh interpreter: the agent runs on every node, so every
module it loads is paid once per node (issue 29). A one-shot run and ``nfd export labels`` load
none of the master, the rules engine's languages (CEL, templates), the Kubernetes client, an event
loop or a metrics library; a default-mode daemon none of the master, CEL, templates or an HTTP
client it does not use. Any third-party package beyond the ones listed fails the test, so a new
heavy import is seen here first (``benchmarks/bench_worker.py --only imports,rss`` prints what
each one costs in time and memory).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

# Module prefixes no mode below may import.
NEVER = (
    "nfd.master", "nfd.lang.cel", "nfd.lang.gotemplate", "nfd.rules.cel", "nfd.rules.lint",
    "nfd.topology_updater", "nfd.gc", "nfd.compat", "nfd.dra",
    "grpc", "google.protobuf", "kubernetes", "prometheus_client", "psutil", "pyudev",
)
# ... and, where nothing talks to the API, none of these either.
OFFLINE_NEVER = (
    "nfd.k8s", "aiohttp", "httpx", "h2", "hpack", "urllib3", "requests", "asyncio", "ssl", "yaml",
    "nfd.worker.publish", "nfd.worker.masterless", "nfd.common.httpserver", "concurrent.futures",
)
# ... and, in a one-shot run with the default config, none of these (docs/worker.md, "The one-shot wall")
ONESHOT_NEVER = ("nfd.rules.engine", "nfd.api.nodefeaturerule", "dataclasses", "inspect", "datetime")
# Third-party packages (not the standard library) each mode may load with the default config (RE2
# only loads for a regexp: labelWhiteList, a custom rule's InRegexp).
OFFLINE_THIRD_PARTY: set[str] = set()
DAEMON_THIRD_PARTY = OFFLINE_THIRD_PARTY | {
    "yaml", "orjson",  # the kubeconfig; JSON on the API paths
    "h2", "hpack", "hyperframe",  # nfd.k8s.http2, the worker's one connection
}
HTTP_CLIENTS = ("aiohttp", "httpx", "nfd.k8s.http2")

# Runs a mode in-process, then prints the modules loaded by it (the interpreter's own start-up,
# site and its .pth files, are taken away by the baseline below).
RUNNER = r"""
import os, signal, sys, threading
mode, args = sys.argv[1], sys.argv[2:]
if mode == "daemon":
    threading.Timer(float(os.environ["STOP_AFTER_S"]), os.kill, (os.getpid(), signal.SIGTERM)).start()
if mode == "export":
    from nfd.cli import main
    rc = main(args)
elif mode != "bare":
    from nfd.worker.__main__ import main
    rc = main(args)
mods = sorted(sys.modules)
import json
print(json.dumps(mods))
"""


def _modules(mode: str, *args: str, stop_after_s: float = 0.0) -> set[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), NODE_NAME="imports-node", STOP_AFTER_S=str(stop_after_s))
    env.pop("NFD_NVML_PROFILE", None)
    out = subprocess.run([sys.executable, "-c", RUNNER, mode, *args], env=env, cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def bare() -> set[str]:
    return _modules("bare")


def _hits(mods: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in mods if any(m == p or m.startswith(p + ".") for p in prefixes))


def _third_party(mods: set[str]) -> set[str]:
    tops = {m.split(".")[0] for m in mods} - set(sys.stdlib_module_names) - {"nfd", "__main__"}
    # Cython's per-version runtime shims, registered by a compiled extension (_yaml, re2's), and
    # the standard library's platform-named sysconfig data (imported with sysconfig, which some
    # dependency releases do: seen with the lowest ones pyproject.toml allows)
    return {m for m in tops if not m.startswith(("_cython_", "_sysconfigdata_")) and m != "cython_runtime"}


def _unreachable_kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig whose server nothing answers: the daemon starts and keeps retrying."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9', insecure-skip-tls-verify: true}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n")
    return kubeconfig


def _gpu_driver() -> bool:
    return any(os.path.exists(p) for p in ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/dxg"))


def _offline_checks(mods: set[str]) -> None:
    never = NEVER + OFFLINE_NEVER + (() if _gpu_driver() else ("pynvml",))
    assert _hits(mods, never) == []
    allowed = OFFLINE_THIRD_PARTY | ({"pynvml"} if _gpu_driver() else set())
    assert _third_party(mods) - allowed == set()


def test_oneshot_no_publish_imports(bare, tmp_path):
    mods = _modules("oneshot", "-oneshot", "-no-publish", "-config", str(tmp_path / "none.conf")) - bare
    _offline_checks(mods)
    assert "nfd.sources.custom" in mods and "nfd.rules.expression" in mods  # it did discover and label
    # the static custom rules run on the engine's matcher alone; no dataclass is made on this path
    # (dataclasses loads inspect, ast, dis), no datetime without a features.d
    assert _hits(mods, ONESHOT_NEVER) == []


def test_oneshot_with_no_publish_in_config_imports(bare, tmp_path):
    """core.noPublish in the file is as offline as the flag (YAML is read for it, nothing else)."""
    conf = tmp_path / "nfd-worker.conf"
    conf.write_text("core:\n  noPublish: true\n")
    mods = _modules("oneshot", "-oneshot", "-config", str(conf)) - bare
    _offline_checks(mods - {m for m in mods if m == "yaml" or m.startswith(("yaml.", "_yaml"))}
                    - {"nfd.common.safeyaml"})


def test_export_labels_imports(bare):
    mods = _modules("export", "export", "labels") - bare
    _offline_checks(mods)
    assert "nfd.rules.expression" in mods
    assert _hits(mods, ONESHOT_NEVER) == []


@pytest.fixture(scope="module")
def daemon(bare, tmp_path_factory) -> set[str]:
    """A default-mode daemon that publishes (to a port where nothing listens: it retries), a few
    ticks in: the API client, the HTTP server for /metrics and the publish path are loaded."""
    tmp_path = tmp_path_factory.mktemp("daemon")
    kubeconfig = _unreachable_kubeconfig(tmp_path)
    mods = _modules("daemon", "-kubeconfig", str(kubeconfig), "-config", str(tmp_path / "none.conf"),
                    "-port", "0", stop_after_s=3.0) - bare
    assert "nfd.worker.publish" in mods and "nfd.k8s.client" in mods  # it did try to publish
    return mods


def test_default_daemon_imports(daemon):
    mods = daemon
    never = NEVER + ("nfd.worker.masterless", "httpx") + (() if _gpu_driver() else ("pynvml",))
    assert _hits(mods, never) == []
    allowed = DAEMON_THIRD_PARTY | ({"pynvml"} if _gpu_driver() else set())
    assert _third_party(mods) - allowed == set()


def test_default_daemon_imports_one_http_client(daemon):
    """The worker talks HTTP/2 (nfd.k8s.http2); aiohttp (~10 MiB resident) is for HTTP/1.1 only."""
    assert len([c for c in HTTP_CLIENTS if c in daemon]) <= 1, [c for c in HTTP_CLIENTS if c in daemon]


def test_masterless_daemon_runs_the_core_without_the_masters_own_parts(tmp_path):
    """Masterless mode composes nfd-master's node pipeline (nfd.master.core) and nothing of what
    only the cluster's master does: leader election, NodeFeatureGroups, its process."""
    kubeconfig = _unreachable_kubeconfig(tmp_path)
    mods = _modules("daemon", "-kubeconfig", str(kubeconfig), "-config", str(tmp_path / "none.conf"),
                    "-master-config", str(tmp_path / "none-master.conf"), "-enable-node-update",
                    "-port", "0", stop_after_s=3.0)
    assert "nfd.worker.masterless" in mods and "nfd.master.core" in mods
    assert _hits(mods, ("nfd.master.master", "nfd.master.leadership", "nfd.master.groupstatus", "nfd.master.daemon",
                        "nfd.master.prune", "nfd.k8s.lease")) == []
