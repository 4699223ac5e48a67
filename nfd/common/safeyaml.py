"""YAML (and JSON, a subset) with bounded size, nesting and aliases, for every file nfd reads.

PyYAML's composers recurse once per nesting level: the pure-Python one raises RecursionError
and the C one (libyaml via ``_yaml``) overflows the C stack and kills the process (seen at
30,000 levels). So a document's events are read first, by the parser alone (a state machine,
no recursion), counting depth and aliases; only a document within the limits is then built.
A violation is a ``YamlLimitError`` (a ValueError) naming the source, line and limit.

Limits (docs/reliability.md): ``MAX_DEPTH`` nested collections, ``MAX_ALIASES`` alias uses
(each alias of a big anchor multiplies what a later JSON encoding must write), and a size
given by the caller.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_DEPTH = 100
MAX_ALIASES = 1000
MAX_BYTES = 8 << 20


class YamlLimitError(ValueError):
    """The document is beyond a limit; the message names the source and the limit."""


def _parser_cls() -> Any:
    return getattr(yaml, "CParser", None)


def _loader_cls(loader: Any) -> Any:
    if loader is not None:
        return loader
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def check(text: str, *, source: str, max_bytes: int = MAX_BYTES) -> None:
    """Raise YamlLimitError if ``text`` is too big, too deep or uses too many aliases."""
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


def _at(ev: Any) -> str:
    mark = getattr(ev, "start_mark", None)
    return f"line {mark.line + 1}: " if mark is not None else ""


def safe_load(text: str, *, source: str, max_bytes: int = MAX_BYTES, loader: Any = None) -> Any:
    """One document, within the limits. YAML errors are yaml.YAMLError as usual."""
    check(text, source=source, max_bytes=max_bytes)
    try:
        return yaml.load(text, Loader=_loader_cls(loader))
    except RecursionError:  # not expected after check(); never a traceback
        raise YamlLimitError(f"{source}: nesting deeper than {MAX_DEPTH} levels") from None


def safe_load_all(text: str, *, source: str, max_bytes: int = MAX_BYTES, loader: Any = None) -> list[Any]:
    """Every document, within the limits (counted over the whole stream)."""
    check(text, source=source, max_bytes=max_bytes)
    try:
        return list(yaml.load_all(text, Loader=_loader_cls(loader)))
    except RecursionError:
        raise YamlLimitError(f"{source}: nesting deeper than {MAX_DEPTH} levels") from None
