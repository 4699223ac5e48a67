"""Static checks of compiled rule sets for ``nfd rules validate``.

Everything the engine can know without features: structural errors, unknown operators, value
counts, bad regexps/versions/numbers, template parse errors, feature names that are not
``<domain>.<feature>``, and outputs the master would reject (label/annotation/extended resource
names and values, taint keys and effects). Output names are checked after default-namespace
prefixing, as the master applies them; ``@`` values are checked for form only.
"""

from __future__ import annotations

from nfd.api import DEFAULT_LABEL_NS
from nfd.api.validation import (
    ERR_UNPREFIXED,
    validate_annotation,
    validate_extended_resource,
    validate_label,
    validate_taint,
)
from nfd.rules.engine import BrokenRule, CompiledRuleSet


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
