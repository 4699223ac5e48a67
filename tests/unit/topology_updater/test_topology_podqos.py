from __future__ import annotations

from nfd.topology_updater.podqos import compact_pod, exclusive_cpus, pod_qos


def pod(*containers, init=(), status=None) -> dict:
    return {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "uid": "u1",
            "resourceVersion": "7",
            "labels": {"a": "b"},
        },
        "spec": {"containers": list(containers), "initContainers": list(init)},
        "status": status or {},
    }


def c(requests=None, limits=None) -> dict:
    return {"name": "c", "image": "x", "resources": {"requests": requests or {}, "limits": limits or {}}}


def test_qos_classes_from_spec() -> None:
    g = {"cpu": "2", "memory": "1Gi"}
    assert pod_qos(pod(c(g, g))) == "Guaranteed"
    assert pod_qos(pod(c({"cpu": "1"}, {"cpu": "2", "memory": "1Gi"}))) == "Burstable"
    assert pod_qos(pod(c())) == "BestEffort"
    # every container needs cpu and memory limits
    assert pod_qos(pod(c(g, g), c({"cpu": "1"}, {"cpu": "1"}))) == "Burstable"
    # requests and limits compared as quantities, not strings
    assert (
        pod_qos(pod(c({"cpu": "1000m", "memory": "1024Mi"}, {"cpu": "1", "memory": "1Gi"}))) == "Guaranteed"
    )


def test_status_qos_class_wins() -> None:
    assert pod_qos(pod(c(), status={"qosClass": "Guaranteed"})) == "Guaranteed"


def test_exclusive_cpus_needs_integral_request() -> None:
    assert exclusive_cpus(pod(c({"cpu": "2"})))
    assert exclusive_cpus(pod(c({"cpu": "2000m"})))
    assert not exclusive_cpus(pod(c({"cpu": "1500m"})))
    assert exclusive_cpus(pod(c({"cpu": "500m"}), init=[c({"cpu": "1"})]))
    assert not exclusive_cpus(pod(c({"memory": "1Gi"})))


def test_compact_pod_keeps_identity_and_two_facts() -> None:
    g = {"cpu": "2", "memory": "1Gi"}
    small = compact_pod(pod(c(g, g)))
    assert small == {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
        "guaranteed": True,
        "exclusiveCPUs": True,
    }
    assert (
        compact_pod(pod(c({"cpu": "500m", "memory": "1Gi"}, {"cpu": "500m", "memory": "1Gi"})))[
            "exclusiveCPUs"
        ]
        is False
    )
    bad = compact_pod(pod(c({"cpu": "lots"}, {"cpu": "lots", "memory": "1"})))
    assert bad["guaranteed"] is False and bad["exclusiveCPUs"] is False
