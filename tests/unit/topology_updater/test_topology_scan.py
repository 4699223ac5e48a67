"""Which pods and resources are accounted (upstream's podresourcesscanner rules)."""

from __future__ import annotations

from nfd.topology_updater import scan
from nfd.topology_updater.fingerprint import sign
from nfd.topology_updater.podresources import api_pb2
from tests.support.kubelet import Container, Device, Memory, Pod

GUARANTEED_EXCL = scan.PodFacts(guaranteed=True, exclusive_cpus=True)
GUARANTEED_SHARED = scan.PodFacts(guaranteed=True, exclusive_cpus=False)
BURSTABLE = scan.PodFacts(guaranteed=False, exclusive_cpus=False)


def run(pods, facts, **kw) -> scan.ScanResult:
    resp = api_pb2.ListPodResourcesResponse(pod_resources=[p.to_pb() for p in pods])
    return scan.account(resp.pod_resources, lambda ns, n: facts.get((ns, n)), **kw)


def names(result: scan.ScanResult) -> list[str]:
    return [p.name for p in result.pods]


def test_cpu_ids_only_for_guaranteed_pods_with_integral_cpus() -> None:
    pods = [
        Pod("ns", "excl", [Container("c", cpus=[4, 5])]),
        Pod("ns", "shared", [Container("c", cpus=[6])]),
        Pod("ns", "burst", [Container("c", cpus=[7])]),
    ]
    facts = {("ns", "excl"): GUARANTEED_EXCL, ("ns", "shared"): GUARANTEED_SHARED, ("ns", "burst"): BURSTABLE}
    r = run(pods, facts)
    assert names(r) == ["excl"]
    assert r.pods[0].containers[0].resources == (scan.ResourceUse("cpu", ("4", "5")),)


def test_devices_count_for_any_qos_and_memory_needs_size() -> None:
    pods = [
        Pod("ns", "be-gpu", [Container("c", devices=[Device("nvidia.com/gpu", ["g0"], [1])])]),
        Pod("ns", "be-plain", [Container("c", cpus=[1])]),
        Pod(
            "ns",
            "g-mem",
            [Container("c", memory=[Memory("memory", 0, [0]), Memory("hugepages-2Mi", 4 << 20, [0, 1])])],
        ),
    ]
    facts = {("ns", "be-gpu"): BURSTABLE, ("ns", "be-plain"): BURSTABLE, ("ns", "g-mem"): GUARANTEED_SHARED}
    r = run(pods, facts)
    assert names(r) == ["be-gpu", "g-mem"]
    assert r.pods[0].containers[0].resources[0] == scan.ResourceUse("nvidia.com/gpu", ("g0",), (1,))
    assert r.pods[1].containers[0].resources == (scan.ResourceUse("hugepages-2Mi", (str(4 << 20),), (0, 1)),)


def test_empty_containers_dropped() -> None:
    pods = [Pod("ns", "p", [Container("empty"), Container("gpu", devices=[Device("x/y", ["1"], [0])])])]
    r = run(pods, {("ns", "p"): GUARANTEED_EXCL})
    assert [c.name for c in r.pods[0].containers] == ["gpu"]


def test_watch_namespace_filters_accounting_but_not_fingerprint() -> None:
    pods = [Pod("a", "p1", [Container("c", cpus=[1])]), Pod("b", "p2", [Container("c", cpus=[2])])]
    facts = {("a", "p1"): GUARANTEED_EXCL, ("b", "p2"): GUARANTEED_EXCL}
    r = run(pods, facts, namespace="b")
    assert names(r) == ["p2"]
    assert r.fingerprint == sign([("a", "p1"), ("b", "p2")])


def test_fingerprint_off_or_no_pods() -> None:
    assert run([], {}).fingerprint is None
    assert run([Pod("a", "b")], {}, with_fingerprint=False).fingerprint is None


def test_pods_unknown_to_cache_are_reported_and_inferred_from_kubelet_data() -> None:
    pods = [
        Pod("ns", "new", [Container("c", cpus=[3], devices=[Device("x/y", ["1"], [0])])]),
        Pod("ns", "idle"),
    ]
    r = run(pods, {})
    assert r.missing == [("ns", "new"), ("ns", "idle")]
    assert names(r) == ["new"]
    assert [u.name for u in r.pods[0].containers[0].resources] == ["cpu", "x/y"]
