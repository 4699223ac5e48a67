"""YAML (and JSON, a subset) with bounded size, nesting and aliases, for every file nfd reads.

PyYAML's composers recurse once per nesting level: the pure-Python one raises RecursionError
and the C one (libyaml via ``_yaml``) overflows the C stack and kills the process (seen at
30,000 levels). So a document's events are read first, by the parser alone (a state machine,
no recursion), counting depth and aliases; only a document within the limits is then built.
A violation is a ``YamlLimitError`` (a ValueError) naming the source, line and limit.

The common document (no anchors, aliases or explicit tags: every rule file and config we have
seen) is built straight from libyaml's events in that same pass, by an explicit stack: PyYAML's
C composer calls back into Python for every scalar and its constructor then walks the node tree
again, three times the work (a 6.5 MB file of 40,000 rules spent 80% of ``nfd rules validate``
there). Plain scalars are resolved with the loader's own implicit resolvers and constructors,
so the result is the loader's; anything else takes PyYAML's path.

Limits (docs/reliability.md): ``MAX_DEPTH`` nested collections, ``MAX_ALIASES`` alias uses
(each alias of a big anchor multiplies what a later JSON encoding must write), and a size
given by the caller.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import yaml

from nfd.lang.gostd.strconv import quote as go_quote

_CParser: Any
try:
    from yaml.cyaml import CParser as _CParser  # type: ignore[attr-defined,no-redef]
except ImportError:  # PyYAML built without libyaml
    _CParser = None

MAX_DEPTH = 100
MAX_ALIASES = 1000
MAX_BYTES = 8 << 20


class YamlLimitError(ValueError):
    """The document is beyond a limit; the message names the source and the limit."""


class DuplicateKey:
    """A mapping key written twice in one mapping. PyYAML keeps the last value in silence;
    kubectl (go-yaml) refuses the file, and ``str()`` is its wording:
    ``line 10: mapping key "example.com/a" already defined at line 9``."""

    __slots__ = ("key", "line", "first_line")

    def __init__(self, key: str, line: int, first_line: int) -> None:
        self.key, self.line, self.first_line = key, line, first_line

    def __str__(self) -> str:
        return f"line {self.line}: mapping key {go_quote(self.key)} already defined at line {self.first_line}"

    def __repr__(self) -> str:
        return f"DuplicateKey({self.key!r}, {self.line}, {self.first_line})"


_MERGE_TAG = "tag:yaml.org,2002:merge"


def duplicate_keys(text: str, *, loader: Any = None) -> list[DuplicateKey]:
    """Every key repeated within one mapping of ``text``, in document order (1-based lines).

    Built on PyYAML's composer (its nodes keep their marks); call it after ``check`` or a load
    within the limits, so the composer's recursion is bounded by MAX_DEPTH."""
    out: list[DuplicateKey] = []
    for root in yaml.compose_all(text, Loader=_loader_cls(loader)):
        stack = [root] if root is not None else []
        seen_nodes: set[int] = set()  # an alias re-uses a node: walk it once
        while stack:
            node = stack.pop()
            if id(node) in seen_nodes:
                continue
            seen_nodes.add(id(node))
            if isinstance(node, yaml.MappingNode):
                first: dict[tuple[str, str], int] = {}
                for k, v in node.value:
                    if isinstance(k, yaml.ScalarNode) and k.tag != _MERGE_TAG:
                        line = k.start_mark.line + 1
                        at = first.get((k.tag, k.value))
                        if at is None:
                            first[(k.tag, k.value)] = line
                        else:
                            out.append(DuplicateKey(k.value, line, at))
                    stack.append(v)
                    stack.append(k)
            elif isinstance(node, yaml.SequenceNode):
                stack.extend(node.value)
    out.sort(key=lambda d: d.line)  # the walk is depth-first from the end: document order
    return out


def _parser_cls() -> Any:
    """libyaml's event parser when PyYAML has it: ``yaml`` does not export ``CParser`` (only the
    loaders), and the pure-Python parser took 80% of validating a 6.5 MB rule file."""
    return _CParser


def _loader_cls(loader: Any) -> Any:
    if loader is not None:
        return loader
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def check(text: str, *, source: str, max_bytes: int = MAX_BYTES) -> None:
    """Raise YamlLimitError if ``text`` is too big, too deep or uses too many aliases."""
    with _library_depth_named(source):
        _check(text, source=source, max_bytes=max_bytes)


def _check(text: str, *, source: str, max_bytes: int) -> None:
    if len(text) > max_bytes:
        raise YamlLimitError(f"{source}: {len(text)} bytes, more than the limit of {max_bytes}")
    # Cheap exit for the common case: no collection can nest deeper than its openers allow.
    if sum(text.count(c) for c in "[{:-?*") <= MAX_DEPTH:
        return
    depth = aliases = 0
    cparser = _parser_cls()
    events = yaml.parse(text, Loader=cparser) if cparser is not None else yaml.parse(text)
    try:
        for ev in events:
            if isinstance(ev, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise YamlLimitError(f"{source}: {_at(ev)}nesting deeper than {MAX_DEPTH} levels")
            elif isinstance(ev, yaml.CollectionEndEvent):
                depth -= 1
            elif isinstance(ev, yaml.AliasEvent):
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise YamlLimitError(f"{source}: {_at(ev)}more than {MAX_ALIASES} aliases")
    except RecursionError:
        raise YamlLimitError(f"{source}: nesting deeper than {MAX_DEPTH} levels") from None


@contextlib.contextmanager
def _library_depth_named(source: str) -> Iterator[None]:
    """The YAML library's own depth limit worded as ours: PyYAML 6.0.4's libyaml refuses a flow
    collection nested 1000 deep in its scanner ("exceeded maximum nesting depth"), which reads
    the flow ahead, so the error comes before the parser hands out the event that our count at
    MAX_DEPTH would refuse. Same refusal, same words, whichever limit met it."""
    try:
        yield
    except yaml.YAMLError as e:
        if "maximum nesting depth" not in (getattr(e, "problem", None) or ""):
            raise
        mark = getattr(e, "problem_mark", None)
        at = f"line {mark.line + 1}: " if mark is not None else ""
        raise YamlLimitError(f"{source}: {at}nesting deeper than {MAX_DEPTH} levels") from None


def _at(ev: Any) -> str:
    mark = getattr(ev, "start_mark", None)
    return f"line {mark.line + 1}: " if mark is not None else ""


class _Fallback(Exception):
    """The document needs PyYAML's composer (an anchor, alias, tag or merge key)."""


_STR_TAG = "tag:yaml.org,2002:str"
_NO_FAST_TAGS = frozenset({"tag:yaml.org,2002:merge", "tag:yaml.org,2002:value"})


def _fast_load_all(text: str, *, source: str, loader: Any, dup: list[bool] | None = None) -> list[Any] | None:
    """Every document built from libyaml's events in one pass, or None to take PyYAML's path.

    Depth is checked on the way (YamlLimitError as ``check`` words it); YAML errors are the
    parser's, as in ``check``. ``dup[0]`` is set when a mapping repeats a key (the last value
    is kept, as PyYAML does).
    """
    cparser = _parser_cls()
    if cparser is None or getattr(loader, "yaml_path_resolvers", None):
        return None
    resolvers: dict[Any, list[tuple[str, Any]]] = loader.yaml_implicit_resolvers
    wildcard = resolvers.get(None, [])
    constructors = loader.yaml_constructors
    ctor_self: Any = None
    scalar_event, alias_event = yaml.ScalarEvent, yaml.AliasEvent
    mapping_start, sequence_start = yaml.MappingStartEvent, yaml.SequenceStartEvent
    collection_end = yaml.CollectionEndEvent

    def plain(value: str) -> Any:
        nonlocal ctor_self
        tag = _STR_TAG
        for t, rx in resolvers.get(value[0] if value else "", []) + wildcard:
            if rx.match(value):
                tag = t
                break
        if tag == _STR_TAG:
            return value
        if tag in _NO_FAST_TAGS or tag not in constructors:
            raise _Fallback
        if ctor_self is None:
            ctor_self = loader("")
        return constructors[tag](ctor_self, yaml.ScalarNode(tag, value))

    docs: list[Any] = []
    strings: dict[str, str] = {}
    # stack of [container, pending key or _NOKEY]; a mapping's key is held until its value
    stack: list[list[Any]] = []
    nokey = _NOKEY
    parser = cparser(text)
    try:
        while parser.check_event():
            ev = parser.get_event()
            cls = type(ev)
            if cls is scalar_event:
                if ev.anchor is not None or ev.tag is not None:
                    return None
                value: Any = plain(ev.value) if ev.implicit[0] else ev.value
                if type(value) is str and len(value) <= 64:
                    # one object per distinct short string (keys, operators, feature names
                    # repeat across thousands of rules): a third less memory for a rule file
                    value = strings.setdefault(value, value)
            elif cls is mapping_start or cls is sequence_start:
                if ev.anchor is not None or ev.tag is not None:
                    return None
                if len(stack) >= MAX_DEPTH:
                    raise YamlLimitError(f"{source}: {_at(ev)}nesting deeper than {MAX_DEPTH} levels")
                stack.append([{} if cls is mapping_start else [], nokey])
                continue
            elif isinstance(ev, collection_end):
                value = stack.pop()[0]
            elif cls is alias_event:
                return None
            else:  # stream and document start/end
                continue
            if not stack:
                docs.append(value)
                continue
            top = stack[-1]
            container = top[0]
            if type(container) is list:
                container.append(value)
            elif top[1] is nokey:
                if isinstance(value, (dict, list)):
                    return None  # PyYAML's error for an unhashable key
                top[1] = value
            else:
                if dup is not None and top[1] in container:
                    dup[0] = True
                container[top[1]] = value
                top[1] = nokey
    except _Fallback:
        return None
    finally:
        parser.dispose()
    return docs


_NOKEY = object()


def safe_load(text: str, *, source: str, max_bytes: int = MAX_BYTES, loader: Any = None) -> Any:
    """One document, within the limits. YAML errors are yaml.YAMLError as usual."""
    with _library_depth_named(source):
        return _safe_load(text, source=source, max_bytes=max_bytes, loader=loader)


def _safe_load(text: str, *, source: str, max_bytes: int, loader: Any) -> Any:
    if len(text) > max_bytes:
        raise YamlLimitError(f"{source}: {len(text)} bytes, more than the limit of {max_bytes}")
    fast = _fast_load_all(text, source=source, loader=_loader_cls(loader))
    if fast is not None and len(fast) <= 1:  # several: PyYAML's error says so
        return fast[0] if fast else None
    check(text, source=source, max_bytes=max_bytes)
    try:
        return yaml.load(text, Loader=_loader_cls(loader))
    except RecursionError:  # not expected after check(); never a traceback
        raise YamlLimitError(f"{source}: nesting deeper than {MAX_DEPTH} levels") from None


def safe_load_all(
    text: str, *, source: str, max_bytes: int = MAX_BYTES, loader: Any = None,
    duplicates: list[DuplicateKey] | None = None,
) -> list[Any]:
    """Every document, within the limits (counted over the whole stream). ``duplicates``: a
    list that receives every repeated mapping key (the documents keep the last value, as
    PyYAML); without it they are not looked for."""
    with _library_depth_named(source):
        return _safe_load_all(text, source=source, max_bytes=max_bytes, loader=loader, duplicates=duplicates)


def _safe_load_all(
    text: str, *, source: str, max_bytes: int, loader: Any, duplicates: list[DuplicateKey] | None,
) -> list[Any]:
    if len(text) > max_bytes:
        raise YamlLimitError(f"{source}: {len(text)} bytes, more than the limit of {max_bytes}")
    dup = [False] if duplicates is not None else None
    fast = _fast_load_all(text, source=source, loader=_loader_cls(loader), dup=dup)
    if fast is not None:
        if dup and dup[0] and duplicates is not None:
            duplicates.extend(duplicate_keys(text, loader=loader))
        return fast
    check(text, source=source, max_bytes=max_bytes)
    try:
        docs = list(yaml.load_all(text, Loader=_loader_cls(loader)))
        if duplicates is not None:
            duplicates.extend(duplicate_keys(text, loader=loader))
        return docs
    except RecursionError:
        raise YamlLimitError(f"{source}: nesting deeper than {MAX_DEPTH} levels") from None


def error_text(e: yaml.YAMLError) -> str:
    """A YAML error in one line, ``line L, column C: problem``: PyYAML's own text spans three
    lines (context, problem, mark), and its first line alone ("while increasing flow level")
    names neither the problem nor where it is."""
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = getattr(e, "problem", None) or getattr(e, "context", None) or " ".join(str(e).split())
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark is not None else problem
