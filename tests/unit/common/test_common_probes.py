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
    answers: list[tuple[float, int, bytes]] = []

    async def main() -> tuple[float, float]:
        hb = Heartbeat(period_s=0.05)
        hb.start()
        server = ProbeServer(0, {"/healthz": liveness_route(hb, stale_s=0.5), "/other": httpserver.healthz},
                             host="127.0.0.1")
        try:
            await asyncio.sleep(0.1)

            def ask() -> None:
                time.sleep(0.1)
                code, body = get(server.port)
                answers.append((time.monotonic(), code, body))

            # the loop thread computes in pure Python for 1 s (it never returns to the loop):
            # the probe is answered meanwhile, "ok" at first (the last beat is recent) ...
            t = threading.Thread(target=ask)
            t.start()
            end = time.monotonic() + 1.0
            n = 0
            while time.monotonic() < end:
                n += 1
            busy_end = time.monotonic()
            t.join()
            # ... and 503 once the loop has not beaten for stale_s: asked after 0.8 s of a block
            t = threading.Thread(target=lambda: (time.sleep(0.8), answers.append((0.0, *get(server.port)))))
            t.start()
            time.sleep(1.2)  # blocks the loop
            t.join()
            await asyncio.sleep(0.2)  # the loop runs again and beats
            answers.append((0.0, *get(server.port)))
            answers.append((0.0, *get(server.port, "/nope")))
            return busy_end, 0.0
        finally:
            hb.stop()
            server.close()

    busy_end, _ = asyncio.run(main())
    (t_ok, code, body), (_, stale_code, stale_body), (_, again, _), (_, missing, _) = answers
    assert code == 200 and body == b"ok" and t_ok < busy_end  # answered before the loop was free
    assert stale_code == 503 and b"event loop stalled for" in stale_body
    assert again == 200
    assert missing == 404
