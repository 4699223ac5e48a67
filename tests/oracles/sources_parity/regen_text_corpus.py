#!/usr/bin/env python3
"""Refresh ``expected/text-corpus.json.gz`` with upstream's view of ``text_corpus`` trees.

    python3 tests/oracles/sources_parity/regen_text_corpus.py --driver BIN --prefix-dir DIR [N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile

# text_corpus (the trees) and expected/ are beside the test they feed
PARITY = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "unit", "sources", "parity"))
sys.path.insert(0, PARITY)

from text_corpus import CONFIG, build_tree, select  # noqa: E402

OUT = os.path.join(PARITY, "expected", "text-corpus.json.gz")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--driver", required=True)
    ap.add_argument("--prefix-dir", required=True)
    ap.add_argument("n", nargs="?", type=int, default=40)
    args = ap.parse_args()
    env = {**os.environ, "NODE_NAME": "parity-node"}
    env.pop("NFD_CPUID_JSON", None)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "config.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG)
        for seed in range(args.n):
            build_tree(seed, args.prefix_dir)
            res = {}
            for what in ("features", "labels"):
                run = subprocess.run([args.driver, "-what", what, "-config", cfg], env=env, check=True,
                                     capture_output=True, text=True)
                res[what] = json.loads(run.stdout)
            out.append(select(res["features"], res["labels"]))
    data = json.dumps(out, sort_keys=True, separators=(",", ":")).encode()
    with open(OUT, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(data)
    print(f"wrote {len(out)} trees to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
