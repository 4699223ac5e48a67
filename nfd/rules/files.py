"""Reading rule, group and NodeFeature files for the offline tools (``nfd rules``, ``kubectl nfd``).

Every non-empty YAML/JSON document of a file, ``List`` objects flattened, dates kept as strings
(as Kubernetes reads them), within safeyaml's limits. Keys written twice in one mapping are
collected (``duplicates``), because kubectl refuses such a file while PyYAML keeps the last
value in silence: a dry run would then test another rule than the one the API server refuses.
"""

from __future__ import annotations

import functools
from typing import Any

import yaml

from nfd.common import safeyaml
from nfd.common.fileargs import FileArgError, read_text_arg
from nfd.common.safeyaml import DuplicateKey


class InputError(Exception):
    """A file that cannot be read, is not YAML, or holds the wrong objects (one line)."""


@functools.cache
def yaml_loader() -> Any:
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc,valid-type]
        """SafeLoader without the timestamp resolver: dates stay strings, as in Kubernetes."""

    Loader.yaml_implicit_resolvers = {
        k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
        for k, v in base.yaml_implicit_resolvers.items()
    }
    return Loader


def load_documents(path: str, *, duplicates: list[DuplicateKey] | None = None) -> list[Any]:
    """Every non-empty YAML/JSON document in ``path``; ``List`` objects are flattened.
    ``duplicates`` receives every repeated mapping key (the document keeps the last value)."""
    try:
        text = read_text_arg(path)
    except FileArgError as e:
        raise InputError(str(e)) from None
    try:
        docs = [
            d for d in safeyaml.safe_load_all(text, source=path, loader=yaml_loader(), duplicates=duplicates)
            if d is not None
        ]
    except safeyaml.YamlLimitError as e:
        raise InputError(str(e)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(f"{path}: not valid YAML{where}: {problem}") from None
    out: list[Any] = []
    for d in docs:
        if isinstance(d, dict) and isinstance(d.get("kind"), str) and d["kind"].endswith("List"):
            items = d.get("items") or []
            if not isinstance(items, list):
                raise InputError(f"{path}: {d['kind']}.items must be a list")
            out.extend(items)
        else:
            out.append(d)
    return out


_FEATURE_KEYS = frozenset({"flags", "attributes", "instances"})
# other NFD kinds that may share a file with the ones a command reads; they are skipped
NFD_KINDS = frozenset({"NodeFeature", "NodeFeatureRule", "NodeFeatureGroup"})


def is_bare_features(doc: Any) -> bool:
    """``nfd export features`` output: a features object without ``kind``."""
    return isinstance(doc, dict) and "kind" not in doc and bool(doc) and set(doc) <= _FEATURE_KEYS


def objects_of_kinds(
    path: str, kinds: tuple[str, ...], *, skip_other_nfd: bool = False,
    duplicates: list[DuplicateKey] | None = None,
) -> list[dict[str, Any]]:
    """The documents of ``path`` of ``kinds``; another kind is an InputError naming it (or skipped,
    for the other NFD kinds, with ``skip_other_nfd``); none at all is an InputError too.
    Bare features (``nfd export features``) are read as an unnamed NodeFeature."""
    docs = load_documents(path, duplicates=duplicates)
    if "NodeFeature" in kinds:
        docs = [
            {"kind": "NodeFeature", "metadata": {"name": ""}, "spec": {"features": d}}
            if is_bare_features(d) else d
            for d in docs
        ]
    out = []
    for i, d in enumerate(docs):
        kind = d.get("kind") if isinstance(d, dict) else None
        if kind in kinds:
            out.append(d)
        elif not (skip_other_nfd and kind in NFD_KINDS):
            raise InputError(
                f"{path}: document {i + 1} is not a {' or '.join(kinds)} object (kind: {kind!r})"
            )
    if not out:
        raise InputError(f"{path}: no {' or '.join(kinds)} object found")
    return out


def object_name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, dict) else ""
