"""On a machine with a real NVIDIA GPU: what nfd's nvml source sees, against the mock's profile.

Runs the nvml source as nfd-worker runs it (pynvml on the driver's libnvidia-ml.so.1, the host's
own /sys), once per MIG strategy, and prints every difference from the same source over the
device profile of that GPU model (nfd/nvml_fake/device_profiles: h100-80gb, h200), features and
labels: the values the mock and the Python fake answer that the driver does not. Values that
differ by nature (UUIDs, bus ids, the timestamp) are left out of the comparison and printed.

    python3 -m pip install -e . && python3 scripts/gpu_device_check.py            # on the GPU machine
    python3 scripts/gpu_device_check.py --profile h200                            # another profile
    python3 scripts/gpu_device_check.py --self-test                               # here: under the mock

Exit 0 when it ran (differences are findings, not failures), 2 when there is no usable NVML.
`--self-test` runs the same check in a child process under the mock libnvidia-ml.so.1
(tests/tools/mocknvml: needs gcc and Go) with the profile's data, where no difference may show
(exit 1 if one does). Needs only nfd's own dependencies and the checkout (it imports
tests/support/mocknvml.py for the source's view); finishes in seconds, well under 5 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

#: feature attributes and labels that name this machine, not the model
VOLATILE = {"uuid", "pci_bus_id", "nvidia.com/gfd.timestamp", "fabric_cluster_uuid", "parent_uuid"}
#: NVML product names -> the profile describing that model
MODEL_PROFILES = {"NVIDIA H100 80GB HBM3": "h100-80gb", "NVIDIA H200": "h200"}


def view() -> dict[str, Any]:
    from tests.support.mocknvml import worker_view

    return worker_view()


def _flatten(v: dict[str, Any]) -> dict[str, str]:
    """The view as key -> value lines: features (instances by index) and labels per strategy."""
    out: dict[str, str] = {}
    features = v.get("features") or {}
    for name, attrs in sorted((features.get("attributes") or {}).items()):
        for k, val in sorted((attrs.get("elements") or {}).items()):
            if k not in VOLATILE:
                out[f"feature {name}.{k}"] = str(val)
    for name, inst in sorted((features.get("instances") or {}).items()):
        for i, el in enumerate(inst.get("elements") or []):
            for k, val in sorted((el.get("attributes") or {}).items()):
                if k not in VOLATILE:
                    out[f"feature {name}[{i}].{k}"] = str(val)
    for strategy, labels in sorted((v.get("labels") or {}).items()):
        for k, val in sorted(labels.items()):
            if k not in VOLATILE:
                out[f"label[{strategy}] {k}"] = str(val)
    for strategy, n in sorted((v.get("errors_total") or {}).items()):
        out[f"errors_total[{strategy}]"] = str(n)
    return out


def differences(real: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    a, b = _flatten(real), _flatten(expected)
    lines = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            lines.append(f"  {key}: GPU {a.get(key, '<absent>')!r}  profile {b.get(key, '<absent>')!r}")
    return lines


def product(v: dict[str, Any]) -> str:
    for inst in ((v.get("features") or {}).get("instances") or {}).get("nvml.gpu", {}).get("elements") or []:
        return str((inst.get("attributes") or {}).get("name", ""))
    return ""


def check(profile: str | None) -> int:
    began = time.monotonic()
    real = view()
    if "features" not in real or not product(real):
        print(f"no usable NVML here (library {real.get('library')}, last error {real.get('last_error')})")
        return 2
    name = product(real)
    profile = profile or MODEL_PROFILES.get(name)
    print(f"GPU: {name}; NVML library: {real.get('library')}; profile: {profile or '(none for this model)'}")
    gpu_features = ((real["features"].get("instances") or {}).get("nvml.gpu") or {}).get("elements") or []
    for el in gpu_features:
        attrs = el.get("attributes") or {}
        print("  " + ", ".join(f"{k}={attrs[k]}" for k in ("index", "uuid", "pci_bus_id") if k in attrs))
    if not profile:
        print(json.dumps(real["labels"], indent=1, sort_keys=True))
        return 0
    from tests.support.mocknvml import fake_view

    diff = differences(real, fake_view(profile))
    print(f"differences from profile {profile} ({len(diff)}):" if diff else f"no difference from profile {profile}")
    for line in diff:
        print(line)
    print(f"checked in {time.monotonic() - began:.1f}s")
    return 0


def self_test(profile: str) -> int:
    """The check in a child process under the mock library answering from ``profile``."""
    from tests.support import mocknvml

    with tempfile.TemporaryDirectory(prefix="nfd-gpu-check-") as tmp:
        env = mocknvml.prepare(profile, Path(tmp))
        proc = subprocess.run([sys.executable, __file__, "--profile", profile], env=env, cwd=REPO_ROOT,
                              capture_output=True, text=True, timeout=240, check=False)
    print(proc.stdout, end="")
    print(proc.stderr, end="", file=sys.stderr)
    if proc.returncode != 0 or f"no difference from profile {profile}" not in proc.stdout:
        print(f"self-test: FAILED (exit {proc.returncode})")
        return 1
    print("self-test: ok")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", help="the profile to compare with (default: by the GPU's NVML name)")
    ap.add_argument("--self-test", action="store_true", help="run under the mock NVML library (no GPU needed)")
    args = ap.parse_args(argv)
    os.environ.pop("NFD_NVML_PROFILE", None)  # the real pynvml, never the Python fake
    if args.self_test:
        return self_test(args.profile or "h100-80gb")
    return check(args.profile)


if __name__ == "__main__":
    sys.exit(main())
