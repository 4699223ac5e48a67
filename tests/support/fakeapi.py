"""What the unit tests' in-memory API fakes share with ApiClient besides their verbs."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any


def merge_patch(obj: Any, patch: Any) -> Any:
    """A JSON merge patch applied (RFC 7386), as the API server applies one."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(obj) if isinstance(obj, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


class RequestOptions:
    """Maps ApiClient.request's ``decode`` and ``started`` onto a fake's ``_request``, which
    answers parsed objects: ``decode=False`` gets their JSON bytes, ``started`` is set at once."""

    async def _request(self, method: str, path: str, **kw: Any) -> Any:
        raise NotImplementedError

    async def request(
        self, method: str, path: str, *, decode: bool = True, started: asyncio.Event | None = None, **kw: Any
    ) -> Any:
        if started is not None:
            started.set()
        out = await self._request(method, path, **kw)
        return out if decode else json.dumps(out).encode()

    async def server_minor(self) -> int | None:
        """ApiClient.server_minor: unknown, as when /version cannot be read."""
        return None
