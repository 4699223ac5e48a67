"""Dynamic rule output values: ``@domain.feature.element`` read from a node's attribute features.

A label or extended resource value written ``@kernel.version.major`` takes the value of that
attribute on the node; nfd-master resolves it in its output policy (nfd.nodestate.outputpolicy),
``kubectl nfd dryrun`` and ``test`` as upstream's plugin does, and validation words the error of
a malformed one (nfd.rules.lint) as both do.
"""

from __future__ import annotations

from nfd.api.features import Features


def dynamic_value(value: str, features: Features) -> tuple[str | None, str | None]:
    """Resolve ``@domain.feature.element`` from attribute features: (value, error)."""
    parts = value[1:].split(".", 2)
    if len(parts) != 3:
        return None, dynamic_form_error(value)
    fname = f"{parts[0]}.{parts[1]}"
    attrs = features.attributes.get(fname)
    if attrs is None:
        if parts[2] in features.flags.get(fname, ()):
            return None, _flag_not_attribute(fname, parts[2])
        return None, f"feature {fname} not found"
    v = attrs.get(parts[2])
    if v is None:
        if parts[2] in features.flags.get(fname, ()):
            return None, _flag_not_attribute(fname, parts[2])
        return None, f"element {parts[2]} not found on feature {fname}"
    return v, None


def dynamic_form_error(value: str) -> str | None:
    """Upstream's error for an ``@`` value that is not ``@domain.feature.element`` (None if it is):
    the one wording of validate and dryrun."""
    if len(value[1:].split(".", 2)) != 3:
        return f"value {value} is not in the form of '@domain.feature.element'"
    return None


def _flag_not_attribute(fname: str, elem: str) -> str:
    return (f"element {elem} of feature {fname} is a flag, which has no value: "
            f"'@' reads attribute features only (match the flag with {{op: Exists}} and write a literal value)")


def resolve_value(value: str, features: Features) -> tuple[str | None, str | None]:
    """A label or extended resource value as the master writes it: an ``@domain.feature.element``
    value resolved (``dynamic_value``), any other as it is: (value, error)."""
    if value.startswith("@"):
        return dynamic_value(value, features)
    return value, None
