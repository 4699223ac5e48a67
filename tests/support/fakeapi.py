"""What the unit tests' in-memory API fakes share with ApiClient besides their verbs."""

from __future__ import annotations

import asyncio
import json
from typing import Any


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
