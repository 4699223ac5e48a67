"""A Helm post-renderer: every workload's hostPath volume for `/sys` points at another directory.

    helm install ... --post-renderer <python> --post-renderer-args <this file> --post-renderer-args <dir>

Helm pipes the rendered manifests in and applies what this prints. tests/e2e/test_node_gpu_operator.py
installs the GPU Operator's NFD and nfd with it, so that both workers read a GPU server's sysfs
(a fixture copied to <dir>) instead of this machine's, through the same mount at /host-sys. Only
that path changes; the rest of each object is printed as rendered.
"""

from __future__ import annotations

import sys

import yaml

WORKLOADS = {"DaemonSet", "Deployment", "StatefulSet", "Job", "Pod"}


def rewrite(docs: list[object], target: str) -> int:
    """Point the `/sys` hostPath volumes of the workloads in `docs` at `target`; how many."""
    n = 0
    for doc in docs:
        if not isinstance(doc, dict) or doc.get("kind") not in WORKLOADS:
            continue
        spec = doc.get("spec") or {}
        pod = spec if doc["kind"] == "Pod" else ((spec.get("template") or {}).get("spec") or {})
        for volume in pod.get("volumes") or []:
            host = volume.get("hostPath")
            if isinstance(host, dict) and str(host.get("path", "")).rstrip("/") == "/sys":
                host["path"] = target
                n += 1
    return n


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: helm_host_sys.py DIR (manifests on stdin)", file=sys.stderr)
        return 2
    docs = [d for d in yaml.safe_load_all(sys.stdin) if d is not None]
    rewrite(docs, argv[1])
    yaml.safe_dump_all(docs, sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
