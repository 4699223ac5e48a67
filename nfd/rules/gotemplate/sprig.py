"""Sprig functions (Masterminds/sprig v3 TxtFuncMap), assembled from the topic modules."""

from __future__ import annotations

from .funcs import Func

SPRIG: dict[str, Func] = {}
