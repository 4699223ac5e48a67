"""``network`` source: physical (``device``) and virtual interfaces, SR-IOV labels."""

from __future__ import annotations

import os
from typing import Any

from nfd.api.features import Features
from nfd.sources.base import DiscoveryContext, FeatureSource
from nfd.sources.hostfs import list_dir, read_value

_DEV_ATTRS = ("operstate", "speed", "device/sriov_numvfs", "device/sriov_totalvfs", "mtu")
_VIRT_ATTRS = ("operstate", "speed", "mtu")


class NetworkSource(FeatureSource):
    name = "network"
    features = ("network.device", "network.virtual")

    def discover(self, ctx: DiscoveryContext, config: dict[str, Any]) -> Features:
        base = ctx.paths.sys("class/net")
        ifaces = list_dir(ctx, base)
        if ifaces is None:
            raise OSError(f"{base}: cannot list network interfaces")
        devs: list[dict[str, str]] = []
        virts: list[dict[str, str]] = []
        for name in ifaces:
            if name == "bonding_masters":
                continue
            path = os.path.join(base, name)
            # upstream stat()s the link: a dangling "device" link means a virtual interface
            physical = os.path.exists(os.path.join(path, "device"))
            attrs = {"name": name}
            for attr in _DEV_ATTRS if physical else _VIRT_ATTRS:
                v = read_value(ctx, os.path.join(path, attr))
                if v is not None:
                    attrs[os.path.basename(attr)] = v
            (devs if physical else virts).append(attrs)
        f = Features()
        f.instances["network.device"] = devs
        f.instances["network.virtual"] = virts
        return f

    def labels(self, features: Features, config: dict[str, Any], ctx: DiscoveryContext) -> dict[str, str]:
        out: dict[str, str] = {}
        for dev in features.instances.get("network.device", []):
            for attr, label in (("sriov_totalvfs", "sriov.capable"), ("sriov_numvfs", "sriov.configured")):
                if attr in dev:
                    try:
                        if int(dev[attr]) > 0:
                            out[label] = "true"
                    except ValueError:
                        ctx.warn(f"network device {dev.get('name')}: {attr} is not an integer: {dev[attr][:40]!r}")
        return out


SOURCE = NetworkSource()
