"""nfd-worker configuration: ``nfd-worker.conf`` (YAML/JSON), ``-options``, and flag overrides.

Upstream keys: ``core.{sleepInterval, featureSources, labelSources, sources (deprecated alias),
labelWhiteList, noPublish, noPublishFeatures, ownerRefs, noOwnerRefs, klog}`` and
``sources.<name>.*``. Parsing is a pure function of the documents; invalid input raises
:class:`ValueError` naming the file and field, and the caller keeps its previous config.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from nfd.api.errors import ValidationError
from nfd.common.fileargs import os_reason
from nfd.common.goduration import format_go_duration, parse_go_duration
from nfd.common.gokeys import canonical_keys
from nfd.common.valuerecord import Record
from nfd.sources.discovery import parse_source_configs

if TYPE_CHECKING:
    from nfd.lang.goregex import GoRegexp

log = logging.getLogger("nfd.worker")

DEFAULT_CONFIG_PATH = "/etc/kubernetes/node-feature-discovery/nfd-worker.conf"
OWNER_REF_KINDS = ("node", "pod", "ds")


def parse_duration(value: Any, *, path: str) -> float:
    """Go ``time.Duration`` text (``60s``, ``1m30s``, ``500ms``, ``0``) -> seconds."""
    if isinstance(value, bool):
        raise ValidationError(path, "must be a duration like 60s")
    if isinstance(value, int | float):
        return float(value) / 1e9  # Go unmarshals a bare number as nanoseconds
    if not isinstance(value, str):
        raise ValidationError(path, "must be a duration like 60s")
    try:
        return parse_go_duration(value)
    except ValueError:
        raise ValidationError(path, f"invalid duration {value!r}") from None


class WorkerConfig(Record):
    """nfd-worker's configuration file (core and sources), parsed and validated.

    Written out as a dataclass would generate it (``__init__`` with these defaults, ``__eq__``,
    ``__repr__``): the one-shot worker does not load ``dataclasses`` (docs/worker.md)."""

    _FIELDS = ("sleep_interval", "feature_sources", "label_sources", "label_whitelist", "no_publish",
               "no_publish_features", "owner_refs", "klog", "enable_node_update", "node_update_spread",
               "raw_sources", "source_configs")

    def __init__(
        self,
        sleep_interval: float = 60.0,
        feature_sources: list[str] | None = None,
        label_sources: list[str] | None = None,
        label_whitelist: GoRegexp | None = None,
        no_publish: bool = False,
        no_publish_features: list[str] | None = None,
        owner_refs: list[str] | None = None,
        klog: dict[str, Any] | None = None,
        enable_node_update: bool = False,
        node_update_spread: float = 1.0,
        raw_sources: dict[str, Any] | None = None,
        source_configs: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.sleep_interval = sleep_interval
        self.feature_sources: list[str] = ["all"] if feature_sources is None else feature_sources
        self.label_sources: list[str] = ["all"] if label_sources is None else label_sources
        self.label_whitelist = label_whitelist
        self.no_publish = no_publish
        self.no_publish_features: list[str] = [] if no_publish_features is None else no_publish_features
        self.owner_refs: list[str] = ["pod", "ds"] if owner_refs is None else owner_refs
        self.klog: dict[str, Any] = {} if klog is None else klog
        #: ours: masterless mode, the worker updates its own Node (docs/masterless.md)
        self.enable_node_update = enable_node_update
        #: ours: masterless mode, the window a cluster-wide trigger's writes are spread over
        self.node_update_spread = node_update_spread
        #: ``sources`` block as written (parsed per source by nfd.sources.discovery)
        self.raw_sources: dict[str, Any] = {} if raw_sources is None else raw_sources
        #: effective per-source configs (only sources with a block; others use defaults)
        self.source_configs: dict[str, dict[str, Any]] = {} if source_configs is None else source_configs


def check_spread(seconds: float, *, path: str) -> float:
    if not 0 <= seconds <= NODE_UPDATE_SPREAD_MAX:
        raise ValidationError(path, f"must be between 0 and {NODE_UPDATE_SPREAD_MAX:g}s, got {seconds:g}s")
    return seconds


def _str_list(v: Any, path: str) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [x for x in (s.strip() for s in v.split(",")) if x]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValidationError(path, "must be a list of strings")
    return list(v)


def normalize_owner_refs(refs: list[str], *, path: str) -> list[str]:
    seen = set()
    for r in refs:
        if r not in OWNER_REF_KINDS:
            raise ValidationError(path, f"unknown owner reference kind {r!r} (valid: node, pod, ds)")
        if r in seen:
            raise ValidationError(path, f"duplicate owner reference kind {r!r}")
        seen.add(r)
    return [k for k in OWNER_REF_KINDS if k in seen]


def merge_docs(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge ``over`` onto ``base`` (how ``-options`` overlays the file)."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge_docs(out[k], v)
        else:
            out[k] = v
    return out


def build_config(doc: Any, *, source: str = "config") -> WorkerConfig:
    """Parse one config document. Raises ValueError (``<source>: <field>: <problem>``)."""
    try:
        return _build(doc)
    except ValidationError as e:
        raise ValueError(f"{source}: {e}") from e


CORE_KEYS = ("sleepInterval", "featureSources", "labelSources", "sources", "labelWhiteList", "noPublish",
             "noOwnerRefs", "noPublishFeatures", "ownerRefs", "klog", "enableNodeUpdate", "nodeUpdateSpread")

NODE_UPDATE_SPREAD_MAX = 3600.0  # seconds: a rule change must still reach every node within the hour


def _build(doc: Any) -> WorkerConfig:
    cfg = WorkerConfig()
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise ValidationError("", "config must be an object")
    doc = canonical_keys(doc, ("core", "sources"))  # matched like Go's JSON decoder
    for key in doc:
        if key not in ("core", "sources"):
            log.info("config: unknown top-level key %r ignored", key)
    core = doc.get("core")
    if core is None:
        core = {}
    if not isinstance(core, dict):
        raise ValidationError("core", "must be an object")
    core = canonical_keys(core, CORE_KEYS)
    if "sleepInterval" in core:
        cfg.sleep_interval = parse_duration(core["sleepInterval"], path="core.sleepInterval")
    if "featureSources" in core:
        cfg.feature_sources = _str_list(core["featureSources"], "core.featureSources")
    if "labelSources" in core:
        cfg.label_sources = _str_list(core["labelSources"], "core.labelSources")
    if core.get("sources") is not None:  # deprecated alias, wins when present
        cfg.label_sources = _str_list(core["sources"], "core.sources")
    wl = core.get("labelWhiteList")
    if wl not in (None, ""):
        if not isinstance(wl, str):
            raise ValidationError("core.labelWhiteList", "must be a string")
        # here, not at the top: RE2 (and libstdc++ with it; ~15 ms and ~4 MiB after a one-shot
        # run) only when there is a regexp
        from nfd.lang.goregex import GoRegexError, compile_go

        try:
            cfg.label_whitelist = compile_go(wl)
        except GoRegexError as e:
            raise ValidationError("core.labelWhiteList", f"invalid regexp: {e}") from e
    for key, attr in (("noPublish", "no_publish"), ("noOwnerRefs", None), ("enableNodeUpdate", "enable_node_update")):
        if key in core and not isinstance(core[key], bool):
            raise ValidationError(f"core.{key}", "must be a boolean")
        if attr and key in core:
            setattr(cfg, attr, core[key])
    if "nodeUpdateSpread" in core:
        cfg.node_update_spread = check_spread(
            parse_duration(core["nodeUpdateSpread"], path="core.nodeUpdateSpread"), path="core.nodeUpdateSpread")
    if "noPublishFeatures" in core:
        cfg.no_publish_features = _str_list(core["noPublishFeatures"], "core.noPublishFeatures")
    if "ownerRefs" in core:
        cfg.owner_refs = normalize_owner_refs(_str_list(core["ownerRefs"], "core.ownerRefs"), path="core.ownerRefs")
    if core.get("noOwnerRefs"):
        cfg.owner_refs = []
    if "klog" in core:
        if not isinstance(core["klog"], dict):
            raise ValidationError("core.klog", "must be an object")
        cfg.klog = dict(core["klog"])
    raw_sources = doc.get("sources")
    if raw_sources is None:
        raw_sources = {}
    if not isinstance(raw_sources, dict):
        raise ValidationError("sources", "must be an object")
    cfg.raw_sources = raw_sources
    cfg.source_configs = parse_source_configs(raw_sources)
    return cfg


def read_doc(path: str) -> Any:
    """Parse a YAML/JSON file. Raises OSError/ValueError naming the file."""
    # here, not at the top: PyYAML (~14 ms after a one-shot run, python -X importtime) only for
    # a config file or -options; a one-shot run without them reads none
    import yaml

    from nfd.common import safeyaml

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read((4 << 20) + 1)
    except (OSError, UnicodeDecodeError) as e:  # one line naming the file, as every path argument
        raise OSError(f"{path}: cannot read: {os_reason(e)}") from None
    try:
        return safeyaml.safe_load(text, source=path, max_bytes=4 << 20)
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: invalid YAML: {safeyaml.error_text(e)}") from e


# config paths already reported missing: said once per process, not on every reload check
_missing_reported: set[str] = set()


def load_config_file(path: str, options: str | None = None) -> WorkerConfig:
    """File (missing file = defaults, as upstream) overlaid with the ``-options`` string.

    A missing file other than the default path was named on the command line (``-config``,
    ``--config``): that is said once, as a warning, since defaults are then used in silence."""
    doc: Any = {}
    if path and not os.path.exists(path) and path != DEFAULT_CONFIG_PATH and path not in _missing_reported:
        _missing_reported.add(path)
        log.warning("config file %s not found, using defaults", path)
    if path and os.path.exists(path):
        doc = read_doc(path) or {}
        if not isinstance(doc, dict):
            raise ValueError(f"{path}: config must be an object")
    if options:
        import yaml  # here: see read_doc

        from nfd.common import safeyaml

        try:
            over = safeyaml.safe_load(options, source="-options", max_bytes=1 << 20) or {}
        except yaml.YAMLError as e:
            raise ValueError(f"-options: invalid YAML/JSON: {safeyaml.error_text(e)}") from e
        if not isinstance(over, dict):
            raise ValueError("-options: must be an object")
        doc = merge_docs(doc, over)
    return build_config(doc, source=path or "-options")


def strip_features(features: Any, patterns: list[str]) -> Any:
    """``noPublishFeatures``: drop feature keys equal to a pattern or matching ``prefix*``."""
    out = features.copy()

    def hit(key: str) -> bool:
        return any(key.startswith(p[:-1]) if p.endswith("*") else key == p for p in patterns)

    for kind in (out.flags, out.attributes, out.instances):
        for key in [k for k in kind if hit(k)]:
            del kind[key]
    return out


def config_dump(cfg: WorkerConfig) -> dict[str, Any]:
    """The effective config in the config file's own keys, for the "configuration successfully
    updated" log line (upstream logs its Go struct as JSON; docs/compatibility.md)."""
    core: dict[str, Any] = {
        "featureSources": cfg.feature_sources,
        "klog": cfg.klog,
        "labelSources": cfg.label_sources,
        "labelWhiteList": cfg.label_whitelist.pattern if cfg.label_whitelist is not None else "",
        "noPublish": cfg.no_publish,
        "noPublishFeatures": cfg.no_publish_features,
        "ownerRefs": cfg.owner_refs,
        "sleepInterval": format_go_duration(round(cfg.sleep_interval * 1e9)),
    }
    if cfg.enable_node_update:
        core["enableNodeUpdate"] = True
        core["nodeUpdateSpread"] = format_go_duration(round(cfg.node_update_spread * 1e9))
    return {"core": core, "sources": cfg.raw_sources}
