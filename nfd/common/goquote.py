"""Go's ``strconv.Quote`` for text Go programs print quoted (flag defaults in ``-h``, klog's
structured values): the one model in ``nfd.lang.gostd.strconv``."""

from __future__ import annotations

from nfd.lang.gostd.strconv import quote as go_quote

__all__ = ["go_quote"]
