"""/healthz from its own thread: answered while the loop thread computes, failing once the
loop's heartbeat is stale (a stuck loop must fail its liveness probe)."""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.error
import urllib.request

from nfd.common import httpserver
from nfd.common.probes import Heartbeat, ProbeServer, liveness_route


def get(port: int, path: str = "/healthz") -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_answers_while_the_loop_thread_computes_and_fails_when_its_heartbeat_stops() -> None:
    """Ordered by events, not by sleeps, so it holds however loaded the machine is: the loop
    thread stays blocked until the probe thread's answer has arrived."""
    answers: dict[str, tuple[int, bytes]] = {}

    def ask_while_blocked(name: str, path: str, *, after_age: float, done: threading.Event) -> None:
        while hb.age() <= after_age:  # the loop thread is blocked: its heartbeat only ages
            time.sleep(0.01)
        answers[name] = get(server.port, path)
        done.set()

    async def main() -> None:
        # the loop thread computes (never returns to the loop) until the probe has answered:
        # /patient (a stale limit far away) answers "ok" meanwhile ...
        done = threading.Event()
        threading.Thread(target=ask_while_blocked, args=("busy", "/patient"),
                         kwargs={"after_age": 0.0, "done": done}).start()
        n, deadline = 0, time.monotonic() + 60  # a bound only for a probe that never answers
        while not done.is_set() and time.monotonic() < deadline:
            n += 1
        assert done.is_set(), "the probe did not answer while the loop thread computed"
        # ... and /healthz answers 503 once the loop has not beaten for stale_s
        done = threading.Event()
        threading.Thread(target=ask_while_blocked, args=("stale", "/healthz"),
                         kwargs={"after_age": STALE_S, "done": done}).start()
        assert done.wait(timeout=60)  # blocks the loop
        while hb.age() > STALE_S:  # the loop runs again and beats
            await asyncio.sleep(0.01)
        answers["again"] = get(server.port)
        answers["missing"] = get(server.port, "/nope")

    STALE_S = 0.5
    hb = Heartbeat(period_s=0.05)
    server = ProbeServer(0, {"/healthz": liveness_route(hb, stale_s=STALE_S),
                             "/patient": liveness_route(hb, stale_s=3600.0), "/other": httpserver.healthz},
                         host="127.0.0.1")

    async def run() -> None:
        hb.start()
        try:
            await main()
        finally:
            hb.stop()
            server.close()

    asyncio.run(run())
    assert answers["busy"] == (200, b"ok")  # answered while the loop thread was busy
    assert answers["stale"][0] == 503 and b"event loop stalled for" in answers["stale"][1]
    assert answers["again"][0] == 200
    assert answers["missing"][0] == 404
