"""A kubelet-like prober: GET a URL every ``interval_s`` from a thread, recording each answer's
latency, the failures and the longest silence (the longest time between two successful
answers, or since the last one). Used by the e2e tests and benchmarks/bench_hostile.py."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request


class Prober:
    def __init__(self, url: str, *, interval_s: float = 0.2, timeout_s: float = 5.0) -> None:
        self.url = url
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.latencies: list[float] = []
        self.slow: list[str] = []  # "HH:MM:SS.mmm 1.23s" for answers slower than 0.5 s
        self.failures: list[str] = []
        self.longest_silence = 0.0
        self._last_ok: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self, *, wait_first_s: float = 60.0) -> Prober:
        """Start probing once the URL first answers (a process still starting is not silent)."""
        deadline = time.monotonic() + wait_first_s
        while True:
            try:
                with urllib.request.urlopen(self.url, timeout=self.timeout_s) as r:
                    r.read()
                break
            except (OSError, urllib.error.URLError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self._last_ok = time.monotonic()
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                with urllib.request.urlopen(self.url, timeout=self.timeout_s) as r:
                    r.read()
                ok = time.monotonic()
                self.latencies.append(ok - t0)
                if ok - t0 > 0.5:
                    wall = time.time() - (ok - t0)
                    self.slow.append(f"{time.strftime('%H:%M:%S', time.localtime(wall))}.{int(wall % 1 * 1000):03d} "
                                     f"{ok - t0:.2f}s")
                if self._last_ok is not None:
                    self.longest_silence = max(self.longest_silence, ok - self._last_ok)
                self._last_ok = ok
            except Exception as e:  # noqa: BLE001 - a failed probe is what is counted
                self.failures.append(f"{time.strftime('%H:%M:%S')} {e!r}")
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.timeout_s + 5)
        if self._last_ok is not None:
            self.longest_silence = max(self.longest_silence, time.monotonic() - self._last_ok)

    def percentile(self, p: float) -> float:
        if not self.latencies:
            return float("nan")
        xs = sorted(self.latencies)
        return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]

    def summary(self) -> str:
        return (f"{len(self.latencies)} probes, {len(self.failures)} failed; latency p50 {self.percentile(50) * 1000:.1f} ms, "
                f"p99 {self.percentile(99) * 1000:.1f} ms, max {max(self.latencies, default=float('nan')) * 1000:.1f} ms; "
                f"longest silence {self.longest_silence:.2f}s" + (f"; slow: {', '.join(self.slow[:5])}" if self.slow else ""))
