from __future__ import annotations

import os

import pytest

from nfd.hostpaths import HostPaths
from nfd.topology_updater.sysfs import TopologyError, parse_cpulist, read_hybrid_cpus, read_topology

GiB = 1 << 30


def test_parse_cpulist() -> None:
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("") == []
    with pytest.raises(ValueError):
        parse_cpulist("0-x")


def test_one_node_tree(numa) -> None:
    t = read_topology(numa("one"))
    assert [(n.id, n.cpus, n.distances) for n in t.nodes] == [(0, tuple(range(8)), (10,))]
    assert t.memory == {0: {"memory": 16 * GiB, "hugepages-2Mi": 512 * 2 * (1 << 20), "hugepages-1Gi": 0}}


def test_two_socket_144_cpu_tree(numa) -> None:
    t = read_topology(numa("two"))
    assert [n.id for n in t.nodes] == [0, 1]
    assert sum(len(n.cpus) for n in t.nodes) == 144
    c2n = t.cpu_to_node()
    assert c2n[0] == 0 and c2n[72] == 0 and c2n[36] == 1 and c2n[143] == 1
    assert t.nodes[1].distances == (21, 10)
    assert t.memory[0]["hugepages-1Gi"] == 4 * GiB
    assert t.memory[1]["hugepages-2Mi"] == 0


def test_eight_node_tree_skips_memory_of_node_without_hugepages_dir(numa) -> None:
    t = read_topology(numa("eight"))
    assert len(t.nodes) == 8
    assert t.nodes[4].distances[0] == 32 and t.nodes[4].distances[5] == 12
    # upstream quirk kept: no hugepages/ dir -> the whole node's memory info is skipped
    assert 7 not in t.memory and t.memory[6]["memory"] == 32 * GiB


def test_no_numa_dir_means_one_node_with_online_cpus(tmp_path) -> None:
    cpu = tmp_path / "sys/devices/system/cpu"
    cpu.mkdir(parents=True)
    (cpu / "online").write_text("0-5\n")
    t = read_topology(HostPaths.under(str(tmp_path)))
    assert [(n.id, n.cpus) for n in t.nodes] == [(0, tuple(range(6)))]
    assert t.memory == {}


def test_bad_file_is_named_in_error(tmp_path) -> None:
    d = tmp_path / "sys/devices/system/node/node0"
    d.mkdir(parents=True)
    (d / "cpulist").write_text("zero\n")
    (d / "distance").write_text("10\n")
    with pytest.raises(TopologyError) as e:
        read_topology(HostPaths.under(str(tmp_path)))
    assert os.path.join("node0", "cpulist") in str(e.value)


def test_hybrid_cpu_attributes(tmp_path, numa) -> None:
    for name, cpus in (("cpu_core", "0-7"), ("cpu_atom", "8-15")):
        d = tmp_path / "sys/devices" / name
        d.mkdir(parents=True)
        (d / "cpus").write_text(cpus + "\n")
    assert read_hybrid_cpus(HostPaths.under(str(tmp_path))) == [("cpu_atom", "8-15"), ("cpu_core", "0-7")]
    assert read_hybrid_cpus(numa("two")) == []
