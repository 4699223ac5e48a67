"""A Go text/template engine with Sprig functions, for NodeFeatureRule labelsTemplate/varsTemplate.

    tmpl = parse(src, name="")      # TemplateError on syntax errors, unknown/forbidden functions, > 64 KiB
    out = tmpl.execute(data)        # TemplateError on execution errors (missingkey=error)

Templates are sandboxed: they see only the data passed in and the function map (no
environment, files, network, or Python attributes).
"""

from __future__ import annotations

from .errors import TemplateError
from .template import MAX_TEMPLATE_SIZE, Template, parse

__all__ = ["MAX_TEMPLATE_SIZE", "Template", "TemplateError", "parse"]
