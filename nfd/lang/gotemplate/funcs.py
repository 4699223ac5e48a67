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
# Parameter types of the Go methods templates can call on Sprig results.
VERSION = "*semver.Version"
TIME = "time.Time"
DURATION = "time.Duration"  # an int64 kind: integer constants convert, an int value does not
LOCATION = "*time.Location"
METHOD_KINDS = (ANY, STR, INT, BOOL, VERSION, TIME, DURATION, LOCATION)

GO_TYPE = {
    ANY: "interface {}",
    STR: "string",
    INT: "int",
    FLOAT: "float64",
    BOOL: "bool",
    LIST: "[]interface {}",
    MAP: "map[string]interface {}",
    STRS: "[]string",
    VERSION: VERSION,
    TIME: TIME,
    DURATION: DURATION,
    LOCATION: LOCATION,
}


@dataclass(frozen=True)
class Func:
    """A template function. `variadic` is the kind of trailing `...` arguments, if any."""

    fn: Callable[..., Any]
    params: tuple[str, ...] = ()
    variadic: str | None = None
    builtin: bool = False


@dataclass(frozen=True)
class Method:
    """A Go method a template can call on a value (the receiver is passed first).

    `bad`: Go's goodFunc complaint for a signature a template cannot call (two results
    whose second is not an error, three results), raised after the argument count check."""

    fn: Callable[..., Any]
    params: tuple[str, ...] = ()
    bad: str | None = None
