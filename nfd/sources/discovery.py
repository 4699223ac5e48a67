"""Running sources and turning features into labels: what the worker and ``nfd export`` share.

Pure functions of (host context, source names, per-source configs): no clients, no globals
besides the lazy source registry.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import TYPE_CHECKING, Any

from nfd.api import DEFAULT_LABEL_NS
from nfd.api.errors import ValidationError
from nfd.api.features import Features
from nfd.api.validation import is_qualified_name, is_valid_label_value
from nfd.common.logsetup import GoDuration, klogger
from nfd.common.valuerecord import Record
from nfd.sources import registry
from nfd.sources.base import DiscoveryContext

if TYPE_CHECKING:
    from nfd.lang.goregex import GoRegexp

log = logging.getLogger("nfd.sources")
klog = klogger("nfd.sources")



def parse_source_configs(raw: Any, *, path: str = "sources") -> dict[str, dict[str, Any]]:
    """``sources.*`` of the worker config -> effective config of every registered source.

    Raises ValidationError naming the first bad field; unknown source keys are ignored (logged).
    Only sources with a block in ``raw`` are imported, so defaults stay lazy.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ValidationError(path, "must be an object")
    out: dict[str, dict[str, Any]] = {}
    for name, block in raw.items():
        if name not in registry.SOURCE_MODULES:
            log.info("%s.%s: unknown source, ignored", path, name)
            continue
        src = registry.get(name)
        if src is None:
            continue
        out[name] = src.parse_config(block, path=f"{path}.{name}")
    return out


def config_for(configs: dict[str, dict[str, Any]], name: str) -> dict[str, Any]:
    if name in configs:
        return configs[name]
    src = registry.get(name)
    return src.default_config() if src is not None else {}


class DiscoveryResult(Record):
    """One discovery pass: features by source and the sources that failed. Written out as a
    dataclass would generate it (the one-shot worker does not load ``dataclasses``)."""

    _FIELDS = ("by_source", "errors", "durations")


    def __init__(self, by_source: dict[str, Features] | None = None, errors: dict[str, str] | None = None,
                 durations: dict[str, float] | None = None) -> None:
        #: every source that ran and succeeded (or kept its last good result), by name
        self.by_source: dict[str, Features] = {} if by_source is None else by_source
        #: sources that failed this pass: name -> one-line error
        self.errors: dict[str, str] = {} if errors is None else errors
        #: seconds each source took
        self.durations: dict[str, float] = {} if durations is None else durations

    def merged(self) -> Features:
        out = Features()
        for name in sorted(self.by_source):
            out.merge(self.by_source[name])
        return out


def discover(
    ctx: DiscoveryContext,
    names: list[str],
    configs: dict[str, dict[str, Any]],
    *,
    last_good: dict[str, Features] | None = None,
) -> DiscoveryResult:
    """Run feature sources ``names`` in name order. A failing source keeps its entry from
    ``last_good`` (if any) so one transient error never empties or shrinks what is published."""
    res = DiscoveryResult()
    for name in sorted(names):
        src = registry.get(name)
        if src is None or not src.is_feature_source:
            continue
        t0 = time.perf_counter()
        try:
            feats = src.discover(ctx, config_for(configs, name))
            # a source may only contribute its own keys
            for kind in (feats.flags, feats.attributes, feats.instances):
                for key in [k for k in kind if not k.startswith(name + ".")]:
                    ctx.warn(f"source {name}: dropped feature {key!r} outside its own namespace")
                    del kind[key]
            res.by_source[name] = feats
        except Exception as e:  # any source bug or host oddity: keep the rest going
            res.errors[name] = f"{type(e).__name__}: {e}"
            klog.error_s(res.errors[name], "feature discovery failed", source=name)
            if last_good and name in last_good:
                res.by_source[name] = last_good[name]
        res.durations[name] = time.perf_counter() - t0
        klog.info_s("feature discovery completed", v=3, featureSource=name, duration=GoDuration(res.durations[name]))
    return res


# A daemon validates the same label names every pass: the answer is a pure function of the name
_qualified_name = functools.lru_cache(maxsize=4096)(is_qualified_name)


def compute_labels(
    features: Features,
    names: list[str],
    configs: dict[str, dict[str, Any]],
    ctx: DiscoveryContext,
    *,
    whitelist: GoRegexp | None = None,
) -> dict[str, str]:
    """Labels of label sources ``names``, run in (priority, name) order so later sources win,
    prefixed and validated as upstream's worker does (Kubernetes' IsQualifiedName and
    IsValidLabelValue: the validators the master and the CLIs use)."""
    srcs = [(s.priority, n, s) for n in names if (s := registry.get(n)) is not None and s.is_label_source]
    out: dict[str, str] = {}
    for _, name, src in sorted(srcs, key=lambda t: (t[0], t[1])):
        try:
            labels = src.labels(features, config_for(configs, name), ctx)
        except Exception as e:
            log.warning("source %s: computing labels failed: %s: %s", name, type(e).__name__, e)
            continue
        for raw_name, value in labels.items():
            key = raw_name if ("/" in raw_name or not src.prefix_labels) else f"{DEFAULT_LABEL_NS}/{name}-{raw_name}"
            value = str(value)
            if not _qualified_name(key):
                log.info("source %s: invalid label name %r dropped", name, key)
                continue
            if not is_valid_label_value(value):
                log.info("source %s: label %s: invalid value %r dropped", name, key, value)
                continue
            if whitelist is not None and not whitelist.match_string(key.rpartition("/")[2]):
                continue
            out[key] = value
    return out
