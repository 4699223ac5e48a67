"""``usb`` source: USB devices from sysfs (``/sys/bus/usb/devices/*/idProduct``)."""

from __future__ import annotations

import os
from typing import Any

from nfd.api.features import Features
from nfd.sources.base import DiscoveryContext, FeatureSource, str_list
from nfd.sources.hostfs import exists, list_dir, read_value
from nfd.sources.pci import device_label, label_fields

FIELDS = ("class", "vendor", "device", "serial")
_FILES = {"class": "bDeviceClass", "vendor": "idVendor", "device": "idProduct", "serial": "serial"}
DEFAULT_LABEL_FIELDS = ["class", "vendor", "device"]


class UsbSource(FeatureSource):
    name = "usb"

    def default_config(self) -> dict[str, Any]:
        return {"deviceClassWhitelist": ["0e", "ef", "fe", "ff"], "deviceLabelFields": list(DEFAULT_LABEL_FIELDS)}

    def parse_config(self, raw: Any, *, path: str) -> dict[str, Any]:
        cfg = super().parse_config(raw, path=path)
        for key in ("deviceClassWhitelist", "deviceLabelFields"):
            cfg[key] = str_list(cfg[key], f"{path}.{key}")
        return cfg

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
        fields = label_fields(list(config.get("deviceLabelFields") or []), FIELDS, DEFAULT_LABEL_FIELDS)
        whitelist = [w.lower() for w in config.get("deviceClassWhitelist") or []]
        out: dict[str, str] = {}
        for dev in features.instances.get("usb.device", []):
            cls = dev.get("class", "")
            if any(cls.startswith(w) for w in whitelist):
                out[f"{device_label(dev, fields)}.present"] = "true"
        return out


SOURCE = UsbSource()
