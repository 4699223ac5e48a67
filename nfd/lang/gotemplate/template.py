"""The compiled template object: parse once, execute many times."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import budget
from .compiler import Compiler, State, Walk
from .errors import BreakLoop, ContinueLoop, ExecError, TemplateError
from .funcmap import FORBIDDEN, FUNCS
from .funcs import Func
from .nodes import ListNode, Node
from .parser import parse_trees
from .values import valid_text

MAX_TEMPLATE_SIZE = 65536  # bytes; upstream NFD rejects larger templates


class _FuncNames:
    """Function names the parser accepts; forbidden Sprig names are reported as undefined."""

    def __init__(self, funcs: Mapping[str, Func]) -> None:
        self.funcs = funcs

    def __contains__(self, name: object) -> bool:
        return name in self.funcs and name not in FORBIDDEN


class Template:
    """A parsed and compiled Go text/template (with Sprig functions, missingkey=error)."""

    __slots__ = ("name", "source", "_trees", "_compiled", "_main", "max_steps", "max_output", "_budgeted", "_limits")

    def __init__(
        self,
        name: str,
        source: str,
        trees: dict[str, ListNode],
        compiled: dict[str, Walk],
        *,
        budgeted: bool = True,
        max_steps: int = budget.MAX_STEPS,
        max_output: int = budget.MAX_OUTPUT,
    ) -> None:
        self.name = name
        self.source = source
        self._trees = trees
        self._compiled = compiled
        self._main = compiled[name]
        self.max_steps = max_steps
        self.max_output = max_output
        self._budgeted = budgeted  # some function reads budget.current
        self._limits = (max_steps, max_output)

    def execute(
        self, data: Any, *, max_steps: int | None = None, max_output: int | None = None,
        steps_used: list[int] | None = None,
    ) -> str:
        """Run the template on plain data (dicts, lists, scalars); raises TemplateError.

        The execution budget (see budget.py) is the template's unless overridden here.
        ``steps_used`` gets the steps the execution took appended, whether it succeeded or not.
        """
        if max_steps is None and max_output is None:
            limits = self._limits
        else:
            limits = (
                self.max_steps if max_steps is None else max_steps,
                self.max_output if max_output is None else max_output,
            )
        st = State(self.name, self._compiled, data, limits)
        token = budget.current.set(st) if self._budgeted else None
        try:
            self._main(st, data)
        except ExecError as e:
            raise TemplateError(self._format(e, e.tmpl_name or self.name)) from None
        except RecursionError:
            raise TemplateError(f"template: {self.name}: execution too deeply nested") from None
        except (BreakLoop, ContinueLoop):  # pragma: no cover - the parser keeps these inside range
            raise TemplateError(f"template: {self.name}: break/continue outside range") from None
        except Exception as e:  # an engine bug or resource exhaustion must not escape as a crash
            raise TemplateError(f"template: {self.name}: internal error: {type(e).__name__}: {e}") from None
        finally:
            if token is not None:
                budget.current.reset(token)
            if steps_used is not None:
                steps_used.append(limits[0] - max(st.steps, 0))
        text = valid_text("".join(st.out))
        if len(text) > limits[1]:
            raise TemplateError(f"template: {self.name}: {st.output_message()}")
        return text

    def defined_templates(self) -> list[str]:
        """Names of the templates in this source ({{define}}/{{block}} plus the main one)."""
        return sorted(self._trees)

    def _format(self, e: ExecError, tmpl_name: str) -> str:
        node: Node | None = e.node
        if node is None:
            return f"template: {tmpl_name}: {e.message}"
        pos = node.pos
        src = self.source
        nl = src.rfind("\n", 0, pos)
        col = len(src[nl + 1 : pos].encode("utf-8"))
        line = src.count("\n", 0, pos) + 1
        ctx = str(node)
        return f'template: {self.name}:{line}:{col}: executing "{tmpl_name}" at <{ctx}>: {e.message}'


def parse(
    src: str, *, name: str = "", max_steps: int = budget.MAX_STEPS, max_output: int = budget.MAX_OUTPUT
) -> Template:
    """Parse and compile template source; raises TemplateError on any syntax problem.

    max_steps/max_output: the execution budget of every execute() (see budget.py).
    """
    size = len(src.encode("utf-8"))
    if size > MAX_TEMPLATE_SIZE:
        raise TemplateError(
            f"template exceeds maximum allowed size: {size} bytes > {MAX_TEMPLATE_SIZE} limit"
        )
    try:
        trees = parse_trees(src, name, _FuncNames(FUNCS))
        compiler = Compiler(FUNCS, trees)
        compiled = compiler.compile_all()
    except RecursionError:
        raise TemplateError(f"template: {name}: template nested too deeply") from None
    return Template(
        name, src, trees, compiled, budgeted=compiler.uses_budget, max_steps=max_steps, max_output=max_output
    )
