"""``custom`` source (labels only): rules from the worker config and ``custom.d``, evaluated with
the shared rule engine against every discovered feature.

Order: upstream's two static RDMA rules, then ``sources.custom``, then ``custom.d`` files (sorted,
one level of sub-directories, dot-files skipped). Each rule's labels and vars are fed into
``rule.matched`` for later rules. Labels pass through unprefixed (``rdma.capable``).

The config dialect accepts upstream's shorthands: an expression may be a bare scalar or a list of
strings (``In``), ``matchExpressions`` may be a list of ``name`` / ``name=value`` strings, and a
null expression means ``Exists``.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from nfd.api.errors import ValidationError, ValidationErrors
from nfd.api.features import Features
from nfd.common.gokeys import canonical_keys
from nfd.lang.gostd.strconv import format_float
from nfd.rules.expression import Expr, Matcher, Term
from nfd.sources.base import DiscoveryContext, FeatureSource

ALLOWED_OPS = {"In", "NotIn", "InRegexp", "Exists", "DoesNotExist", "Gt", "Lt", "GtLt", "IsTrue", "IsFalse"}
RULE_FIELDS = {"name", "labels", "labelsTemplate", "vars", "varsTemplate", "matchFeatures", "matchAny", "matchCEL"}
MAX_DEPTH = 100

log = logging.getLogger(__name__)

STATIC_RULES: list[dict[str, Any]] = [
    {
        "name": "RDMA capable static rule",
        "labels": {"rdma.capable": "true"},
        "matchFeatures": [
            {"feature": "pci.device", "matchExpressions": {"vendor": {"op": "In", "value": ["15b3"]}}}
        ],
    },
    {
        "name": "RDMA available static rule",
        "labels": {"rdma.available": "true"},
        "matchFeatures": [
            {
                "feature": "kernel.loadedmodule",
                "matchExpressions": {"ib_uverbs": {"op": "Exists"}, "rdma_ucm": {"op": "Exists"}},
            }
        ],
    },
]


def _scalar(v: Any, path: str) -> str:
    if v is None:
        return ""  # as a YAML null decoded into a Go string
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return format_float(v, "f")  # a YAML number decoded into a Go string, as upstream
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return v
    raise ValidationError(path, f"invalid value {v!r}")


def _str_values(v: Any, path: str) -> list[str]:
    if isinstance(v, list):
        out = []
        for i, x in enumerate(v):
            if not isinstance(x, str):
                raise ValidationError(f"{path}[{i}]", f"invalid value {x!r}: must be a string")
            out.append(x)
        return out
    return [_scalar(v, path)]


def _unknown_fields(raw: dict[str, Any], allowed: set[str], path: str, strict: bool) -> None:
    """custom.d files are decoded strictly upstream (an unknown field rejects the file); the
    worker config is not (unknown fields are ignored), so there we only log them."""
    unknown = set(raw) - allowed
    if not unknown:
        return
    if strict:
        raise ValidationError(path, f"unknown field(s) {sorted(map(str, unknown))}")
    log.warning("%s: unknown field(s) %s ignored", path, sorted(map(str, unknown)))


def _str_map(raw: Any, path: str) -> Any:
    """labels/vars: scalar values become strings as in upstream's YAML decoding (5 -> "5")."""
    if not isinstance(raw, dict):
        return raw
    return {str(k): _scalar(v, f"{path}.{k}") if not isinstance(v, (dict, list)) else v for k, v in raw.items()}


def convert_expression(raw: Any, path: str, *, strict: bool = True) -> dict[str, Any]:
    """Custom-dialect expression -> CRD ``{op, value}``."""
    if raw is None:
        return {"op": "Exists"}
    if isinstance(raw, dict):
        raw = canonical_keys(raw, ("op", "value"))
        op = raw.get("op")
        if op not in ALLOWED_OPS:
            raise ValidationError(f"{path}.op", f"invalid Op {op!r}")
        _unknown_fields(raw, {"op", "value"}, path, strict)
        out: dict[str, Any] = {"op": op}
        if raw.get("value") is not None:
            out["value"] = _str_values(raw["value"], f"{path}.value")
        return out
    return {"op": "In", "value": _str_values(raw, path)}


def convert_expression_set(raw: Any, path: str, *, strict: bool = True) -> dict[str, Any]:
    if raw is None:
        return {}
    if isinstance(raw, list):
        out: dict[str, Any] = {}
        for i, item in enumerate(raw):
            if not isinstance(item, str):
                raise ValidationError(f"{path}[{i}]", "must be a string")
            name, sep, value = item.partition("=")
            out[name] = {"op": "In", "value": [value]} if sep else {"op": "Exists"}
        return out
    if not isinstance(raw, dict):
        raise ValidationError(path, "must be an object or a list of names")
    return {str(k): convert_expression(v, f"{path}.{k}", strict=strict) for k, v in raw.items()}


def _convert_matcher(raw: Any, path: str, *, strict: bool) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValidationError(path, "must be a list")
    out = []
    for i, term in enumerate(raw):
        p = f"{path}[{i}]"
        if not isinstance(term, dict):
            raise ValidationError(p, "must be an object")
        term = canonical_keys(term, ("feature", "matchExpressions", "matchName"))
        _unknown_fields(term, {"feature", "matchExpressions", "matchName"}, p, strict)
        t: dict[str, Any] = {"feature": term.get("feature")}
        if "matchExpressions" in term:
            t["matchExpressions"] = convert_expression_set(
                term["matchExpressions"], f"{p}.matchExpressions", strict=strict)
        if term.get("matchName") is not None:
            t["matchName"] = convert_expression(term["matchName"], f"{p}.matchName", strict=strict)
        out.append(t)
    return out


def _depth(v: Any, d: int = 0) -> int:
    if d > MAX_DEPTH:
        return d
    if isinstance(v, dict):
        return max((_depth(x, d + 1) for x in v.values()), default=d + 1)
    if isinstance(v, list):
        return max((_depth(x, d + 1) for x in v), default=d + 1)
    return d


def convert_rule(raw: Any, path: str, *, strict: bool = True) -> dict[str, Any]:
    """Custom-dialect rule -> NodeFeatureRule rule dict (strict: unknown fields are errors,
    otherwise they are logged and ignored)."""
    if not isinstance(raw, dict):
        raise ValidationError(path, "rule must be an object")
    if _depth(raw) > MAX_DEPTH:
        raise ValidationError(path, f"nesting deeper than {MAX_DEPTH}")
    raw = canonical_keys(raw, sorted(RULE_FIELDS))  # upstream decodes these with Go's JSON decoder
    _unknown_fields(raw, RULE_FIELDS, path, strict)
    out: dict[str, Any] = {k: raw[k] for k in ("name", "labelsTemplate", "varsTemplate", "matchCEL") if k in raw}
    for k in ("name", "labelsTemplate", "varsTemplate"):
        if k in out and not isinstance(out[k], (dict, list)):
            out[k] = _scalar(out[k], f"{path}.{k}")
    for k in ("labels", "vars"):
        if k in raw:
            out[k] = _str_map(raw[k], f"{path}.{k}")
    if "matchFeatures" in raw:
        out["matchFeatures"] = _convert_matcher(raw["matchFeatures"], f"{path}.matchFeatures", strict=strict)
    if raw.get("matchAny") is not None:
        if not isinstance(raw["matchAny"], list):
            raise ValidationError(f"{path}.matchAny", "must be a list")
        out["matchAny"] = []
        for i, elem in enumerate(raw["matchAny"]):
            p = f"{path}.matchAny[{i}]"
            if not isinstance(elem, dict):
                raise ValidationError(p, "must be an object with matchFeatures")
            elem = canonical_keys(elem, ("matchFeatures",))
            _unknown_fields(elem, {"matchFeatures"}, p, strict)
            out["matchAny"].append(
                {"matchFeatures": _convert_matcher(elem.get("matchFeatures"), f"{p}.matchFeatures", strict=strict)})
    return out


def compile_custom_rules(raw: Any, *, path: str, strict: bool = True) -> list[Any]:
    """Convert and compile a list of custom rules; raises ValidationError naming the first bad one.
    ``strict=False`` (worker config) ignores unknown fields as upstream's lenient decoding does."""
    # deferred: the rule engine is 22 ms of a one-shot worker's start-up with the default config,
    # whose static rules need only the matcher (tests/unit/worker/test_worker_imports.py)
    from nfd.rules.engine import compile_rule

    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValidationError(path, "must be a list of rules")
    out = []
    for i, r in enumerate(raw):
        p = f"{path}[{i}]"
        try:
            out.append(compile_rule(convert_rule(r, p, strict=strict), path=p))
        except ValidationErrors as e:
            raise ValidationError(p, "; ".join(str(x) for x in e.errors)) from e
    return out


class CustomSource(FeatureSource):
    name = "custom"
    priority = 10
    is_feature_source = False
    prefix_labels = False

    def default_config(self) -> dict[str, Any]:
        return {"rules": []}

    def parse_config(self, raw: Any, *, path: str) -> dict[str, Any]:
        return {"rules": compile_custom_rules(raw, path=path, strict=False)}

    def labels(self, features: Features, config: dict[str, Any], ctx: DiscoveryContext) -> dict[str, str]:
        more = list(config.get("rules") or []) + dropin_rules(ctx)
        if not more:  # the static rules alone (the default config): no rule engine to load
            return static_labels(features)
        from nfd.rules.engine import RULE_BACKREF_FEATURE, evaluate_rule  # deferred: 22 ms, as above

        rules = static_rules() + more
        view = Features(flags=features.flags, attributes=dict(features.attributes), instances=features.instances)
        backref: dict[str, str] = dict(view.attributes.get(RULE_BACKREF_FEATURE, {}))
        view.attributes[RULE_BACKREF_FEATURE] = backref
        out: dict[str, str] = {}
        for rule in rules:
            res = evaluate_rule(rule, view, node_name=ctx.node_name)
            if res.error is not None:
                ctx.warn(f"custom rule {res.name!r}: {res.error}")
                continue
            if res.matched:
                out.update(res.output.labels)
            backref.update(res.output.labels)
            backref.update(res.output.vars)
        return out


_static: list[Any] | None = None
_static_matchers: list[tuple[Any, dict[str, str]]] | None = None


def static_labels(features: Features) -> dict[str, str]:
    """The static rules' labels, matched by the rule engine's own matcher (nfd.rules.expression)
    without the engine: what :meth:`CustomSource.labels` returns when they are the only rules
    (no rule reads another's output, none has templates, vars or an expression that can fail).
    The engine and its API types cost a one-shot run ~10 ms to import (docs/worker.md)."""
    global _static_matchers
    if _static_matchers is None:
        _static_matchers = [
            (Matcher([Term(t["feature"], [Expr(k, e["op"], list(e.get("value") or []), "")
                                          for k, e in t["matchExpressions"].items()], None)
                      for t in r["matchFeatures"]]), dict(r["labels"]))
            for r in STATIC_RULES
        ]
    out: dict[str, str] = {}
    for matcher, labels in _static_matchers:
        if matcher.evaluate(features.flags, features.attributes, features.instances, False, False)[0]:
            out.update(labels)
    return out


def static_rules() -> list[Any]:
    global _static
    if _static is None:
        _static = compile_custom_rules(STATIC_RULES, path="static")
    return list(_static)


def dropin_rules(ctx: DiscoveryContext) -> list[Any]:
    """Rules from ``custom.d``: sorted, one level of sub-directories, dot-files skipped (but not
    dot-directories, as upstream); a file that fails to parse is skipped whole with a warning."""
    base = ctx.paths.custom_d()
    files: list[str] = []
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return []
    import yaml  # deferred: 11.5 ms of a one-shot worker's start-up; only when there is a custom.d

    from nfd.common import safeyaml
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            try:
                sub = sorted(os.scandir(e.path), key=lambda s: s.name)
            except OSError:
                continue
            files.extend(s.path for s in sub if not s.is_dir(follow_symlinks=False)
                         and not s.name.startswith(".") and s.is_file())
        elif not e.name.startswith(".") and e.is_file():
            files.append(e.path)
    out: list[Any] = []
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                doc = safeyaml.safe_load(f.read((1 << 20) + 1), source=path, max_bytes=1 << 20)
            out.extend(compile_custom_rules(doc, path=path))
        except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError) as e:
            ctx.warn(f"{path}: custom rules file skipped: {str(e).splitlines()[0] if str(e) else e}")
    return out


SOURCE = CustomSource()
