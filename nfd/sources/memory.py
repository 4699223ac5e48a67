"""``memory`` source: NUMA, swap, NVDIMM (nd bus) devices, hugepages."""

from __future__ import annotations

import os
import re
from typing import Any

from nfd.api.features import Features
from nfd.sources.base import DiscoveryContext, FeatureSource
from nfd.sources.hostfs import go_trim_space, list_dir, read_text, read_value

# upstream strips "hugepages-" and trailing k/B characters, then parses "<rest>Ki"
_HUGEPAGES_DIR = re.compile(r"^(?:hugepages-)?(\d+)[kB]*$")
_GO_INT = re.compile(r"^[+-]?\d+$")


class MemorySource(FeatureSource):
    name = "memory"
    features = ("memory.numa", "memory.swap", "memory.nv", "memory.hugepages")

    def discover(self, ctx: DiscoveryContext, config: dict[str, Any]) -> Features:
        f = Features()
        nodes = list_dir(ctx, ctx.paths.sys("bus/node/devices"))
        if nodes is not None:
            f.attributes["memory.numa"] = {"is_numa": "true" if len(nodes) > 1 else "false",
                                          "node_count": str(len(nodes))}
        swaps = read_text(ctx, ctx.paths.proc("swaps"), limit=1 << 20)
        if swaps is not None:
            lines = [ln for ln in swaps.split("\n") if go_trim_space(ln)]
            f.attributes["memory.swap"] = {"enabled": "true" if len(lines) > 1 else "false"}
        nd_base = ctx.paths.sys("bus/nd/devices")
        nv: list[dict[str, str]] = []
        for dev in list_dir(ctx, nd_base) or []:
            inst = {"name": dev}
            for attr in ("devtype", "mode"):
                v = read_value(ctx, os.path.join(nd_base, dev, attr))
                if v is not None:
                    inst[attr] = v
            nv.append(inst)
        f.instances["memory.nv"] = nv
        f.attributes["memory.hugepages"] = _hugepages(ctx)
        return f

    def labels(self, features: Features, config: dict[str, Any], ctx: DiscoveryContext) -> dict[str, str]:
        out: dict[str, str] = {}
        if features.attributes.get("memory.numa", {}).get("is_numa") == "true":
            out["numa"] = "true"
        if features.attributes.get("memory.swap", {}).get("enabled") == "true":
            out["swap"] = "true"
        nv = features.instances.get("memory.nv", [])
        if nv:
            out["nv.present"] = "true"
            if any(i.get("devtype") == "nd_dax" for i in nv):
                out["nv.dax"] = "true"
        return out


def _hugepages(ctx: DiscoveryContext) -> dict[str, str]:
    base = ctx.paths.sys("kernel/mm/hugepages")
    entries = list_dir(ctx, base)
    if entries is None:
        return {"enabled": "false"}
    out: dict[str, str] = {}
    enabled = False
    for entry in entries:
        m = _HUGEPAGES_DIR.match(entry)
        path = os.path.join(base, entry)
        if not m or not os.path.isdir(path) or os.path.islink(path):
            continue
        # an unreadable count is published as "" (as upstream), it just cannot enable hugepages
        count = read_value(ctx, os.path.join(path, "nr_hugepages"))
        if count is None:
            ctx.warn(f"{os.path.join(path, 'nr_hugepages')}: cannot read the page count")
            count = ""
        out["hugepages-" + quantity_kib(int(m.group(1)))] = count
        if _GO_INT.match(count):
            enabled = enabled or int(count) > 0
        elif count:
            ctx.warn(f"{os.path.join(path, 'nr_hugepages')}: not an integer: {count[:40]!r}")
    out["enabled"] = "true" if enabled else "false"
    return out


def quantity_kib(kib: int) -> str:
    """Kubernetes canonical binary-SI form of ``<kib>Ki`` (2048 -> ``2Mi``, 1048576 -> ``1Gi``)."""
    n, suffixes = kib, ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
    i = 0
    while n and n % 1024 == 0 and i < len(suffixes) - 1:
        n //= 1024
        i += 1
    return f"{n}{suffixes[i]}" if n else "0"


SOURCE = MemorySource()
