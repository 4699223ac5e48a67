"""Evaluations share one slice of the loop (nfd.master.evalsched); the background one waits."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

import nfd.master.evalsched as evalsched
from nfd.master.evalsched import EvalSlicer

STEP_S = 0.005  # what each rule "costs" on the fake clock


def test_updaters_share_one_slice_so_the_loop_runs_every_slice(monkeypatch: Any) -> None:
    clock = [0.0]
    monkeypatch.setattr(evalsched.time, "perf_counter", lambda: clock[0])
    steps_done = [0]

    def node(n_rules: int) -> Generator[None, None, int]:
        for _ in range(n_rules):
            clock[0] += STEP_S
            steps_done[0] += 1
            yield
        return n_rules

    async def main() -> list[int]:
        slicer = EvalSlicer(slice_s=0.02)
        gaps: list[int] = []
        done = asyncio.Event()

        async def loop_probe() -> None:  # how many rules ran between two turns of the loop
            last = 0
            while not done.is_set():
                await asyncio.sleep(0)
                gaps.append(steps_done[0] - last)
                last = steps_done[0]

        probe = asyncio.create_task(loop_probe())
        results = await asyncio.gather(*(slicer.drive(node(40)) for _ in range(10)))
        done.set()
        await probe
        assert results == [40] * 10
        return gaps

    gaps = asyncio.run(main())
    # a slice of 20 ms at 5 ms a rule: at most 5 rules between turns, whichever updater runs
    # them (each updater slicing on its own ran 10 x 4)
    assert max(gaps) <= 5, max(gaps)


def test_background_evaluation_waits_for_the_foreground() -> None:
    order: list[str] = []

    def node(tag: str, n: int) -> Generator[None, None, None]:
        for _ in range(n):
            order.append(tag)
            yield

    async def main() -> None:
        slicer = EvalSlicer(background_share=1.0)
        fg = asyncio.create_task(slicer.drive(node("fg", 30)))
        await asyncio.sleep(0)  # the foreground has begun
        bg = asyncio.create_task(slicer.drive(node("bg", 3), background=True))
        await asyncio.gather(fg, bg)

    asyncio.run(main())
    assert order == ["fg"] * 30 + ["bg"] * 3
