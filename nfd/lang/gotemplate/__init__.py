"""A Go text/template engine with Sprig functions, for NodeFeatureRule labelsTemplate/varsTemplate.

    tmpl = parse(src, name="")      # TemplateError on syntax errors, unknown/forbidden functions, > 64 KiB
    out = tmpl.execute(data)        # TemplateError on execution errors (missingkey=error)
                                    # or past the execution budget (MAX_STEPS, MAX_OUTPUT)

Templates are sandboxed: they see only the data passed in and the function map (no
environment, files, network, or Python attributes).
"""

from __future__ import annotations

from .budget import MAX_OUTPUT, MAX_STEPS
from .errors import TemplateError
from .template import MAX_TEMPLATE_SIZE, Template, parse
from .values import TypedList, TypedMap, typed_list

__all__ = [
    "MAX_OUTPUT",
    "MAX_STEPS",
    "MAX_TEMPLATE_SIZE",
    "Template",
    "TemplateError",
    "TypedList",
    "TypedMap",
    "parse",
    "typed_list",
]
