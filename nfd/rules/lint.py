"""The one offline validation of NodeFeatureRule and NodeFeatureGroup files: ``check_files`` is
what ``nfd rules validate`` and ``kubectl nfd validate`` both print, so they agree on every file
(the dryruns name the same unknown fields, as errors, and notes).

It refuses what the API server refuses and what nfd-master would refuse, naming every problem
with its field path (not only the first of a rule):

- the file: keys written twice in one mapping (kubectl's ``mapping key ... already defined``);
- each object against its CRD's structural schema in crds/ (nfd.api.schema: types, required
  fields, enums, ...), ``apiVersion``, ``kind`` and ``metadata.name`` (a DNS subdomain);
- everything the engine can know without features: unknown operators, value counts, every bad
  regexp of a value list, numbers, versions, types, every bad CEL expression, template parse
  errors, feature names that are not ``<domain>.<feature>``;
- outputs the master would reject (label/annotation/extended resource names and values after
  auto-prefixing, taint keys and effects; ``@`` values for form only).

Unknown fields are problems too, as ``kubectl apply``'s strict field validation refuses them,
each with the nearest valid name (nfd.api.nodefeaturerule.unknown_field_problems).

Warnings (the master takes the object): two rules of one object with one name, a NoExecute taint and an ``@`` value in an annotation (with upstream's
notes), and conflicts between rules (nfd.rules.conflicts).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from nfd.api import API_VERSION, DEFAULT_LABEL_NS
from nfd.api.errors import ValidationError, ValidationErrors
from nfd.api.nodefeaturerule import MATCH_TERMS, Rule, nearest_name, parse_rule, unknown_field_problems
from nfd.api.schema import (
    SchemaUnavailable,
    has_cel_rules,
    object_schema,
    pruned_fields,
    schema_problems,
    served_schema,
)
from nfd.api.validation import (
    ERR_UNPREFIXED,
    dns1123_subdomain_errors,
    validate_annotation,
    validate_extended_resource,
    validate_label,
    validate_taint,
)
from nfd.common.safeyaml import DuplicateKey
from nfd.lang.goregex import GoRegexError, compile_go
from nfd.lang.gostd.strconv import quote as go_quote
from nfd.rules.conflicts import Conflict, RuleOutputs, duplicate_rule_names, find_conflicts
from nfd.rules.dynamic import dynamic_form_error
from nfd.rules.engine import (
    BrokenRule,
    CompiledRule,
    CompiledRuleSet,
    compile_group_rules,
    compile_nodefeaturerule,
)
from nfd.rules.files import InputError, load_documents

RULE_KINDS = ("NodeFeatureRule", "NodeFeatureGroup")
LIST_FIELD = {"NodeFeatureRule": "rules", "NodeFeatureGroup": "featureGroupRules"}

# upstream's customization guide, "Node tainting"
NOEXECUTE_NOTE = ("a NoExecute taint evicts the running pods that do not tolerate it: before enabling "
                  "taints, make sure to edit nfd-worker daemonset to tolerate the taints to be created, "
                  "otherwise already running pods that do not tolerate the taint are evicted immediately "
                  "from the node including the nfd-worker pod")
# upstream's customization guide: the '@' format injects values into labels and extended resources
AT_ANNOTATION_NOTE = ("annotation values are published as written, '@' is not resolved: the "
                      "'@<feature-name>.<element-name>' format injects feature values into labels and "
                      "extended resources only")


def _fq(name: str, auto_prefix: bool) -> str:
    return name if "/" in name or not auto_prefix else f"{DEFAULT_LABEL_NS}/{name}"


def _output_problems(r: CompiledRule, *, auto_prefix: bool) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    path = r.path
    for k, v in r.labels.items():
        err = dynamic_form_error(v) if v.startswith("@") else None
        err = err or validate_label(_fq(k, auto_prefix), "0" if v.startswith("@") else v)
        if err and not (err is ERR_UNPREFIXED and not auto_prefix):
            out.append((f"{path}.labels.{k}", err))
    for k, v in r.annotations.items():
        err = validate_annotation(_fq(k, auto_prefix), v)
        if err and not (err is ERR_UNPREFIXED and not auto_prefix):
            out.append((f"{path}.annotations.{k}", err))
    for k, v in r.extended_resources.items():
        err = dynamic_form_error(v) if v.startswith("@") else None
        err = err or validate_extended_resource(_fq(k, auto_prefix), "0" if v.startswith("@") else v)
        if err and not (err is ERR_UNPREFIXED and not auto_prefix):
            out.append((f"{path}.extendedResources.{k}", err))
    for i, t in enumerate(r.taints):
        if t["key"] and t["effect"]:
            err = validate_taint(t["key"], t["value"], t["effect"])
            if err:
                out.append((f"{path}.taints[{i}]", err))
    return out


def _notes(r: CompiledRule) -> list[tuple[str, str]]:
    out = [(f"{r.path}.taints[{i}]", NOEXECUTE_NOTE) for i, t in enumerate(r.taints) if t["effect"] == "NoExecute"]
    out.extend((f"{r.path}.annotations.{k}", AT_ANNOTATION_NOTE) for k, v in r.annotations.items()
               if v.startswith("@"))
    return out


def _every_bad_regexp(rule: Rule, path: str) -> list[tuple[str, str]]:
    """Each bad regexp of every InRegexp value list (the engine names the first of a list, where
    upstream fails)."""
    out: list[tuple[str, str]] = []
    groups = [(f"{path}.matchFeatures", rule.match_features)]
    groups += [(f"{path}.matchAny[{i}].matchFeatures", m.match_features) for i, m in enumerate(rule.match_any)]
    for gp, terms in groups:
        for ti, t in enumerate(terms):
            exprs = [(f"{gp}[{ti}].matchExpressions.{k}", e) for k, e in (t.match_expressions or {}).items()]
            if t.match_name is not None:
                exprs.append((f"{gp}[{ti}].matchName", t.match_name))
            for ep, e in exprs:
                if e.op != "InRegexp" or len(e.value) < 2:
                    continue  # the engine names the one bad regexp of a one-value list
                for vi, v in enumerate(e.value):
                    try:
                        compile_go(v)
                    except GoRegexError as err:
                        msg = str(err)
                        out.append((f"{ep}.value[{vi}]", msg if len(msg) <= 200 else f"{msg[:100]}... ({len(msg)} characters)"))
    return out


def _every_bad_cel(exprs: list[str], path: str) -> list[tuple[str, str]]:
    """Each bad ``matchCEL`` expression (compiling stops at the first, which breaks the rule)."""
    # here, not at the top: the CEL compiler's imports take ~51 ms (python -X importtime after
    # nfd.cli.rules), spent only when a rule has matchCEL
    from nfd.rules.cel import compile_expressions

    out: list[tuple[str, str]] = []
    for i, src in enumerate(exprs):
        try:
            compile_expressions([src], path=f"{path}.matchCEL")
        except ValidationError as e:
            out.append((e.path.replace(".matchCEL[0]", f".matchCEL[{i}]"), e.message))
    return out


def _rule_problems(
    r: CompiledRule | BrokenRule, raw: Any, *, group: bool, auto_prefix: bool
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], CompiledRule | None]:
    """(problems, notes, the rule compiled without its CEL when CEL broke it)."""
    if isinstance(r, CompiledRule):
        rule, compiled = r.source, r
        problems = list(r.problems)
    else:
        path = r.path
        try:
            rule = parse_rule(raw, path=path, group=group)
        except ValidationErrors as e:  # structural: every problem has its own path
            return [(x.path, x.message) for x in e.errors], [], None
        except ValidationError as e:
            return [(e.path, e.message)], [], None
        # it parsed: its CEL broke it. Compile the rest alone to name its other problems too.
        compiled = CompiledRule(dataclasses.replace(rule, match_cel=[]), path=path)
        problems = list(compiled.problems) + _every_bad_cel(list(rule.match_cel), path)
    problems += _every_bad_regexp(rule, compiled.path)
    problems += _output_problems(compiled, auto_prefix=auto_prefix)
    return problems, _notes(compiled), compiled if isinstance(r, BrokenRule) else None


_RULE_INDEX = re.compile(r"spec\.\w+\[(\d+)\]")


def _rule_index(p: str) -> int:
    """Problems in document order: the object's own first, then rule by rule (stable within)."""
    m = _RULE_INDEX.match(p)
    return int(m.group(1)) if m else -1


def _covered(path: str, by: set[str]) -> bool:
    """Whether a problem at ``path`` is already said by one at it or at a field above it."""
    if path in by:
        return True
    return any(path.startswith(p + ".") or path.startswith(p + "[") for p in by)


@dataclass(slots=True)
class ObjectCheck:
    """What validation found in one object. ``problems`` are what the API server or nfd-master
    would refuse (field path, message), unknown fields included; ``unknown`` those alone (kubectl
    apply's strict field validation refuses them; the API server prunes them from what it stores
    without it, and the engine ignores them); ``notes`` what the master takes but the author should know (field path, message).
    ``rule_set`` is None when the object could not be compiled (and after check_file, which
    keeps only ``rule_names`` and ``outputs``)."""

    kind: str
    name: str
    rule_set: CompiledRuleSet | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)
    unknown: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    rule_names: list[str] = field(default_factory=list)
    # the literal outputs of a NodeFeatureRule's rules, for conflicts (nfd.rules.conflicts)
    outputs: list[RuleOutputs] = field(default_factory=list)


def _schema_problems(obj: dict[str, Any], kind: str, out: ObjectCheck) -> list[tuple[str, str]]:
    try:
        schema = object_schema(kind)
    except SchemaUnavailable as e:
        out.notes.append(("", f"not checked against the CRD schema: {e}"))
        return []
    if has_cel_rules(schema):
        out.notes.append(("", "the CRD's x-kubernetes-validations (CEL) rules are not checked offline"))
    # apiVersion, kind and metadata are checked by check_object, with their own words
    return [(p, m) for p, m in schema_problems(obj, schema)
            if p.split(".")[0] not in ("apiVersion", "kind", "metadata")]


# a feature map indexed with a string literal: attributes["kernel.version"]
_CEL_FEATURE_KEY = re.compile(r"""(?<![\w.])(flags|attributes|instances)\s*\[\s*(["'])([^"'\\]+)\2\s*\]""")


def _unpublished_features(obj: dict[str, Any], kind: str, published: Collection[str]) -> list[tuple[str, str]]:
    """A term's ``feature`` (or the feature of an ``@domain.feature.element`` label or extended
    resource value, or a feature map's literal key in a CEL expression) in the domain of a source (``nvml``, ``cpu``, ...) that no source publishes,
    with the nearest published name (``nvml.gpus``: did you mean nvml.gpu?). Other domains (a
    third party's NodeFeatures, ``rule.matched``) are not judged."""
    known = {f.lower() for f in published}
    domains = {f.split(".", 1)[0] for f in known}
    spec = obj.get("spec")
    rules = spec.get(LIST_FIELD[kind]) if isinstance(spec, dict) else None
    out: list[tuple[str, str]] = []

    def judge(f: str, path: str, head: str = "") -> None:
        low = f.lower()  # the engine looks feature names up lower-cased
        dom = low.split(".", 1)[0]
        if dom not in domains or low in known:
            return
        near = nearest_name(low, [k for k in known if k.startswith(dom + ".")])
        same = sorted(k for k in known if k.startswith(dom + "."))
        msg = f"{head}no source publishes feature {go_quote(f)}"
        msg += f"; did you mean {near}?" if near else f" (the {dom} source publishes {', '.join(same)})"
        out.append((path, msg))

    for i, r in enumerate(rules if isinstance(rules, list) else []):
        if not isinstance(r, dict):
            continue
        rp = f"spec.{LIST_FIELD[kind]}[{i}]"
        # '@domain.feature.element' values (labels, extended resources) read a feature too
        for field_name in ("labels", "extendedResources"):
            vals = r.get(field_name)
            for k, v in (vals.items() if isinstance(vals, dict) else ()):
                parts = v[1:].split(".", 2) if isinstance(v, str) and v.startswith("@") else []
                if len(parts) == 3:
                    judge(f"{parts[0]}.{parts[1]}", f"{rp}.{field_name}.{k}", f"{go_quote(v)}: ")
        groups = [(f"{rp}.matchFeatures", r.get("matchFeatures"))]
        ma = r.get("matchAny")
        groups += [(f"{rp}.matchAny[{k}].matchFeatures", m.get("matchFeatures"))
                   for k, m in enumerate(ma if isinstance(ma, list) else []) if isinstance(m, dict)]
        for gp, terms in groups:
            for j, t in enumerate(terms if isinstance(terms, list) else []):
                f = t.get("feature") if isinstance(t, dict) else None
                if isinstance(f, str) and len(f.split(".")) == 2:  # else the engine says what is wrong
                    judge(f, f"{gp}[{j}].feature")
        # a CEL expression indexes a feature map with the feature's name
        cel = r.get("matchCEL")
        for j, src in enumerate(cel if isinstance(cel, list) else []):
            for m in _CEL_FEATURE_KEY.finditer(src if isinstance(src, str) else ""):
                if len(m.group(3).split(".")) == 2:
                    judge(m.group(3), f"{rp}.matchCEL[{j}]", f"{m.group(1)}[{m.group(2)}{m.group(3)}{m.group(2)}]: ")
    return out


UPGRADE_CRDS = "upgrade the CRDs: kubectl apply --server-side --force-conflicts -k crds/"


@dataclass(frozen=True, slots=True)
class ServedCRDs:
    """The CRDs an API server serves (the cluster's own, or the files of another release, such
    as an older NFD's that a GPU Operator bundles): the schema each kind is stored under
    (None: the kind is not served). ``where`` names them in messages."""

    where: str
    schemas: dict[str, dict[str, Any] | None]

    @classmethod
    def from_crds(cls, crds: list[dict[str, Any]], where: str) -> ServedCRDs:
        schemas: dict[str, dict[str, Any] | None] = dict.fromkeys(RULE_KINDS)
        for crd in crds:
            names = (crd.get("spec") or {}).get("names") or {}
            group = (crd.get("spec") or {}).get("group")
            if names.get("kind") in RULE_KINDS and group == API_VERSION.split("/")[0]:
                schemas[names["kind"]] = served_schema(crd, API_VERSION.split("/")[1])
        return cls(where, schemas)


def _served_problems(obj: dict[str, Any], kind: str, served: ServedCRDs) -> list[tuple[str, str]]:
    """What the served CRDs do to ``obj`` beside ours: every field this nfd evaluates that their
    schema prunes (so nfd-master never sees it), a rule left without a match term by that (it
    then matches every node), and what their schema refuses."""
    schema = served.schemas.get(kind)
    if schema is None:
        return [("", f"{served.where} serve no {kind} {API_VERSION}: the API server refuses the object; "
                     + UPGRADE_CRDS)]
    try:
        ours = set(pruned_fields(obj, object_schema(kind)))
    except SchemaUnavailable:
        ours = {p for p, _ in unknown_field_problems(obj, kind=kind)}
    lost = [p for p in pruned_fields(obj, schema) if p not in ours]
    out = [(p, f"not in the schema of {served.where}: the API server prunes this field, so nfd-master "
               f"never sees it; {UPGRADE_CRDS}") for p in lost]
    spec = obj.get("spec")
    rules = spec.get(LIST_FIELD[kind]) if isinstance(spec, dict) else None
    gone = set(lost)
    for i, r in enumerate(rules if isinstance(rules, list) else []):
        rp = f"spec.{LIST_FIELD[kind]}[{i}]"
        if not isinstance(r, dict) or rp in gone:
            continue
        terms = [t for t in MATCH_TERMS if r.get(t)]
        left = [t for t in terms if f"{rp}.{t}" not in gone]
        if terms and not left:
            out.append((rp, f"with {', '.join(terms)} pruned by {served.where}, the rule has no match term left "
                            "and matches every node"))
    out.extend((p, f"{m} ({served.where})") for p, m in schema_problems(obj, schema)
               if p.split(".")[0] not in ("apiVersion", "kind", "metadata"))
    return out


def check_object(
    obj: Any, *, kinds: tuple[str, ...] = RULE_KINDS, auto_prefix: bool = True,
    published: Collection[str] | None = None, served: ServedCRDs | None = None,
) -> ObjectCheck:
    """Every problem the API server or nfd-master would find in ``obj`` (see the module doc),
    in document order; unknown fields as problems, notes as warnings. ``published``: the
    feature names the sources publish (nfd.sources.registry.published_features): a term's
    feature in one of their domains that is not among them is a problem. ``served``: the CRDs
    the object would be stored under, when they are not ours (_served_problems)."""
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
    if meta is not None and not isinstance(meta, dict):
        out.problems.append(("metadata", "must be an object"))
    elif not name:
        out.problems.append(("metadata.name", "required"))
    else:
        out.problems.extend(("metadata.name", e) for e in dns1123_subdomain_errors(name))
    out.unknown = unknown_field_problems(obj, kind=kind)
    unpublished = _unpublished_features(obj, kind, published) if published else []
    if served is not None:
        unpublished += _served_problems(obj, kind, served)
    schema = _schema_problems(obj, kind, out)
    said = {p for p, _ in schema}
    engine: list[tuple[str, str]] = []
    try:
        rs = compile_nodefeaturerule(obj) if kind == "NodeFeatureRule" else compile_group_rules(obj)
    except ValidationError as e:
        engine.append((e.path, e.message))
        rs = None
    if rs is not None:
        out.rule_set = rs
        out.rule_names = [r.name for r in rs.rules]
        if kind == "NodeFeatureRule":
            out.outputs = [(rs.name, r.name, r.labels, r.annotations, r.extended_resources, r.taints)
                           for r in rs.rules if isinstance(r, CompiledRule)]
        spec = obj.get("spec")
        raw_rules = spec.get(LIST_FIELD[kind]) if isinstance(spec, dict) else None
        raw_rules = raw_rules if isinstance(raw_rules, list) else []
        for i, r in enumerate(rs.rules):
            problems, notes, _ = _rule_problems(
                r, raw_rules[i] if i < len(raw_rules) else None,
                group=kind == "NodeFeatureGroup", auto_prefix=auto_prefix,
            )
            engine.extend(problems)
            out.notes.extend(notes)
        out.notes.extend(duplicate_rule_names(rs, list_field=LIST_FIELD[kind]))
    # One message per field: the engine's where both speak of the same field (the words the
    # master and dryrun use), the schema's where it refused a field above (a wrong type).
    engine = [pm for pm in engine if pm[0] in said or not _covered(pm[0], said)]
    spoken = {p for p, _ in engine}
    merged = engine + [pm for pm in schema if pm[0] not in spoken] + out.unknown + unpublished
    seen: set[tuple[str, str]] = set(out.problems)
    for pm in sorted(merged, key=lambda x: _rule_index(x[0])):
        if pm not in seen:
            seen.add(pm)
            out.problems.append(pm)
    out.notes.sort(key=lambda x: _rule_index(x[0]))
    return out


def warning_lines(check: ObjectCheck) -> list[str]:
    """The notes (``path: note``)."""
    return [f"{p}: {m}" if p else m for p, m in check.notes]


# -- files ---------------------------------------------------------------------------------


@dataclass(slots=True)
class FileCheck:
    path: str
    duplicates: list[DuplicateKey] = field(default_factory=list)
    objects: list[ObjectCheck] = field(default_factory=list)

    @property
    def problem_count(self) -> int:
        return len(self.duplicates) + sum(len(o.problems) for o in self.objects)


@dataclass(slots=True)
class ValidationReport:
    files: list[FileCheck] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)

    @property
    def problem_count(self) -> int:
        return sum(f.problem_count for f in self.files)

    @property
    def object_count(self) -> int:
        return sum(len(f.objects) for f in self.files)


def check_file(path: str, *, auto_prefix: bool = True, published: Collection[str] | None = None,
               served: ServedCRDs | None = None) -> FileCheck:
    """Every problem of every document of ``path`` (each must be a NodeFeatureRule or a
    NodeFeatureGroup). Raises InputError for a file that cannot be read, is not YAML or is empty."""
    dups: list[DuplicateKey] = []
    docs = load_documents(path, duplicates=dups)
    if not docs:
        raise InputError(f"{path}: no NodeFeatureRule or NodeFeatureGroup object found (the file is empty)")
    # a document of another kind is a problem of that document (``kind: must be ...``)
    checks = []
    for d in docs:
        c = check_object(d, auto_prefix=auto_prefix, published=published, served=served)
        c.rule_set = None  # a file of 40,000 rules: not every compiled rule held to the end
        checks.append(c)
    return FileCheck(path, dups, checks)


def check_files(paths: list[str], *, auto_prefix: bool = True, published: Collection[str] | None = None,
                served: ServedCRDs | None = None) -> ValidationReport:
    """check_file for each path, then the conflicts between all their NodeFeatureRules, as if
    they were applied together. Raises InputError as check_file."""
    rep = ValidationReport([check_file(p, auto_prefix=auto_prefix, published=published, served=served)
                            for p in paths])
    # nfd-master's order: NodeFeatureRules by name, then rules in order
    objs = sorted((o for f in rep.files for o in f.objects), key=lambda o: o.name)
    rep.conflicts = find_conflicts((x for o in objs for x in o.outputs), auto_prefix=auto_prefix)
    return rep


def rule_set_problems(rs: CompiledRuleSet, *, auto_prefix: bool = True) -> list[tuple[str, str]]:
    """(field path, message) of every engine and output problem of a compiled rule set (no
    schema, no raw object: a broken rule gives its load error)."""
    out: list[tuple[str, str]] = []
    for r in rs.rules:
        if isinstance(r, BrokenRule):
            p, sep, msg = r.error.partition(": ")
            out.append((p, msg) if sep else (r.path, r.error))
        else:
            out.extend(_rule_problems(r, None, group=rs.kind == "NodeFeatureGroup", auto_prefix=auto_prefix)[0])
    return out
