from __future__ import annotations

import os

import pytest

from nfd.hostpaths import HostPaths
from nfd.topology_updater.sysfs import NumaTopology, read_topology

NUMA_FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "numa")


def numa_paths(name: str) -> HostPaths:
    return HostPaths.under(os.path.join(NUMA_FIXTURES, name))


@pytest.fixture
def topo_two() -> NumaTopology:
    return read_topology(numa_paths("two"))


@pytest.fixture
def topo_eight() -> NumaTopology:
    return read_topology(numa_paths("eight"))


@pytest.fixture
def topo_one() -> NumaTopology:
    return read_topology(numa_paths("one"))


@pytest.fixture
def numa() -> object:
    """numa("two") -> HostPaths of that fixture tree."""
    return numa_paths
