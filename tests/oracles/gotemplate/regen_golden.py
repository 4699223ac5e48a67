"""Regenerate the goldens with the Go oracle (see oracle/README.md):

- golden.json: golden_cases.CASES, written for nfd (NFD_TYPED: with data typed as upstream's);
- golden_go_tables.json: templates from Go's own text/template test tables (go_tables.py).

    python3 tests/oracles/gotemplate/regen_golden.py [ORACLE]

Without ORACLE the oracle is built (and cached) by oracle_build.py.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))
# the goldens live beside the test that reads them
GOLDEN_DIR = HERE.resolve().parents[1] / "unit" / "lang" / "gotemplate"

import go_tables  # noqa: E402
from golden_cases import CASES, NFD_TYPED, NFD_TYPED_DATA  # noqa: E402
from oracle_build import build_oracle, goroot  # noqa: E402


def run_oracle(oracle: str, cases: list[tuple[str, Any]], *, nfd: bool = False) -> list[dict[str, str]]:
    inp = "".join(json.dumps({"tpl": t, "data": d, "nfd": nfd}) + "\n" for t, d in cases)
    r = subprocess.run([oracle], input=inp, capture_output=True, text=True, check=True)
    results = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(results) == len(cases), (len(results), len(cases))
    return results


def entry(tpl: str, data: Any, res: dict[str, str], src: str | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"src": src} if src else {}
    e.update(tpl=tpl, data=data)
    if "perr" in res:
        e["perr"] = res["perr"]
    elif "err" in res:
        e["err"] = res["err"]
    else:
        e["out"] = res.get("out", "")
    return e


def write(name: str, golden: list[dict[str, Any]]) -> None:
    (GOLDEN_DIR / name).write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(golden)} cases to {name}")


def main() -> int:
    if len(sys.argv) > 1:
        oracle, root = sys.argv[1], None
    else:
        go, path = build_oracle()
        oracle, root = str(path), goroot(go)
    results = run_oracle(oracle, CASES)
    golden = [entry(t, d, r) for (t, d), r in zip(CASES, results, strict=True)]
    typed = [(t, NFD_TYPED_DATA) for t in NFD_TYPED]
    for (t, d), r in zip(typed, run_oracle(oracle, typed, nfd=True), strict=True):
        golden.append({"nfd": True, **entry(t, d, r)})
    write("golden.json", golden)

    if root is None:
        root = subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True, check=True).stdout.strip()
    table_cases = list(go_tables.cases(go_tables.extract(oracle, root)))
    results = run_oracle(oracle, [(t, d) for _, t, d in table_cases])
    write("golden_go_tables.json", [
        entry(t, d, r, src) for (src, t, d), r in zip(table_cases, results, strict=True) if go_tables.keep(r)
    ])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
