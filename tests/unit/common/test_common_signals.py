from __future__ import annotations

import asyncio
import os
import signal

from nfd.common.signals import run_until_signal


def test_run_until_signal() -> None:
    async def returns() -> int:
        return 3

    async def stopped() -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.sleep(60)
        return 1

    assert run_until_signal(returns()) == 3
    assert run_until_signal(stopped()) == 0
