"""Build the Go oracle (oracle/: text/template + Sprig v3.3.0, upstream NFD's module versions)
and cache it outside the repository, keyed by the module's files and the Go version:
${NFD_TEST_TOOLS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/nfd-test-tools}/gotemplate-oracle-<key>/oracle.

Only regen_golden.py and fuzz_against_go.py need it; the tests read the stored goldens.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.e2e.build import find_go, go_version  # noqa: E402
from tests.e2e.tools import cache_root  # noqa: E402

ORACLE_DIR = Path(__file__).resolve().parent / "oracle"


def goroot(go: str) -> str:
    return subprocess.run([go, "env", "GOROOT"], capture_output=True, text=True, check=True).stdout.strip()


def build_oracle() -> tuple[str, Path]:
    """(Go binary, oracle path); builds once per module content and Go version."""
    go = find_go()
    if go is None:
        raise SystemExit("Go is not installed: the oracle is real Go text/template + Sprig")
    h = hashlib.sha256()
    for p in sorted(ORACLE_DIR.iterdir()):
        if p.suffix in (".go", ".mod", ".sum"):
            h.update(p.name.encode() + b"\0" + p.read_bytes())
    h.update(go_version(go).encode())
    binary = cache_root() / f"gotemplate-oracle-{h.hexdigest()[:16]}" / "oracle"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        tmp = binary.with_suffix(".tmp")
        env = {**os.environ, "CGO_ENABLED": "0"}
        r = subprocess.run([go, "build", "-o", str(tmp), "."], cwd=ORACLE_DIR, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"building the oracle failed:\n{r.stderr}")
        tmp.rename(binary)
    return go, binary


if __name__ == "__main__":
    print(build_oracle()[1])
