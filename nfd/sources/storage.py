"""``storage`` source: block devices and their queue properties."""

from __future__ import annotations

import os
from typing import Any

from nfd.api.features import Features
from nfd.sources.base import DiscoveryContext, FeatureSource
from nfd.sources.hostfs import list_dir, read_value

_QUEUE_ATTRS = ("dax", "rotational", "nr_zones", "zoned")


class StorageSource(FeatureSource):
    name = "storage"
    features = ("storage.block",)

    def discover(self, ctx: DiscoveryContext, config: dict[str, Any]) -> Features:
        base = ctx.paths.sys("block")
        devs = list_dir(ctx, base)
        if devs is None:
            raise OSError(f"{base}: cannot list block devices")
        out: list[dict[str, str]] = []
        for dev in devs:
            attrs = {"name": dev}
            for attr in _QUEUE_ATTRS:
                v = read_value(ctx, os.path.join(base, dev, "queue", attr))
                if v is not None:
                    attrs[attr] = v
            out.append(attrs)
        f = Features()
        f.instances["storage.block"] = out
        return f

    def labels(self, features: Features, config: dict[str, Any], ctx: DiscoveryContext) -> dict[str, str]:
        if any(d.get("rotational") == "0" for d in features.instances.get("storage.block", [])):
            return {"nonrotationaldisk": "true"}
        return {}


SOURCE = StorageSource()
