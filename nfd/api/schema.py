"""Check an object against a CRD's structural OpenAPI v3 schema, as the API server does on create.

``schema_problems(obj, schema)`` names every violation with its field path, in document order:
types, ``required``, ``enum``, ``pattern`` (a Go regexp, as the server's), ``maxLength`` /
``minLength``, ``maxItems`` / ``minItems``, ``maxProperties`` / ``minProperties``, ``minimum`` /
``maximum``, ``format: date-time`` / ``int64`` / ``int32``, ``nullable``,
``x-kubernetes-int-or-string``, ``x-kubernetes-preserve-unknown-fields`` and the list types
``set`` / ``map`` (duplicate items or keys). As the server does, a ``null`` value of a field that
is not ``nullable`` is pruned first (so it counts as absent: ``required`` if the field is),
and fields the schema does not define are pruned, not refused (callers name them as warnings,
nfd.api.nodefeaturerule.unknown_fields). ``x-kubernetes-validations`` (CEL) are not evaluated:
the shipped CRDs have none, and a schema that has them is reported as not fully checked.

Why our own walker and not a JSON-Schema library: a CRD's structural schema is a small subset
of OpenAPI v3 with Kubernetes extensions (int-or-string, list types, null pruning, Go regexps)
that the JSON-Schema validators do not model, and the messages must carry Kubernetes field
paths (``spec.rules[0].matchFeatures[1].feature``), not JSON pointers. The whole walker is one
small module, so the offline CLI imports no new dependency and starts as fast as before.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from nfd.api.crds import crds_dir, version_schema
from nfd.lang.goregex import GoRegexError, compile_go
from nfd.lang.gostd.strconv import quote as go_quote

__all__ = ["schema_problems", "pruned_fields", "missing_fields", "object_schema", "served_schema", "SchemaUnavailable"]

_TYPE_WORDS = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
}

# RFC 3339 date-time as the server's strfmt accepts it (fraction and zone forms)
_DATE_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z"
)
_INT_RANGES = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}


class SchemaUnavailable(Exception):
    """The CRD schemas cannot be read (no crds/ directory next to the package)."""


def type_word(v: Any) -> str:
    """The JSON type of a decoded YAML value (the server's names, a list as a list)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "list"  # JSON's array, named as the rest of nfd's messages name it
    return type(v).__name__


def _type_ok(want: str, v: Any) -> bool:
    if want == "array":
        return isinstance(v, list)
    got = type_word(v)
    if want == "number":
        return got in ("number", "integer")
    if want == "integer" and got == "number":
        return float(v).is_integer()
    return got == want


def _quote(v: Any) -> str:
    return go_quote(v) if isinstance(v, str) else str(v)


@functools.cache
def _go_regexp(pattern: str) -> Callable[[str], bool] | None:
    """A schema ``pattern`` as the server compiles it (Go's regexp); None if it does not compile."""
    try:
        rx = compile_go(pattern)
    except GoRegexError:
        return None
    return rx.match_string


def schema_problems(obj: Any, schema: dict[str, Any], *, path: str = "") -> list[tuple[str, str]]:
    """(field path, message) for every way ``obj`` violates ``schema``, in document order."""
    out: list[tuple[str, str]] = []
    _walk(obj, schema, path, out)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _walk(v: Any, s: dict[str, Any], path: str, out: list[tuple[str, str]]) -> None:
    # an explicit stack would bound nothing here: the loader already bounds nesting (safeyaml)
    if s.get("x-kubernetes-int-or-string"):
        if not (isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))):
            out.append((path, f"must be an integer or a string, got {type_word(v)}"))
            return
    else:
        want = s.get("type")
        if want and not _type_ok(want, v):
            out.append((path, f"must be {_TYPE_WORDS.get(want, want)}, got {type_word(v)}"))
            return
    if "enum" in s and v not in s["enum"]:
        supported = ", ".join(_quote(x) for x in s["enum"])
        out.append((path, f"unsupported value {_quote(v)}: supported values: {supported}"))
    if isinstance(v, str):
        _string(v, s, path, out)
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        _number(v, s, path, out)
    elif isinstance(v, dict):
        _object(v, s, path, out)
    elif isinstance(v, list):
        _array(v, s, path, out)


def _string(v: str, s: dict[str, Any], path: str, out: list[tuple[str, str]]) -> None:
    n = len(v.encode())
    if "maxLength" in s and len(v) > s["maxLength"]:
        out.append((path, f"may not be longer than {s['maxLength']} characters ({len(v)})"))
    if "minLength" in s and len(v) < s["minLength"]:
        out.append((path, f"should be at least {s['minLength']} characters long ({n})"))
    pat = s.get("pattern")
    if pat is not None:
        match = _go_regexp(pat)
        if match is not None and not match(v):
            out.append((path, f"{_quote(v)} should match '{pat}'"))
    if s.get("format") == "date-time" and not _DATE_TIME.match(v):
        out.append((path, f"{_quote(v)} is not an RFC 3339 date-time (2006-01-02T15:04:05Z)"))


def _number(v: float, s: dict[str, Any], path: str, out: list[tuple[str, str]]) -> None:
    lo_hi = _INT_RANGES.get(s.get("format", ""))
    if lo_hi is not None and not lo_hi[0] <= v <= lo_hi[1]:
        out.append((path, f"{v} is out of the range of {s['format']}"))
    if "minimum" in s and (v < s["minimum"] or (s.get("exclusiveMinimum") and v == s["minimum"])):
        out.append((path, f"should be greater than {'' if s.get('exclusiveMinimum') else 'or equal to '}"
                          f"{s['minimum']}"))
    if "maximum" in s and (v > s["maximum"] or (s.get("exclusiveMaximum") and v == s["maximum"])):
        out.append((path, f"should be less than {'' if s.get('exclusiveMaximum') else 'or equal to '}"
                          f"{s['maximum']}"))


def _object(v: dict[Any, Any], s: dict[str, Any], path: str, out: list[tuple[str, str]]) -> None:
    props: dict[str, Any] = s.get("properties") or {}
    extra = s.get("additionalProperties")
    present = {k for k, x in v.items() if x is not None or _nullable(props.get(k), extra)}
    for k in s.get("required") or ():
        if k not in present:
            out.append((_join(path, k), "required"))
    if "maxProperties" in s and len(present) > s["maxProperties"]:
        out.append((path, f"may have at most {s['maxProperties']} properties ({len(present)})"))
    if "minProperties" in s and len(present) < s["minProperties"]:
        out.append((path, f"should have at least {s['minProperties']} properties ({len(present)})"))
    for k, x in v.items():
        key = str(k)
        sub = props.get(key)
        if sub is None and isinstance(extra, dict):
            sub = extra
        if sub is None or key not in present or x is None:
            continue  # pruned (unknown field, or a null the schema does not allow)
        _walk(x, sub, _join(path, key), out)


def _nullable(prop: Any, extra: Any) -> bool:
    s = prop if isinstance(prop, dict) else extra if isinstance(extra, dict) else None
    return bool(s and s.get("nullable"))


def _array(v: list[Any], s: dict[str, Any], path: str, out: list[tuple[str, str]]) -> None:
    if "maxItems" in s and len(v) > s["maxItems"]:
        out.append((path, f"must have at most {s['maxItems']} items ({len(v)})"))
    if "minItems" in s and len(v) < s["minItems"]:
        out.append((path, f"should have at least {s['minItems']} items ({len(v)})"))
    items = s.get("items")
    if isinstance(items, dict):
        for i, x in enumerate(v):
            if x is None and not items.get("nullable"):
                out.append((f"{path}[{i}]", f"must be {_TYPE_WORDS.get(items.get('type', ''), 'a value')}, got null"))
                continue
            _walk(x, items, f"{path}[{i}]", out)
    list_type = s.get("x-kubernetes-list-type")
    if list_type == "set":
        seen: dict[str, int] = {}
        for i, x in enumerate(v):
            key = repr(x)
            if key in seen:
                out.append((f"{path}[{i}]", f"duplicate value {_quote(x)} (also [{seen[key]}])"))
            else:
                seen[key] = i
    elif list_type == "map":
        keys = s.get("x-kubernetes-list-map-keys") or []
        seen = {}
        for i, x in enumerate(v):
            if not isinstance(x, dict):
                continue
            key = repr(tuple(x.get(k) for k in keys))
            if key in seen:
                what = ", ".join(f"{k}={_quote(x.get(k))}" for k in keys)
                out.append((f"{path}[{i}]", f"duplicate entry with {what} (also [{seen[key]}])"))
            else:
                seen[key] = i


def pruned_fields(obj: Any, schema: dict[str, Any], *, path: str = "") -> list[str]:
    """The path of every field of ``obj`` that the API server prunes when it stores ``obj``
    under ``schema`` (a field the schema does not define, where no
    ``x-kubernetes-preserve-unknown-fields`` keeps it), in document order. ``apiVersion``,
    ``kind`` and ``metadata`` at the top are the server's own and never pruned."""
    out: list[str] = []
    _prune_walk(obj, schema, path, out, top=not path)
    return out


def _prune_walk(v: Any, s: dict[str, Any], path: str, out: list[str], *, top: bool = False) -> None:
    if isinstance(v, dict):
        props: dict[str, Any] = s.get("properties") or {}
        extra = s.get("additionalProperties")
        keep = s.get("x-kubernetes-preserve-unknown-fields") or extra is True
        for k, x in v.items():
            key = str(k)
            if top and key in ("apiVersion", "kind", "metadata"):
                continue
            sub = props.get(key)
            if sub is None and isinstance(extra, dict):
                sub = extra
            if sub is None:
                if not keep:
                    out.append(_join(path, key))
                continue
            _prune_walk(x, sub, _join(path, key), out)
    elif isinstance(v, list):
        items = s.get("items")
        if isinstance(items, dict):
            for i, x in enumerate(v):
                _prune_walk(x, items, f"{path}[{i}]", out)


def missing_fields(ours: dict[str, Any], served: dict[str, Any], *, path: str = "") -> list[str]:
    """The fields ``ours`` defines that ``served`` would prune (it defines no such property, and
    neither ``additionalProperties`` nor ``x-kubernetes-preserve-unknown-fields`` keeps it), as
    generic paths: ``spec.rules[].matchCEL``, ``spec.x.*.y`` for a map's values. The fields an
    nfd reading objects stored under ``served`` never sees."""
    if served.get("x-kubernetes-preserve-unknown-fields"):
        return []
    out: list[str] = []
    sprops: dict[str, Any] = served.get("properties") or {}
    sextra = served.get("additionalProperties")
    for k, sub in (ours.get("properties") or {}).items():
        p = _join(path, k)
        if k in sprops:
            if isinstance(sub, dict) and isinstance(sprops[k], dict):
                out.extend(missing_fields(sub, sprops[k], path=p))
        elif isinstance(sextra, dict):
            if isinstance(sub, dict):
                out.extend(missing_fields(sub, sextra, path=p))
        elif sextra is not True:
            out.append(p)
    extra = ours.get("additionalProperties")
    if isinstance(extra, dict) and isinstance(sextra, dict):
        out.extend(missing_fields(extra, sextra, path=f"{path}.*"))
    items, sitems = ours.get("items"), served.get("items")
    if isinstance(items, dict) and isinstance(sitems, dict):
        out.extend(missing_fields(items, sitems, path=f"{path}[]"))
    return out


def has_cel_rules(schema: Any) -> bool:
    """Whether any part of ``schema`` carries ``x-kubernetes-validations`` (not evaluated here)."""
    stack = [schema]
    while stack:
        s = stack.pop()
        if isinstance(s, dict):
            if "x-kubernetes-validations" in s:
                return True
            stack.extend(s.values())
        elif isinstance(s, list):
            stack.extend(s)
    return False


def served_schema(crd: dict[str, Any], version: str = "v1alpha1") -> dict[str, Any] | None:
    """The openAPIV3Schema that a CustomResourceDefinition (as the API server serves it, or as a
    file of an older release holds it) applies to ``version``; None when it does not serve that
    version. A version without a schema keeps every field (the server prunes nothing)."""
    spec = crd.get("spec") if isinstance(crd, dict) else None
    for v in (spec or {}).get("versions") or []:
        if isinstance(v, dict) and v.get("name") == version and v.get("served", True):
            schema = ((v.get("schema") or {}).get("openAPIV3Schema")
                      or (spec or {}).get("validation", {}).get("openAPIV3Schema"))
            return schema if isinstance(schema, dict) else {"x-kubernetes-preserve-unknown-fields": True}
    return None


@functools.cache
def object_schema(kind: str, version: str = "v1alpha1") -> dict[str, Any]:
    """The openAPIV3Schema of ``kind`` from the repository's crds/ (read once per process).
    Raises SchemaUnavailable naming the directory when the CRDs cannot be read."""
    try:
        return version_schema(kind, version)
    except (OSError, KeyError) as e:
        raise SchemaUnavailable(f"cannot read the CRD schema of {kind} from {crds_dir()} ({e}); "
                                "set NFD_CRDS_DIR to the crds/ directory") from None
