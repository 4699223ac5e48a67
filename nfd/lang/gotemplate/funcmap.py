"""The function map templates see: text/template builtins overlaid with Sprig (as Go's Funcs does)."""

from __future__ import annotations

from .builtins import BUILTINS
from .funcs import Func
from .sprig import SPRIG

# Removed upstream (NFD v0.19, #2507): they read the master's environment or hit the network.
FORBIDDEN = frozenset({"env", "expandenv", "getHostByName"})

FUNCS: dict[str, Func] = {**BUILTINS, **{k: v for k, v in SPRIG.items() if k not in FORBIDDEN}}
