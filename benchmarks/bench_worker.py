#!/usr/bin/env python3
"""nfd-worker's footprint on this machine, beside upstream's nfd-worker when one is given: prints
figures and ratios, asserts nothing.

    UPSTREAM_NFD_WORKER=/path/to/nfd-worker python3 benchmarks/bench_worker.py \
        [--runs 10] [--rounds 2] [--seconds 30] [--only oneshot,imports,rss,daemon,masterless,discovery]
        [--baseline DIR]  # the one-shot runs of another checkout (another commit), interleaved

Sections (all by default):

- ``oneshot``: ``nfd-worker -oneshot -no-publish`` and ``nfd export labels`` (our console
  scripts, as installed), each a fresh process: wall and peak RSS, runs interleaved with
  upstream's ``nfd-worker -oneshot -no-publish`` (which reads a kubeconfig even then: it is
  given one that points nowhere; so is ours). The interpreter alone (``python -c pass``, with and
  without ``site``) is measured beside them: that floor is in every Python figure.
- ``imports``: ``python -X importtime`` of the one-shot run and of ``nfd export labels`` (best
  of 5): the time each package and each of the run's own imports costs.
- ``rss``: where a one-shot run's and a default-mode daemon's resident memory goes, module by
  module (VmRSS after each of the run's own imports, in a fresh interpreter, in the run's order).
- ``daemon``: the worker daemon in the default mode, ``core.sleepInterval: 5s``, publishing its
  NodeFeature to a real kube-apiserver (tests/e2e harness): steady RSS (median of 1 s samples
  after a warm-up) and CPU per cycle (CPU time over the window / cycles in it), ours and
  upstream's alternately, ``--rounds`` each.
- ``masterless``: ours with ``-enable-node-update`` and the 100 NodeFeatureRules of
  bench_master_scale.py: steady RSS and CPU per cycle, against upstream's default-mode figures.
- ``discovery``: in process, full discovery of all default sources per pass (first and steady).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

CLK = os.sysconf("SC_CLK_TCK")
INTERVAL_S = 5.0
UPSTREAM = os.environ.get("UPSTREAM_NFD_WORKER") or ""
ENV = dict(os.environ, PYTHONPATH=str(REPO), NODE_NAME="bench-node", KUBERNETES_NAMESPACE="node-feature-discovery",
           PYTHONUNBUFFERED="1")
ENV.pop("NFD_NVML_PROFILE", None)


# -- process measurement ------------------------------------------------------------------------
def proc_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def proc_cpu_ns(pid: int) -> int:
    """CPU time of the process's live threads in ns (schedstat): the 10 ms ticks of /proc/pid/stat
    are too coarse for a few ms per cycle. Both workers keep their threads, so none is lost."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def proc_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


TIME = shutil.which("time", path="/usr/bin:/bin")


def run_once(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MiB) and exit status of one fresh process.

    The peak comes from GNU time where there is one: a child forked from this (big) interpreter
    has this interpreter's pages in its peak until it execs, so wait4's ru_maxrss of a small
    program reads as this process's size."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        pre = [TIME, "-f", "%M", "-o", out.name] if TIME else []
        t0 = time.perf_counter()
        proc = subprocess.Popen([*pre, *argv], env=env or ENV, cwd="/", stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        peak_kib = int(out.read().split()[-1]) if TIME else usage.ru_maxrss
    return wall, peak_kib / 1024, proc.returncode


def script(name: str) -> list[str]:
    """Our console script as pip installs it (beside the interpreter), else ``python -m``."""
    path = Path(sys.executable).parent / name
    if path.is_file() and path.read_text(errors="replace").startswith("#!"):
        return [sys.executable, str(path)]
    return [sys.executable, "-m", {"nfd-worker": "nfd.worker", "nfd": "nfd.cli"}[name]]


def no_pth(argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The same Python command without ``site`` (``-S``), the site-packages put on PYTHONPATH
    instead: what it costs without this host's .pth files (an editable install's finder, a CA
    bundle hook: ~25 ms and ~5 MiB here), which an image built from the Dockerfile does not have."""
    import site

    path = os.pathsep.join([str(REPO), *site.getsitepackages()])
    return [argv[0], "-S", *argv[1:]], dict(env, PYTHONPATH=path)


def fmt_ratio(ours: float, theirs: float | None) -> str:
    return f"  ratio {ours / theirs:.2f}" if theirs else ""


def load_note() -> str:
    with open("/proc/loadavg") as f:
        la = f.read().split()[:3]
    return f"load average {' '.join(la)} on {os.cpu_count()} CPUs"


def dummy_kubeconfig(tmp: Path) -> str:
    path = tmp / "nowhere.kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\ncurrent-context: x\n"
                    "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9', insecure-skip-tls-verify: true}}]\n"
                    "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n")
    return str(path)


# -- one-shot ------------------------------------------------------------------------------------
def bench_oneshot(runs: int, tmp: Path, baseline: str = "") -> None:
    kc = dummy_kubeconfig(tmp)
    nowhere = str(tmp / "no-such.conf")
    worker = [*script("nfd-worker"), "-oneshot", "-no-publish", "-kubeconfig", kc, "-config", nowhere]
    cases: dict[str, tuple[list[str], dict[str, str]]] = {
        "python -S -c pass": ([sys.executable, "-S", "-c", "pass"], ENV),
        "python -c pass": ([sys.executable, "-c", "pass"], ENV),
        "python -I -c pass": ([sys.executable, "-I", "-c", "pass"], ENV),
        "nfd-worker -oneshot -no-publish": (worker, ENV),
        "  same, without this host's .pth files": no_pth(worker, ENV),
        "nfd export labels": ([*script("nfd"), "export", "labels"], ENV),
    }
    if baseline:  # another checkout's nfd (e.g. `git archive <commit> | tar -x -C DIR`), the same script
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(baseline) / "nfd")], check=True,
                       stdout=subprocess.DEVNULL)
        benv = dict(ENV, PYTHONPATH=baseline)
        cases[f"baseline {baseline}"] = (worker, benv)
        argv, nenv = no_pth(worker, benv)
        cases["  baseline, without this host's .pth files"] = (argv, dict(nenv, PYTHONPATH=nenv["PYTHONPATH"].replace(
            str(REPO), baseline, 1)))
    if UPSTREAM:
        cases["upstream nfd-worker -oneshot -no-publish"] = (
            [UPSTREAM, "-oneshot", "-no-publish", "-kubeconfig", kc, "-config", nowhere], ENV)
    res: dict[str, list[tuple[float, float, int]]] = {k: [] for k in cases}
    for argv, env in cases.values():  # one warm-up each: page cache
        run_once(argv, env)
    for i in range(runs):
        order = list(cases) if i % 2 == 0 else list(reversed(cases))
        for name in order:
            res[name].append(run_once(*cases[name]))
    up = res.get("upstream nfd-worker -oneshot -no-publish")
    up_wall = statistics.median(r[0] for r in up) if up else None
    up_rss = max(r[1] for r in up) if up else None
    print(f"one-shot runs ({runs} each, interleaved; {load_note()}):")
    for name, rs in res.items():
        walls = sorted(r[0] for r in rs)
        rss = max(r[1] for r in rs)
        bad = [r[2] for r in rs if r[2] != 0]
        wall = statistics.median(walls)
        ratio = ""
        if up and not name.startswith(("upstream", "python")) and up_wall and up_rss:
            ratio = f"  ratio wall {wall / up_wall:.2f}, RSS {rss / up_rss:.2f}"
        print(f"  {name:<42} wall median {1000 * wall:6.1f} ms, min {1000 * walls[0]:6.1f} ms; "
              f"peak RSS {rss:5.1f} MiB{ratio}{'  EXIT ' + str(bad[0]) if bad else ''}")


# -- import time ---------------------------------------------------------------------------------
def importtime(argv: list[str], runs: int = 5) -> list[tuple[str, int, int, int]]:
    """(module, depth, self us, cumulative us) in import order, each the best of ``runs``."""
    best: dict[str, list[int]] = {}
    order: list[tuple[str, int]] = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-X", "importtime", *argv], env=ENV, cwd="/", capture_output=True,
                             text=True, timeout=120)
        rows = []
        for line in out.stderr.splitlines():
            if not line.startswith("import time:") or "imported package" in line:
                continue
            self_us, cum_us, name = line[len("import time:"):].split("|")
            depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
            rows.append((name.strip(), depth, int(self_us), int(cum_us)))
        if not order:
            order = [(n, d) for n, d, _, _ in rows]
        for n, _, s, c in rows:
            prev = best.get(n)
            best[n] = [min(prev[0], s), min(prev[1], c)] if prev else [s, c]
    return [(n, d, best[n][0], best[n][1]) for n, d in order]


def package_of(mod: str) -> str:
    parts = mod.split(".")
    if parts[0] == "nfd":
        return ".".join(parts[:3 if len(parts) > 2 and parts[1] in ("sources", "lang") else 2])
    if parts[0] in sys.stdlib_module_names or parts[0].startswith("_"):
        return "(stdlib) " + parts[0].lstrip("_")
    return parts[0]


def bench_imports(tmp: Path) -> None:
    kc = dummy_kubeconfig(tmp)
    for title, argv in (
        ("nfd-worker -oneshot -no-publish", [*script("nfd-worker")[1:], "-oneshot", "-no-publish", "-kubeconfig", kc,
                                             "-config", str(tmp / "no-such.conf")]),
        ("nfd export labels", [*script("nfd")[1:], "export", "labels"]),
    ):
        rows = importtime(argv)
        total = sum(s for _, _, s, _ in rows)
        site = next((c for n, d, _, c in rows if n == "site" and d == 0), 0)
        print(f"imports of {title} (python -X importtime, best of 5; {load_note()}): "
              f"{total / 1000:.1f} ms in all, of which site and its .pth files {site / 1000:.1f} ms")
        by_pkg: dict[str, int] = {}
        in_site = False
        for n, d, s, _ in reversed(rows):  # a parent is printed after its children
            if d == 0:
                in_site = n == "site"
            if not in_site:
                by_pkg[package_of(n)] = by_pkg.get(package_of(n), 0) + s
        top = sorted(by_pkg.items(), key=lambda kv: -kv[1])
        print("  by package (self time, ms): " + ", ".join(f"{p} {us / 1000:.1f}" for p, us in top[:22]))
        direct = [(n, c) for n, d, _, c in rows if d == 0 and n not in ("site", "encodings") and c >= 300]
        print("  the run's own imports (cumulative, ms): " + ", ".join(f"{n} {c / 1000:.1f}" for n, c in direct))


# -- resident memory by module -------------------------------------------------------------------
RSS_STEPS = r"""
import json, sys
def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
out = [("(interpreter, site)", rss())]
for m in json.loads(sys.argv[1]):
    __import__(m)
    out.append((m, rss()))
if sys.argv[2] == "oneshot":
    from nfd.worker.__main__ import main
    main(["-oneshot", "-no-publish", "-config", "/nonexistent"])
    out.append(("(discovery and labels)", rss()))
print(json.dumps(out))
"""


def bench_rss_by_module(tmp: Path) -> None:
    kc = dummy_kubeconfig(tmp)
    oneshot = [m for m, d, _, _ in importtime([*script("nfd-worker")[1:], "-oneshot", "-no-publish", "-kubeconfig",
                                                kc, "-config", "/nonexistent"], runs=1) if d == 0]
    # the daemon's: the one-shot's, then what publishing and serving add (in the order they load)
    daemon = ["asyncio", "nfd.worker.publish", "nfd.k8s.client", "nfd.k8s.http2", "nfd.k8s.fetching",
              "nfd.k8s.creating", "nfd.k8s.updating", "nfd.common.httpserver"]
    for title, mods, mode in (("one-shot -no-publish", oneshot, "oneshot"), ("daemon (default mode)", oneshot + daemon, "")):
        mods = [m for m in mods if m not in ("site", "encodings", "runpy", "__main__") and not m.startswith("_")]
        out = subprocess.run([sys.executable, "-c", RSS_STEPS, json.dumps(mods), mode], env=ENV, cwd="/",
                             capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            print(f"rss by module ({title}): failed: {out.stderr.strip().splitlines()[-1:]}")
            continue
        steps = json.loads(out.stdout.strip().splitlines()[-1])
        deltas = [(steps[0][0], steps[0][1])] + [(m, r - steps[i][1]) for i, (m, r) in enumerate(steps[1:])]
        big = [(m, d) for m, d in deltas if d >= 0.2]
        print(f"RSS of {title} by module, MiB (VmRSS after each import; {steps[-1][1]:.1f} MiB at the end): "
              + ", ".join(f"{m} {d:.1f}" for m, d in big))


# -- daemons against a real kube-apiserver -------------------------------------------------------
def start_cluster(tmp: Path) -> Any:
    from tests.e2e.build import ensure_built, find_go
    from tests.e2e.harness import KubeCluster

    if find_go() is None:
        raise RuntimeError("no Go to build the test kube-apiserver")
    cluster = KubeCluster.start(binary=ensure_built(log=lambda m: None), tmpdir=tmp / "kube")
    cluster.create_namespace("node-feature-discovery", exist_ok=True)
    return cluster


def measure_daemon(argv: list[str], *, env: dict[str, str], warmup_s: float, seconds: float) -> dict[str, float]:
    proc = subprocess.Popen(argv, env=env, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(warmup_s)
        if proc.poll() is not None:
            raise RuntimeError(f"{argv[0]} exited {proc.returncode}: {proc.stderr.read().decode()[-500:] if proc.stderr else ''}")
        cpu0, ticks0, t0 = proc_cpu_ns(proc.pid), proc_cpu_s(proc.pid), time.monotonic()
        rss = []
        while time.monotonic() - t0 < seconds:
            time.sleep(1)
            rss.append(proc_rss_mib(proc.pid))
        cpu1, ticks1, t1 = proc_cpu_ns(proc.pid), proc_cpu_s(proc.pid), time.monotonic()
        cycles = (t1 - t0) / INTERVAL_S
        return {"cpu_ms": (cpu1 - cpu0) / 1e6 / cycles, "cpu_ticks_ms": 1000 * (ticks1 - ticks0) / cycles,
                "rss": statistics.median(rss), "rss_max": max(rss)}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def daemon_argv(impl: str, conf: Path, kubeconfig: str, extra: list[str]) -> list[str]:
    from tests.e2e.harness import free_port

    base = [UPSTREAM] if impl == "upstream" else script("nfd-worker")
    return [*base, "-config", str(conf), "-kubeconfig", kubeconfig, "-port", str(free_port()), "-owner-refs", "node",
            *extra]


def bench_daemons(sections: set[str], rounds: int, seconds: float, tmp: Path) -> None:
    try:
        cluster = start_cluster(tmp)
    except Exception as e:
        print(f"daemon: no kube-apiserver ({type(e).__name__}: {e}); skipped")
        return
    try:
        conf = tmp / "nfd-worker.conf"
        conf.write_text(f"core:\n  sleepInterval: {INTERVAL_S:g}s\n")
        warmup = 2 * INTERVAL_S
        results: dict[str, list[dict[str, float]]] = {}
        runs: list[tuple[str, list[str], dict[str, str]]] = []
        for node in ("bench-node", "bench-upstream", "bench-masterless"):
            cluster.create_node(node)
        env = dict(ENV, NODE_NAME="bench-node")
        if "daemon" in sections:
            runs.append(("ours, default mode", daemon_argv("ours", conf, cluster.kubeconfig, []), env))
            if UPSTREAM:
                runs.append(("upstream, default mode", daemon_argv("upstream", conf, cluster.kubeconfig, []),
                             dict(ENV, NODE_NAME="bench-upstream")))
        if "masterless" in sections:
            from bench_master_scale import make_rules

            cluster.apply_objects(make_rules("v1"))
            runs.append(("ours, masterless (-enable-node-update, 100 rules)",
                         daemon_argv("ours", conf, cluster.kubeconfig,
                                     ["-enable-node-update", "-master-config", str(tmp / "no-master.conf")]),
                         dict(ENV, NODE_NAME="bench-masterless")))
        for r in range(rounds):
            for name, argv, e in (runs if r % 2 == 0 else list(reversed(runs))):
                results.setdefault(name, []).append(measure_daemon(argv, env=e, warmup_s=warmup, seconds=seconds))
        nfs = cluster.get("/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/node-feature-discovery/nodefeatures")["items"]
        published = {o["metadata"]["name"]: len((o.get("spec") or {}).get("labels") or {}) for o in nfs}
        node_labels = {n: sum(1 for k in (cluster.get(f"/api/v1/nodes/{n}")["metadata"].get("labels") or {})
                              if "feature.node.kubernetes.io/" in k or "nfd" in k) for n in ("bench-masterless",)}
        print(f"published NodeFeatures (labels in each): {published}; labels the masterless worker set on its "
              f"node: {node_labels['bench-masterless']}")
        up = results.get("upstream, default mode")
        up_rss = statistics.median(x["rss"] for x in up) if up else None
        up_cpu = statistics.median(x["cpu_ms"] for x in up) if up else None
        print(f"daemons, sleepInterval {INTERVAL_S:g}s, publishing to a real kube-apiserver, {rounds} runs each "
              f"(interleaved), {seconds:.0f} s windows after {warmup:.0f} s ({load_note()}):")
        for name, xs in results.items():
            rss = statistics.median(x["rss"] for x in xs)
            cpu = statistics.median(x["cpu_ms"] for x in xs)
            each = "; ".join(f"{x['rss']:.1f} MiB / {x['cpu_ms']:.1f} ms (ticks {x['cpu_ticks_ms']:.0f})" for x in xs)
            ratio = ""
            if up_rss and up_cpu and not name.startswith("upstream"):
                ratio = f"  ratio RSS {rss / up_rss:.2f}, CPU {cpu / up_cpu:.2f}"
            print(f"  {name:<50} steady RSS {rss:5.1f} MiB, CPU {cpu:5.1f} ms per cycle{ratio}   (runs: {each})")
    finally:
        cluster.close()


# -- in process ----------------------------------------------------------------------------------
def bench_in_process(cycles: int) -> None:
    from nfd.sources import registry
    from nfd.sources.base import DiscoveryContext
    from nfd.sources.discovery import compute_labels, discover

    ctx = DiscoveryContext(node_name="bench")
    fnames = registry.resolve(["all"], kind="feature")
    lnames = registry.resolve(["all"], kind="label")
    walls, cpus, label_walls, per_source = [], [], [], {}
    last = None
    labels: dict[str, str] = {}
    for i in range(cycles + 1):
        w0, c0 = time.perf_counter(), time.process_time()
        res = discover(ctx, fnames, {}, last_good=last)
        feats = res.merged()
        w1 = time.perf_counter()
        labels = compute_labels(feats, lnames, {}, ctx)
        w2, c2 = time.perf_counter(), time.process_time()
        last = res.by_source
        if i == 0:
            print(f"in process, first pass (includes imports): wall {1000 * (w2 - w0):.1f} ms, cpu {1000 * (c2 - c0):.1f} ms")
            continue
        walls.append(w2 - w0)
        cpus.append(c2 - c0)
        label_walls.append(w2 - w1)
        for k, v in res.durations.items():
            per_source.setdefault(k, []).append(v)
    print(f"  sources: {', '.join(fnames)}; {len(labels)} labels")
    print(f"  steady discovery+labels, {cycles} passes: wall median {1000 * statistics.median(walls):.1f} ms, "
          f"cpu median {1000 * statistics.median(cpus):.1f} ms; labels alone {1000 * statistics.median(label_walls):.2f} ms")
    print("  per source (median ms): " + ", ".join(
        f"{k} {1000 * statistics.median(v):.1f}" for k, v in sorted(per_source.items())))


def commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() or "?"
    except OSError:
        return "?"


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--only", default="oneshot,imports,rss,daemon,masterless,discovery")
    p.add_argument("--runs", type=int, default=10, help="one-shot runs of each")
    p.add_argument("--rounds", type=int, default=2, help="daemon runs of each")
    p.add_argument("--seconds", type=float, default=30, help="daemon measuring window")
    p.add_argument("--cycles", type=int, default=20, help="in-process discovery passes")
    p.add_argument("--baseline", default="", help="oneshot: a checkout of another commit, run interleaved with this one")
    args = p.parse_args()
    sections = set(args.only.split(","))
    upstream = f"upstream {UPSTREAM}" if UPSTREAM else "no upstream (set UPSTREAM_NFD_WORKER)"
    print(f"nfd {commit()}, python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {upstream}")
    if UPSTREAM and not shutil.which(UPSTREAM):
        print(f"UPSTREAM_NFD_WORKER={UPSTREAM}: not an executable")
        return 2
    # as the image does at build time (its ENV has PYTHONDONTWRITEBYTECODE=1, and so may this
    # shell): without .pyc files every run compiles nfd's sources, ~50 ms of a one-shot run
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "nfd")], check=True,
                   stdout=subprocess.DEVNULL)
    tmp = Path(tempfile.mkdtemp(prefix="nfd-bench-worker-"))
    try:
        if "oneshot" in sections:
            bench_oneshot(args.runs, tmp, args.baseline)
        if "imports" in sections:
            bench_imports(tmp)
        if "rss" in sections:
            bench_rss_by_module(tmp)
        if sections & {"daemon", "masterless"}:
            bench_daemons(sections, args.rounds, args.seconds, tmp)
        if "discovery" in sections:
            bench_in_process(args.cycles)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
