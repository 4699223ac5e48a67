"""The image compatibility spec (``version: v1alpha1``, ``compatibilities[]``).

Decoded as upstream's Go structs decode it (wrong types are errors, unknown fields ignored);
each set's ``rules`` are NodeFeatureGroup rules compiled by the shared rule engine, so an
unknown operator or a bad regexp is reported here with its field path, before any node is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from nfd.api.errors import ValidationError, ValidationErrors
from nfd.common import safeyaml
from nfd.compat import VERSION
from nfd.rules.engine import BrokenRule, compile_rule

MAX_SPEC_BYTES = 1 << 20  # a spec is a few kB; the artifact layer is refused above this


class SpecError(ValueError):
    """The spec is malformed; the message names the source and the field."""


@dataclass(slots=True)
class Compatibility:
    rules: list[Any]  # CompiledRule | BrokenRule (nfd.rules.engine)
    weight: int = 0
    tag: str = ""
    description: str = ""


@dataclass(slots=True)
class Spec:
    version: str
    compatibilities: list[Compatibility] = field(default_factory=list)


def _go_int(v: Any, path: str) -> int:
    # Go's int from JSON: integral numbers only (1.0 is refused like 1.5, strings too)
    if isinstance(v, bool) or not isinstance(v, int):
        raise SpecError(f"{path}: must be an integer, got {type(v).__name__} {v!r}")
    if not -(1 << 63) <= v < (1 << 63):
        raise SpecError(f"{path}: {v} overflows a 64-bit integer")
    return v


def _go_str(v: Any, path: str) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        raise SpecError(f"{path}: must be a string, got {type(v).__name__} {v!r}")
    return v


def parse_spec_obj(obj: Any, *, source: str) -> Spec:
    """Decode and check a spec object; raises SpecError naming ``source`` and the field."""
    if not isinstance(obj, dict):
        raise SpecError(f"{source}: the compatibility spec must be a mapping, got {type(obj).__name__}")
    version = _go_str(obj.get("version"), f"{source}: version")
    if version != VERSION:
        raise SpecError(f"{source}: version: {version!r} is not supported (expected {VERSION!r})")
    raw = obj.get("compatibilities")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise SpecError(f"{source}: compatibilities: must be a list, got {type(raw).__name__}")
    out = Spec(version=version)
    for i, c in enumerate(raw):
        p = f"compatibilities[{i}]"
        if not isinstance(c, dict):
            raise SpecError(f"{source}: {p}: must be a mapping, got {type(c).__name__}")
        rules_raw = c.get("rules")
        if rules_raw is None:
            rules_raw = []
        if not isinstance(rules_raw, list):
            raise SpecError(f"{source}: {p}.rules: must be a list, got {type(rules_raw).__name__}")
        rules: list[Any] = []
        for j, r in enumerate(rules_raw):
            rp = f"{p}.rules[{j}]"
            try:
                rule = compile_rule(r, path=rp, group=True)
            except ValidationErrors as e:
                raise SpecError(f"{source}: {'; '.join(str(x) for x in e.errors)}") from None
            except ValidationError as e:  # matchCEL that does not compile
                rules.append(BrokenRule(str(r.get("name", "")) if isinstance(r, dict) else "", str(e), rp))
                continue
            # upstream only logs a missing name or a feature name that is not <domain>.<feature>
            problems = [(fp, msg) for fp, msg in rule.problems if not fp.endswith((".name", ".feature"))]
            if problems:
                raise SpecError(f"{source}: " + "; ".join(f"{fp}: {msg}" for fp, msg in problems))
            rules.append(rule)
        weight = c.get("weight")
        out.compatibilities.append(Compatibility(
            rules=rules,
            weight=0 if weight is None else _go_int(weight, f"{source}: {p}.weight"),
            tag=_go_str(c.get("tag"), f"{source}: {p}.tag"),
            description=_go_str(c.get("description"), f"{source}: {p}.description"),
        ))
    return out


def parse_spec(data: bytes | str, *, source: str) -> Spec:
    """Parse YAML (or JSON) spec text; raises SpecError."""
    if isinstance(data, bytes):
        if len(data) > MAX_SPEC_BYTES:
            raise SpecError(f"{source}: {len(data)} bytes, more than the {MAX_SPEC_BYTES} a spec may have")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SpecError(f"{source}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    else:
        text = data
    try:
        docs = [d for d in safeyaml.safe_load_all(text, source=source, max_bytes=MAX_SPEC_BYTES) if d is not None]
    except safeyaml.YamlLimitError as e:
        raise SpecError(str(e)) from None
    except yaml.YAMLError as e:
        raise SpecError(f"{source}: not valid YAML: {safeyaml.error_text(e)}") from None
    if not docs:
        raise SpecError(f"{source}: empty compatibility spec")
    return parse_spec_obj(docs[0], source=source)
