"""Rule engine benchmark: 100 realistic rules x 1,000 synthetic nodes.

Nodes carry realistic feature sizes (~100 cpuid flags, 20 PCI devices, ~3,000 kernel config
attributes, loaded modules, os-release, USB devices...). Rules mix operators (In, NotIn,
InRegexp, Exists, DoesNotExist, Gt/Lt/GtLt, version compares, IsTrue), about five expressions each,
with some matchAny, matchName, rule.matched chaining and templates.

Prints compile time per rule and microseconds per (node, rule), overall and for plain
matchExpressions rules (process CPU time, not wall-clock). Run: ``python benchmarks/bench_rules.py [--nodes N]``.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from nfd.api.features import Features
from nfd.rules.engine import CompiledRule, compile_nodefeaturerule, evaluate_rule, process_rule_sets

CPUID = [
    "ADX", "AESNI", "AMXBF16", "AMXINT8", "AMXTILE", "AVX", "AVX2", "AVX512BF16", "AVX512BITALG", "AVX512BW",
    "AVX512CD", "AVX512DQ", "AVX512F", "AVX512FP16", "AVX512IFMA", "AVX512VBMI", "AVX512VBMI2", "AVX512VL",
    "AVX512VNNI", "AVX512VPOPCNTDQ", "AVXVNNI", "BMI1", "BMI2", "CETIBT", "CETSS", "CLDEMOTE", "CLMUL",
    "CLWB", "CMPXCHG8", "CX16", "ENQCMD", "ERMS", "F16C", "FMA3", "FSRM", "FXSR", "FXSROPT", "GFNI", "HLE",
    "HYPERVISOR", "IA32_ARCH_CAP", "IBPB", "IBRS", "LAHF", "LZCNT", "MMX", "MOVBE", "MOVDIR64B", "MOVDIRI",
    "MPX", "NX", "OSXSAVE", "POPCNT", "RDRAND", "RDSEED", "RDTSCP", "RTM", "SERIALIZE", "SGX", "SHA", "SSE",
    "SSE2", "SSE3", "SSE4", "SSE42", "SSSE3", "STIBP", "SYSCALL", "SYSEE", "TSXLDTRK", "VAES", "VMX",
    "VPCLMULQDQ", "WAITPKG", "WBNOINVD", "X87", "XGETBV1", "XSAVE", "XSAVEC", "XSAVEOPT", "XSAVES",
    "AMD3DNOW", "AMD3DNOWEXT", "SSE4A", "SVM", "TBM", "XOP", "FMA4", "SEV", "SEV_ES", "SEV_SNP", "SME",
    "PCONFIG", "PKU", "OSPKE", "UINTR", "AMXFP16", "AVXIFMA", "AVXNECONVERT", "AVXVNNIINT8", "CMPCCXADD",
    "PREFETCHI", "WRMSRNS", "LAM", "FZLRM", "FSRS", "FSRC",
]  # fmt: skip
MODULES = [f"mod_{i}" for i in range(180)] + [
    "e1000e",
    "ixgbe",
    "i40e",
    "ice",
    "mlx5_core",
    "nvidia",
    "kvm",
    "kvm_intel",
    "vfio_pci",
    "dummy",
]
VENDORS = ["8086", "10de", "15b3", "1af4", "1022", "14e4", "0fff", "1d0f"]
CLASSES = ["0200", "0300", "0302", "0106", "0108", "0c03", "0600", "0604", "1200", "0880"]


def make_node(i: int, rng: random.Random) -> Features:
    f = Features()
    f.add_flags("cpu.cpuid", rng.sample(CPUID, 100))
    f.add_attributes("cpu.cpuid", {"AVX10_VERSION": str(rng.choice([0, 1, 2]))})
    f.add_attributes(
        "cpu.model",
        {
            "vendor_id": rng.choice(["Intel", "AMD"]),
            "family": str(rng.choice([6, 23, 25])),
            "id": str(rng.randint(1, 200)),
            "hypervisor": rng.choice(["none", "KVM"]),
        },
    )
    f.add_attributes(
        "cpu.topology",
        {"hardware_multithreading": rng.choice(["true", "false"]), "socket_count": str(rng.choice([1, 2]))},
    )
    cfg = {f"CONFIG_OPT_{k}": rng.choice(["y", "m", "n", "1", "64"]) for k in range(2990)}
    cfg.update(
        {
            "X86": "y",
            "NO_HZ_FULL": rng.choice(["y", "n"]),
            "PREEMPT_RT": rng.choice(["y", "n"]),
            "LSM": "apparmor,bpf",
            "NR_CPUS": "8192",
        }
    )
    f.add_attributes("kernel.config", cfg)
    major = rng.choice([4, 5, 6])
    minor = rng.randint(0, 19)
    f.add_attributes(
        "kernel.version",
        {
            "major": str(major),
            "minor": str(minor),
            "revision": "0",
            "full": f"{major}.{minor}.0-{rng.randint(1, 120)}-generic",
        },
    )
    f.add_flags("kernel.loadedmodule", rng.sample(MODULES, 100))
    f.add_attributes("kernel.selinux", {"enabled": rng.choice(["true", "false"])})
    f.add_attributes(
        "system.osrelease",
        {
            "ID": rng.choice(["ubuntu", "rhel", "sles"]),
            "VERSION_ID": "22.04",
            "VERSION_ID.major": "22",
            "VERSION_ID.minor": "04",
        },
    )
    f.add_attributes("system.name", {"nodename": f"node-{i}"})
    f.add_attributes(
        "memory.numa", {"is_numa": rng.choice(["true", "false"]), "node_count": str(rng.choice([1, 2, 4]))}
    )
    f.add_instances(
        "pci.device",
        [
            {
                "vendor": rng.choice(VENDORS),
                "class": rng.choice(CLASSES),
                "device": f"{rng.randint(0, 0xFFFF):04x}",
                "subsystem_vendor": rng.choice(VENDORS),
                "subsystem_device": f"{rng.randint(0, 0xFFFF):04x}",
                "sriov_totalvfs": str(rng.choice([0, 8, 64])),
            }
            for _ in range(20)
        ],
    )
    f.add_instances(
        "usb.device",
        [
            {
                "vendor": rng.choice(["046d", "8087"]),
                "class": rng.choice(["ff", "03", "09"]),
                "device": "0a2b",
                "serial": f"S{rng.randint(0, 999)}",
            }
            for _ in range(5)
        ],
    )
    f.add_instances(
        "network.device",
        [
            {
                "name": f"eth{k}",
                "operstate": "up",
                "speed": str(rng.choice([1000, 10000, 25000])),
                "sriov_totalvfs": "0",
            }
            for k in range(4)
        ],
    )
    f.add_instances(
        "storage.block", [{"name": f"nvme{k}n1", "rotational": "0", "nr_zones": "0"} for k in range(3)]
    )
    return f


def make_rules(rng: random.Random) -> tuple[dict[str, Any], list[int], list[int]]:
    """(NFR object, indices of plain matchExpressions rules, indices of the rest)."""
    rules: list[dict[str, Any]] = []
    plain: list[int] = []
    other: list[int] = []
    for i in range(100):
        kind = i % 10
        r: dict[str, Any] = {"name": f"rule-{i}", "labels": {f"rule-{i}": "true"}}
        if kind in (0, 1, 2, 3, 4, 5):  # plain matchExpressions, ~5 expressions over 2-3 terms
            r["matchFeatures"] = [
                {
                    "feature": "cpu.cpuid",
                    "matchExpressions": {
                        rng.choice(CPUID): {"op": "Exists"},
                        rng.choice(CPUID): {"op": "Exists"},
                    },
                },
                {
                    "feature": "kernel.version",
                    "matchExpressions": {
                        "major": {"op": "Gt", "value": ["3"]},
                        "minor": {"op": "GtLt", "value": ["-1", "30"]},
                    },
                },
                {
                    "feature": "kernel.config",
                    "matchExpressions": {
                        f"CONFIG_OPT_{rng.randint(0, 2989)}": {
                            "op": "In",
                            "value": ["y", "m", "n", "1", "64"],
                        }
                    },
                },
            ]
            if kind == 5:
                r["matchFeatures"].append(
                    {
                        "feature": "pci.device",
                        "matchExpressions": {
                            "vendor": {"op": "In", "value": [rng.choice(VENDORS)]},
                            "class": {"op": "InRegexp", "value": ["^0[23]"]},
                        },
                    }
                )
            plain.append(i)
        elif kind == 6:  # matchAny
            r["matchAny"] = [
                {
                    "matchFeatures": [
                        {
                            "feature": "pci.device",
                            "matchExpressions": {
                                "vendor": {"op": "In", "value": [v]},
                                "class": {"op": "In", "value": ["0300", "0302"]},
                            },
                        }
                    ]
                }
                for v in rng.sample(VENDORS, 3)
            ]
            other.append(i)
        elif kind == 7:  # matchName + version + DoesNotExist + NotIn
            r["matchFeatures"] = [
                {"feature": "cpu.cpuid", "matchName": {"op": "InRegexp", "value": ["^AVX512"]}},
                {
                    "feature": "kernel.version",
                    "matchExpressions": {"full": {"op": "Ge", "value": ["4.18"], "type": "version"}},
                },
                {"feature": "kernel.loadedmodule", "matchExpressions": {"nouveau": {"op": "DoesNotExist"}}},
                {
                    "feature": "system.osrelease",
                    "matchExpressions": {"ID": {"op": "NotIn", "value": ["sles"]}},
                },
            ]
            other.append(i)
        elif kind == 8:  # templates
            r["labelsTemplate"] = (
                "{{ range .pci.device }}pci-{{ .vendor }}-{{ .class }}.present=true\n{{ end }}"
            )
            r["matchFeatures"] = [
                {
                    "feature": "pci.device",
                    "matchExpressions": {
                        "vendor": {"op": "In", "value": ["10de", "15b3"]},
                        "class": {"op": "InRegexp", "value": ["^0[23]"]},
                    },
                }
            ]
            other.append(i)
        else:  # chaining on earlier outputs
            r["vars"] = {f"v-{i}": "true"}
            r["matchFeatures"] = [
                {
                    "feature": "rule.matched",
                    "matchExpressions": {
                        f"rule-{i - 1}": {"op": "IsTrue"},
                        f"rule-{i - 3}": {"op": "IsTrue"},
                    },
                },
                {"feature": "memory.numa", "matchExpressions": {"is_numa": {"op": "IsTrue"}}},
            ]
            other.append(i)
        rules.append(r)
    return {"kind": "NodeFeatureRule", "metadata": {"name": "bench"}, "spec": {"rules": rules}}, plain, other


def _clock() -> float:
    # CPU time of this process: the development machine's cores are shared, so wall-clock
    # figures mostly measure the neighbours
    return time.process_time()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    t0 = _clock()
    nodes = [make_node(i, rng) for i in range(args.nodes)]
    t_gen = _clock() - t0
    obj, plain, _other = make_rules(rng)

    compile_nodefeaturerule(obj)  # warm-up: imports the template engine, fills regexp caches
    t0 = _clock()
    reps = 20
    for _ in range(reps):
        rs = compile_nodefeaturerule(obj)
    t_compile = (_clock() - t0) / reps / len(rs.rules)
    n_rules = len(rs.rules)

    # whole pipeline as the master runs it (feed-back, accumulation)
    t0 = _clock()
    matched = errors = 0
    for f in nodes:
        res = process_rule_sets([rs], f)
        matched += sum(r.matched for r in res.results)
        errors += len(res.errors)
    t_all = _clock() - t0

    # plain matchExpressions rules alone, one evaluate_rule call each
    plain_rules = [rs.rules[i] for i in plain]
    assert all(isinstance(r, CompiledRule) for r in plain_rules)
    t0 = _clock()
    for f in nodes:
        for r in plain_rules:
            evaluate_rule(r, f)
    t_plain = _clock() - t0

    pairs = len(nodes) * n_rules
    print(
        f"nodes: {len(nodes)} (generated in {t_gen:.1f}s), rules: {n_rules} ({len(plain)} plain matchExpressions)"
    )
    print(f"compile: {t_compile * 1e6:.1f} us per rule")
    print(
        f"process_rule_sets: {t_all:.2f}s total, {t_all / pairs * 1e6:.2f} us per (node, rule), "
        f"{t_all / len(nodes) * 1e3:.2f} ms per node; matched {matched / pairs:.0%} of pairs, {errors} errors"
    )
    print(
        f"plain matchExpressions rules: {t_plain / (len(nodes) * len(plain)) * 1e6:.2f} us per (node, rule)"
    )


if __name__ == "__main__":
    main()
