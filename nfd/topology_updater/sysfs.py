"""NUMA topology of the host from sysfs: nodes, their logical CPUs and distances, and the
per-node memory and hugepage capacity.

Reads (host paths, remapped through :class:`nfd.hostpaths.HostPaths`):

- ``/sys/devices/system/node/node<N>/cpulist`` and ``.../distance``;
- ``/sys/bus/node/devices/node<N>/meminfo`` (``MemTotal``, kB) and
  ``.../hugepages/hugepages-<size>kB/nr_hugepages``;
- ``/sys/devices/cpu_*/cpus`` for hybrid (E/P core) CPU lists.

A kernel without NUMA support has no ``node`` directory; the host is then one node 0 holding
every online CPU, which is what the kubelet reports too.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field

from nfd.api.noderesourcetopology import binary_si
from nfd.hostpaths import HostPaths

log = logging.getLogger(__name__)

_NODE_DIR = re.compile(r"^node(\d+)$")


class TopologyError(Exception):
    """The sysfs NUMA information is unusable (names the file)."""


@dataclass(frozen=True, slots=True)
class NumaNode:
    id: int
    cpus: tuple[int, ...]
    #: distance to each NUMA node, in the kernel's order (index = destination node)
    distances: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class NumaTopology:
    nodes: tuple[NumaNode, ...]
    #: NUMA id -> resource name ("memory", "hugepages-2Mi") -> bytes
    memory: dict[int, dict[str, int]] = field(default_factory=dict)

    def cpu_to_node(self) -> dict[int, int]:
        return {cpu: n.id for n in self.nodes for cpu in n.cpus}

    def node(self, node_id: int) -> NumaNode | None:
        for n in self.nodes:
            if n.id == node_id:
                return n
        return None


def parse_cpulist(text: str) -> list[int]:
    """Kernel cpulist format: ``0-3,8,10-11`` (empty means none)."""
    out: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if sep:
            out.extend(range(int(lo), int(hi) + 1))
        else:
            out.append(int(lo))
    return out


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(1 << 16)
    except OSError as e:
        raise TopologyError(f"{path}: cannot read: {e.strerror or e}") from e


def read_numa_nodes(paths: HostPaths) -> tuple[NumaNode, ...]:
    base = paths.sys("devices/system/node")
    try:
        entries = os.listdir(base)
    except OSError:
        entries = []
    ids = sorted(int(m.group(1)) for e in entries if (m := _NODE_DIR.match(e)))
    if not ids:
        online = paths.sys("devices/system/cpu/online")
        try:
            cpus = parse_cpulist(_read(online))
        except ValueError as e:
            raise TopologyError(f"{online}: bad cpulist: {e}") from e
        return (NumaNode(id=0, cpus=tuple(cpus), distances=(10,)),)
    nodes = []
    for i in ids:
        d = os.path.join(base, f"node{i}")
        cpulist = os.path.join(d, "cpulist")
        try:
            cpus = parse_cpulist(_read(cpulist))
        except ValueError as e:
            raise TopologyError(f"{cpulist}: bad cpulist: {e}") from e
        dist_path = os.path.join(d, "distance")
        try:
            distances = tuple(int(x) for x in _read(dist_path).split())
        except ValueError as e:
            raise TopologyError(f"{dist_path}: bad distance vector: {e}") from e
        nodes.append(NumaNode(id=i, cpus=tuple(cpus), distances=distances))
    return tuple(nodes)


def read_meminfo_total(path: str) -> int:
    """``Node N MemTotal: X kB`` in bytes."""
    for line in _read(path).splitlines():
        key, sep, value = line.partition(":")
        if sep and "MemTotal" in key:
            v = value.strip().removesuffix("kB").strip()
            try:
                return int(v) * 1024
            except ValueError as e:
                raise TopologyError(f"{path}: bad MemTotal value {v!r}") from e
    raise TopologyError(f"{path}: no MemTotal line")


def read_hugepages(path: str) -> dict[str, int]:
    """``hugepages-<N>kB/nr_hugepages`` entries as {"hugepages-2Mi": bytes}."""
    out: dict[str, int] = {}
    for entry in sorted(os.listdir(path)):
        prefix, sep, size = entry.partition("-")
        if not sep or prefix != "hugepages" or not size.endswith("kB") or not size[:-2].isdigit():
            log.info("malformed hugepages entry %s in %s, ignored", entry, path)
            continue
        size_bytes = int(size[:-2]) * 1024
        nr_path = os.path.join(path, entry, "nr_hugepages")
        try:
            nr = int(_read(nr_path).strip())
        except ValueError as e:
            raise TopologyError(f"{nr_path}: bad page count") from e
        out["hugepages-" + binary_si(size_bytes)] = nr * size_bytes
    return out


def read_memory(paths: HostPaths) -> dict[int, dict[str, int]]:
    """Per-NUMA memory and hugepage capacity in bytes.

    As upstream, a node without a ``hugepages`` directory is left out entirely, so its memory
    capacity later falls back to the kubelet's allocatable figure.
    """
    base = paths.sys("bus/node/devices")
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        return {}
    out: dict[int, dict[str, int]] = {}
    for entry in entries:
        m = _NODE_DIR.match(entry)
        if not m:
            continue
        d = os.path.join(base, entry)
        info = {"memory": read_meminfo_total(os.path.join(d, "meminfo"))}
        hp_dir = os.path.join(d, "hugepages")
        if not os.path.isdir(hp_dir):
            continue
        info.update(read_hugepages(hp_dir))
        out[int(m.group(1))] = info
    return out


def read_topology(paths: HostPaths) -> NumaTopology:
    return NumaTopology(nodes=read_numa_nodes(paths), memory=read_memory(paths))


def read_hybrid_cpus(paths: HostPaths) -> list[tuple[str, str]]:
    """``cpu_atom``/``cpu_core`` CPU lists of hybrid CPUs, as (name, cpulist) attributes.

    Upstream globs ``<sysfs>/sys/devices/cpu_*/cpus`` (a doubled ``sys``, so on real hosts it
    finds nothing); we read the real ``/sys/devices/cpu_*/cpus``. See docs/compatibility.md.
    """
    base = paths.sys("devices")
    try:
        entries = sorted(e for e in os.listdir(base) if e.startswith("cpu_"))
    except OSError:
        return []
    out = []
    for e in entries:
        p = os.path.join(base, e, "cpus")
        try:
            out.append((e, _read(p).strip()))
        except TopologyError:
            continue
    return out
