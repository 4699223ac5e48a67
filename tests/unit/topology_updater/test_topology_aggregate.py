"""Zone computation (capacity / allocatable / available) on the fixture topologies."""

from __future__ import annotations

from nfd.topology_updater import aggregate, scan
from nfd.topology_updater.podresources import api_pb2
from tests.support.kubelet import Container, Device, Memory, Pod

GiB = 1 << 30


def alloc(cpus, devices=(), memory=()) -> api_pb2.AllocatableResourcesResponse:
    return api_pb2.AllocatableResourcesResponse(
        cpu_ids=list(cpus), devices=[d.to_pb() for d in devices], memory=[m.to_pb() for m in memory]
    )


def zone_map(zones) -> dict[str, dict[str, tuple[int, int, int]]]:
    return {z.name: {r.name: (r.capacity, r.allocatable, r.available) for r in z.resources} for z in zones}


def guaranteed(_ns: str, _name: str) -> scan.PodFacts:
    return scan.PodFacts(guaranteed=True, exclusive_cpus=True)


def uses(*pods: Pod, lookup=guaranteed) -> list[scan.PodUse]:
    resp = api_pb2.ListPodResourcesResponse(pod_resources=[p.to_pb() for p in pods])
    return scan.account(resp.pod_resources, lookup).pods


def test_reserved_cpus_raise_capacity_only(topo_two) -> None:
    # kubelet reserves CPUs 0 and 72 (node 0) and 36 (node 1)
    reserved = {0, 72, 36}
    nr = aggregate.node_resources(topo_two, alloc(c for c in range(144) if c not in reserved))
    z = zone_map(aggregate.zones(nr, []))
    assert z["node-0"]["cpu"] == (72, 70, 70)
    assert z["node-1"]["cpu"] == (72, 71, 71)


def test_exclusive_cpus_devices_and_memory_reduce_available(topo_two) -> None:
    gpus = [Device("nvidia.com/gpu", [f"gpu-{i}"], [i // 4]) for i in range(8)]
    mem = [
        Memory("memory", 200 * GiB, [0]),
        Memory("memory", 200 * GiB, [1]),
        Memory("hugepages-1Gi", 4 * GiB, [0]),
        Memory("hugepages-1Gi", 4 * GiB, [1]),
    ]
    nr = aggregate.node_resources(topo_two, alloc(range(2, 144), gpus, mem))
    pod = Pod(
        "team",
        "train",
        [
            Container(
                "main",
                cpus=[2, 3, 74, 75],
                devices=[Device("nvidia.com/gpu", ["gpu-0", "gpu-5"], [0])],
                memory=[Memory("memory", 10 * GiB, [0]), Memory("hugepages-1Gi", 2 * GiB, [1])],
            )
        ],
    )
    z = zone_map(aggregate.zones(nr, uses(pod)))
    assert z["node-0"]["cpu"] == (72, 70, 66)
    assert z["node-0"]["nvidia.com/gpu"] == (4, 4, 3)
    assert z["node-1"]["nvidia.com/gpu"] == (4, 4, 3)  # gpu-5 lives on NUMA 1
    # memory capacity comes from sysfs, allocatable from the kubelet
    assert z["node-0"]["memory"] == (256 * GiB, 200 * GiB, 190 * GiB)
    assert z["node-1"]["hugepages-1Gi"] == (4 * GiB, 4 * GiB, 2 * GiB)


def test_memory_drains_numa_nodes_in_listed_order(topo_two) -> None:
    nr = aggregate.node_resources(
        topo_two, alloc(range(144), memory=[Memory("memory", 8 * GiB, [0]), Memory("memory", 8 * GiB, [1])])
    )
    pod = Pod("a", "b", [Container("c", memory=[Memory("memory", 12 * GiB, [1, 0])])])
    z = zone_map(aggregate.zones(nr, uses(pod)))
    assert z["node-1"]["memory"][2] == 0
    assert z["node-0"]["memory"][2] == 4 * GiB


def test_numa_node_without_allocatable_gets_reserved_cpu_zone(topo_eight) -> None:
    # only NUMA 0's CPUs are allocatable
    nr = aggregate.node_resources(topo_eight, alloc(topo_eight.nodes[0].cpus))
    zones = aggregate.zones(nr, [])
    z = zone_map(zones)
    assert [zz.name for zz in zones] == [f"node-{i}" for i in range(8)]
    assert z["node-0"]["cpu"] == (16, 16, 16)
    assert z["node-3"] == {"cpu": (16, 0, 0)}
    costs = {c.name: c.value for c in zones[5].costs}
    assert costs == {
        "node-0": 32,
        "node-1": 32,
        "node-2": 32,
        "node-3": 32,
        "node-4": 12,
        "node-5": 10,
        "node-6": 12,
        "node-7": 12,
    }


def test_memory_capacity_falls_back_to_allocatable_without_sysfs_info(topo_eight) -> None:
    nr = aggregate.node_resources(
        topo_eight,
        alloc(range(128), memory=[Memory("memory", 30 * GiB, [7]), Memory("memory", 30 * GiB, [6])]),
    )
    z = zone_map(aggregate.zones(nr, []))
    assert z["node-7"]["memory"] == (30 * GiB, 30 * GiB, 30 * GiB)
    assert z["node-6"]["memory"] == (32 * GiB, 30 * GiB, 30 * GiB)


def test_exclude_list_drops_resources(topo_two) -> None:
    nr = aggregate.node_resources(
        topo_two, alloc(range(144), [Device("example.com/nic", ["n0"], [0])], [Memory("memory", GiB, [0])])
    )
    pod = Pod(
        "a",
        "b",
        [
            Container(
                "c", devices=[Device("example.com/nic", ["n0"], [0])], memory=[Memory("memory", GiB, [0])]
            )
        ],
    )
    z = zone_map(aggregate.zones(nr, uses(pod), frozenset({"memory", "example.com/nic"})))
    assert set(z["node-0"]) == {"cpu"}


def test_devices_without_topology_are_not_tracked(topo_one) -> None:
    nr = aggregate.node_resources(topo_one, alloc(range(8), [Device("example.com/dongle", ["d0"])]))
    z = zone_map(aggregate.zones(nr, []))
    assert "example.com/dongle" not in z["node-0"]


def test_unknown_ids_are_ignored(topo_one) -> None:
    nr = aggregate.node_resources(topo_one, alloc(range(8), [Device("example.com/x", ["x0"], [0])]))
    pod = Pod(
        "a",
        "b",
        [
            Container(
                "c",
                cpus=[99],
                devices=[Device("example.com/x", ["nope"], [0]), Device("example.com/y", ["y"], [0])],
            )
        ],
    )
    z = zone_map(aggregate.zones(nr, uses(pod)))
    assert z["node-0"]["cpu"] == (8, 8, 8)
    assert z["node-0"]["example.com/x"] == (1, 1, 1)


def test_output_is_sorted_and_deterministic(topo_two) -> None:
    devs = [Device("z.io/b", ["1"], [0]), Device("a.io/a", ["2"], [0])]
    nr = aggregate.node_resources(topo_two, alloc(range(144), devs))
    zones = aggregate.zones(nr, [])
    assert [r.name for r in zones[0].resources] == ["a.io/a", "cpu", "z.io/b"]
    assert zones == aggregate.zones(
        aggregate.node_resources(topo_two, alloc(reversed(range(144)), devs[::-1])), []
    )
