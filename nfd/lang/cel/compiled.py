"""What the checker hands around: a compiled node (``_C``: type, closure, Python source, constant
value), the variables every expression sees, and what the Kubernetes-library hooks
(``k8scalls``) use of the compiler (``Checker``). Its own module so that the compiler imports the
hooks and the hooks never import the compiler: knowledge flows one way."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from nfd.lang.cel.runtime import Fn
from nfd.lang.cel.types import DYN, STRING, Type, list_of, map_of

if TYPE_CHECKING:
    from nfd.lang.cel.library import Overload
    from nfd.lang.cel.syntax import Call, Node

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


class Checker(Protocol):
    """The compiler as the Kubernetes-library hooks (``k8scalls``) see it: the macro variables
    in reach (``scope``) and the declared ones, a name for an object in the generated source
    (``k``), compiling a sub-expression, and resolving a call among its overloads."""

    scope: dict[str, Type]
    declared: dict[str, Type]

    def k(self, obj: Any) -> str: ...

    def compile(self, n: Node) -> _C: ...

    def overload(self, n: Call, name: str, overloads: list[Overload], recv: _C | None, args: list[_C]) -> _C: ...
