"""Regenerate golden.json by running golden_cases.CASES through the Go oracle (see oracle/README.md)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))

from golden_cases import CASES  # noqa: E402


def main() -> int:
    oracle = sys.argv[1] if len(sys.argv) > 1 else "/tmp/gt-oracle"
    inp = "".join(json.dumps({"tpl": t, "data": d}) + "\n" for t, d in CASES)
    r = subprocess.run([oracle], input=inp, capture_output=True, text=True, check=True)
    results = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(results) == len(CASES), (len(results), len(CASES))
    golden = []
    for (tpl, data), res in zip(CASES, results, strict=True):
        entry = {"tpl": tpl, "data": data}
        if "perr" in res:
            entry["perr"] = res["perr"]
        elif "err" in res:
            entry["err"] = res["err"]
        else:
            entry["out"] = res.get("out", "")
        golden.append(entry)
    (HERE / "golden.json").write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(golden)} cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
