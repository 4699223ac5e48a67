"""What the checker hands around: a compiled node (``_C``: type, closure, Python source, constant
value) and the variables every expression sees. Its own module so that the compiler and the
Kubernetes-library hooks it calls (``k8scalls``) share them without importing each other."""

from __future__ import annotations

from typing import Any, NamedTuple

from nfd.lang.cel.runtime import Fn
from nfd.lang.cel.types import DYN, STRING, Type, list_of, map_of

# The variables every expression sees. Feature sets missing on a node read as empty, so
# `instances["usb.device"].exists(...)` is false on a node without USB instead of an error.
VARIABLES: dict[str, Type] = {
    "flags": map_of(STRING, list_of(STRING)),
    "attributes": map_of(STRING, map_of(STRING, STRING)),
    "instances": map_of(STRING, list_of(map_of(STRING, STRING))),
    "node": map_of(STRING, STRING),
    # DRA devices as the DRA scheduler's `device` (driver, attributes, capacity, ...)
    "devices": list_of(map_of(STRING, DYN)),
}

_NC = object()  # "not a constant"


class _C(NamedTuple):
    t: Type
    fn: Fn
    py: str  # the same expression as Python source for the fast path (see Compiler.source)
    const: Any = _NC
