"""The DRA devices of the node whose rules are being evaluated (the CEL ``devices`` variable).

A context variable, set by the rule engine around each rule and read by ``matchCEL``: nodes
evaluated interleaved on one event loop never see each other's devices, and the engine's
signature stays the same for callers without DRA. Kept apart so the worker's custom rules do
not import the CEL compiler.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

NODE_DEVICES: ContextVar[Sequence[dict[str, Any]]] = ContextVar("nfd_node_devices", default=())
