"""Template cases taken from Go's own text/template test tables, at generation time.

regen_golden.py asks the oracle to read $GOROOT/src/text/template/{exec_test.go, multi_test.go,
parse/parse_test.go} (`oracle extract`, a go/ast walk) and keeps the templates whose data fits
what NFD passes to templates: maps of strings, numbers, bools and lists. Go's struct `tVal`
becomes the map TVAL (its plain-data fields); tests that need Go methods, func-valued fields,
pointers, typed nils or the test-only functions of Go's FuncMap are left out. The expected
outputs are then produced by the oracle (real text/template + Sprig), not taken from Go's
tables, because the data is a map here and a struct there. Nothing of Go's test files is stored
but the template texts in golden_go_tables.json.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# The plain-data fields of exec_test.go's tVal, as JSON would carry them.
TVAL: dict[str, Any] = {
    "True": True, "I": 17, "U16": 16, "X": "x", "S": "xyz", "FloatZero": 0.0,
    "U": {"V": "v"},
    "SI": [3, 4, 5], "SICap": [0, 0, 0, 0, 0], "SIEmpty": [], "SB": [True, False],
    "AI": [3, 4, 5], "PAI": [3, 4, 5],
    "MSI": {"one": 1, "two": 2, "three": 3}, "MSIone": {"one": 1}, "MSIEmpty": {}, "MXI": {"one": 1},
    "SMSI": [{"one": 1, "two": 2}, {"eleven": 11, "twelve": 12}],
    "Empty0": None, "Empty1": 3, "Empty2": "empty2", "Empty3": [7, 8], "Empty4": {"V": "UinEmpty"},
    "NonEmptyInterface": {"X": "x"}, "NonEmptyInterfaceNil": None,
    "PS": "a string", "PSI": [21, 22, 23], "NIL": None,
}
# TestComparison's struct, same treatment.
CMP: dict[str, Any] = {"Uthree": 3, "Ufour": 4, "NegOne": -1, "Three": 3, "NonNilMap": {}, "Map": None}

# Names a template may not reach for: Go methods and fields that have no map form.
_GO_ONLY = {
    "Method0", "Method1", "Method2", "Method3", "Copy", "MAdd", "MyError", "GetU", "TrueFalse",
    "String", "Error", "ComplexZero", "V0", "V1", "V2", "W0", "W1", "W2", "MII", "MI32S", "MI64S",
    "MUI32S", "MUI64S", "MI8S", "MUI8S", "Str", "Err", "PI", "UPI", "EmptyUPI", "BinaryFunc",
    "VariadicFunc", "VariadicFuncInt", "NilOKFunc", "ErrFunc", "PanicFunc", "TooFewReturnCountFunc",
    "TooManyReturnCountFunc", "InvalidReturnTypeFunc", "Tmpl", "unexported", "NonEmptyInterfacePtS",
    "NonEmptyInterfaceTypedNil", "Ptr", "NilPtr", "Iface1", "NilIface",
}
_GO_ONLY_RE = re.compile(r"\.(" + "|".join(sorted(_GO_ONLY)) + r")\b")

# exec_test.go's `data` expressions that have a JSON form.
_LITERAL_DATA: dict[str, Any] = {
    "tVal": TVAL, "&iVal": TVAL, "nil": None, "0": 0, "13": 13, "123": 123, "15.1": 15.1, "true": True,
    "[]int{-1, -2, -3}": [-1, -2, -3], 'map[string]int{"two": 22}': {"two": 22},
    'map[string]string{"cause": "neglect"}': {"cause": "neglect"}, "int(5)": 5,
}
# exec_test.go computes these from the int size; the oracle is built for 64-bit ints.
_GO_VARS = {"bigInt": "0x7fffffffffffffff", "bigUint": "0x8000000000000000"}


def _input(row: dict[str, Any], idx: int) -> str | None:
    """The string field idx of a table row, with Go's computed string variables filled in."""
    f = row["fields"][idx]
    if "s" in f:
        return str(f["s"])
    src = str(f["src"])
    # "{{typeOf " + bigInt + "}}" and similar concatenations
    parts = [p.strip() for p in src.split("+")]
    if all(p in _GO_VARS or (p.startswith('"') and p.endswith('"')) for p in parts):
        return "".join(_GO_VARS[p] if p in _GO_VARS else json.loads(p) for p in parts)
    return None


def extract(oracle: str, goroot: str) -> list[dict[str, Any]]:
    base = Path(goroot) / "src" / "text" / "template"
    files = [base / "exec_test.go", base / "multi_test.go", base / "parse" / "parse_test.go"]
    r = subprocess.run([oracle, "extract", *map(str, files)], capture_output=True, text=True, check=True)
    return [json.loads(line) for line in r.stdout.splitlines()]


def cases(rows: list[dict[str, Any]]) -> Iterator[tuple[str, str, Any]]:
    """(source id, template, data) for every usable row; the oracle decides the outcome."""
    consts = {r["const"]: r["s"] for r in rows if "const" in r}
    multi_defs = consts.get("multiText1", "") + consts.get("multiText2", "")
    seen: set[tuple[str, str]] = set()

    def emit(src: str, tpl: str, data: Any) -> Iterator[tuple[str, str, Any]]:
        if _GO_ONLY_RE.search(tpl):
            return
        key = (tpl, json.dumps(data, sort_keys=True))
        if key in seen:
            return
        seen.add(key)
        yield src, tpl, data

    for r in rows:
        table = r.get("table")
        if table is None:
            continue
        name = r["fields"][0].get("s") if r["fields"] else None
        sid = f"{r['file']}:{table}:{name}"
        if table in ("execTests", "multiExecTests"):
            tpl = _input(r, 1)
            data_src = r["fields"][3].get("src") if "src" in r["fields"][3] else None
            if tpl is None:
                continue
            if data_src is None:
                data: Any = r["fields"][3]["s"]
            elif data_src in _LITERAL_DATA:
                data = _LITERAL_DATA[data_src]
            else:
                continue
            if table == "multiExecTests":
                tpl = multi_defs + tpl
            yield from emit(sid, tpl, data)
        elif table == "cmpTests":
            expr = _input(r, 0)
            if expr is not None:
                yield from emit(f"{r['file']}:cmpTests:{expr}", "{{if " + expr + "}}true{{else}}false{{end}}", CMP)
        elif table in ("parseTests", "errorTests", "multiParseTests") or table == "isEmptyTests":
            tpl = _input(r, 1)
            if tpl is not None:
                yield from emit(sid, tpl, TVAL)
        elif table == "numberTests":
            text = _input(r, 0)
            if text is not None:
                yield from emit(f"{r['file']}:numberTests:{text}", "{{ typeOf " + text + " }} {{ " + text + " }}", None)


def keep(result: dict[str, str]) -> bool:
    """Whether the oracle's answer tests our engine rather than a Go test-only function."""
    perr = result.get("perr", "")
    return not ("function" in perr and "not defined" in perr)
