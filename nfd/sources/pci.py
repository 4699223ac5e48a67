"""``pci`` source: one instance per PCI device; labels for whitelisted device classes."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

from nfd.api.features import Features
from nfd.sources.base import DiscoveryContext, FeatureSource, str_list
from nfd.sources.hostfs import go_trim_space, list_dir, read_text

MANDATORY = ("class", "vendor", "device", "subsystem_vendor", "subsystem_device")
OPTIONAL = ("sriov_totalvfs", "iommu_group/type", "iommu/intel-iommu/version")
DEFAULT_LABEL_FIELDS = ["class", "vendor"]
#: ours, not upstream's: where the device sits (features only; never label fields, as
#: ``deviceLabelFields`` accepts only the MANDATORY attributes, as upstream)
LOCALITY = ("numa_node", "pcie_root")
#: a PCI root bus as the first component under /sys/devices, as k8s.io/dynamic-resource-allocation's
#: deviceattribute reads ``resource.kubernetes.io/pcieRoot``: ``pci<domain>:<bus>``
_PCI_ROOT = re.compile(r"pci[0-9a-f]{4,}:[0-9a-f]{2}")


def label_fields(configured: list[str], valid: tuple[str, ...], default: list[str]) -> list[str]:
    """Configured label fields in canonical order; invalid ones dropped; default if none left."""
    chosen = [f for f in valid if f in configured]
    return chosen or list(default)


def device_label(dev: dict[str, str], fields: list[str]) -> str:
    return "_".join(dev.get(f, "") for f in fields)


class DeviceClassSource(FeatureSource):
    """A source whose devices are labelled when their class is whitelisted (pci, usb): the
    ``deviceClassWhitelist`` and ``deviceLabelFields`` settings, read and applied alike."""

    def parse_config(self, raw: Any, *, path: str) -> dict[str, Any]:
        cfg = super().parse_config(raw, path=path)
        for key in ("deviceClassWhitelist", "deviceLabelFields"):
            cfg[key] = str_list(cfg[key], f"{path}.{key}")
        return cfg

    @staticmethod
    def whitelisted(
        devices: Iterable[dict[str, str]], config: dict[str, Any], *, valid: tuple[str, ...], default: list[str]
    ) -> Iterator[tuple[str, dict[str, str]]]:
        """(label stem, device) for each device whose class starts with a whitelisted prefix;
        the stem joins the configured label fields (``valid`` order, ``default`` if none)."""
        fields = label_fields(list(config.get("deviceLabelFields") or []), valid, default)
        whitelist = [w.lower() for w in config.get("deviceClassWhitelist") or []]
        for dev in devices:
            cls = dev.get("class", "")
            if any(cls.startswith(w) for w in whitelist):
                yield device_label(dev, fields), dev


class PciSource(DeviceClassSource):
    name = "pci"
    features = ("pci.device",)

    def default_config(self) -> dict[str, Any]:
        return {"deviceClassWhitelist": ["03", "0b40", "12"], "deviceLabelFields": list(DEFAULT_LABEL_FIELDS)}

    def discover(self, ctx: DiscoveryContext, config: dict[str, Any]) -> Features:
        base = ctx.paths.sys("bus/pci/devices")
        devices = list_dir(ctx, base)
        if devices is None:
            raise OSError(f"{base}: cannot list PCI devices")
        out: list[dict[str, str]] = []
        for dev in devices:
            info = read_device(ctx, os.path.join(base, dev), MANDATORY, OPTIONAL)
            if info is None:
                ctx.warn(f"{os.path.join(base, dev)}: incomplete PCI device skipped")
                continue
            info.update(read_locality(ctx, os.path.join(base, dev)))
            out.append(info)
        f = Features()
        f.instances["pci.device"] = out
        return f

    def labels(self, features: Features, config: dict[str, Any], ctx: DiscoveryContext) -> dict[str, str]:
        out: dict[str, str] = {}
        devices = features.instances.get("pci.device", [])
        for label, dev in self.whitelisted(devices, config, valid=MANDATORY, default=DEFAULT_LABEL_FIELDS):
            out[f"{label}.present"] = "true"
            if "sriov_totalvfs" in dev:
                out[f"{label}.sriov.capable"] = "true"
        return out


def read_locality(ctx: DiscoveryContext, dev_path: str) -> dict[str, str]:
    """``numa_node`` and ``pcie_root`` of the device at ``dev_path`` (``bus/pci/devices/<bdf>``),
    each left out where sysfs does not say it.

    ``numa_node``: the kernel's ``numa_node`` file as a decimal string (``"0"``, ``"1"``); left
    out when it is ``-1`` (NUMA_NO_NODE: the firmware gave no proximity, or the kernel has no
    NUMA), missing or not an integer, so a rule cannot take two devices without a node for
    devices on one node. ``pcie_root``: the PCI root bus the device hangs under, the first
    component of the entry's link target below ``/sys/devices`` (``pci0000:17``, the value of
    DRA's standard attribute ``resource.kubernetes.io/pcieRoot``); left out when the entry is not
    a link (a copied tree) or points elsewhere (a virtual bus, such as Hyper-V's).
    """
    out: dict[str, str] = {}
    text = read_text(ctx, os.path.join(dev_path, "numa_node"), limit=4096)
    if text is not None:
        try:
            node = int(go_trim_space(text))
        except ValueError:
            node = -1
        if node >= 0:
            out["numa_node"] = str(node)
    root = pcie_root(ctx, dev_path)
    if root is not None:
        out["pcie_root"] = root
    return out


def pcie_root(ctx: DiscoveryContext, dev_path: str) -> str | None:
    try:
        target = os.readlink(dev_path)
    except OSError:
        return None
    if os.path.isabs(target):
        # an absolute link names the host's /sys, which may be mounted elsewhere here
        rel = os.path.relpath(target, "/sys/devices")
    else:
        rel = os.path.relpath(os.path.normpath(os.path.join(os.path.dirname(dev_path), target)), ctx.paths.sys("devices"))
    first = rel.split(os.sep, 1)[0]
    return first if _PCI_ROOT.fullmatch(first) else None


def read_attr(ctx: DiscoveryContext, dev_path: str, attr: str) -> str | None:
    text = read_text(ctx, os.path.join(dev_path, attr), limit=4096)
    if text is None:
        return None
    value = go_trim_space(text.removeprefix("0x"))
    if attr == "class" and len(value) > 4:
        value = value[:4]  # class + subclass; the programming interface is dropped
    return value


def read_device(
    ctx: DiscoveryContext, dev_path: str, mandatory: tuple[str, ...], optional: tuple[str, ...]
) -> dict[str, str] | None:
    attrs: dict[str, str] = {}
    for attr in mandatory:
        v = read_attr(ctx, dev_path, attr)
        if v is None:
            return None
        attrs[attr] = v
    for attr in optional:
        v = read_attr(ctx, dev_path, attr)
        if v is not None:
            attrs[attr] = v
    return attrs


SOURCE = PciSource()
