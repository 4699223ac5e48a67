"""Ground truth for nfd's Go regexps: what Go's own regexp package answers.

tests/tools/goregex (a standard-library Go program) is built with the installed Go and run
over Go's regexp test tables ($GOROOT/src/regexp/testdata, regexp/syntax/parse_test.go) plus
the cases given here. The answers are cached outside the repository, keyed by the program,
the cases and the Go version: ${NFD_TEST_TOOLS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/nfd-test-tools}.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tests.e2e.build import find_go, go_version
from tests.e2e.tools import cache_root

TOOL_DIR = Path(__file__).resolve().parents[1] / "tools" / "goregex"


def build_tool() -> tuple[str, Path] | str:
    """(Go version, path of the built tool) or the reason there is no Go to build it with."""
    go = find_go()
    if go is None:
        return "Go is not installed: Go's regexp is the ground truth"
    version = go_version(go)
    h = hashlib.sha256()
    for name in ("go.mod", "main.go"):
        h.update((TOOL_DIR / name).read_bytes())
    h.update(version.encode())
    binary = cache_root() / f"goregex-tool-{h.hexdigest()[:16]}" / "goregex"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
        tmp = binary.with_suffix(".tmp")
        build = subprocess.run(
            [go, "build", "-o", str(tmp), "."], cwd=TOOL_DIR, env=env, capture_output=True, text=True
        )
        if build.returncode != 0:
            raise RuntimeError(f"building tests/tools/goregex failed: {build.stderr.strip()}")
        tmp.rename(binary)
    return version, binary


def truth(extra: Iterable[tuple[str, list[str]]], *, corpus: bool) -> tuple[str, list[dict[str, Any]]] | str:
    """(Go version, records) or the reason there is no Go to ask.

    Each record: {"src", "p", "err", "in", "m", "idx"?}; "in" is filled in on every record.
    """
    built = build_tool()
    if isinstance(built, str):
        return built
    version, binary = built
    cases = "".join(json.dumps({"p": p, "in": ins}) + "\n" for p, ins in extra)
    h = hashlib.sha256(binary.parent.name.encode() + (b"corpus" if corpus else b"") + cases.encode())
    out_dir = cache_root() / f"goregex-{h.hexdigest()[:16]}"
    answers = out_dir / "answers.jsonl"
    if not answers.exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        args = [str(binary), *(["corpus"] if corpus else [])]
        run = subprocess.run(args, input=cases, capture_output=True, text=True, check=True)
        tmp = answers.with_suffix(".tmp")
        tmp.write_text(run.stdout)
        tmp.rename(answers)
    return version, list(_records(answers.read_text(encoding="utf-8").split("\n")))


def _records(lines: list[str]) -> Iterator[dict[str, Any]]:
    inputs: list[str] = []
    for line in lines:
        if not line:
            continue
        r = json.loads(line)
        if "in" in r:
            inputs = r["in"]
        else:
            r["in"] = inputs
        yield r
