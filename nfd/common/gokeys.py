"""Config keys matched to fields as Go's encoding/json matches them.

Upstream decodes its YAML configs through sigs.k8s.io/yaml, i.e. Go's JSON decoder, which
assigns a key to the struct field with exactly that JSON name or, failing that, to one whose
name equals it case-insensitively (``labelWhitelist``, ``extralabelns`` and
``core.sleepinterval`` all work there). Keys are taken in document order, so when two keys
land on one field the later wins. Map-typed settings (``klog``, ``sources``) keep exact keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

# Go's case folding beyond ASCII that can reach an ASCII field name (unicode.SimpleFold).
_SPECIAL_FOLD = {"\u212a": "k", "\u017f": "s"}


def _fold(s: str) -> str:
    return "".join(_SPECIAL_FOLD.get(c, c.lower() if c.isascii() else c) for c in s)


def go_fields(doc: Mapping[Any, Any], fields: Iterable[str]) -> Iterator[tuple[str | None, Any, Any]]:
    """(field, key, value) for each key of ``doc`` in order; field is None for an unknown key."""
    names = list(fields)
    exact = set(names)
    folded: dict[str, str] = {}
    for n in names:
        folded.setdefault(_fold(n), n)
    for key, value in doc.items():
        if isinstance(key, str) and key in exact:
            yield key, key, value
        elif isinstance(key, str) and _fold(key) in folded:
            yield folded[_fold(key)], key, value
        else:
            yield None, key, value


def canonical_keys(doc: Mapping[Any, Any], fields: Iterable[str]) -> dict[Any, Any]:
    """``doc`` with each key renamed to the field Go would assign it to (unknown keys kept)."""
    out: dict[Any, Any] = {}
    for field, key, value in go_fields(doc, fields):
        name = field if field is not None else key
        out.pop(name, None)  # re-insert: the later key wins, in its own position
        out[name] = value
    return out
