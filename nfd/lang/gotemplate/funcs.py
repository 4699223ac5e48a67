"""Function descriptors: a Python callable plus the Go parameter types the executor enforces."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Parameter kinds: the Go types template arguments are converted/checked against.
ANY = "any"  # interface{}
STR = "str"  # string
INT = "int"  # int / int64
FLOAT = "float"  # float64
BOOL = "bool"
LIST = "list"  # []interface{} (any Python list is accepted)
MAP = "map"  # map[string]interface{} (any dict is accepted)
STRS = "strs"  # []string

GO_TYPE = {
    ANY: "interface {}",
    STR: "string",
    INT: "int",
    FLOAT: "float64",
    BOOL: "bool",
    LIST: "[]interface {}",
    MAP: "map[string]interface {}",
    STRS: "[]string",
}


@dataclass(frozen=True)
class Func:
    """A template function. `variadic` is the kind of trailing `...` arguments, if any."""

    fn: Callable[..., Any]
    params: tuple[str, ...] = ()
    variadic: str | None = None
    builtin: bool = False
