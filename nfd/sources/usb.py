"""``usb`` source: USB devices from sysfs (``/sys/bus/usb/devices/*/idProduct``)."""

from __future__ import annotations

import glob
import os
from typing import Any

from nfd.api.features import Features
from nfd.sources.base import DiscoveryContext, FeatureSource, str_list
from nfd.sources.hostfs import read_value
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
        pattern = os.path.join(glob.escape(ctx.paths.sys("bus/usb/devices")), "*", "idProduct")
        out: list[dict[str, str]] = []
        for id_product in sorted(glob.glob(pattern)):
            dev = os.path.dirname(id_product)
            attrs: dict[str, str] = {}
            for field in FIELDS:
                v = read_value(ctx, os.path.join(dev, _FILES[field]))
                if v:
                    attrs[field] = v
            if attrs.get("class") != "00":
                out.append(attrs)
                continue
            # class 00: the class is per interface; one instance per interface (duplicates kept)
            for intf in sorted(glob.glob(os.path.join(glob.escape(dev), "*", "bInterfaceClass"))):
                cls = read_value(ctx, intf)
                if cls is None:
                    continue
                out.append({**attrs, "class": cls})
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
