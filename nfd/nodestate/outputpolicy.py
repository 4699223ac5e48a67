"""nfd-master's output policy: a pure function of (NodeFeature labels, rule output, config).

``apply_policy`` turns the engine's combined output into what the master would put on the Node:
default-namespace prefixing (a prefixed duplicate wins), ``@domain.feature.element`` resolution,
label/annotation/extended-resource/taint validation, the ``kubernetes.io`` tree with its
``feature.``/``profile.node.kubernetes.io`` exceptions, ``denyLabelNs``/``extraLabelNs``, the
label whitelist and the ``restrictions``. Anything invalid is dropped with a reason in
``rejected``; nothing raises. (The NodeFeature merge before it is ``nfd.nodestate.nodefeatures``.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nfd.api import DEFAULT_LABEL_NS
from nfd.api.errors import ValidationError
from nfd.api.features import Features
from nfd.api.quantity import QuantityError, parse_quantity
from nfd.api.validation import (
    ERR_NS_NOT_ALLOWED,
    ERR_UNPREFIXED,
    label_value_errors,
    qualified_name_errors,
    split_ns,
    validate_annotation,
    validate_extended_resource,
    validate_label,
    validate_taint,
)
from nfd.lang.goregex import GoRegexError, GoRegexp, compile_go
from nfd.rules.dynamic import resolve_value
from nfd.rules.engine import RuleOutput, add_ns


@dataclass(slots=True)
class PolicyConfig:
    extra_label_ns: frozenset[str] = frozenset()
    deny_label_ns: frozenset[str] = frozenset()
    label_whitelist: str | None = None  # Go regexp matched (unanchored) against the name part
    enable_taints: bool = False
    disable_auto_prefix: bool = False  # the DisableAutoPrefix feature gate
    disable_labels: bool = False
    disable_annotations: bool = False
    disable_extended_resources: bool = False
    deny_node_feature_labels: bool = False
    allow_overwrite: bool = True  # node-update behaviour; carried here for the master
    _whitelist_re: GoRegexp | None = field(default=None, repr=False)
    _deny_exact: frozenset[str] = field(default=frozenset(), repr=False)
    _deny_suffix: tuple[str, ...] = field(default=(), repr=False)
    # (kind, name, value) -> (accepted value, rejection reason) for static values: the same
    # labels come back on every evaluation of a node (and on every node of a fleet)
    _verdicts: dict[tuple[str, str, str], tuple[str | None, str | None]] = field(
        default_factory=dict, init=False, repr=False, compare=False)  # not carried by dataclasses.replace

    def __post_init__(self) -> None:
        self.extra_label_ns = frozenset(self.extra_label_ns)
        self.deny_label_ns = frozenset(self.deny_label_ns)
        # "*"-prefixed entries become plain suffixes ("*.vendor.io" -> ".vendor.io")
        self._deny_exact = frozenset(n for n in self.deny_label_ns if not n.startswith("*"))
        self._deny_suffix = tuple(sorted(n.lstrip("*") for n in self.deny_label_ns if n.startswith("*")))
        if self.label_whitelist is not None:
            try:
                self._whitelist_re = compile_go(self.label_whitelist)
            except GoRegexError as e:
                raise ValidationError("labelWhiteList", str(e)) from None

    @classmethod
    def from_master_config(
        cls, conf: Mapping[str, Any], *, disable_auto_prefix: bool = False
    ) -> PolicyConfig:
        """From nfd-master.conf keys (extraLabelNs, denyLabelNs, labelWhiteList, enableTaints,
        restrictions.*). Raises ValidationError naming the bad key."""
        r = conf.get("restrictions") or {}
        if not isinstance(r, Mapping):
            raise ValidationError("restrictions", "must be an object")

        def ns_set(key: str) -> frozenset[str]:
            v = conf.get(key) or []
            if isinstance(v, str):
                v = [x for x in v.split(",") if x]
            if isinstance(v, Mapping):
                v = list(v)
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ValidationError(key, "must be a list of strings")
            return frozenset(v)

        wl = conf.get("labelWhiteList")
        if wl is not None and not isinstance(wl, str):
            raise ValidationError("labelWhiteList", "must be a string")
        return cls(
            extra_label_ns=ns_set("extraLabelNs"),
            deny_label_ns=ns_set("denyLabelNs"),
            label_whitelist=wl or None,
            enable_taints=bool(conf.get("enableTaints", False)),
            disable_auto_prefix=disable_auto_prefix,
            disable_labels=bool(r.get("disableLabels", False)),
            disable_annotations=bool(r.get("disableAnnotations", False)),
            disable_extended_resources=bool(r.get("disableExtendedResources", False)),
            deny_node_feature_labels=bool(r.get("denyNodeFeatureLabels", False)),
            allow_overwrite=bool(r.get("allowOverwrite", True)),
        )

    def is_denied_ns(self, ns: str) -> bool:
        return ns in self._deny_exact or any(ns.endswith(s) for s in self._deny_suffix)


@dataclass(frozen=True, slots=True)
class Rejection:
    kind: str  # "label" | "annotation" | "extendedResource" | "taint"
    key: str
    reason: str


@dataclass(slots=True)
class PolicyResult:
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    extended_resources: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)


VERDICTS_MAX = 65_536  # entries of PolicyConfig._verdicts before it starts over
VERDICT_KEY_MAX = 512  # longer names and values (invalid anyway) are judged each time, not kept


def _judged(
    kind: str, name: str, value: str, features: Features, config: PolicyConfig,
    judge: Callable[[str, str, Features, PolicyConfig], tuple[str | None, str | None]],
) -> tuple[str | None, str | None]:
    """``judge``'s verdict, remembered in ``config`` for a static value (an ``@`` value depends on
    the features; a long name or value, invalid anyway, would only fill the memo)."""
    if value.startswith("@") or len(name) + len(value) > VERDICT_KEY_MAX:
        return judge(name, value, features, config)
    key = (kind, name, value)
    cache = config._verdicts
    hit = cache.get(key)
    if hit is None:
        hit = judge(name, value, features, config)
        if len(cache) >= VERDICTS_MAX:
            cache.clear()
        cache[key] = hit
    return hit


def filter_label(
    name: str, value: str, features: Features, config: PolicyConfig
) -> tuple[str | None, str | None]:
    """The master's filterFeatureLabel: (accepted value, rejection reason)."""
    return _judged("l", name, value, features, config, _filter_label)


def _filter_label(
    name: str, value: str, features: Features, config: PolicyConfig
) -> tuple[str | None, str | None]:
    resolved, err = resolve_value(value, features)
    if resolved is None:
        return None, err
    value = resolved
    ns, base = split_ns(name)
    err = validate_label(name, value)
    if err is ERR_NS_NOT_ALLOWED or config.is_denied_ns(ns):
        # only extraLabelNs re-allows; upstream does not re-validate in this path
        if ns not in config.extra_label_ns:
            return None, f"namespace {ns!r} is not allowed"
    elif err is not None and not (config.disable_auto_prefix and err is ERR_UNPREFIXED):
        return None, err
    if config._whitelist_re is not None and not config._whitelist_re.match_string(base):
        return None, f"{base} ({name}) does not match the whitelist ({config.label_whitelist})"
    return value, None


def filter_extended_resource(
    name: str, value: str, features: Features, config: PolicyConfig
) -> tuple[str | None, str | None]:
    return _judged("e", name, value, features, config, _filter_extended_resource)


def _filter_extended_resource(
    name: str, value: str, features: Features, config: PolicyConfig
) -> tuple[str | None, str | None]:
    resolved, err = resolve_value(value, features)
    if resolved is None:
        return None, err
    value = resolved
    err = validate_extended_resource(name, value)
    if err is not None and not (config.disable_auto_prefix and err is ERR_UNPREFIXED):
        return None, err
    err = apiserver_extended_resource_error(name, value)
    if err is not None:
        return None, err
    return value, None


# What kube-apiserver refuses in a Node update that upstream's validate package lets through:
# upstream then sends it, the whole PATCH fails with 422 and none of the node's other changes
# apply. These are dropped here, each with its reason, and the rest is written.

ANNOTATIONS_TOTAL_LIMIT = 256 * 1024  # apimachinery's TotalAnnotationSizeLimitB


def apiserver_extended_resource_error(name: str, value: str) -> str | None:
    """ValidateResourceQuantityValue for a resource in Node status: never negative, and an
    integer for an extended resource (a name with a domain outside kubernetes.io)."""
    try:
        q = parse_quantity(value)
    except QuantityError:
        return None  # reported by validate_extended_resource
    if q.amount < 0:
        return f"invalid value {value!r}: must be greater than or equal to 0 (the API server refuses it)"
    extended = "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")
    if extended and q.milli_value() % 1000 != 0:
        return f"invalid value {value!r}: must be an integer (the API server refuses it)"
    return None


def apiserver_taint_error(key: str, value: str) -> str | None:
    """validateNodeTaints: the key a qualified name, the value a label value."""
    errs = qualified_name_errors(key)
    if errs:
        return f"invalid taint key {key!r}: {'; '.join(errs)} (the API server refuses it)"
    verrs = label_value_errors(value)
    if verrs:
        return f"invalid taint value {value!r}: {'; '.join(verrs)} (the API server refuses it)"
    return None


def apply_policy(
    *,
    nodefeature_labels: Mapping[str, str],
    rule_output: RuleOutput,
    features: Features,
    config: PolicyConfig,
) -> PolicyResult:
    """What nfd-master applies to the node. ``rule_output`` is ``ProcessResult.master_output``
    (names already prefixed per rule, as upstream does; prefixing again would turn a name that
    prefixing left without a slash, such as the bare namespace from an empty key, into a new
    valid one). ``nodefeature_labels`` are prefixed here (again, like upstream, after the
    per-object prefixing of the merge). ``features`` should include ``rule.matched``
    (``ProcessResult.features``) so ``@rule.matched.x`` resolves."""
    res = PolicyResult()
    ns = None if config.disable_auto_prefix else DEFAULT_LABEL_NS

    labels = add_ns(nodefeature_labels, ns)
    labels.update(rule_output.labels)
    for name, value in labels.items():
        v, why = filter_label(name, value, features, config)
        if why is not None:
            res.rejected.append(Rejection("label", name, why))
        else:
            res.labels[name] = v  # type: ignore[assignment]
    if config.disable_labels and res.labels:
        res.rejected.extend(Rejection("label", k, "restrictions.disableLabels") for k in res.labels)
        res.labels = {}

    for name, value in rule_output.extended_resources.items():
        v, why = filter_extended_resource(name, value, features, config)
        if why is not None:
            res.rejected.append(Rejection("extendedResource", name, why))
        else:
            res.extended_resources[name] = v  # type: ignore[assignment]
    if config.disable_extended_resources and res.extended_resources:
        res.rejected.extend(
            Rejection("extendedResource", k, "restrictions.disableExtendedResources")
            for k in res.extended_resources
        )
        res.extended_resources = {}

    total = 0
    for name, value in rule_output.annotations.items():
        err = validate_annotation(name, value)
        if err is not None and not (config.disable_auto_prefix and err is ERR_UNPREFIXED):
            res.rejected.append(Rejection("annotation", name, err))
            continue
        total += len(name) + len(value.encode())
        if total > ANNOTATIONS_TOTAL_LIMIT:
            res.rejected.append(Rejection(
                "annotation", name,
                f"the node's annotations from rules would pass {ANNOTATIONS_TOTAL_LIMIT} bytes (the API server refuses it)"))
            continue
        res.annotations[name] = value
    if config.disable_annotations and res.annotations:
        res.rejected.extend(
            Rejection("annotation", k, "restrictions.disableAnnotations") for k in res.annotations
        )
        res.annotations = {}

    if config.enable_taints:
        seen: set[tuple[str, str]] = set()
        for t in rule_output.taints:
            key, value, effect = t.get("key", ""), t.get("value", ""), t.get("effect", "")
            err = validate_taint(key, value, effect) or apiserver_taint_error(key, value)
            if err is None and (key, effect) in seen:
                err = "a taint with this key and effect is already set (the API server refuses duplicates)"
            if err is not None:
                res.rejected.append(Rejection("taint", _taint_str(key, value, effect), err))
            else:
                seen.add((key, effect))
                res.taints.append({"key": key, "value": value, "effect": effect})
    elif rule_output.taints:
        res.rejected.extend(
            Rejection(
                "taint",
                _taint_str(t.get("key", ""), t.get("value", ""), t.get("effect", "")),
                "enableTaints is off",
            )
            for t in rule_output.taints
        )
    return res


def _taint_str(key: str, value: str, effect: str) -> str:
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"
