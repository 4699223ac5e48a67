"""The Kubernetes API transport, candidates side by side on the real kube-apiserver.

Each candidate runs in a fresh interpreter holding what a masterless worker holds: three watches
(its Node, ConfigMaps standing in for NodeFeatureRules, Namespaces) and its writes. Per
candidate it prints:

- CPU per Node PATCH, the watch's echo of each write included (what a worker pays per write);
- the same for a PATCH after an idle spell, once the API server has closed idle connections
  (over HTTP/1.1 the write connection; over HTTP/2 there is none, the watches keep it busy);
- CPU per watch event (a ~4 kB ConfigMap modified by another client, decoded to a dict);
- TCP connections to the API server once the watches and writes are open;
- RSS of the process (interpreter, the transport's imports, its buffers and connections).

Candidates: ``h2`` (nfd.k8s.client over nfd/k8s/http2.py, what every process uses), ``http1``
(nfd.k8s.client's HTTP/1.1 fallback, for servers that do not offer h2, http:// servers and
DISABLE_HTTP2), ``httpx`` (httpx with HTTP/2; ``pip install httpx[http2]``, skipped when absent),
``aiohttp`` (HTTP/1.1; skipped when absent). httpx runs each watch on a connection of its own: with
two idle watches sharing its HTTP/2 connection it hangs (encode/httpcore#1022). Rounds are interleaved (candidate after candidate,
round after round) and the medians printed, with the ratio to ``h2``. The bearer token is a real
ServiceAccount token (~700 bytes; it rides on every request).

Run: ``python benchmarks/bench_transport.py [--patches 300] [--events 300] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

NODE = "bench-transport"
CANDIDATES = ("h2", "http1", "httpx", "aiohttp")
SMP = "application/strategic-merge-patch+json"

Request = Callable[[str, str, Any, str], Awaitable[Any]]
Watch = Callable[[str, dict[str, str]], AsyncIterator[dict[str, Any]]]


def _split(buf: bytes) -> tuple[list[bytes], bytes]:
    *lines, rest = buf.split(b"\n")
    return [ln for ln in lines if ln.strip()], rest


Close = Callable[[], Awaitable[None]]


async def _candidate(name: str, a: argparse.Namespace) -> tuple[Request, Watch, Close, Close]:
    """(request, watch, idle_out, close) for one candidate; each decodes JSON with orjson as nfd
    does. ``idle_out`` closes the connections no request or watch is using, as the API server
    does once they idled past its timeout: over HTTP/2 there is none (the watches keep the one
    connection busy), over HTTP/1.1 the write connection is."""
    token = Path(a.token_file).read_text().strip()
    if name in ("h2", "http1"):
        from nfd.k8s.client import ApiClient
        from nfd.k8s.config import ConnectionConfig

        api = ApiClient(ConnectionConfig(server=a.server, ca_file=a.ca, token=token), qps=0, burst=1,
                        http2=name == "h2")

        async def request(method: str, path: str, body: Any, ctype: str) -> Any:
            return await api.request(method, path, body=body, content_type=ctype)

        def watch(path: str, params: dict[str, str]) -> AsyncIterator[dict[str, Any]]:
            return api.stream_lines(path, params=params)

        async def idle_out() -> None:
            if api._h1 is not None:
                for _, w in api._h1._idle:
                    w.close()
                api._h1._idle.clear()

        return request, watch, idle_out, api.close
    import ssl

    import orjson

    ctx = ssl.create_default_context(cafile=a.ca)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json", "User-Agent": "nfd",
               "Accept-Encoding": "identity"}
    if name == "httpx":
        import httpx

        # One AsyncClient per watch: with two idle watches on one HTTP/2 connection httpx hangs
        # (httpcore's connection read lock is held by a watch waiting for its own next frame while
        # a request's answer waits for the lock: encode/httpcore#1022), so each watch has its own
        # connection here, as over HTTP/1.1, and the writes a fourth.
        def new_client() -> httpx.AsyncClient:
            return httpx.AsyncClient(http2=True, verify=ctx, headers=headers, timeout=httpx.Timeout(30.0, read=None))

        clients = [new_client()]  # the write client (replaced by idle_out)
        watchers: list[httpx.AsyncClient] = []

        async def request(method: str, path: str, body: Any, ctype: str) -> Any:
            r = await clients[0].request(method, a.server + path, content=orjson.dumps(body),
                                         headers={"Content-Type": ctype})
            return orjson.loads(r.content)

        async def httpx_idle_out() -> None:
            old, clients[0] = clients[0], new_client()
            await old.aclose()

        async def watch(path: str, params: dict[str, str]) -> AsyncIterator[dict[str, Any]]:
            own = new_client()
            watchers.append(own)
            async with own.stream("GET", a.server + path, params=params) as r:
                buf = b""
                async for chunk in r.aiter_bytes():
                    lines, buf = _split(buf + chunk)
                    for ln in lines:
                        yield orjson.loads(ln)

        async def close() -> None:
            for c in [*clients, *watchers]:
                await c.aclose()

        return request, watch, httpx_idle_out, close
    import aiohttp

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=100), headers=headers)

    async def request(method: str, path: str, body: Any, ctype: str) -> Any:
        async with session.request(method, a.server + path, data=orjson.dumps(body),
                                   headers={"Content-Type": ctype}) as r:
            return orjson.loads(await r.read())

    async def watch(path: str, params: dict[str, str]) -> AsyncIterator[dict[str, Any]]:
        async with session.get(a.server + path, params=params,
                               timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as r:
            buf = b""
            async for chunk in r.content.iter_any():
                lines, buf = _split(buf + chunk)
                for ln in lines:
                    yield orjson.loads(ln)

    async def aiohttp_idle_out() -> None:
        conns = getattr(session.connector, "_conns", {})  # its idle keep-alive connections
        for key in list(conns):
            for proto, *_ in conns.pop(key):
                proto.close()

    return request, watch, aiohttp_idle_out, session.close


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _child(a: argparse.Namespace) -> dict[str, Any]:
    request, watch, idle_out, close = await _candidate(a.child, a)
    counts = {"node": 0, "cm": 0, "ns": 0}

    async def run_watch(key: str, path: str, params: dict[str, str]) -> None:
        params = {"watch": "true", "timeoutSeconds": "600", **params}
        async for ev in watch(path, params):
            if ev.get("type") != "BOOKMARK":
                counts[key] += 1

    tasks = [
        asyncio.create_task(run_watch("node", "/api/v1/nodes", {"fieldSelector": f"metadata.name={NODE}"})),
        asyncio.create_task(run_watch("cm", f"/api/v1/namespaces/{a.ns}/configmaps", {})),
        asyncio.create_task(run_watch("ns", "/api/v1/namespaces", {"fieldSelector": f"metadata.name={a.ns}"})),
    ]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while min(counts.values()) < 1:  # each watch has sent its ADDED: all three are open
        if loop.time() > deadline:
            raise SystemExit(f"{a.child}: watches did not open: {counts}")
        await asyncio.sleep(0.01)
    base = dict(counts)
    t0 = time.process_time()
    for i in range(a.patches):
        await request("PATCH", f"/api/v1/nodes/{NODE}", {"metadata": {"labels": {"bench": f"{a.nonce}-{i}"}}}, SMP)
    while counts["node"] - base["node"] < a.patches:
        await asyncio.sleep(0.005)
    per_patch = (time.process_time() - t0) / a.patches * 1000
    # a write after an idle spell: the API server has closed the idle connections by then
    n_idle = max(1, a.patches // 6)
    spent = 0.0
    for i in range(n_idle):
        await idle_out()
        await asyncio.sleep(0.02)  # the close goes out and is noticed
        base = dict(counts)
        t0 = time.process_time()
        await request("PATCH", f"/api/v1/nodes/{NODE}", {"metadata": {"labels": {"bench": f"{a.nonce}-idle-{i}"}}},
                      SMP)
        while counts["node"] == base["node"]:
            await asyncio.sleep(0.005)
        spent += time.process_time() - t0
    per_idle_patch = spent / n_idle * 1000
    # watch events: the parent writes, this process only receives
    base_cm = counts["cm"]
    print("READY", flush=True)
    await loop.run_in_executor(None, sys.stdin.readline)  # the parent starts writing
    t0 = time.process_time()
    while counts["cm"] - base_cm < a.events:
        await asyncio.sleep(0.005)
    per_event = (time.process_time() - t0) / a.events * 1000
    rss = _rss_kib()
    for t in tasks:
        t.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await t
    await close()
    return {"patch_ms": per_patch, "idle_patch_ms": per_idle_patch, "event_ms": per_event, "rss_mib": rss / 1024}


def _run_child(name: str, a: argparse.Namespace, kube: Any, ns: str, token_file: str) -> dict[str, Any]:
    from tests.e2e.harness import tcp_connections

    env = dict(os.environ, PYTHONPATH=str(REPO))
    nonce = f"{name}-{time.monotonic_ns()}"  # every write changes something: a no-op PATCH has no echo
    argv = [sys.executable, __file__, "--child", name, "--server", kube.server, "--ca", kube.ca_file,
            "--token-file", token_file, "--ns", ns, "--nonce", nonce, "--patches", str(a.patches),
            "--events", str(a.events)]
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdin is not None and p.stdout is not None
    line = p.stdout.readline()
    if line.strip() != "READY":
        p.kill()
        raise SystemExit(f"{name}: child failed before the watch phase: {line!r}")
    conns = tcp_connections(kube.port, p.pid)  # watches and writes open, the writes done
    p.stdin.write("go\n")
    p.stdin.flush()
    pad = "x" * 4000
    for i in range(a.events):
        kube.request("PATCH", f"/api/v1/namespaces/{ns}/configmaps/bench",
                     body={"data": {"i": f"{nonce}-{i}", "pad": pad}}, content_type="application/merge-patch+json")
    try:
        out, _ = p.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        p.kill()
        raise SystemExit(f"{name}: no result within 300 s") from None
    if p.returncode:
        raise SystemExit(f"{name}: child exited {p.returncode}")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["connections"] = conns
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--patches", type=int, default=300)
    ap.add_argument("--events", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default=",".join(CANDIDATES), help="comma-separated candidates")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    for opt in ("--server", "--ca", "--token-file", "--ns", "--nonce"):
        ap.add_argument(opt, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        async def bounded() -> dict[str, Any]:
            async with asyncio.timeout(300):  # never outlive a parent that gave up
                return await _child(args)

        print(json.dumps(asyncio.run(bounded())), flush=True)
        return 0

    names = [n for n in args.only.split(",") if n]
    present = {"httpx": "httpx", "aiohttp": "aiohttp", "h2": "h2", "http1": "nfd"}
    skipped = [n for n in names if importlib.util.find_spec(present[n]) is None]
    names = [n for n in names if n not in skipped]
    if skipped:
        print(f"not installed, skipped: {', '.join(skipped)}")

    from tests.e2e.build import ensure_built
    from tests.e2e.harness import KubeCluster

    kube = KubeCluster.start(binary=ensure_built(), tmpdir=Path(tempfile.mkdtemp(prefix="nfd-bench-transport-")))
    try:
        # a node the size of a labelled one: its echo is what a worker's Node watch receives
        kube.create_node(NODE, labels={f"feature.node.kubernetes.io/l{i}": "v" * 20 for i in range(100)})
        ns = "bench"
        kube.create_namespace(ns)
        kube.request("POST", f"/api/v1/namespaces/{ns}/configmaps",
                     body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench"}, "data": {}})
        kube.apply_objects([
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bench", "namespace": "default"}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "bench-transport"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
             "subjects": [{"kind": "ServiceAccount", "name": "bench", "namespace": "default"}]},
        ])
        token = kube.serviceaccount_token("default", "bench", expiration_s=3600)
        token_file = Path(kube.tmpdir) / "bench-token"
        token_file.write_text(token)
        runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
        for _ in range(args.rounds):
            for n in names:
                runs[n].append(_run_child(n, args, kube, ns, str(token_file)))
        print(f"API transport, median of {args.rounds} interleaved rounds; {args.patches} Node PATCHes "
              f"(echoed by a watch), {args.events} watch events of ~4 kB, three watches open "
              f"(token {len(token)} bytes):")
        keys = ("patch_ms", "idle_patch_ms", "event_ms", "rss_mib")
        print(f"  {'':10s} {'CPU/PATCH':>15s} {'after idle':>15s} {'CPU/event':>15s} {'connections':>12s} {'RSS':>15s}")
        ref = {k: statistics.median(r[k] for r in runs[names[0]]) for k in keys}
        for n in names:
            m = {k: statistics.median(r[k] for r in runs[n]) for k in keys}
            conns = max(r["connections"] for r in runs[n])
            cells = [f"{m[k]:6.3f} ms {m[k] / ref[k]:4.2f}x" for k in keys[:3]]
            print(f"  {n:10s} {cells[0]:>15s} {cells[1]:>15s} {cells[2]:>15s} {conns:12d}"
                  f" {m['rss_mib']:5.1f} MiB {m['rss_mib'] / ref['rss_mib']:4.2f}x")
        print(f"  (ratios to {names[0]})")
    finally:
        kube.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
