"""CEL expressions in rules (``matchCEL``): compiled once at validation, evaluated per node.

Interface agreed with the rule engine::

    m = compile_expressions(exprs, path="spec.rules[0].matchCEL")  # ValidationError on bad input
    matched, failed = m.evaluate(features, node_name="node-1")       # CelEvalError on runtime error

Expressions are parsed and compiled by ``nfd.lang.cel`` into generated Python (the fast path,
a few µs per node) backed by closures with CEL's exact error semantics (run only when the fast
path hits an error); celpy's own evaluators take milliseconds.
Variables: ``flags``, ``attributes``, ``instances`` (the node's features), ``node.name`` and
``devices`` (the node's DRA devices, typed as the DRA scheduler's ``device``; docs/dra.md).
See docs/cel.md.
"""

from __future__ import annotations

import re
from typing import Any

from nfd.api.errors import ValidationError
from nfd.api.features import Features
from nfd.lang.cel import (
    DEFAULT_STEP_LIMIT,
    Act,
    CelSyntaxError,
    CostLimitExceeded,
    Fn,
    Program,
    compile_program,
    type_name,
)
from nfd.rules.devices import NODE_DEVICES

__all__ = ["CelEvalError", "CelMatcher", "compile_expressions"]


class CelEvalError(Exception):
    """A runtime error in one expression; it fails the rule that holds it, nothing else."""


class CelMatcher:
    """The compiled ``matchCEL`` list of one rule; all expressions must be true (AND)."""

    __slots__ = ("path", "sources", "_programs", "step_limit")

    def __init__(self, path: str, programs: list[Program], *, step_limit: int = DEFAULT_STEP_LIMIT) -> None:
        self.path = path
        self.sources = [p.source for p in programs]
        self._programs = [(p.source, p.fast, p.fn) for p in programs]
        self.step_limit = step_limit

    def __len__(self) -> int:
        return len(self._programs)

    def evaluate(self, features: Features, *, node_name: str) -> tuple[bool, str | None]:
        """(True, None) when every expression is true, else (False, the first false expression).

        Evaluation stops at the first false expression, like ``matchFeatures`` terms.
        """
        act = Act(features, {"name": node_name}, self.step_limit, NODE_DEVICES.get())
        for i, (src, fast, fn) in enumerate(self._programs):
            r = self._run(i, src, fast, fn, act)
            if r is not True:
                if r is False:
                    return False, src
                raise CelEvalError(f"{self.path}[{i}] {_short(src)}: result is {type_name(r)}, not bool")
        return True, None

    def _run(self, i: int, src: str, fast: Fn | None, fn: Fn, act: Act) -> Any:
        act.budget = self.step_limit
        try:
            if fast is not None:
                try:
                    return fast(act)
                except Exception:  # a CEL error somewhere: the exact path decides (it may absorb it)
                    act.budget = self.step_limit
                    act.v.clear()
            return fn(act)
        except CostLimitExceeded:
            raise CelEvalError(
                f"{self.path}[{i}] {_short(src)}: evaluation exceeded the limit of {self.step_limit} steps"
            ) from None
        except RecursionError:
            raise CelEvalError(f"{self.path}[{i}] {_short(src)}: evaluation nested too deeply") from None
        except Exception as e:  # CelError, or a Python error from a function: fail this rule only
            raise CelEvalError(f"{self.path}[{i}] {_short(src)}: {e}{map_hint(src)}") from None


# a field selection on a feature map (``attributes.kernel.version``; not a method: ``.exists(``)
_FIELD_ON_FEATURES = re.compile(r"(?<![\w.`])(flags|attributes|instances)((?:\.[A-Za-z_][A-Za-z0-9_]*(?![\w(]))+)")


def map_hint(src: str) -> str:
    """How to index the feature maps, where ``src`` selects a field of one
    (``attributes.kernel.version.major``): feature names hold a dot, so ``.kernel`` reads the
    key "kernel", which no feature has. "" when ``src`` does not."""
    m = _FIELD_ON_FEATURES.search(src)
    if m is None:
        return ""
    var, segs = m.group(1), m.group(2)[1:].split(".")
    wrote = f"{var}.{'.'.join(segs)}"
    if len(segs) == 1:
        good = f'{var}["{segs[0]}.<feature>"]'
    else:
        good = f'{var}["{segs[0]}.{segs[1]}"]' + "".join(f'["{x}"]' for x in segs[2:3] if var == "attributes")
        if len(segs) > 2 and var != "attributes":
            good += "." + ".".join(segs[2:])
        elif len(segs) > 3:
            good += "." + ".".join(segs[3:])
    return (f"; {var} is a map keyed by feature name (<domain>.<feature>, with a dot): index it, "
            f"{good}, not {wrote}")


def _short(src: str) -> str:
    """The expression for a one-line message: quoted, and cut if long."""
    return repr(src if len(src) <= 120 else src[:117] + "...")


def compile_expressions(exprs: list[str], *, path: str, step_limit: int = DEFAULT_STEP_LIMIT) -> CelMatcher:
    """Parse, type-check and compile each expression.

    Raises ValidationError with path ``{path}[i]`` and a message starting ``line:col:``.
    """
    if not isinstance(exprs, list):
        raise ValidationError(path, "must be a list of CEL expression strings")
    programs: list[Program] = []
    for i, src in enumerate(exprs):
        p = f"{path}[{i}]"
        if not isinstance(src, str) or not src.strip():
            raise ValidationError(p, "must be a non-empty CEL expression string")
        try:
            programs.append(compile_program(src))
        except CelSyntaxError as e:
            raise ValidationError(p, f"{e} in {_short(src)}{map_hint(src)}") from None
        except RecursionError:
            raise ValidationError(p, "expression is nested too deeply") from None
    return CelMatcher(path, programs, step_limit=step_limit)
