"""Template engine speed: parse cost and execute cost of typical NodeFeatureRule templates.

Prints figures only (no pass/fail). Run: python benchmarks/bench_templates.py
"""

from __future__ import annotations

import timeit

from nfd.lang.gotemplate import TypedMap, parse, typed_list

RANGE3 = """{{ range .pci.device }}vendor-{{ .vendor }}-{{ .device }}.present=true
class-{{ .class }}.present=true
{{ if eq .vendor "10de" }}nvidia={{ .device | upper }}{{ end }}
{{ end }}"""

CPUID = "{{ range .cpu.cpuid }}{{ .Name }}=true\n{{ end }}"

DATA = {
    "pci": {
        "device": [
            {"class": f"03{i:02x}", "vendor": "10de" if i % 2 else "8086", "device": f"{i:04x}"}
            for i in range(20)
        ]
    },
    "cpu": {"cpuid": [{"Name": f"FLAG{i}"} for i in range(20)]},
}


_ELEM = "nodefeaturerule.MatchedElement"
# What the rule engine passes: upstream's Go types on the matched-feature data.
TYPED = {
    "pci": TypedMap(
        {"device": typed_list([TypedMap(e, go_type=_ELEM, zero="") for e in DATA["pci"]["device"]], f"[]{_ELEM}")},
        go_type="nodefeaturerule.domainMatchedFeatures",
    )
}


def _bench(label: str, fn: object, number: int) -> None:
    t = min(timeit.repeat(fn, number=number, repeat=5)) / number  # type: ignore[arg-type]
    print(f"{label:<52} {t * 1e6:9.1f} µs")


def main() -> None:
    t3 = parse(RANGE3)
    tc = parse(CPUID)
    big_src = "{{ range .cpu.cpuid }}{{ .Name }}=true\n{{ end }}" * 1000
    _bench("parse 3-line range template", lambda: parse(RANGE3), 2000)
    _bench("execute 3-line range template, 20 elements", lambda: t3.execute(DATA), 2000)
    _bench("execute 3-line range template, 20 typed elements", lambda: t3.execute(TYPED), 2000)
    _bench("execute cpuid Name=true template, 20 elements", lambda: tc.execute(DATA), 2000)
    _bench(f"parse {len(big_src)} byte template", lambda: parse(big_src), 5)


if __name__ == "__main__":
    main()
