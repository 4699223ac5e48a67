"""Name and value validation shared by nfd-master (policy) and nfd-worker (label filtering).

Mirrors k8s.io/apimachinery's IsQualifiedName / IsValidLabelValue / IsDNS1123Subdomain and
upstream NFD's ``validate`` package (Label, Annotation, Taint, ExtendedResource). Each validator
returns None when valid or a one-line reason. The two namespace errors are module constants so
callers can tell them apart (``err is ERR_NS_NOT_ALLOWED``), as the master does.
"""

from __future__ import annotations

import functools
import re

from nfd.lang.gostd.strconv import quote as _q  # Go's %q

ERR_NS_NOT_ALLOWED = "namespace is not allowed"
ERR_UNPREFIXED = "unprefixed keys are not allowed"
ERR_INVALID_TAINT_EFFECT = "invalid taint effect"
ERR_EMPTY_TAINT_EFFECT = "empty taint effect"

FEATURE_NS = "feature.node.kubernetes.io"
PROFILE_NS = "profile.node.kubernetes.io"
ANNOTATION_VALUE_LIMIT = 1 << 10
TAINT_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})

_QNAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_DNS1123_SUB = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

_QNAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_DNS_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def split_ns(name: str) -> tuple[str, str]:
    """("prefix", "name"); prefix is "" for an unprefixed name."""
    ns, sep, base = name.partition("/")
    return (ns, base) if sep else ("", name)


def qualified_name_errors(value: str) -> list[str]:
    """IsQualifiedName: optional DNS-subdomain prefix (<=253) and a name part (<=63)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + e for e in dns1123_subdomain_errors(prefix))
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
            "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
            "subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if name and not _QNAME.fullmatch(name):
        errs.append(_QNAME_MSG)
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUB.fullmatch(value):
        errs.append(_DNS_MSG)
    return errs


def label_value_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        errs.append(_VALUE_MSG)
    return errs


def is_qualified_name(value: str) -> bool:
    return not qualified_name_errors(value)


def is_valid_label_value(value: str) -> bool:
    return len(value) <= 63 and _LABEL_VALUE.fullmatch(value) is not None


def _denied_kubernetes_ns(ns: str, allowed: tuple[str, ...]) -> bool:
    if ns == "kubernetes.io" or ns.endswith(".kubernetes.io"):
        return not any(ns == a or ns.endswith("." + a) for a in allowed)
    return False


@functools.lru_cache(maxsize=1 << 15)
def validate_label(key: str, value: str) -> str | None:
    """validate.Label: qualified key, prefixed, not in the kubernetes.io tree (feature./profile.
    node.kubernetes.io and their sub-domains excepted), valid value. Cached: the master checks
    the same few hundred labels on every node."""
    errs = qualified_name_errors(key)
    if errs:
        return f"invalid label key {_q(key)}: {'; '.join(errs)}"
    ns, _ = split_ns(key)
    if not ns:
        return ERR_UNPREFIXED
    if _denied_kubernetes_ns(ns, (FEATURE_NS, PROFILE_NS)):
        return ERR_NS_NOT_ALLOWED
    verrs = label_value_errors(value)
    if verrs:
        return f"invalid value {_q(value)}: {'; '.join(verrs)}"
    return None


def validate_annotation(key: str, value: str) -> str | None:
    """validate.Annotation: like labels, only feature.node.kubernetes.io allowed in the
    kubernetes.io tree; value at most 1024 bytes."""
    errs = qualified_name_errors(key)
    if errs:
        return f"invalid annotation key {_q(key)}: {'; '.join(errs)}"
    ns, _ = split_ns(key)
    if not ns:
        return ERR_UNPREFIXED
    if _denied_kubernetes_ns(ns, (FEATURE_NS,)):
        return ERR_NS_NOT_ALLOWED
    if len(value.encode()) > ANNOTATION_VALUE_LIMIT:
        return (
            "invalid value: too long: feature annotations must not be longer than "
            f"{ANNOTATION_VALUE_LIMIT} characters"
        )
    return None


def validate_taint(key: str, value: str, effect: str) -> str | None:
    """validate.Taint: prefixed key (no qualified-name check upstream), kubernetes.io tree denied
    except feature.node.kubernetes.io, effect one of the three kinds."""
    ns, _ = split_ns(key)
    if not ns:
        return ERR_UNPREFIXED
    if _denied_kubernetes_ns(ns, (FEATURE_NS,)):
        return ERR_NS_NOT_ALLOWED
    if not effect:
        return ERR_EMPTY_TAINT_EFFECT
    if effect not in TAINT_EFFECTS:
        return invalid_taint_effect(effect)
    return None


def invalid_taint_effect(effect: str) -> str:
    """Upstream's ``invalid taint effect``, with the value and the valid effects."""
    return f"{ERR_INVALID_TAINT_EFFECT} {_q(effect)}: must be one of NoSchedule, PreferNoSchedule, NoExecute"


def validate_extended_resource(key: str, value: str) -> str | None:
    """validate.ExtendedResource: qualified name, prefixed, namespace rule, value a Quantity."""
    errs = qualified_name_errors(key)
    if errs:
        return f"invalid name {_q(key)}: {'; '.join(errs)}"
    ns, _ = split_ns(key)
    if not ns:
        return ERR_UNPREFIXED
    if _denied_kubernetes_ns(ns, (FEATURE_NS,)):
        return ERR_NS_NOT_ALLOWED
    # deferred: nfd.api.quantity (decimal, fractions) is 7.6 ms of a one-shot worker's start-up,
    # loaded only where an extended resource is validated
    from nfd.api.quantity import QuantityError, parse_quantity

    try:
        parse_quantity(value)
    except QuantityError as e:
        return f"invalid value {_q(value)}: {e}"
    return None
