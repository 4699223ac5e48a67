"""Static checks of NodeFeatureRule/NodeFeatureGroup objects: ``check_object`` is the one
validation of ``nfd rules validate`` and ``kubectl-nfd validate``, so both find the same
problems (the dryruns name the same unknown fields, nfd.api.nodefeaturerule.unknown_fields).

Everything the engine can know without features: structural errors, unknown operators, value
counts, bad regexps/versions/numbers, template parse errors, feature names that are not
``<domain>.<feature>``, and outputs the master would reject (label/annotation/extended resource
names and values, taint keys and effects). Output names are checked after default-namespace
prefixing, as the master applies them; ``@`` values are checked for form only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nfd.api import API_VERSION, DEFAULT_LABEL_NS
from nfd.api.errors import ValidationError
from nfd.api.nodefeaturerule import unknown_field_message, unknown_fields
from nfd.api.validation import (
    ERR_UNPREFIXED,
    validate_annotation,
    validate_extended_resource,
    validate_label,
    validate_taint,
)
from nfd.rules.engine import BrokenRule, CompiledRuleSet, compile_group_rules, compile_nodefeaturerule


def _fq(name: str, auto_prefix: bool) -> str:
    return name if "/" in name or not auto_prefix else f"{DEFAULT_LABEL_NS}/{name}"


def _dyn_ok(value: str) -> str | None:
    if len(value[1:].split(".", 2)) != 3:
        return f"value {value!r} is not in the form of '@domain.feature.element'"
    return None


def rule_set_problems(rs: CompiledRuleSet, *, auto_prefix: bool = True) -> list[tuple[str, str]]:
    """(field path, message) for every problem in the rule set, in document order."""
    out: list[tuple[str, str]] = []
    for r in rs.rules:
        if isinstance(r, BrokenRule):
            p, sep, msg = r.error.partition(": ")
            out.append((p, msg) if sep else (r.path, r.error))
            continue
        out.extend(r.problems)
        path = r.path
        for k, v in r.labels.items():
            err = _dyn_ok(v) if v.startswith("@") else None
            err = err or validate_label(_fq(k, auto_prefix), "0" if v.startswith("@") else v)
            if err and not (err is ERR_UNPREFIXED and not auto_prefix):
                out.append((f"{path}.labels.{k}", err))
        for k, v in r.annotations.items():
            err = validate_annotation(_fq(k, auto_prefix), v)
            if err and not (err is ERR_UNPREFIXED and not auto_prefix):
                out.append((f"{path}.annotations.{k}", err))
        for k, v in r.extended_resources.items():
            err = _dyn_ok(v) if v.startswith("@") else None
            err = err or validate_extended_resource(_fq(k, auto_prefix), "0" if v.startswith("@") else v)
            if err and not (err is ERR_UNPREFIXED and not auto_prefix):
                out.append((f"{path}.extendedResources.{k}", err))
        for i, t in enumerate(r.taints):
            if t["key"] and t["effect"]:
                err = validate_taint(t["key"], t["value"], t["effect"])
                if err:
                    out.append((f"{path}.taints[{i}]", err))
    return out


RULE_KINDS = ("NodeFeatureRule", "NodeFeatureGroup")


@dataclass(slots=True)
class ObjectCheck:
    """What validation found in one object. ``problems`` are what nfd-master would refuse or
    fail (field path, message); ``warnings`` are what it would silently ignore (unknown
    fields, as kubectl words them). ``rule_set`` is None when the object could not be compiled."""

    kind: str
    name: str
    rule_set: CompiledRuleSet | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check_object(
    obj: Any, *, kinds: tuple[str, ...] = RULE_KINDS, auto_prefix: bool = True
) -> ObjectCheck:
    """Every problem nfd-master would find in ``obj``: apiVersion and kind, structure, operators,
    value counts, regexps, CEL, templates, feature names, output names and values; plus the
    unknown fields as warnings."""
    if not isinstance(obj, dict):
        return ObjectCheck("", "", problems=[("", "the document is not an object")])
    kind = obj.get("kind")
    meta = obj.get("metadata")
    name = str(meta.get("name", "")) if isinstance(meta, dict) else ""
    out = ObjectCheck(str(kind or ""), name)
    if obj.get("apiVersion") != API_VERSION:
        got = obj.get("apiVersion")
        out.problems.append(("apiVersion", f"must be {API_VERSION!r}, got {got!r}" if got else "required"))
    if kind not in kinds:
        want = " or ".join(repr(k) for k in kinds)
        out.problems.append(("kind", f"must be {want}, got {kind!r}" if kind else f"required ({want})"))
        return out
    if not name:
        out.problems.append(("metadata.name", "required"))
    out.warnings = unknown_fields(obj, kind=kind)
    try:
        rs = compile_nodefeaturerule(obj) if kind == "NodeFeatureRule" else compile_group_rules(obj)
    except ValidationError as e:
        out.problems.append((e.path, e.message))
        return out
    out.rule_set = rs
    out.problems.extend(rule_set_problems(rs, auto_prefix=auto_prefix))
    return out


def warning_lines(check: ObjectCheck) -> list[str]:
    return [unknown_field_message(p) for p in check.warnings]
