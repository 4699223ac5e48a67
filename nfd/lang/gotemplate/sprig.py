"""Sprig functions (Masterminds/sprig v3 TxtFuncMap), assembled from the topic modules."""

from __future__ import annotations

from typing import Any

from . import funcs as K
from .errors import FuncError
from .funcs import Func
from .gosemver import new_version, semver_compare
from .sprig_collections import COLLECTION_FUNCS
from .sprig_date import DATE_FUNCS
from .sprig_math import MATH_FUNCS
from .sprig_misc import MISC_FUNCS
from .sprig_regex import REGEX_FUNCS
from .sprig_strings import STRING_FUNCS


def _unsupported(name: str) -> Func:
    def f(*args: Any) -> Any:
        raise FuncError(f"{name} is not supported by this implementation")

    return Func(f, (), K.ANY)


SPRIG: dict[str, Func] = {
    **STRING_FUNCS,
    **COLLECTION_FUNCS,
    **MATH_FUNCS,
    **MISC_FUNCS,
    **REGEX_FUNCS,
    **DATE_FUNCS,
    "semver": Func(new_version, (K.STR,)),
    "semverCompare": Func(semver_compare, (K.STR, K.STR)),
}
