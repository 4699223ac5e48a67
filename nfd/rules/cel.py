"""CEL expressions in rules (``matchCEL``): compile once at validation, evaluate per node.

Interface agreed with the rule engine::

    m = compile_expressions(exprs, path="spec.rules[0].matchCEL")  # ValidationError on bad input
    matched, failed = m.evaluate(features, node_name="node-1")       # CelEvalError on runtime error

TEMPORARY: this first version delegates to celpy's interpreter so the engine can integrate; the
closure compiler in ``nfd.rules.celc`` replaces it.
"""

from __future__ import annotations

from typing import Any

from nfd.api.errors import ValidationError
from nfd.api.features import Features


class CelEvalError(Exception):
    """A runtime error in one expression; it fails the rule that holds it, nothing else."""


class CelMatcher:
    """The compiled ``matchCEL`` list of one rule; all expressions must be true (AND)."""

    __slots__ = ("sources", "_programs")

    def __init__(self, sources: list[str], programs: list[Any]) -> None:
        self.sources = sources
        self._programs = programs

    def __len__(self) -> int:
        return len(self.sources)

    def evaluate(self, features: Features, *, node_name: str) -> tuple[bool, str | None]:
        """(True, None) when every expression is true, else (False, first false expression)."""
        import celpy

        act = {
            "flags": celpy.json_to_cel({k: sorted(v) for k, v in features.flags.items()}),
            "attributes": celpy.json_to_cel(features.attributes),
            "instances": celpy.json_to_cel(features.instances),
            "node": celpy.json_to_cel({"name": node_name}),
        }
        for src, prg in zip(self.sources, self._programs, strict=True):
            try:
                r = prg.evaluate(act)
            except Exception as e:  # celpy raises assorted errors
                raise CelEvalError(f"{src!r}: {e}") from None
            if not isinstance(r, celpy.celtypes.BoolType) or not r:
                return False, src
        return True, None


def compile_expressions(exprs: list[str], *, path: str) -> CelMatcher:
    """Parse and check every expression; raise ValidationError naming ``path[i]`` and line:col."""
    import celpy
    from celpy.celparser import CELParseError

    env = celpy.Environment()
    programs = []
    for i, src in enumerate(exprs):
        if not isinstance(src, str) or not src.strip():
            raise ValidationError(f"{path}[{i}]", "must be a non-empty CEL expression string")
        try:
            programs.append(env.program(env.compile(src)))
        except CELParseError as e:
            raise ValidationError(f"{path}[{i}]", f"{e.line}:{e.column}: syntax error") from None
    return CelMatcher(list(exprs), programs)
