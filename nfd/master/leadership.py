"""nfd-master's leader election: one replica runs the updaters, the others keep warm caches.

Upstream's Lease (``nfd-master.nfd.kubernetes.io`` in the master's namespace). After losing it a
replica stands by again instead of exiting, so a brief API outage does not restart the pod.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from nfd.k8s.lease import LeaderElector

if TYPE_CHECKING:
    from nfd.k8s.client import ApiClient
    from nfd.master.config import LeaderElectionConfig

log = logging.getLogger("nfd.master")

LEASE_NAME = "nfd-master.nfd.kubernetes.io"


async def elect_until(
    stop: asyncio.Event,
    *,
    elector_factory: Callable[[], Any],
    is_leader: Callable[[], bool],
    step_down: Callable[[], Awaitable[None]],
    retry_period: Callable[[], float],
) -> None:
    """Run elections until ``stop`` is set: each ``elector_factory()`` is a fresh
    nfd.k8s.lease.LeaderElector wired to the master's become_leader/step_down; when one fails
    the next starts after ``retry_period()`` seconds (the config's, as reloaded)."""
    while not stop.is_set():
        elector = elector_factory()
        run = asyncio.create_task(elector.run())
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({run, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if stopped.done():
            run.cancel()
            try:
                await run
            except (asyncio.CancelledError, Exception):
                pass
            if is_leader():
                await step_down()
            await elector.release()
            return
        stopped.cancel()
        try:
            run.result()
        except Exception:
            log.exception("leader election failed; retrying")
            await asyncio.sleep(retry_period())


def lease_identity() -> str:
    """The holder identity upstream writes: the node's name (or the host's) and a fresh UUID."""
    return f"{os.environ.get('NODE_NAME', '') or os.uname().nodename}_{uuid.uuid4()}"


def lease_electors(
    write_api: ApiClient,
    *,
    namespace: str,
    identity: str,
    timings: Callable[[], LeaderElectionConfig],
    on_started_leading: Callable[[], Awaitable[None]],
    on_stopped_leading: Callable[[], Awaitable[None]],
) -> Callable[[], Any]:
    """A factory of LeaderElectors on upstream's Lease, each with the ``timings()`` of the
    config in force at the time (a reload applies from the next election)."""
    def make() -> Any:
        le = timings()
        return LeaderElector(
            write_api,
            name=LEASE_NAME,
            namespace=namespace,
            identity=identity,
            lease_duration_s=le.lease_duration,
            renew_deadline_s=le.renew_deadline,
            retry_period_s=le.retry_period,
            on_started_leading=on_started_leading,
            on_stopped_leading=on_stopped_leading,
        )

    return make
