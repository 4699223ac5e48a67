"""``usb`` source: USB devices from sysfs (``/sys/bus/usb/devices/*/idProduct``)."""

from __future__ import annotations

import os
from typing import Any

from nfd.api.features import Features
from nfd.sources.base import DiscoveryContext
from nfd.sources.hostfs import exists, list_dir, read_value
from nfd.sources.pci import DeviceClassSource

FIELDS = ("class", "vendor", "device", "serial")
_FILES = {"class": "bDeviceClass", "vendor": "idVendor", "device": "idProduct", "serial": "serial"}
DEFAULT_LABEL_FIELDS = ["class", "vendor", "device"]


class UsbSource(DeviceClassSource):
    name = "usb"
    features = ("usb.device",)

    def default_config(self) -> dict[str, Any]:
        return {"deviceClassWhitelist": ["0e", "ef", "fe", "ff"], "deviceLabelFields": list(DEFAULT_LABEL_FIELDS)}

    def discover(self, ctx: DiscoveryContext, config: dict[str, Any]) -> Features:
        # upstream globs */idProduct with Go's filepath.Glob: dot-names match too and entries
        # come in directory-name order ("1-1" before "1-1.2"), not full-path order
        base = ctx.paths.sys("bus/usb/devices")
        out: list[dict[str, str]] = []
        for name in list_dir(ctx, base) or []:
            dev = os.path.join(base, name)
            if not exists(os.path.join(dev, "idProduct")):
                continue
            attrs: dict[str, str] = {}
            for field in FIELDS:
                v = read_value(ctx, os.path.join(dev, _FILES[field]))
                if v:
                    attrs[field] = v
            if attrs.get("class") != "00":
                out.append(attrs)
                continue
            # class 00: the class is per interface; one instance per interface (duplicates kept);
            # one unreadable interface class drops the whole device, as upstream
            per_intf: list[dict[str, str]] = []
            for intf in list_dir(ctx, dev) or []:
                path = os.path.join(dev, intf, "bInterfaceClass")
                if not exists(path):
                    continue
                cls = read_value(ctx, path)
                if cls is None:
                    ctx.warn(f"{path}: unreadable interface class, USB device {name} skipped")
                    per_intf = []
                    break
                per_intf.append({**attrs, "class": cls})
            out.extend(per_intf)
        f = Features()
        f.instances["usb.device"] = out
        return f

    def labels(self, features: Features, config: dict[str, Any], ctx: DiscoveryContext) -> dict[str, str]:
        devices = features.instances.get("usb.device", [])
        return {f"{label}.present": "true"
                for label, _ in self.whitelisted(devices, config, valid=FIELDS, default=DEFAULT_LABEL_FIELDS)}


SOURCE = UsbSource()
