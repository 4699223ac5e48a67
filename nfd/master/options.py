"""What the parts of the node pipeline read of the process: its options (flags that are not in
the config file) and the config in force with its generation (``LiveConfig``).

Both are handed to each part at construction (nfd.master.core composes them); a part reads
``live.config`` when it needs a setting, so a reload (``LiveConfig.replace``) reaches every part
without any of them knowing who reloaded it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

from nfd.master.config import MasterConfig


@dataclass(slots=True)
class MasterOptions:
    """Process-level settings (flags that are not part of the config file)."""

    namespace: str = "node-feature-discovery"
    node_name: str = ""
    instance: str = ""
    enable_leader_election: bool = False
    feature_gates: dict[str, bool] = field(default_factory=dict)
    # Ours: how long a NodeFeature delete waits for a re-create before the node is re-processed.
    delete_grace_s: float = 5.0
    # Ours: re-process a node when its labels/annotations/taints/capacity change on the API side.
    react_to_node_changes: bool = True
    # NodeFeature changes of one node within this period are handled in one pass (upstream
    # flushes its event batch once per second).
    batch_s: float = 1.0
    # Ours (masterless mode, nfd-worker -enable-node-update): work on this one node only. The
    # NodeFeature and Node caches are narrowed to it by selectors.
    only_node: str = ""
    # Ours (masterless): a cluster-wide trigger (a rule or config change, a resync) reaches every
    # worker at once; each delays its pass by a fixed per-node fraction of this many seconds so
    # the writes do not arrive together (all workers share one API Priority and Fairness flow,
    # whose 429s cost each worker a second exchange). 0: no spread.
    spread_s: float = 0.0

    @property
    def node_feature_groups(self) -> bool:
        return self.feature_gates.get("NodeFeatureGroupAPI", False)

    @property
    def disable_auto_prefix(self) -> bool:
        return self.feature_gates.get("DisableAutoPrefix", False)

    @property
    def dra_resource_slices(self) -> bool:
        """Ours, on by default: the ``dra`` feature source (docs/dra.md). It changes nothing on
        a cluster without ResourceSlices or without rules that read ``dra.device``/``devices``.
        Off by default for a masterless worker (``only_node``): its RBAC has no cluster-wide
        read of ResourceSlices, and thousands of workers should not each try and warn."""
        return self.feature_gates.get("DRAResourceSlices", not self.only_node)


class LiveConfig:
    """The config in force and its generation, which each reload bumps (cached per-node results
    are keyed by it)."""

    __slots__ = ("config", "generation")

    def __init__(self, config: MasterConfig) -> None:
        self.config = config
        self.generation = 0

    def replace(self, config: MasterConfig) -> None:
        self.config = config
        self.generation += 1


def spread_delay(node: str, *, spread_s: float) -> float:
    """A node's fixed share of ``spread_s`` (a hash of its name): the same node waits the same
    time after every trigger, and a thousand nodes spread evenly over the window."""
    return spread_s * (zlib.crc32(node.encode()) % 1000) / 1000.0
