"""Errors raised by the Go-template engine."""

from __future__ import annotations

from typing import Any


class TemplateError(Exception):
    """A parse or execution error; the message is one line, in Go's wording where practical."""


class ExecError(Exception):
    """Internal: an execution failure tied to a node; formatted with its position by the executor."""

    def __init__(self, node: Any, message: str) -> None:
        super().__init__(message)
        self.node = node
        self.message = message
        self.tmpl_name: str | None = None  # set by the innermost {{template}} it escapes


class FuncError(Exception):
    """Raised by template functions; the executor reports it as `error calling NAME: ...`."""


class BreakLoop(Exception):  # noqa: N818 - control flow, not an error
    """Internal: {{break}}."""


class ContinueLoop(Exception):  # noqa: N818 - control flow, not an error
    """Internal: {{continue}}."""
