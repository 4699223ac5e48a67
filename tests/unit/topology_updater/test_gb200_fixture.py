"""The GB200-shaped host tree (tests/fixtures/gb200, make_tree.py) reads as such a node: 2 Grace
NUMA nodes with 72 CPUs each, then 8 CPU-less nodes per GPU with the HBM on the first."""

from __future__ import annotations

import os

from nfd.hostpaths import HostPaths
from nfd.topology_updater.sysfs import read_memory, read_numa_nodes

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "gb200", "root")
GiB = 1 << 30


def test_gb200_tree_numa_shape() -> None:
    paths = HostPaths.under(ROOT)
    nodes = read_numa_nodes(paths)
    assert [n.id for n in nodes] == list(range(66))
    assert nodes[0].cpus == tuple(range(72)) and nodes[1].cpus == tuple(range(72, 144))
    assert all(n.cpus == () for n in nodes[2:])
    assert nodes[0].distances[:3] == (10, 40, 80) and nodes[2].distances[2] == 10
    mem = read_memory(paths)
    hbm = [n for n in range(2, 66) if mem.get(n, {}).get("memory")]
    assert hbm == [2 + 8 * g for g in range(8)]
    assert mem[0]["memory"] == 480 * GiB and mem[2]["memory"] == 186 * GiB
