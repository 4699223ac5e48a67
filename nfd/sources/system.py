"""``system`` source: os-release, node name, DMI ids."""

from __future__ import annotations

import os
import re
from typing import Any

from nfd.api.features import Features
from nfd.sources.base import DiscoveryContext, FeatureSource
from nfd.sources.hostfs import read_text, read_value

_KV = re.compile(r"^(\w+)=(.+)", re.ASCII)
_VERSION_ID = re.compile(r"^(?P<major>\d+)(\.(?P<minor>\d+))?(\..*)?$", re.ASCII)
#: Go's bufio.Scanner gives up on a line that does not fit its 64 KiB buffer (upstream then
#: keeps what it read so far)
_MAX_LINE = 64 * 1024
DMI_ATTRS = (
    "bios_date", "bios_vendor", "bios_version", "board_asset_tag", "board_name", "board_vendor",
    "board_version", "chassis_asset_tag", "chassis_type", "chassis_vendor", "chassis_version",
    "product_family", "product_name", "product_sku", "product_version", "sys_vendor",
)
_LABELLED = ("ID", "VERSION_ID", "VERSION_ID.major", "VERSION_ID.minor")


class SystemSource(FeatureSource):
    name = "system"
    features = ("system.osrelease", "system.name", "system.dmiid")

    def discover(self, ctx: DiscoveryContext, config: dict[str, Any]) -> Features:
        f = Features()
        path = ctx.paths.etc("os-release")
        text = read_text(ctx, path, limit=1 << 20)
        if text is None:
            ctx.warn(f"{path}: cannot read os-release")
        else:
            f.attributes["system.osrelease"] = parse_os_release(text)
        f.attributes["system.name"] = {"nodename": ctx.node_name}
        dmi: dict[str, str] = {}
        base = ctx.paths.sys("devices/virtual/dmi/id")
        for attr in DMI_ATTRS:
            v = read_value(ctx, os.path.join(base, attr))
            if v is not None:
                dmi[attr] = v
        if dmi:
            f.attributes["system.dmiid"] = dmi
        return f

    def labels(self, features: Features, config: dict[str, Any], ctx: DiscoveryContext) -> dict[str, str]:
        osr = features.attributes.get("system.osrelease", {})
        return {f"os_release.{k}": osr[k] for k in _LABELLED if k in osr}


def parse_os_release(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    lines = text.split("\n")
    for i, line in enumerate(lines):
        last = i == len(lines) - 1
        if len(line.encode()) + (0 if last else 1) > _MAX_LINE:
            break
        line = line.removesuffix("\r")  # bufio.ScanLines drops one CR before the LF
        m = _KV.match(line)
        if m:
            out[m.group(1)] = m.group(2).strip("\"'")
    vid = out.get("VERSION_ID")
    if vid:
        m = _VERSION_ID.match(vid)
        if m:
            if m.group("major"):
                out["VERSION_ID.major"] = m.group("major")
            if m.group("minor"):
                out["VERSION_ID.minor"] = m.group("minor")
    return out


SOURCE = SystemSource()
