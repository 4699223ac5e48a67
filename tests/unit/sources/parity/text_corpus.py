"""Random host roots for the text parsers (features.d, os-release, kconfig, /proc/modules).

``build_tree(seed, root)`` is deterministic; ``expected/text-corpus.json.gz`` holds what upstream's
sources made of the trees for seeds 0..N-1 (``tests/oracles/sources_parity/regen_text_corpus.py``), and the test rebuilds each
tree and compares ours. Quoted ``"y"``/``"m"`` kconfig values are left out: a documented deviation.
"""

from __future__ import annotations

import os
import random
import shutil

WS = [" ", "\t", "", "", "", "\r", "\x0b", "\x0c", "\xa0", "\u3000", "\x1c", "\x85"]
TIMES = ["2000-01-01T00:00:00Z", "2099-01-01T00:00:00Z", "garbage", "", "2000-01-01T00:00:00+01:00",
         "2099-12-31T23:59:59.5Z", "2000-01-01 00:00:00Z"]
KCONFIG_OPTS = ["A", "B", "NO_HZ", "PREEMPT", "NO_HZ_FULL", "NO_HZ_IDLE", "C", "D", ""]
CONFIG = "sources:\n  kernel:\n    configOpts: [" + ", ".join(f"'{o}'" for o in KCONFIG_OPTS) + "]\n"

#: the features these trees exercise (others depend on the machine the test runs on)
FEATURES = {("attributes", "local.feature"), ("attributes", "local.label"), ("attributes", "system.osrelease"),
            ("attributes", "kernel.config"), ("attributes", "kernel.version"), ("flags", "kernel.loadedmodule")}
LABEL_PREFIXES = ("feature.node.kubernetes.io/kernel-", "feature.node.kubernetes.io/system-os_release")


def _ws(rnd: random.Random) -> str:
    return rnd.choice(WS) if rnd.random() < 0.3 else ""


def _word(rnd: random.Random) -> str:
    alphabet = "abcXYZ019_-./=#+ \"'" + rnd.choice(["", "\u00fc", "\u2028", "\u00e9"])
    return "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 8)))


def _features_line(rnd: random.Random, i: int) -> str:
    r = rnd.random()
    if r < 0.15:
        directive = rnd.choice(["no-label", "no-feature", "expiry-time=" + rnd.choice(TIMES), "expiry-time", "bogus",
                                "no-label=1"])
        return _ws(rnd) + "# +" + directive + _ws(rnd)
    if r < 0.2:
        return _ws(rnd) + "#" + _word(rnd)
    if r < 0.25:
        return _ws(rnd)
    key = f"f{i}-" + _word(rnd)
    if rnd.random() < 0.1:
        key = rnd.choice(["", "=", " ", f"f{i}"])
    return _ws(rnd) + key + rnd.choice(["=", "=", "=", "", "=="]) + _word(rnd) + _ws(rnd)


def _os_release_line(rnd: random.Random) -> str:
    key = rnd.choice(["ID", "VERSION_ID", "NAME", "ID_LIKE", "X_1", "lower", "\u00dcML", "A-B", " ID", "ID "])
    if rnd.random() < 0.5:
        value = rnd.choice(["", "'", '"', "''", '""']) + _word(rnd) + rnd.choice(["", "'", '"'])
    else:
        value = rnd.choice(["1", "1.2", "1.2.3", "10.0-rc", ".5", "5.", "x1.2", "\u0663.\u0664", "1..2", "22.04", " 9"])
    return key + rnd.choice(["=", "=", " =", "= "]) + value + rnd.choice(["", "\r", " ", "\t"])


def _kconfig_line(rnd: random.Random) -> str:
    name = rnd.choice(["CONFIG_A", "CONFIG_B", "CONFIG_NO_HZ", "CONFIG_PREEMPT", "CONFIG_", " CONFIG_C",
                       "# CONFIG_D is not set", "CONFIGX", "CONFIG_NO_HZ_FULL", "CONFIG_NO_HZ_IDLE"])
    value = rnd.choice(["y", "m", "n", '""', '"str ing"', "123", "0x10", "", "y\r", '"a"b"', "=y"])
    return name + rnd.choice(["=", "=", ""]) + value


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def build_tree(seed: int, root: str) -> str:
    rnd = random.Random(seed)
    shutil.rmtree(root, ignore_errors=True)
    fd = os.path.join(root, "etc/kubernetes/node-feature-discovery/features.d")
    os.makedirs(fd)
    for i in range(rnd.randint(1, 40)):
        eol = rnd.choice(["\n", "\r\n", "\n"])
        lines = [_features_line(rnd, i) for _ in range(rnd.randint(0, 25))]
        _write(os.path.join(fd, f"{i:03d}" + rnd.choice(["", "", ".conf", "x"])), eol.join(lines) + rnd.choice(["", "\n"]))
    version = rnd.choice(["6.1.0", "5.4.0-1-generic", "4.19", "weird!ver", "6.8.0-rc1+"])
    _write(os.path.join(root, "proc/sys/kernel/osrelease"), version + "\n")
    lines = [_os_release_line(rnd) for _ in range(rnd.randint(0, 15))]
    _write(os.path.join(root, "etc/os-release"), "\n".join(lines) + rnd.choice(["", "\n"]))
    _write(os.path.join(root, "boot/config-" + version), "\n".join(_kconfig_line(rnd) for _ in range(rnd.randint(0, 30))) + "\n")
    modules = [rnd.choice(["", "a 1 0 - Live", "b\t2", "c", "  d 3", "e\x0cf 1", "\u00fc 1"]) for _ in range(rnd.randint(0, 8))]
    _write(os.path.join(root, "proc/modules"), "\n".join(modules) + "\n")
    return root


def select(features: dict, labels: dict) -> dict:
    feats = {f"{kind}/{name}": (features.get(kind) or {}).get(name) for kind, name in sorted(FEATURES)}
    return {"features": feats, "labels": {k: v for k, v in labels.items() if k.startswith(LABEL_PREFIXES)}}
