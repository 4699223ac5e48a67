"""nfd-topology-updater configuration file: only ``excludeList`` exists.

``excludeList: {<nodeName> | '*': [resourceName, ...]}``; resources listed for this node or
for ``*`` are left out of the zones. A missing file means defaults. Key matching is
case-insensitive like upstream's YAML decoding into a Go struct (``ExcludeList`` works too).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import yaml

from nfd.common import safeyaml
from nfd.common.logsetup import klogger

log = logging.getLogger(__name__)


class ConfigError(Exception):
    """The config file is unreadable or malformed (message names the file and field)."""


@dataclass(frozen=True, slots=True)
class UpdaterConfig:
    exclude_list: dict[str, list[str]] = field(default_factory=dict)

    def excluded_for(self, node_name: str) -> frozenset[str]:
        out: set[str] = set()
        for key, names in self.exclude_list.items():
            if key in (node_name, "*"):
                out.update(names)
        return frozenset(out)


def parse_config(data: Any, *, source: str = "config") -> UpdaterConfig:
    if data is None:
        return UpdaterConfig()
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level, got {type(data).__name__}")
    excl: dict[str, list[str]] = {}
    for key, value in data.items():
        if str(key).lower() != "excludelist":
            log.info("%s: unknown field %r ignored", source, key)
            continue
        if value is None:
            continue
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: excludeList: expected a mapping of node name to list")
        for node, names in value.items():
            if names is None:
                names = []
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise ConfigError(f"{source}: excludeList.{node}: expected a list of resource names")
            excl[str(node)] = list(names)
    return UpdaterConfig(exclude_list=excl)


def load_config(path: str) -> UpdaterConfig:
    """Missing file: defaults (upstream: config is optional)."""
    if not path:
        return UpdaterConfig()
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        klogger(log.name).info_s("configuration file not found", path=path)
        return UpdaterConfig()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from e


    try:
        data = safeyaml.safe_load(text, source=path)
    except safeyaml.YamlLimitError as e:  # names the file already
        raise ConfigError(str(e)) from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: invalid YAML: {safeyaml.error_text(e)}") from None
    return parse_config(data, source=path)
