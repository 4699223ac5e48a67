"""Go regexps on RE2: backtracking traps at 10-100 kB beside Go, and regexp-heavy rules per node.

Part 1 times MatchString for patterns that make a backtracking engine polynomial or
exponential, on inputs of 10 kB and 100 kB, for nfd (nfd.lang.goregex) and, when Go is
installed, for Go's regexp in the same run (tests/tools/goregex bench), with the ratio.
``--with-re`` adds Python's ``re`` on the same pattern (Python syntax permitting), in a
subprocess cut off at ``--re-timeout`` seconds: what a backtracking engine does with them.

Part 2 evaluates 20 regexp-heavy rules (InRegexp in matchExpressions and matchName) over
synthetic nodes (benchmarks/bench_rules.py's) and prints microseconds per (node, rule), process
CPU time. ``--repo PATH`` imports nfd from another checkout instead (a before/after figure:
``git worktree add ../before <commit>`` then ``--repo ../before --engine-only``).

Run: ``python benchmarks/bench_regex.py [--sizes 10000,100000] [--nodes 1000] [--with-re]``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# (name, Go pattern, input builder for n bytes): every one is a trap for a backtracking engine.
TRAPS: list[tuple[str, str, Any]] = [
    ("dotstar-4", "a.*a.*a.*a.*b", lambda n: "a" * n),
    ("dotstar-dotstar", ".*.*=.*", lambda n: "x" * n),
    ("path-like", r"^.*\..*/.*-.*$", lambda n: "a." * (n // 2)),
    ("word-space", r"\w*\s?\w*\s?\w*\s?\w*$", lambda n: "a" * (n - 1) + "!"),
    ("nested-plus", "(a+)+$", lambda n: "a" * (n - 1) + "b"),
    ("alt-overlap", "(a|aa)+c", lambda n: "a" * n),
    ("double-plus", "(x+x+)+y", lambda n: "x" * n),
    ("words", r"^(\w+\s?)*$", lambda n: ("word " * (n // 5))[: n - 1] + "!"),
    ("repeat-dotstar", "(.*a){12}", lambda n: "a" * n),
    ("email-like", r"^([a-zA-Z0-9])(([\-.]|[_]+)?([a-zA-Z0-9]+))*(@)", lambda n: "a" * (n - 1) + "!"),
    ("csv-field", r"^(([^,]*),)*x$", lambda n: ("ab," * (n // 3))[:n]),
    ("kernel-generic", r".*-generic$", lambda n: "5.15.0-" + "9" * (n - 8)),
    ("quantified-class", r"^[a-z]*[a-z]*[a-z]*[a-z]*[0-9]$", lambda n: "a" * n),
    ("lazy-dotstar", r"a.*?b.*?c.*?d$", lambda n: "abc" * (n // 3)),
    ("optional-chain", r"^(a?){30}a{30}$", lambda n: "a" * n),
    ("html-tag", r"<([a-z]+)([^<]+)*(?:>(.*)<\/([a-z]+)>|\s+\/>)", lambda n: "<a" + " x" * ((n - 2) // 2)),
    ("digits-dots", r"^(\d+\.?)+$", lambda n: "1" * (n - 1) + "x"),
    ("space-trim", r"^\s*(.*?)\s*$x", lambda n: " " * (n // 2) + "a" * (n // 2)),
    ("unicode-letters", r"^(\pL+\s?)*$", lambda n: "é" * (n // 2 - 1) + "!"),
    ("alternation-prefix", r"^(ab|a)*c", lambda n: "ab" * (n // 2)),
    ("case-fold", r"(?i)(k|K)+\x{212a}x", lambda n: "k" * n),
    ("version-list", r"^(\d+(\.\d+)*,?)+;$", lambda n: ("1.2," * (n // 4))[:n]),
]


def _best(fn: Any, *, rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _go_times(cases: list[dict[str, Any]]) -> list[float] | str:
    sys.path.insert(0, str(ROOT))
    from tests.support.goregex_truth import build_tool

    built = build_tool()
    if isinstance(built, str):
        return built
    _version, binary = built
    out = subprocess.run(
        [str(binary), "bench"], input="".join(json.dumps(c) + "\n" for c in cases), capture_output=True, text=True, check=True
    )
    return [json.loads(line)["ns"] / 1e9 for line in out.stdout.splitlines()]


_RE_SCRIPT = "import re,sys,time;p=sys.argv[1];s=sys.stdin.read();r=re.compile(p);t=time.perf_counter();r.search(s);print(time.perf_counter()-t)"


def _re_time(pattern: str, text: str, timeout: float) -> str:
    py = pattern.replace(r"\z", r"\Z").replace(r"\pL", "[^\\W\\d_]").replace(r"\x{212a}", "\u212a")
    try:
        out = subprocess.run(
            [sys.executable, "-c", _RE_SCRIPT, py], input=text, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return f">{timeout:g} s"
    if out.returncode != 0:
        return "n/a"
    return _ms(float(out.stdout))


def _ms(t: float) -> str:
    return f"{t * 1e3:.3f} ms" if t < 10 else f"{t:.1f} s"


def traps(sizes: list[int], with_re: bool, re_timeout: float) -> None:
    from nfd.lang.goregex import compile_go

    rows = []
    cases = []
    for name, pattern, build in TRAPS:
        for size in sizes:
            text = build(size)
            rx = compile_go(pattern)
            t = _best(lambda rx=rx, text=text: rx.match_string(text))
            rows.append((name, pattern, size, text, t, rx.match_string(text)))
            cases.append({"p": pattern, "s": text, "n": 3})
    go = _go_times(cases)
    print(f"Part 1: MatchString on backtracking traps ({len(TRAPS)} patterns x sizes {sizes})")
    if isinstance(go, str):
        print(f"  (no Go column: {go})")
    header = f"  {'case':<20} {'size':>7} {'nfd':>11} {'Go':>11} {'nfd/Go':>7}" + (f" {'re':>11}" if with_re else "")
    print(header)
    worst = 0.0
    ratios = []
    for k, (name, pattern, size, text, t, _m) in enumerate(rows):
        worst = max(worst, t)
        line = f"  {name:<20} {size:>7} {_ms(t):>11}"
        if not isinstance(go, str):
            ratio = t / go[k] if go[k] > 0 else float("inf")
            ratios.append(ratio)
            line += f" {_ms(go[k]):>11} {ratio:>6.2f}x"
        if with_re:
            line += f" {_re_time(pattern, text, re_timeout):>11}"
        print(line)
    print(f"  slowest nfd case: {_ms(worst)}" + (f"; nfd/Go median {statistics.median(ratios):.2f}x, max {max(ratios):.2f}x" if ratios else ""))


def engine(nodes_n: int) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_rules import make_node

    from nfd.rules.engine import compile_nodefeaturerule, evaluate_rule

    rng = random.Random(7)
    nodes = [make_node(i, rng) for i in range(nodes_n)]
    patterns = [
        ("kernel.version", "full", r"^5\.1[0-9]\..*-generic$"), ("kernel.version", "full", r"-generic$"),
        ("cpu.model", "vendor_id", "^(Intel|AMD)$"), ("cpu.model", "family", "^(6|2[35])$"),
        ("system.osrelease", "ID", "^(ubuntu|rhel)$"), ("system.osrelease", "VERSION_ID", r"^2[0-9]\.04$"),
        ("system.name", "nodename", r"^node-[0-9]+$"), ("memory.numa", "node_count", "^[24]$"),
    ]
    rules = []
    for k in range(20):
        exprs: dict[str, Any] = {}
        feat, key, pat = patterns[k % len(patterns)]
        exprs[key] = {"op": "InRegexp", "value": [pat, f"^nomatch{k}$"]}
        mf: list[dict[str, Any]] = [{"feature": feat, "matchExpressions": exprs}]
        if k % 4 == 0:
            mf.append({"feature": "pci.device", "matchExpressions": {"vendor": {"op": "InRegexp", "value": ["^10de$", "^15b3$"]},
                                                                     "class": {"op": "InRegexp", "value": ["^0[23]"]}}})
        if k % 4 == 1:
            mf.append({"feature": "cpu.cpuid", "matchName": {"op": "InRegexp", "value": ["^AVX512", "^AMX"]}})
        if k % 4 == 2:
            mf.append({"feature": "kernel.config", "matchName": {"op": "InRegexp", "value": [r"^CONFIG_OPT_1[0-9]$"]}})
        rules.append({"name": f"re-{k}", "labels": {f"re-{k}": "true"}, "matchFeatures": mf})
    obj = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "re"}, "spec": {"rules": rules}}
    rs = compile_nodefeaturerule(obj)
    for f in nodes[:10]:
        for r in rs.rules:
            evaluate_rule(r, f)
    t0 = time.process_time()
    matched = 0
    for f in nodes:
        for r in rs.rules:
            matched += bool(evaluate_rule(r, f).matched)
    t = time.process_time() - t0
    pairs = len(nodes) * len(rs.rules)
    print(f"Part 2: {len(rs.rules)} regexp-heavy rules x {len(nodes)} nodes: "
          f"{t / pairs * 1e6:.2f} us per (node, rule), matched {matched / pairs:.0%} of pairs")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--with-re", action="store_true")
    ap.add_argument("--re-timeout", type=float, default=5.0)
    ap.add_argument("--engine-only", action="store_true")
    ap.add_argument("--repo", help="import nfd from this checkout (for a before/after figure)")
    args = ap.parse_args()
    if args.repo:
        sys.path.insert(0, str(Path(args.repo).resolve()))
    import nfd

    print(f"nfd from {Path(nfd.__file__).parent}")
    if not args.engine_only:
        traps([int(s) for s in args.sizes.split(",")], args.with_re, args.re_timeout)
    engine(args.nodes)


if __name__ == "__main__":
    main()
