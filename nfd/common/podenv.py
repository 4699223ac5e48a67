"""Where a process runs: the namespace of its pod."""

from __future__ import annotations

import os

SA_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def pod_namespace(env: dict[str, str] | None = None, *, default: str = "default") -> str:
    """The pod's namespace: the ServiceAccount's namespace file, else ``KUBERNETES_NAMESPACE``,
    else ``default`` (outside a pod, as upstream's components fall back)."""
    env = dict(os.environ) if env is None else env
    try:
        with open(SA_NAMESPACE_FILE, encoding="utf-8") as f:
            ns = f.read().strip()
            if ns:
                return ns
    except OSError:
        pass
    return env.get("KUBERNETES_NAMESPACE") or default
