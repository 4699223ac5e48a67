"""The processes' API and kubelet clients import no HTTP framework or client library of their
own beside nfd/k8s (the transport is h2 + the standard library): no aiohttp, httpx, grpcio or
`kubernetes` package, which cost tens of MiB per process and, for grpcio, polling threads."""

from __future__ import annotations

import subprocess
import sys

MODULES = ["nfd.k8s.client", "nfd.k8s.watching", "nfd.k8s.lease", "nfd.k8s.execauth", "nfd.topology_updater.kubelet",
           "nfd.topology_updater.updater", "nfd.topology_updater.kubeletconfig", "nfd.master.master",
           "nfd.gc.collector", "nfd.worker.daemon", "nfd.cli.kubectl_nfd", "nfd.common.httpserver"]
FORBIDDEN = ("aiohttp", "httpx", "httpcore", "grpc", "kubernetes", "requests", "urllib3")


def test_clients_import_no_http_framework() -> None:
    prog = (
        "import importlib, sys\n"
        f"for m in {MODULES!r}: importlib.import_module(m)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(" + repr(FORBIDDEN) + ")))\n"
    )
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
