"""``nfd rules validate`` on a large rule file, and the compile cost of Go regexps with big classes.

Part 1 writes a generated file of ``--rules`` rules (default 40,000 in 40 NodeFeatureRule
objects, about 7 MB: one label and one InRegexp expression each, as a generated fleet file
would hold), then prints for each phase of validation (YAML load with its size, depth and alias
checks, compile, lint) the process CPU time and the peak of Python allocations (tracemalloc, a second
pass), and first, for the whole CLI (``python -m nfd.cli rules validate``, a subprocess) its wall
time, CPU time and peak RSS.

Part 2 compiles ``\\pL``, ``^\\pL{100}$`` and ``^\\pL{1000}$`` (and a plain pattern beside them)
with nfd.lang.goregex, uncached, and prints the first compile in the process (which also reads
a class's table off RE2 when the pattern is compiled over a reduced alphabet) and ms per
compile; with Go installed, Go's ``regexp.Compile`` in the same run (tests/tools/goregex
``compile`` mode) and the ratio.

Run: ``python benchmarks/bench_validate.py [--rules 40000] [--per-object 1000] [--skip-cli]``.
CPU time, not wall time, is the figure to compare on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

REGEX_CASES = ["^linux-[0-9]+$", r"\pL", r"^\pL{100}$", r"^\pL{1000}$"]


def rule_file(rules: int, per_object: int) -> str:
    out: list[str] = []
    for o in range((rules + per_object - 1) // per_object):
        out.append(f"---\napiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata:\n  name: bulk-{o}\nspec:\n  rules:\n")
        for i in range(o * per_object, min(rules, (o + 1) * per_object)):
            out.append(
                f"  - name: r{i}\n"
                f'    labels: {{example.com/f{i}: "true"}}\n'
                "    matchFeatures:\n"
                "    - feature: kernel.version\n"
                f'      matchExpressions: {{full: {{op: InRegexp, value: ["^5\\\\.{i % 20}\\\\."]}}}}\n'
            )
    return "".join(out)


def _phases(path: str) -> list[tuple[str, Any]]:
    from nfd.cli.rules import _loader
    from nfd.common import safeyaml
    from nfd.rules.engine import compile_nodefeaturerule
    from nfd.rules.lint import rule_set_problems

    state: dict[str, Any] = {}

    def read() -> None:
        with open(path, encoding="utf-8") as fh:
            state["text"] = fh.read()

    def load() -> None:
        state["docs"] = list(safeyaml.safe_load_all(state["text"], source=path, loader=_loader()))

    def compile_() -> None:
        state["sets"] = [compile_nodefeaturerule(d) for d in state["docs"]]

    def lint() -> None:
        state["problems"] = sum(len(rule_set_problems(rs)) for rs in state["sets"])

    return [("read", read), ("yaml load", load), ("compile", compile_), ("lint", lint)]


def validate_phases(path: str) -> None:
    from nfd.lang.goregex import compile_go

    print(f"{'phase':<12} {'CPU s':>8} {'peak MiB (tracemalloc)':>24}")
    cpu: list[float] = []
    for _name, fn in _phases(path):
        t0 = time.process_time()
        fn()
        cpu.append(time.process_time() - t0)
    compile_go.cache_clear()
    peaks: list[float] = []
    tracemalloc.start()
    for _name, fn in _phases(path):
        tracemalloc.reset_peak()
        fn()
        peaks.append(tracemalloc.get_traced_memory()[1] / 2**20)
    tracemalloc.stop()
    for (name, _fn), c, m in zip(_phases(path), cpu, peaks, strict=True):
        print(f"{name:<12} {c:>8.2f} {m:>24.1f}")
    print(f"{'total':<12} {sum(cpu):>8.2f}")


def validate_cli(path: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "nfd.cli", "rules", "validate", "-f", path], env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(
        f"CLI: exit {done.returncode} ({done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ''}); "
        f"wall {wall:.2f} s, CPU {cpu:.2f} s, peak RSS {after.ru_maxrss / 1024:.0f} MiB"
    )


def _go_compile_ms(patterns: list[str], rounds: int) -> list[float] | str:
    from tests.support.goregex_truth import build_tool

    built = build_tool()
    if isinstance(built, str):
        return built
    _version, binary = built
    cases = "".join(json.dumps({"pattern": p, "rounds": rounds}) + "\n" for p in patterns)
    out = subprocess.run([str(binary), "compile"], input=cases, capture_output=True, text=True)
    if out.returncode != 0:
        return f"go tool: {out.stderr.strip()[:200]}"
    return [json.loads(line)["ns"] / 1e6 for line in out.stdout.splitlines()]


def regex_compile(rounds: int, with_go: bool) -> None:
    from nfd.lang.goregex import GoRegexp

    mine: list[float] = []
    first: list[float] = []
    for p in REGEX_CASES:
        t0 = time.process_time()
        GoRegexp(p)  # the first one in this process also reads the classes' tables off RE2
        first.append((time.process_time() - t0) * 1e3)
        n = max(1, rounds if "{1000}" not in p else rounds // 20)
        t0 = time.process_time()
        for _ in range(n):
            GoRegexp(p)
        mine.append((time.process_time() - t0) / n * 1e3)
    go = _go_compile_ms(REGEX_CASES, rounds) if with_go else "skipped (--no-go)"
    print(f"{'pattern':<18} {'nfd first ms':>13} {'nfd ms/compile':>15} {'Go ms/compile':>14} {'ratio':>7}")
    for i, p in enumerate(REGEX_CASES):
        g = go[i] if isinstance(go, list) else None
        ratio = f"{mine[i] / g:.0f}x" if g else "-"
        print(f"{p:<18} {first[i]:>13.2f} {mine[i]:>15.3f} {(f'{g:.3f}' if g is not None else '-'):>14} {ratio:>7}")
    if isinstance(go, str):
        print(f"Go: {go}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rules", type=int, default=40000)
    ap.add_argument("--per-object", type=int, default=1000)
    ap.add_argument("--skip-cli", action="store_true", help="no CLI subprocess run")
    ap.add_argument("--regex-rounds", type=int, default=200)
    ap.add_argument("--no-go", action="store_true", help="do not build or run the Go regexp tool")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rules.yaml")
        text = rule_file(args.rules, args.per_object)
        Path(path).write_text(text, encoding="utf-8")
        print(f"validate: {args.rules} rules in {len(text) / 1e6:.1f} MB")
        if not args.skip_cli:  # first: a child forked from a big parent would count its pages
            validate_cli(path)
        validate_phases(path)
    print()
    regex_compile(args.regex_rounds, not args.no_go)


if __name__ == "__main__":
    main()
