"""The cluster's ResourceSlices -> each node's DRA devices, with pools as DRA defines them.

A pool (driver, pool name) may be split over several slices (``resourceSliceCount``) and is
replaced by publishing a newer ``generation``. Only the newest generation counts, and only
once all of its slices are there; a pool with duplicate device names is invalid. While the
newest generation is incomplete or invalid, the pool's last complete generation seen by this
process stays in force (a driver rewriting its slices is no evidence that the devices went);
a pool never seen complete contributes nothing. The DRA scheduler allocates from complete,
valid pools only, so the two agree except during such a roll-over (docs/dra.md).

Slices are indexed by node name; slices that select nodes (``allNodes``, ``nodeSelector``,
``perDeviceNodeSelection``) are matched against each node's labels when it is evaluated.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from nfd.dra.slices import DraDevice, DraSlice

log = logging.getLogger(__name__)

ALL_NODES = "*"  # in an "affected nodes" set: every node


class NodeDevices:
    """One node's devices: ``instances`` for ``dra.device``, ``cel`` for the CEL ``devices``
    variable, ``key`` identifying the inputs (for the master's per-node cache). The first two
    are built on first read: the master asks for the key alone on every cache check."""

    __slots__ = ("devices", "key", "_instances", "_cel")

    def __init__(self, devices: list[DraDevice] | None = None, key: tuple[Any, ...] = ()) -> None:
        self.devices: list[DraDevice] = devices if devices is not None else []
        self.key = key
        self._instances: list[dict[str, str]] | None = None
        self._cel: list[dict[str, Any]] | None = None

    @property
    def instances(self) -> list[dict[str, str]]:
        if self._instances is None:
            self._instances = [d.instance for d in self.devices]
        return self._instances

    @property
    def cel(self) -> list[dict[str, Any]]:
        if self._cel is None:
            self._cel = [d.cel for d in self.devices]
        return self._cel


@dataclass(slots=True)
class _Pool:
    slices: dict[str, DraSlice] = field(default_factory=dict)  # the cache's slices of the pool
    in_force: tuple[DraSlice, ...] = ()  # the newest complete generation seen
    in_force_gen: int | None = None
    problem: str = ""


class DraIndex:
    """Pools, the slices in force, and an index of them by node. Not thread-safe (one loop)."""

    def __init__(self) -> None:
        self.slices: dict[str, DraSlice] = {}
        self._pools: dict[tuple[str, str], _Pool] = {}
        self._by_node: dict[str, dict[str, DraSlice]] = {}  # node -> in-force slices naming it
        self._selecting: dict[str, DraSlice] = {}  # in-force slices selecting nodes
        self.warnings_logged = 0

    # -- changes ------------------------------------------------------------------------------

    def upsert(self, s: DraSlice) -> set[str]:
        """Add or replace a slice; returns the nodes whose devices may have changed."""
        old = self.slices.get(s.name)
        if old is not None and old.resource_version == s.resource_version and old.resource_version:
            return set()
        for w in s.warnings:
            self.warnings_logged += 1
            log.warning("%s", w)
        affected: set[str] = set()
        if old is not None:
            affected |= self._drop(old)
        self.slices[s.name] = s
        if s.usable:
            self._pools.setdefault(s.pool_key, _Pool()).slices[s.name] = s
            affected |= self._refresh(s.pool_key)
        return affected

    def remove(self, name: str) -> set[str]:
        old = self.slices.pop(name, None)
        return self._drop(old) if old is not None else set()

    def _drop(self, old: DraSlice) -> set[str]:
        pool = self._pools.get(old.pool_key)
        if pool is None or pool.slices.pop(old.name, None) is None:
            return set()
        return self._refresh(old.pool_key)

    def _refresh(self, key: tuple[str, str]) -> set[str]:
        """Recompute which generation of pool ``key`` is in force; re-index on a change."""
        pool = self._pools[key]
        before = pool.in_force
        pool_name = f"{key[0]}/{key[1]}"
        if not pool.slices:
            # Every slice of the pool is gone: evidence that its devices are.
            del self._pools[key]
            after: tuple[DraSlice, ...] = ()
            problem = ""
        else:
            newest = max(s.generation for s in pool.slices.values())
            current = sorted((s for s in pool.slices.values() if s.generation == newest), key=lambda s: s.name)
            want = max(s.slice_count for s in current)
            names = [d.name for s in current for d in s.devices]
            dupes = sorted({n for n in names if names.count(n) > 1}) if len(names) != len(set(names)) else []
            if len(current) >= want and not dupes:
                after, problem = tuple(current), ""
                pool.in_force_gen = newest
            else:
                after = pool.in_force
                what = (f"duplicate device names {', '.join(dupes[:5])}" if dupes else
                        f"generation {newest} has {len(current)} of {want} slices "
                        f"({', '.join(s.name for s in current[:5])})")
                keep = (f"generation {pool.in_force_gen} stays in force" if pool.in_force else
                        "its devices are left out until it is complete")
                problem = f"ResourceSlice pool {pool_name}: {what}; {keep}"
            pool.in_force = after
            if problem and problem != pool.problem:
                self.warnings_logged += 1
                log.warning("%s", problem)
            elif pool.problem and not problem:
                log.info("ResourceSlice pool %s: generation %d complete", pool_name, pool.in_force_gen or 0)
            pool.problem = problem
        if before == after:
            return set()
        affected: set[str] = set()
        for s in before:
            affected |= self._unindex(s)
        for s in after:
            affected |= self._index(s)
        return affected

    def _index(self, s: DraSlice) -> set[str]:
        if s.node_name:
            self._by_node.setdefault(s.node_name, {})[s.name] = s
            return {s.node_name}
        self._selecting[s.name] = s
        return {ALL_NODES}

    def _unindex(self, s: DraSlice) -> set[str]:
        if s.node_name:
            m = self._by_node.get(s.node_name)
            if m is not None and m.get(s.name) is s:
                del m[s.name]
                if not m:
                    del self._by_node[s.node_name]
            return {s.node_name}
        if self._selecting.get(s.name) is s:
            del self._selecting[s.name]
        return {ALL_NODES}

    # -- queries ------------------------------------------------------------------------------

    @property
    def has_selecting(self) -> bool:
        """Whether any slice in force selects nodes by labels (node label changes matter)."""
        return bool(self._selecting)

    def pool_problems(self) -> list[str]:
        return [p.problem for p in self._pools.values() if p.problem]

    def node_devices(self, node: str, labels: dict[str, str]) -> NodeDevices:
        """The devices in force for ``node`` (with ``labels`` for node selectors)."""
        out = NodeDevices()
        chosen: list[DraSlice] = list((self._by_node.get(node) or {}).values())
        chosen += [s for s in self._selecting.values() if s.selects is not None and s.selected(node, labels)]
        if not chosen:
            return out
        chosen.sort(key=lambda s: (s.driver, s.pool, s.name))
        key: list[tuple[str, str]] = []
        for s in chosen:
            key.append((s.name, s.resource_version))
            for d in s.devices:
                if s.per_device and (d.selects is None or not d.selects(node, labels)):
                    continue
                out.devices.append(d)
        out.key = tuple(key)
        return out
