"""The real node's registry mirror (tests/e2e/node.py): `registry.k8s.io/pause` is pulled from a
registry inside the node's network namespace, as upstream's e2e suite's sleeper pods pull it
(untagged, so always pulled), and registry.k8s.io is never looked for anywhere else."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.node import RealNode, real_node

pytestmark = [pytest.mark.node, pytest.mark.slow]
__all__ = ["real_node"]  # fixture

NS = "nfd-e2e-mirror"


def _pod(name: str, image: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "pause", "image": image, "imagePullPolicy": "Always",
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}


def _status(node: RealNode, name: str) -> dict[str, Any]:
    status: dict[str, Any] = node.kube.get(f"/api/v1/namespaces/{NS}/pods/{name}").get("status") or {}
    return status


def _events(node: RealNode, name: str) -> list[str]:
    items = node.kube.get(f"/api/v1/namespaces/{NS}/events",
                          params={"fieldSelector": f"involvedObject.name={name}"})["items"]
    return [f"{e.get('reason')}: {e.get('message')}" for e in items]


@pytest.fixture(scope="module")
def ns(real_node: RealNode) -> Any:
    kube = real_node.kube
    kube.request("POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": NS}})
    yield NS
    kube.request("DELETE", f"/api/v1/namespaces/{NS}")


@pytest.mark.parametrize("image", ["registry.k8s.io/pause", "registry.k8s.io/pause:latest"])
def test_a_pod_always_pulling_registry_k8s_io_pause_runs(real_node: RealNode, ns: str, image: str) -> None:
    name = "always-" + ("latest" if image.endswith(":latest") else "untagged")
    real_node.kube.request("POST", f"/api/v1/namespaces/{NS}/pods", body=_pod(name, image))

    def running() -> bool:
        return _status(real_node, name).get("phase") == "Running"

    try:
        real_node.kube.wait_until(running, timeout=120, interval=0.5, message=f"pod {name} ({image}) running")
    except TimeoutError:
        raise AssertionError(f"pod {name} ({image}) not running: "
                             f"{_status(real_node, name).get('containerStatuses')}\n"
                             f"events: {_events(real_node, name)}") from None
    # pulled (imagePullPolicy Always), not found on the node
    assert any(e.startswith("Pulled: Successfully pulled") for e in _events(real_node, name)), \
        _events(real_node, name)


def test_an_image_the_mirror_lacks_fails_from_the_mirror(real_node: RealNode, ns: str) -> None:
    """registry.k8s.io has one server, the mirror: an image it does not hold is answered "not
    found" (the mirror's 404), not a failed lookup or connection to the real registry."""
    name = "not-mirrored"
    real_node.kube.request("POST", f"/api/v1/namespaces/{NS}/pods",
                           body=_pod(name, "registry.k8s.io/nfd-e2e-not-mirrored:v1"))

    def pull_failed() -> str | None:
        for e in _events(real_node, name):
            if e.startswith("Failed: Failed to pull image"):
                return e
        return None

    failed = real_node.kube.wait_until(pull_failed, timeout=120, interval=0.5,
                                       message=f"pod {name}'s pull failing")
    assert "code = NotFound" in failed and "dial tcp" not in failed and "lookup" not in failed, failed
