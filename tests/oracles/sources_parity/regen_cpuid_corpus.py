#!/usr/bin/env python3
"""Refresh ``expected/cpuid-corpus.json.gz``: random x86 CPUID answers and what upstream's cpu
source (klauspost/cpuid, mocked with those answers) reported for each. See tests/unit/sources/parity/README.md.

    NFD_DRIVER=BIN NFD_PREFIX_DIR=DIR python3 tests/oracles/sources_parity/regen_cpuid_corpus.py [SEED] [N]
"""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

# the corpus lives beside the test that reads it (tests/unit/sources/parity)
HERE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "unit", "sources", "parity"))
OUT = os.path.join(HERE, "expected", "cpuid-corpus.json.gz")

VENDORS = ["GenuineIntel", "AuthenticAMD", "HygonGenuine", "CentaurHauls", "  Shanghai  ", "VIA VIA VIA ",
           "GenuineIotel", "Junk12345678"]
HYPERVISORS = [None, "KVMKVMKVM\0\0\0", "Microsoft Hv", "VMwareVMware", "XenVMMXenVMM", "TCGTCGTCGTCG",
               "bhyve bhyve ", "ACRNACRNACRN", " QNXQVMBSQG ", "Linux KVM Hv", "Junk_hv_ABCD", "\0" * 12]
BASIC = ((1, [0]), (4, [0]), (6, [0]), (7, [0, 1, 2]), (0xA, [0]), (0xB, [0, 1]), (0xD, [0, 1]),
         (0xF, [0, 1]), (0x10, [0, 1, 2, 3]), (0x12, [0, 1, 2, 3, 4]), (0x14, [0]), (0x15, [0]), (0x16, [0]), (0x19, [0]),
         (0x1D, [0]), (0x1E, [0]), (0x20, [0]), (0x21, [0]), (0x24, [0]))
EXTENDED = (0x80000001, 0x80000005, 0x80000006, 0x80000007, 0x80000008, 0x8000000A, 0x8000001A, 0x8000001B,
            0x8000001D, 0x8000001E, 0x8000001F, 0x80000021, 0x80000022, 0x80000026)


def s4(text: str) -> int:
    return int.from_bytes(text.encode("latin-1"), "little")


def random_cpu(rnd: random.Random) -> dict:
    def r32(density: float) -> int:
        return sum(1 << i for i in range(32) if rnd.random() < density)

    max_leaf = rnd.choice([0, 1, 4, 7, 0xB, 0xD, 0x12, 0x16, 0x19, 0x1F, 0x21, 0x24, 0x30])
    max_ext = rnd.choice([0, 0x80000000, 0x80000001, 0x80000008, 0x8000001F, 0x80000021, 0x80000028])
    vendor = rnd.choice(VENDORS)
    density = rnd.choice([0.0, 0.05, 0.2, 0.5, 0.8, 0.95, 1.0])
    leaves = {"0x0:0": [max_leaf, s4(vendor[0:4]), s4(vendor[8:12]), s4(vendor[4:8])]}
    for leaf, subs in BASIC:
        if leaf <= max_leaf or rnd.random() < 0.1:  # some leaves past the maximum, which must be ignored
            for sub in subs:
                leaves[f"{leaf:#x}:{sub}"] = [r32(density) for _ in range(4)]
    if max_leaf >= 1 and rnd.random() < 0.5:  # a plausible family/model
        fam = rnd.choice([5, 6, 7, 15, 0x17, 0x19, 0x1A])
        ext = (fam - 15) << 20 if fam >= 15 else 0
        leaves["0x1:0"][0] = (min(fam, 15) << 8) | ext | (rnd.randrange(16) << 4) | (rnd.randrange(16) << 16)
    if max_ext:
        leaves["0x80000000:0"] = [max_ext, 0, 0, 0]
        for leaf in EXTENDED:
            if leaf <= max_ext or rnd.random() < 0.1:
                leaves[f"{leaf:#x}:0"] = [r32(density) for _ in range(4)]
    hv = rnd.choice(HYPERVISORS)
    if hv is not None:
        leaves["0x40000000:0"] = [rnd.choice([0x40000001, 0x4000000C, 0x40000010]), s4(hv[0:4]), s4(hv[4:8]), s4(hv[8:12])]
        if max_leaf >= 1 and rnd.random() < 0.8:
            leaves["0x1:0"][2] |= 1 << 31
    xcr0 = rnd.choice([0, 3, 5, 7, 0xE7, 0x2E7, 0x60007, 0x602E7, r32(0.5)])
    return {"arch": "x86_64", "leaves": leaves, "xgetbv": xcr0}


def main() -> int:
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 20261129
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rnd = random.Random(seed)
    cpus = [random_cpu(rnd) for _ in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        # the driver's host root must hold nothing, so only CPUID decides (rdt, sgx, ...)
        prefix = os.environ.get("NFD_PREFIX_DIR")
        if prefix:
            shutil.rmtree(prefix, ignore_errors=True)
            os.makedirs(prefix)
        batch = os.path.join(tmp, "batch.json")
        with open(batch, "w") as f:
            json.dump(cpus, f)
        env = {**os.environ, "NFD_CPUID_BATCH": batch}
        out = subprocess.run([os.environ["NFD_DRIVER"]], env=env, capture_output=True, text=True, check=True).stdout
    results = json.loads(out)
    corpus = [{"cpuid": c, "flags": sorted((r["flags"] or {}).keys()), "attributes": r["attrs"] or {},
               "model": r["model"] or {}, "rdt": r["rdt"] or {}, "security": r["security"] or {},
               "sst": r["sst"] or {}} for c, r in zip(cpus, results, strict=True)]
    data = json.dumps({"seed": seed, "cpus": corpus}, separators=(",", ":"), sort_keys=True).encode()
    with open(OUT, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(data)
    print(f"wrote {len(corpus)} CPUs to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
