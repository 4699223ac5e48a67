"""The CustomResourceDefinitions shipped in the repository's crds/ directory.

crds/ is the single source of the schemas: the e2e harness installs them into a
real kube-apiserver and code that needs a schema reads it from here. The
directory sits at the repository root (the package is installed editable), so
it is found relative to this file; $NFD_CRDS_DIR overrides that.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

__all__ = ["crds_dir", "load_crds", "crd_by_kind", "version_schema"]


def crds_dir() -> Path:
    env = os.environ.get("NFD_CRDS_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "crds"


def load_crds(directory: str | Path | None = None) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition in crds/*.yaml, in file-name then document order.

    Other kinds (kustomization.yaml) are skipped; a missing directory raises
    FileNotFoundError naming it.
    """
    root = Path(directory) if directory is not None else crds_dir()
    if not root.is_dir():
        raise FileNotFoundError(f"CRD directory not found: {root}")
    out: list[dict[str, Any]] = []
    for path in sorted(root.glob("*.yaml")):
        with path.open() as f:
            for doc in yaml.safe_load_all(f):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    out.append(doc)
    return out


def crd_by_kind(kind: str, *, crds: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The CRD whose spec.names.kind is `kind`; KeyError if none."""
    for crd in crds if crds is not None else load_crds():
        if crd["spec"]["names"]["kind"] == kind:
            return crd
    raise KeyError(f"no CRD for kind {kind!r} in {crds_dir()}")


def version_schema(kind: str, version: str, *, crds: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The openAPIV3Schema of one served version of a kind."""
    crd = crd_by_kind(kind, crds=crds)
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            schema: dict[str, Any] = v["schema"]["openAPIV3Schema"]
            return schema
    raise KeyError(f"{kind} has no version {version!r}")
