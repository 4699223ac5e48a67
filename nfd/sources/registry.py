"""Every feature source, registered in one place and imported lazily.

``SOURCE_MODULES`` maps source name -> module exporting ``SOURCE`` (see :mod:`nfd.sources.base`).
Modules are imported only when a source is asked for, so ``nfd export --sources pci`` never
imports the cpu or nvml code. A source whose module fails to import is reported and left out.
"""

from __future__ import annotations

import importlib
import logging

from nfd.sources.base import FeatureSource

log = logging.getLogger("nfd.sources")

SOURCE_MODULES: dict[str, str] = {
    "cpu": "nfd.sources.cpu",
    "custom": "nfd.sources.custom",
    "fake": "nfd.sources.fake",
    "kernel": "nfd.sources.kernel",
    "local": "nfd.sources.local",
    "memory": "nfd.sources.memory",
    "network": "nfd.sources.network",
    "nvml": "nfd.sources.nvml",
    "pci": "nfd.sources.pci",
    "storage": "nfd.sources.storage",
    "system": "nfd.sources.system",
    "usb": "nfd.sources.usb",
}

_loaded: dict[str, FeatureSource | None] = {}


def names() -> list[str]:
    """All registered source names, sorted (upstream discovers in name order)."""
    return sorted(SOURCE_MODULES)


def get(name: str) -> FeatureSource | None:
    """The source object, or None if unknown or its module cannot be imported."""
    if name in _loaded:
        return _loaded[name]
    mod_name = SOURCE_MODULES.get(name)
    src: FeatureSource | None = None
    if mod_name is not None:
        try:
            src = importlib.import_module(mod_name).SOURCE
        except Exception as e:  # a broken optional source must not take the worker down
            log.warning("source %s: cannot load %s: %s", name, mod_name, e)
            src = None
    _loaded[name] = src
    return src


def published_features() -> frozenset[str]:
    """Every feature name a source of this nfd publishes (each source's ``features``; a
    source whose module cannot be imported contributes none)."""
    out: set[str] = set()
    for n in names():
        src = get(n)
        if src is not None and src.is_feature_source:
            out.update(src.features)
    return frozenset(out)


# unknown source names already warned about
_unknown_reported: set[str] = set()


def loaded(name: str) -> FeatureSource | None:
    """The source object if its module is loaded already (None otherwise): for readers such as
    the metrics endpoint, which must not load a source that discovery does not run."""
    return _loaded.get(name)


def resolve(spec: list[str], *, kind: str) -> list[str]:
    """Upstream's ``featureSources``/``labelSources`` syntax -> sorted enabled source names.

    ``all`` adds every source enabled by default, ``-name`` removes one, a plain name adds it
    (also sources off by default, e.g. ``fake``). Unknown names are logged and ignored.
    ``kind`` is ``"feature"`` or ``"label"`` and filters sources by capability.
    """
    enabled: set[str] = set()
    for raw in spec:
        item = raw.strip()
        if not item:
            continue
        if item == "all":
            for n in names():
                s = get(n)
                if s is not None and _has_kind(s, kind) and s.enabled_by_default:
                    enabled.add(n)
            continue
        disable = item.startswith("-")
        n = item[1:] if disable else item
        s = get(n) if n in SOURCE_MODULES else None
        if s is None:
            if n not in _unknown_reported:  # once per process, not per kind or reload
                _unknown_reported.add(n)
                log.warning("%s source %r: unknown source, ignored", kind, n)
            continue
        if not _has_kind(s, kind):
            log.info("%s source %r: not a %s source, ignored", kind, n, kind)
            continue
        if disable:
            enabled.discard(n)
        else:
            enabled.add(n)
    return sorted(enabled)


def _has_kind(s: FeatureSource, kind: str) -> bool:
    return s.is_feature_source if kind == "feature" else s.is_label_source
