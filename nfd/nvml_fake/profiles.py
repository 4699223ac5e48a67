"""Loading and checking fake-NVML device profiles (YAML)."""

from __future__ import annotations

import os
from typing import Any

import yaml

from nfd.common import safeyaml

PROFILE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "device_profiles")


def available_profiles() -> list[str]:
    try:
        return sorted(f[:-5] for f in os.listdir(PROFILE_DIR) if f.endswith(".yaml"))
    except OSError:
        return []


def load_profile(name_or_path: str) -> dict[str, Any]:
    """A profile by shipped name (``h100x8``) or file path; ValueError with a clear message."""
    path = name_or_path
    if os.path.sep not in name_or_path and not name_or_path.endswith(".yaml"):
        path = os.path.join(PROFILE_DIR, name_or_path + ".yaml")
    try:
        with open(path, encoding="utf-8") as f:
            doc = safeyaml.safe_load(f.read((4 << 20) + 1), source=path, max_bytes=4 << 20)
    except FileNotFoundError:
        raise ValueError(
            f"NVML profile {name_or_path!r} not found; shipped profiles: {', '.join(available_profiles())}"
        ) from None
    except (OSError, yaml.YAMLError) as e:
        raise ValueError(f"NVML profile {path}: {e}") from None
    check_profile(doc, path)
    return doc


def check_profile(doc: Any, path: str) -> None:
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: profile must be a mapping")
    for key in ("system", "models", "gpus"):
        if key not in doc:
            raise ValueError(f"{path}: missing {key!r}")
    models = doc["models"]
    if not isinstance(models, dict):
        raise ValueError(f"{path}: models must be a mapping")
    if not isinstance(doc["gpus"], list):
        raise ValueError(f"{path}: gpus must be a list")
    for name, model in models.items():
        table = model.get("ciProfiles") if isinstance(model, dict) else None
        if table is None:
            continue
        if not isinstance(table, list) or not all(
            isinstance(p, dict) and all(isinstance(p.get(k), int) and not isinstance(p.get(k), bool)
                                        for k in ("index", "id", "sliceCount")) for p in table
        ):
            raise ValueError(f"{path}: models.{name}.ciProfiles must be a list of {{index, id, sliceCount}} integers")
    for i, g in enumerate(doc["gpus"]):
        if not isinstance(g, dict) or g.get("model") not in models:
            raise ValueError(f"{path}: gpus[{i}].model must name one of {sorted(models)}")
        for j, m in enumerate(g.get("migDevices") or []):
            model = models[g["model"]]
            names = {p.get("name") for p in model.get("giProfiles") or []}
            if not isinstance(m, dict) or m.get("profile") not in names:
                raise ValueError(f"{path}: gpus[{i}].migDevices[{j}].profile must be one of {sorted(names)}")
