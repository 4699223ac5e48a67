"""The feature-source interface every source module implements.

A source module ``nfd/sources/<name>.py`` exports ``SOURCE``, an instance of a
:class:`FeatureSource` subclass, and is listed once in :mod:`nfd.sources.registry`.

Contract (upstream's FeatureSource + LabelSource + ConfigurableSource in one object):

- ``name``: the source name, also the prefix of its feature keys (``cpu`` -> ``cpu.cpuid``).
- ``features``: the feature names this source publishes (``cpu.cpuid``, ``cpu.model``, ...).
- ``priority``: label-source priority; sources are labelled in ascending (priority, name) order
  and later sources overwrite earlier label keys (built-ins 0, custom 10, local 20).
- ``enabled_by_default``: whether ``all`` in ``core.featureSources``/``labelSources`` includes it
  (False for upstream's "supplemental" ``fake`` source; may be a property, e.g. ``nvml`` is on
  only when the NVML library loads).
- ``is_feature_source`` / ``is_label_source``: ``custom`` is label-only.
- ``prefix_labels``: labels without ``/`` become ``feature.node.kubernetes.io/<name>-<label>``
  (False for ``local`` and ``custom``, whose labels pass through unchanged).
- ``default_config()``: this source's ``sources.<name>`` block with upstream's defaults (a fresh
  dict each call). ``parse_config(raw, path=...)`` overlays a user block onto the defaults and
  raises :class:`nfd.api.errors.ValidationError` naming ``path`` on bad input; the worker then
  keeps the previous good config.
- ``discover(ctx, config) -> Features``: reads the host only through ``ctx.paths``
  (:class:`nfd.hostpaths.HostPaths`) and returns *only this source's* features keyed
  ``<name>.<feature>``, starting from nothing each time. Unreadable or malformed files are
  reported with ``ctx.warn(...)`` naming the file and skipped; raise only when the whole source
  failed (the worker then keeps that source's last good result and retries next cycle).
- ``labels(features, config, ctx) -> dict[str, str]``: label name -> value computed from
  ``features`` (the *whole* discovered feature set, every source's keys). Names are returned
  before prefixing (``"cpuid.AVX512F"``); values are strings (``"true"``).

Sources hold no per-node state between calls; anything a source caches (e.g. a loaded library
handle) must not change its output for the same host.
"""

from __future__ import annotations

import copy  # only for a source's config block
import logging
from typing import Any, ClassVar, Protocol

from nfd.api.errors import ValidationError
from nfd.api.features import Features
from nfd.common.gokeys import canonical_keys
from nfd.common.valuerecord import Record
from nfd.hostpaths import HostPaths

log = logging.getLogger("nfd.sources")


class CpuidReader(Protocol):
    """Raw CPUID/XGETBV access, injectable so non-native hosts can be modelled from fixtures."""

    def cpuid(self, leaf: int, subleaf: int = 0) -> tuple[int, int, int, int]: ...

    def xgetbv(self, index: int) -> int: ...


class DiscoveryContext(Record):
    """What a source may look at besides its config: host paths and a few process facts.

    Written out as a dataclass would generate it: the one-shot worker does not load
    ``dataclasses`` (docs/worker.md, "The one-shot wall")."""

    _FIELDS = ("paths", "node_name", "cpuid", "arch", "_warned", "warnings")


    def __init__(self, paths: HostPaths | None = None, node_name: str = "", cpuid: CpuidReader | None = None,
                 arch: str = "", _warned: set[str] | None = None, warnings: list[str] | None = None) -> None:
        self.paths: HostPaths = HostPaths() if paths is None else paths
        #: node name (upstream: env NODE_NAME); used by ``system.name`` and rules
        self.node_name = node_name
        #: injectable CPUID reader (see :class:`CpuidReader`); None means a ``cpuid.json`` fixture
        #: at the host root if there is one, else the CPUID instruction itself on x86-64
        self.cpuid = cpuid
        #: machine architecture as ``uname -m`` says (fixtures override it)
        self.arch = arch
        #: messages already logged at WARNING (repeats go to DEBUG so a broken file cannot spam)
        self._warned: set[str] = set() if _warned is None else _warned
        #: every warning of this context, for callers and tests
        self.warnings: list[str] = [] if warnings is None else warnings

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        if message in self._warned:
            log.debug("%s", message)
        else:
            self._warned.add(message)
            log.warning("%s", message)


class FeatureSource:
    """Base class with the common defaults; see the module docstring for the contract."""

    name: ClassVar[str] = ""
    #: every feature this source may publish (``<name>.<feature>``): rule validation names a
    #: feature of this domain that is not among them, with the nearest one
    #: (nfd.sources.registry.published_features); tests/unit/sources check discover() against it
    features: ClassVar[tuple[str, ...]] = ()
    priority: ClassVar[int] = 0
    is_feature_source: ClassVar[bool] = True
    is_label_source: ClassVar[bool] = True
    prefix_labels: ClassVar[bool] = True

    @property
    def enabled_by_default(self) -> bool:
        return True

    def default_config(self) -> dict[str, Any]:
        return {}

    def parse_config(self, raw: Any, *, path: str) -> dict[str, Any]:
        """Overlay ``raw`` (the user's ``sources.<name>`` block) onto the defaults.

        Unknown keys are ignored as upstream's unmarshal does; keys whose type differs from the
        default's are an error.
        """
        cfg = self.default_config()
        if raw is None:
            return cfg
        if not isinstance(raw, dict):
            raise ValidationError(path, "must be an object")

        for key, value in canonical_keys(raw, list(cfg)).items():  # matched like Go's JSON decoder
            if key not in cfg:
                log.info("%s.%s: unknown key ignored", path, key)
                continue
            cfg[key] = check_like(cfg[key], value, f"{path}.{key}")
        return cfg

    def discover(self, ctx: DiscoveryContext, config: dict[str, Any]) -> Features:
        return Features()

    def labels(self, features: Features, config: dict[str, Any], ctx: DiscoveryContext) -> dict[str, str]:
        return {}


def check_like(default: Any, value: Any, path: str) -> Any:
    """Validate ``value`` against the type of ``default`` (list of str, dict, str, bool, int)."""
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ValidationError(path, f"must be a boolean, got {type(value).__name__}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError(path, f"must be an integer, got {type(value).__name__}")
        return value
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ValidationError(path, f"must be a string, got {type(value).__name__}")
        return value
    if isinstance(default, list):
        if value is None:
            return []
        if not isinstance(value, list):
            raise ValidationError(path, f"must be a list, got {type(value).__name__}")

        return copy.deepcopy(value)
    if isinstance(default, dict):
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ValidationError(path, f"must be an object, got {type(value).__name__}")

        return copy.deepcopy(value)
    return value


def str_list(value: Any, path: str) -> list[str]:
    """A list of scalars as strings (YAML may give numbers for ``"03"``-like entries)."""
    if not isinstance(value, list):
        raise ValidationError(path, "must be a list")
    out = []
    for i, v in enumerate(value):
        if isinstance(v, dict | list) or v is None:
            raise ValidationError(f"{path}[{i}]", "must be a string")
        out.append(str(v))
    return out
