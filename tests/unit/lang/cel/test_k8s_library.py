"""Kubernetes' CEL library in nfd, checked against the real thing.

Every expression of ``CASES`` is evaluated by nfd and by Kubernetes 1.35's own CEL environment
(``tests/tools/celk8s``: k8s.io/apiserver's base environment plus ext.Bindings as DRA adds it,
built from Go modules and cached like the test apiserver). Results must agree: the value and its
CEL type, or an error in the same phase (compile or evaluation). Error texts are not compared.
Without Go the oracle tests are skipped; the plain tests at the end run everywhere.
"""

from __future__ import annotations

import base64
import json
import math
import subprocess
import sys
from typing import Any

import pytest

from nfd.api.features import Features
from nfd.lang.cel import DEFAULT_STEP_LIMIT, Act, CelError, CelSyntaxError, compile_program
from nfd.lang.cel.compiler import Compiler
from nfd.lang.cel.library import format_double
from nfd.lang.cel.syntax import parse
from nfd.lang.cel.values import CIDR, IP, URL, Optional, Quantity, Semver, UInt, Version

# -- the table ---------------------------------------------------------------------------------

SEMVERS = ["1.2.3", "0.0.0", "1.2.3-alpha.1+build.5", "1.0.0-rc.1", "1.0.0-0", "1.0.0-0a", "1.0.0+001",
           "v1.2.3", "1.2", "1", "01.2.3", "1.02.3", "1.2.03", "1.2.3-01", "1.2.3-", "1.2.3+", "1.2.3-a..b",
           "1.2.3.4", " 1.2.3", "1.2.3 ", "", "v", "1.2.+3", "-1.2.3", "1..3", "1.2.3-a\u00e9", "1.2.3-rc_1",
           "18446744073709551615.0.0", "18446744073709551616.0.0", "9223372036854775808.1.2", "1.2-rc1",
           "v01.2", "00.1.2", "v000.1.2", "1.2.3-beta+exp.sha.5114f85", "5.15.0-91-generic", "6.0.0-beta"]
SEMVER_PAIRS = [("1.2.3", "1.2.4"), ("1.2.3", "1.2.3"), ("1.2.3", "1.2.3+x"), ("1.0.0-alpha", "1.0.0-alpha.1"),
                ("1.0.0-alpha.1", "1.0.0-alpha.beta"), ("1.0.0-alpha.beta", "1.0.0-beta"),
                ("1.0.0-beta.2", "1.0.0-beta.11"), ("1.0.0-rc.1", "1.0.0"), ("1.0.0-2", "1.0.0-11"),
                ("1.0.0-a", "1.0.0-1"), ("2.0.0", "10.0.0"), ("1.10.0", "1.9.9"), ("0.1.0-x", "0.1.0-X")]
IPS = ["1.2.3.4", "0.0.0.0", "255.255.255.255", "127.0.0.1", "127.255.0.1", "10.0.0.1", "192.168.1.1",
       "169.254.1.1", "224.0.0.1", "224.0.1.1", "239.1.1.1", "::", "::1", "fe80::1", "fe80::1%eth0", "fe80::1%",
       "ff02::1", "ff05::2", "ff12::3", "2001:db8::1", "2001:DB8:0:0:0:0:0:1", "2001:db8:0:0:1:0:0:1",
       "::ffff:1.2.3.4", "::1.2.3.4", "64:ff9b::1.2.3.4", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.256",
       "1.2.3.-1", " 1.2.3.4", "1.2.3.4 ", "", "::g", "1::2::3", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9",
       "1:2:3:4:5:6:7::", "::1:2:3:4:5:6:7", "1::2:3:4:5:6:7", "[::1]", "1.2.3.4/8", "0x1.2.3.4", "fec0::1",
       "100.64.0.1", "fd00::1", "1.2.3.04"]
CIDRS = ["10.0.0.0/8", "10.1.2.3/8", "0.0.0.0/0", "1.2.3.4/32", "1.2.3.4/33", "1.2.3.4/-1", "1.2.3.4/08",
         "1.2.3.4/ 8", "1.2.3.4", "1.2.3.4/", "::/0", "::1/128", "2001:db8::/32", "2001:db8::1/129",
         "2001:db8:1::/48", "fe80::1%eth0/64", "::ffff:1.2.3.4/96", "01.2.3.4/8", "192.168.0.0/16",
         "192.168.10.0/24", "/8", "", "10.0.0.0/+8", "10.0.0.0/8/8"]
CIDR_CONTAINS = [("10.0.0.0/8", "10.1.2.3"), ("10.0.0.0/8", "11.0.0.0"), ("10.0.0.0/8", "::1"),
                 ("::/0", "2001:db8::1"), ("0.0.0.0/0", "::1"), ("192.168.0.0/16", "192.168.255.255"),
                 ("192.168.1.1/16", "192.168.2.1"), ("2001:db8::/32", "2001:db9::1")]
CIDR_IN_CIDR = [("10.0.0.0/8", "10.1.0.0/16"), ("10.0.0.0/8", "10.0.0.0/8"), ("10.1.0.0/16", "10.0.0.0/8"),
                ("10.0.0.0/8", "11.0.0.0/16"), ("::/0", "10.0.0.0/8"), ("2001:db8::/32", "2001:db8:1::/48"),
                ("10.1.2.3/8", "10.200.0.0/16"), ("0.0.0.0/0", "0.0.0.0/0")]
URLS = ["https://example.com", "https://example.com/", "https://user:pass@example.com:8443/a/b?x=1&y=2&x=3#frag",
        "http://example.com/a%2Fb", "http://example.com/a b", "http://example.com/%zz", "http://example.com/%41",
        "http://[::1]:8080/x", "http://[fe80::1%25en0]/", "http://[1.2.3.4]/", "http://[::1", "http://a:b:c/",
        "https://a:b:c/", "http://example.com:abc/", "http://example.com:/", "/just/a/path", "just/a/path", "*",
        "", "mailto:someone@example.com", "urn:isbn:0451450523", "HTTP://EXAMPLE.COM/UPPER",
        "http://example.com/?", "http://example.com/?a=1;b=2", "http://example.com/?a=%zz&b=2", "http://example.com/?a+b=c+d",
        "http://example.com/?a=&=b&c", "http://ex ample.com/", "http://example.com/\u00e9", "http://\u00e9.com/",
        "http://example.com/#a b", "http://example.com/#%zz", "http://%41.com/", "http://%c3%a9.com/",
        "ftp://ftp.example.com/pub/file.txt", "https://example.com:443", "://missing", "1http://x",
        "http://user@example.com", "http://us er@example.com", "http://a@b@example.com/", "http://example.com/a/../b",
        "http:///path", "file:///etc/hosts", "http://example.com/a?b#c?d", "https://example.com/\x7f",
        "http://example.com/path;params", "http://example.com/a%2fb%2Fc", "http://[::1]:99999/"]
LIST_CASES = [
    "[1, 2, 3].isSorted()", "[3, 1].isSorted()", "[].isSorted()", "[1, 1, 2].isSorted()", "['a', 'b', 'B'].isSorted()",
    "[1.0, 2.5, 2.5].isSorted()", "[true, false].isSorted()", "[false, true].isSorted()", "[b'a', b'b'].isSorted()",
    "[1u, 2u].isSorted()", "[[1], [2]].isSorted()", "[1, 2, 3].sum()", "[1.5, 2.25].sum()", "[1u, 2u].sum()",
    "[].sum()", "dyn([]).sum()", "['a'].sum()", "[9223372036854775807, 1].sum()", "[18446744073709551615u, 1u].sum()",
    "[1, 2, 3].min()", "[3, 1, 2].max()", "['b', 'a', 'c'].min()", "['b', 'a', 'c'].max()", "[].min()", "[].max()",
    "[2.5, -1.0].min()", "[true, false].max()", "[b'b', b'a'].min()", "[5u, 3u].min()", "[[1]].min()",
    "[1, 2, 3, 2].indexOf(2)", "[1, 2, 3, 2].lastIndexOf(2)", "[1, 2].indexOf(5)", "[].indexOf(1)",
    "['a', 'b'].indexOf('b')", "[1, 2].indexOf('a')", "[[1], [2]].indexOf([2])", "[1.0, 2.0].indexOf(2.0)",
    "dyn([dyn(1), dyn(2.0)]).indexOf(2)", "dyn([1, 2]).lastIndexOf(1u)", "[{'a': 1}, {'a': 2}].indexOf({'a': 2})",
    "['x', 'y', 'x'].lastIndexOf('x')", "[].lastIndexOf('x')", "[1, 2, 3].sum() == 6 && [1, 2, 3].max() == 3",
    "'abc'.indexOf('c')", "[1, 2, 3].min() < [4].max()",
]
REGEX_CASES = [
    "'abc 123 def 456'.find('[0-9]+')", "'abc'.find('[0-9]+')", "'abc 123 def 456'.findAll('[0-9]+')",
    "'abc 123 def 456'.findAll('[0-9]+', 1)", "'abc 123 def 456'.findAll('[0-9]+', 0)", "'abc'.findAll('x')",
    "'aaa'.findAll('a*')", "'abc'.findAll('')", "'héllo wörld'.findAll('[^ ]+')", "'abc'.find('(')",
    "'abc'.findAll('(', 1)", "'abc'.find('(?i)B')", "'a1b22c333'.findAll('[0-9]+', -1)", "'a1b22'.findAll('[0-9]+', 5)",
    "'x'.find('\\\\pL')", "'abc'.find('b|c')", "'abc'.find('(?P<x>b)')", "'abab'.findAll('a|ab')",
    "'10.0.0.1'.find('^[0-9]+')", "'aXbXc'.findAll('X', 2)", "'abc'.find('\\\\C')", "'abc'.find('a{1001}')",
]
SETS_CASES = [
    "sets.contains([1, 2, 3], [2, 3])", "sets.contains([1, 2], [3])", "sets.contains([], [])", "sets.contains([1], [])",
    "sets.contains([], [1])", "sets.contains([dyn(1), dyn(2.0)], [2])", "sets.contains(dyn([dyn(1), dyn(2.0)]), dyn([2u]))",
    "sets.contains(['a'], ['a', 'a'])", "sets.contains([1], ['a'])", "sets.equivalent([1, 2], [2, 1, 1])",
    "sets.equivalent([1], [1, 2])", "sets.equivalent([], [])", "sets.equivalent([[1]], [[1]])",
    "sets.intersects([1, 2], [2, 3])", "sets.intersects([1], [2])", "sets.intersects([], [1])",
    "sets.intersects(['a', 'b'], ['c', 'b'])", "sets.intersects([1.0], [1])", "sets.contains([{'a': 1}], [{'a': 1}])",
]
FORMAT_CASES = [
    "'%s'.format(['a'])", "'%s %s'.format(['a', 1])", "'%d'.format([42])", "'%d'.format([-7])", "'%d'.format([3u])",
    "'%d'.format(['a'])", "'%d'.format([1.5])", "'%f'.format([1.5])", "'%.2f'.format([1234.5])", "'%.0f'.format([2.5])",
    "'%.3f'.format([-0.0005])", "'%f'.format([1234567.891])", "'%f'.format([1])", "'%.1f'.format([0.05])",
    "'%.2f'.format(['NaN'])", "'%.2f'.format(['Infinity'])", "'%.2f'.format(['-Infinity'])", "'%.2f'.format(['inf'])",
    "'%f'.format([double('inf')])", "'%f'.format([double('-inf')])", "'%f'.format([double('nan')])",
    "'%e'.format([1234.5])", "'%e'.format([0.00012])", "'%e'.format([-1.0])", "'%e'.format([0.0])",
    "'%.2e'.format([1234.5])", "'%e'.format([double('nan')])", "'%e'.format([double('inf')])",
    "'%e'.format([double('-inf')])", "'%.10e'.format([double('nan')])", "'%.20e'.format([1.0])", "'%e'.format([1e300])",
    "'%b'.format([5])", "'%b'.format([-5])", "'%b'.format([true])", "'%b'.format([false])", "'%b'.format([5u])",
    "'%b'.format(['a'])", "'%x'.format([255])", "'%X'.format([255])", "'%x'.format([-255])", "'%x'.format(['hello'])",
    "'%X'.format([b'\\x00\\xff'])", "'%x'.format([18446744073709551615u])", "'%x'.format([1.5])", "'%o'.format([8])",
    "'%o'.format([-8])", "'%o'.format([8u])", "'%o'.format(['8'])", "'%s'.format([1.5])", "'%s'.format([-0.0])",
    "'%s'.format([1e21])", "'%s'.format([true])", "'%s'.format([null])", "'%s'.format([b'bytes'])",
    "'%s'.format([b'\\xff'])", "'%s'.format([[1, 'a', 2.5, b'b', null, true, [1], {'k': 'v'}]])",
    "'%s'.format([{'b': 1, 'a': 2.0}])", "'%s'.format([{1: 'x', 2u: 'y'}])", "'%s'.format([{true: 1, false: 2}])",
    "'%s'.format([[double('nan'), double('inf'), -0.0]])", "'%s'.format([['a\"b\\n\\u00e9\\u0001']])",
    "'%s'.format([ip('1.2.3.4')])", "'%s'.format([dyn(ip('1.2.3.4'))])", "'%s'.format([optional.of(1)])",
    "'%s %s'.format(['a'])", "'%s'.format(['a', 'b'])", "'%'.format([1])", "'%'.format([])", "'%.f'.format([1.0])",
    "'%.'.format([1.0])", "'%q'.format([1])", "'%5d'.format([1])", "'a%%b'.format([])", "'%%%s'.format(['x'])",
    "'%.3s'.format(['abcdef'])", "'%s'.format(['%d'])", "'%d'.format([dyn('a')])", "'%s-%d'.format(dyn(['a', 1]))",
    "dyn('%s').format(['x'])", "'%s'.format([[]])", "'%s'.format([{}])", "'\u00e9%s\u00e9'.format(['\u00e8'])",
    "'%\u00e9'.format([1])", "'%.2f%%'.format([99.5])", "'%x'.format([''])", "'%d %d %d'.format([1, 2, 3])",
    "strings.quote('a\"b\\\\c\\n')", "strings.quote('\u00e9\\u0001\\t')", "strings.quote('')",
]
OPTIONAL_CASES = [
    "optional.of(1)", "optional.of(1).value()", "optional.of(1).hasValue()", "optional.none().hasValue()",
    "optional.none().value()", "optional.none().orValue(5)", "optional.of(2).orValue(5)",
    "optional.none().or(optional.of(3))", "optional.of(1).or(optional.of(3))", "optional.none().or(optional.none())",
    "optional.ofNonZeroValue(0)", "optional.ofNonZeroValue(1)", "optional.ofNonZeroValue('')",
    "optional.ofNonZeroValue([])", "optional.ofNonZeroValue({})", "optional.ofNonZeroValue(0.0)",
    "optional.ofNonZeroValue(null)", "optional.ofNonZeroValue(false)", "optional.ofNonZeroValue(b'')",
    "optional.ofNonZeroValue(0u)", "optional.ofNonZeroValue([0])", "optional.of(null)",
    "{'a': 1}.?a", "{'a': 1}.?b", "{'a': 1}.?b.orValue(7)", "{'a': {'b': 2}}.?a.b", "{'a': {'b': 2}}.?a.c",
    "{'a': {'b': 2}}.?a.?b", "{'a': 1}[?'a']", "{'a': 1}[?'z']", "[1, 2][?0]", "[1, 2][?5]", "[1, 2][?-1]",
    "[1, ?optional.none(), ?optional.of(3)]", "[?optional.of(1)]", "{'a': 1, ?'b': optional.none()}",
    "{'a': 1, ?'b': optional.of(2)}", "{?'a': optional.of(1)}.a", "optional.of({'c': {}}).c.missing.orValue('d')",
    "has({'x': {'y': 'z'}}.?x.y)", "has({}.?x.y)", "optional.none() == optional.none()",
    "optional.of(1) == optional.of(1)", "optional.of(1) == optional.of(2)", "optional.of(1) == optional.none()",
    "optional.of(1) != optional.none()", "optional.of(42).optMap(y, y + 1).value()",
    "optional.none().optMap(y, y + 1).hasValue()", "{'k': {'s': 'v'}}.?k.optFlatMap(k, k.?s).value()",
    "{'k': {}}.?k.optFlatMap(k, k.?s).hasValue()", "optional.unwrap([optional.of(1), optional.none(), optional.of(3)])",
    "optional.of(1).value() + 1", "optional.of('a').orValue(1)", "optional.of(1).or(1)", "[1][?'a']",
    "{'a': 1}.?a.value() == 1", "optional.none().orValue('x').size()", "1.hasValue()", "optional.of(1).orValue(2.0)",
    "optional.of([1, 2])[?1]", "optional.of([1, 2])[1]", "optional.of([1, 2])[5]", "{1: 'a'}[?1]",
]
BIND_CASES = [
    "cel.bind(x, 2, x * x)", "cel.bind(x, 'a', x + x)", "cel.bind(x, [1, 2], x.map(y, y * 2))",
    "cel.bind(a, 1, cel.bind(b, a + 1, a + b))", "cel.bind(x, 1, cel.bind(x, 2, x))",
    "cel.bind(x, [1, 2, 3], x.exists(y, y == 2) && x.size() == 3)", "cel.bind(x.y, 1, 2)", "cel.bind(x, 1)",
    "cel.bind(x, 1, y)", "cel.bind(x, 1 / 0, 2)", "cel.bind(x, 1 / 0, true || x)", "cel.bind(x, 1 / 0, x)", "[1, 2].map(x, cel.bind(y, x * 10, y + x))",
    "cel.bind(x, 5, [x, x].sum())",
]
QUANTITY_CASES = [
    "quantity('1Gi').isGreaterThan(quantity('1G'))", "quantity('1').compareTo(quantity('1000m'))",
    "quantity('1.5').asApproximateFloat()", "quantity('1Ki').asInteger()", "quantity('1m').isInteger()",
    "quantity('1e3').asInteger()", "sign(quantity('-5'))", "sign(quantity('0'))", "sign(quantity('1m'))", "isQuantity('1.2.3')",
    "isQuantity('1Gi')", "isQuantity('1gi')", "isQuantity(' 1')", "quantity('1Gi').add(1).asInteger()",
    "quantity('1Gi').sub(quantity('512Mi')).asInteger()", "quantity('100m').isLessThan(quantity('1'))",
    "quantity('1Gi') == quantity('1024Mi')", "quantity('999999999999999999').asInteger()",
    "isQuantity('1E')", "isQuantity('+1.5e-3')",
    "quantity('1.5Gi').asApproximateFloat()", "quantity('1') == quantity('1.0')",
]

# Map keys of different types: true and 1 (false and 0) are different keys, numbers find each
# other by value, a bool only a bool. Kubernetes refuses mixed-type literals, hence the dyn()s.
MAP_KEY_CASES = [
    '{dyn(true): 1, dyn(1): 2}',
    '{dyn(true): 1, dyn(1): 2}.size()',
    "{dyn(false): 'f', dyn(0): 'z', dyn('k'): 'v'}",
    '{dyn(true): 1, dyn(1): 2}[true]',
    '{dyn(true): 1, dyn(1): 2}[1]',
    '{dyn(true): 1, dyn(1): 2}[1u]',
    '{dyn(true): 1, dyn(1): 2}[1.0]',
    '{dyn(false): 1, dyn(0u): 2}[0]',
    '{dyn(false): 1, dyn(0u): 2}[false]',
    '{dyn(true): 1, dyn(1): 2}[?1]',
    '{dyn(true): 1, dyn(1): 2}[?false]',
    "{dyn(true): 'a'}[?1]",
    "{dyn(1): 'a'}[?true]",
    "{true: 'a'}[dyn(1)]",
    "{1: 'a'}[dyn(true)]",
    "{0: 'a'}[dyn(false)]",
    "dyn({true: 'a'})[1]",
    "dyn({1u: 'a'})[true]",
    "dyn(true) in {1: 'a'}",
    "dyn(1) in {true: 'a'}",
    'dyn(1u) in {dyn(true): 1, dyn(1): 2}',
    'dyn(false) in {dyn(true): 1, dyn(1): 2}',
    'dyn(2) in {dyn(true): 1, dyn(1): 2}',
    '{dyn(true): 1, dyn(1): 2} == {dyn(1): 2, dyn(true): 1}',
    '{dyn(true): 1, dyn(1): 2} == {dyn(1u): 2, dyn(true): 1}',
    '{dyn(true): 1, dyn(1): 2} == {dyn(1): 1, dyn(true): 2}',
    '{dyn(true): 1} == {dyn(1): 1}',
    "{dyn(1): 'a', dyn(2u): 'b'}[2]",
    "{dyn(1): 'a', dyn(2u): 'b'}[1u]",
    "{dyn(1): 'a', dyn(2u): 'b'}[2.0]",
    "{dyn(1): 'a', dyn(2u): 'b'}[2.5]",
    "{dyn(1): 'a', dyn(2u): 'b'}[-1]",
    '{dyn(true): 1, dyn(1): 2}.all(k, k == true || k == 1)',
    '{dyn(true): 1, dyn(1): 2}.exists(k, k == 1u)',
    '{dyn(true): 1, dyn(1): 2}.exists_one(k, k == 1)',
    '{dyn(true): 1, dyn(1): 2}.map(k, k).size()',
    '{dyn(true): 1, dyn(1): 2}.filter(k, k == 1)',
    '{dyn(true): 1, dyn(1): 2}.filter(k, k == true)',
    "{dyn(1): 'a', dyn(true): 'b'}.transformMap(k, v, v + 'x')",
    "{dyn(1): 'a', dyn(true): 'b'}.transformMap(k, v, k != true, v)",
    '{dyn(true): 1, ?dyn(1): optional.of(2)}',
    '{dyn(true): 1, ?dyn(1): optional.none()}.size()',
    '[{dyn(true): 1, dyn(1): 2}].indexOf({dyn(1): 2, dyn(true): 1})',
    'sets.contains([{dyn(true): 1, dyn(1): 2}], [{dyn(1): 2, dyn(true): 1}])',
    "'%s'.format([{dyn(1): 'x', dyn(true): 'y'}])",
    "'%s'.format([{1: 'x', 2u: 'y', true: 'z'}])",
    "'%s'.format([{dyn(false): 0, dyn(0): 1}])",
    'optional.ofNonZeroValue({dyn(true): 1})',
    "has({dyn(true): 1, dyn('a'): 2}.a)",
    "{dyn(true): 1, dyn('a'): 2}.a",
    '[true, false].map(b, {dyn(b): 1, dyn(b ? 1 : 0): 2}).map(m, m.size())',
    "{dyn(true): {dyn(1): 'x'}}[true][1]",
]


def _s(v: str) -> str:
    return json.dumps(v)


def _build_cases() -> list[tuple[str, str, dict[str, Any]]]:
    """(id, expression, variables) for every case."""
    out: list[tuple[str, str, dict[str, Any]]] = []

    def add(group: str, expr: str, variables: dict[str, Any] | None = None) -> None:
        out.append((f"{group}-{len(out)}", expr, variables or {}))

    for v in SEMVERS:
        add("semver", f"isSemver({_s(v)})")
        add("semver", f"isSemver({_s(v)}, true)")
        add("semver", f"semver({_s(v)}, true)")
        add("semver", f"[semver({_s(v)}).major(), semver({_s(v)}).minor(), semver({_s(v)}).patch()]")
    for a, b in SEMVER_PAIRS:
        add("semver", f"[semver({_s(a)}).compareTo(semver({_s(b)})), semver({_s(b)}).compareTo(semver({_s(a)}))]")
        add("semver", f"[semver({_s(a)}).isLessThan(semver({_s(b)})), semver({_s(a)}).isGreaterThan(semver({_s(b)})), "
                      f"semver({_s(a)}) == semver({_s(b)})]")
    for e in ["semver('1.2.3') < semver('1.2.4')", "string(semver('1.2.3'))", "semver(1)", "semver('1.2.3', 1)",
              "semver('1.2.3') == '1.2.3'", "semver('1.2.3').major() + 1", "semver('v1', true).major()",
              "semver('18446744073709551615.0.0').major()", "[semver('1.0.0'), semver('1.0.0+b')]",
              "semver('1.2.3') in [semver('1.2.3+x')]"]:
        add("semver", e)
    for v in IPS:
        add("ip", f"isIP({_s(v)})")
        add("ip", f"ip({_s(v)})")
        add("ip", f"ip({_s(v)}).family()")
        add("ip", f"[ip({_s(v)}).isUnspecified(), ip({_s(v)}).isLoopback(), ip({_s(v)}).isLinkLocalMulticast(), "
                  f"ip({_s(v)}).isLinkLocalUnicast(), ip({_s(v)}).isGlobalUnicast()]")
        add("ip", f"ip.isCanonical({_s(v)})")
        add("ip", f"string(ip({_s(v)}))")
    for e in ["ip('1.2.3.4') == ip('1.2.3.4')", "ip('::1') == ip('0:0:0:0:0:0:0:1')", "ip('1.2.3.4') == ip('::1')",
              "ip(1)", "ip('1.2.3.4') == '1.2.3.4'", "[ip('1.2.3.4')]", "{'a': ip('::1')}", "ip('1.2.3.4').family() == 4"]:
        add("ip", e)
    for v in CIDRS:
        add("cidr", f"isCIDR({_s(v)})")
        add("cidr", f"cidr({_s(v)})")
        add("cidr", f"[string(cidr({_s(v)}).prefixLength()), string(cidr({_s(v)}).ip()), string(cidr({_s(v)}).masked())]")
    for c, ip in CIDR_CONTAINS:
        add("cidr", f"[cidr({_s(c)}).containsIP({_s(ip)}), cidr({_s(c)}).containsIP(ip({_s(ip)}))]")
    for a, b in CIDR_IN_CIDR:
        add("cidr", f"[cidr({_s(a)}).containsCIDR({_s(b)}), cidr({_s(a)}).containsCIDR(cidr({_s(b)}))]")
    for e in ["cidr('10.0.0.0/8').containsIP('bad')", "cidr('10.0.0.0/8').containsCIDR('bad')",
              "cidr('10.0.0.0/8') == cidr('10.0.0.0/8')", "cidr('10.1.0.0/8') == cidr('10.0.0.0/8')",
              "cidr('10.0.0.0/8').ip() == ip('10.0.0.0')", "cidr('10.0.0.0/8').containsIP(1)"]:
        add("cidr", e)
    for v in URLS:
        add("url", f"isURL({_s(v)})")
        add("url", f"url({_s(v)})")
        add("url", f"[url({_s(v)}).getScheme(), url({_s(v)}).getHost(), url({_s(v)}).getHostname(), "
                   f"url({_s(v)}).getPort(), url({_s(v)}).getEscapedPath()]")
        add("url", f"url({_s(v)}).getQuery()")
    for e in ["url('https://a.com') == url('https://a.com')", "url('https://a.com') == url('https://a.com/')",
              "url(1)", "url('https://a.com').getQuery()['x']"]:
        add("url", e)
    for group, exprs in (("lists", LIST_CASES), ("regex", REGEX_CASES), ("sets", SETS_CASES), ("format", FORMAT_CASES),
                         ("optional", OPTIONAL_CASES), ("bind", BIND_CASES), ("quantity", QUANTITY_CASES),
                         ("mapkeys", MAP_KEY_CASES)):
        for e in exprs:
            add(group, e)
    # on a node's features, as rules use them
    feats = {"attributes": {"kernel.version": {"full": "5.15.0-91-generic", "major": "5", "minor": "15"},
                            "system.osrelease": {"VERSION_ID": "22.04", "ID": "ubuntu"},
                            "network.info": {"addr": "10.1.2.3", "cidr": "10.0.0.0/8", "url": "https://reg.io:5000/v2"}},
             "flags": {"cpu.cpuid": ["AVX2", "AVX512F", "SSE4"]},  # nfd: sorted by name
             "instances": {"pci.device": [{"vendor": "10de", "class": "0300", "device": "20b0"},
                                          {"vendor": "8086", "class": "0200", "device": "1572"}]},
             "node": {"name": "gpu-node-1"}}
    for e in [
        "semver(attributes['kernel.version']['full'], true)", "isSemver(attributes['kernel.version']['full'])",
        "semver(attributes['system.osrelease']['VERSION_ID'], true).isLessThan(semver('24.4.0'))",
        "cidr(attributes['network.info']['cidr']).containsIP(attributes['network.info']['addr'])",
        "ip(attributes['network.info']['addr']).isGlobalUnicast()",
        "url(attributes['network.info']['url']).getPort()",
        "flags['cpu.cpuid'].isSorted()", "flags['cpu.cpuid'].min()", "flags['cpu.cpuid'].indexOf('AVX2')",
        "sets.contains(flags['cpu.cpuid'], ['AVX2', 'AVX512F'])", "sets.intersects(flags['cpu.cpuid'], ['AVX10'])",
        "instances['pci.device'].map(d, d.vendor).indexOf('8086')",
        "cel.bind(gpus, instances['pci.device'].filter(d, d.vendor == '10de'), gpus.size() > 0 && gpus[0].device == '20b0')",
        "attributes['kernel.version'].?full.orValue('0.0.0')", "attributes['kernel.version'].?patch.orValue('0')",
        "attributes['kernel.version'][?'minor'].hasValue()", "node.name.find('[0-9]+')", "node.name.findAll('[a-z]+')",
        "'%s has %d devices'.format([node.name, instances['pci.device'].size()])",
        "'%s'.format([attributes['kernel.version']])", "'%d'.format([attributes['kernel.version']['major']])",
        "attributes['kernel.version'].major.find('[0-9]')", "instances['pci.device'].map(d, int(d.class)).sum()",
        "instances['pci.device'].map(d, d.class).max()", "optional.ofNonZeroValue(node.name).hasValue()",
        "{?'gpu': optional.of(node.name)}", "[?attributes['kernel.version'].?full]",
    ]:
        add("features", e, feats)
    return out


CASES = _build_cases()


# Where nfd and Kubernetes disagree on purpose (docs/cel.md, docs/compatibility.md). Each must
# keep disagreeing the way recorded, so those pages stay true: "refuses" (Kubernetes gives a
# value, nfd an error) or "accepts" (Kubernetes refuses to compile, nfd gives a value).
DIFFERENCES = [
    # map literals as cel-spec has them (cel-go skips these conformance cases): a key repeated
    # under CEL equality is an error, and keys are int, uint, bool or string
    ("{'a': 1, 'a': 2}['a']", "refuses"),
    ("{true: 1, false: 2, true: 3}.size()", "refuses"),
    ("{dyn(0): 1, dyn(0u): 2}.size()", "refuses"),
    ("[1, 1].map(x, {x: 1, x: 2}).size()", "refuses"),
    ("{1.0: 'a'}.size()", "refuses"),
    ("{dyn(null): 1}.size()", "refuses"),
    # mixed-type list and map literals (Kubernetes: HomogeneousAggregateLiterals; the cel-spec
    # corpus needs them, 46 of its in-scope cases); format() arguments are exempt in both
    ("[1, 'a'].size()", "accepts"),
    ("{'a': 1, 'b': 'x'}.size()", "accepts"),
    ("[true, 1].size()", "accepts"),
    ("{dyn(true): 1, 'a': 2}.a", "accepts"),
    ("[[1], ['a']].size()", "accepts"),
    # nfd's checker lets numbers of different types meet where cel-go's refuses; the value is
    # the one a dyn() operand gets in Kubernetes
    ("1 == 1.0", "accepts"),
    ("1u != 1", "accepts"),
    ("[1] == [1u]", "accepts"),
    ("1u in [1, 2]", "accepts"),
    ("{1: 'a'}[1u]", "accepts"),
    ("1u in {1: 'a'}", "accepts"),
    ("[1, 2][1u]", "accepts"),
    ("null == 1", "accepts"),
]


# -- nfd's side ----------------------------------------------------------------------------------


def _features(variables: dict[str, Any]) -> tuple[Features, dict[str, str]]:
    f = Features()
    for name, elems in variables.get("flags", {}).items():
        f.add_flags(name, elems)
    for name, attrs in variables.get("attributes", {}).items():
        f.add_attributes(name, attrs)
    for name, insts in variables.get("instances", {}).items():
        f.add_instances(name, insts)
    return f, variables.get("node", {"name": "n"})


def tag(v: Any) -> Any:
    """nfd's value in the oracle's tagged form (see tests/tools/celk8s/main.go)."""
    t = type(v)
    if t is bool:
        return {"bool": v}
    if t is UInt:
        return {"uint": str(int(v))}
    if t is int:
        return {"int": str(v)}
    if t is float:
        return {"double": format_double(v) if not math.isinf(v) else ("+Inf" if v > 0 else "-Inf")}
    if t is str:
        return {"string": v}
    if t is bytes:
        return {"bytes": base64.b64encode(v).decode()}
    if v is None:
        return {"null": None}
    if t is Optional:
        return {"optional": tag(v.value) if v.has_value else None}
    if t is Semver:
        return {"semver": str(v)}
    if t is IP:
        return {"ip": str(v)}
    if t is CIDR:
        return {"cidr": str(v)}
    if t is URL:
        return {"url": str(v)}
    if t is Quantity:
        return {"quantity": v.text}
    if t is Version:
        return {"version": v.text}
    if isinstance(v, set | frozenset):
        return {"list": [tag(x) for x in sorted(v)]}
    if isinstance(v, list | tuple):
        return {"list": [tag(x) for x in v]}
    if isinstance(v, dict):
        pairs = [[tag(k), tag(x)] for k, x in v.items()]
        pairs.sort(key=lambda p: json.dumps(p[0], separators=(",", ":"), ensure_ascii=False))
        return {"map": pairs}
    return {"other": repr(v)}


def ours(expr: str, variables: dict[str, Any]) -> dict[str, Any]:
    """nfd's result: both backends must agree when the fast path completes."""
    features, node = _features(variables)
    try:
        compiler = Compiler()
        c = compiler.compile(parse(expr))
        fast = compiler.source(c)
    except CelSyntaxError as e:
        return {"error": str(e), "phase": "compile"}
    try:
        exact = {"value": tag(c.fn(Act(features, node, DEFAULT_STEP_LIMIT)))}
    except Exception as e:  # noqa: BLE001 - any runtime error is an evaluation error
        exact = {"error": f"{type(e).__name__}: {e}", "phase": "eval"}
    if fast is not None:
        try:
            quick = tag(fast(Act(features, node, DEFAULT_STEP_LIMIT)))
        except Exception:  # noqa: BLE001 - the exact closures decide
            pass
        else:
            assert {"value": quick} == exact, f"{expr}: fast path {quick}, exact {exact}"
    return exact


# -- the oracle ----------------------------------------------------------------------------------


def _kubernetes(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kubernetes' results for ``table`` ({"expr", "vars"} entries), from tests/tools/celk8s."""
    from tests.e2e.build import BuildError, find_go
    from tests.e2e.tools import ensure_tool

    if find_go() is None:
        pytest.skip("Go is not installed: cannot build Kubernetes' CEL environment (tests/tools/celk8s)")
    try:
        binary = ensure_tool("celk8s", log=lambda m: print(f"nfd cel: {m}", file=sys.__stderr__, flush=True))
    except BuildError as e:
        pytest.fail(f"cannot build tests/tools/celk8s: {e}", pytrace=False)
    proc = subprocess.run([str(binary)], input=json.dumps(table), capture_output=True, text=True, check=False,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    results: list[dict[str, Any]] = json.loads(proc.stdout)
    return results


@pytest.fixture(scope="module")
def k8s_results() -> dict[str, dict[str, Any]]:
    results = _kubernetes([{"expr": e, "vars": v} for _, e, v in CASES])
    return {cid: r for (cid, _, _), r in zip(CASES, results, strict=True)}


@pytest.fixture(scope="module")
def k8s_differences() -> dict[str, dict[str, Any]]:
    results = _kubernetes([{"expr": e, "vars": {}} for e, _ in DIFFERENCES])
    return {e: r for (e, _), r in zip(DIFFERENCES, results, strict=True)}


def _agree(mine: dict[str, Any], theirs: dict[str, Any]) -> bool:
    if "error" in theirs:
        return "error" in mine and mine["phase"] == theirs["phase"]
    return mine == theirs


@pytest.mark.parametrize(("cid", "expr", "variables"), CASES, ids=[c[0] for c in CASES])
def test_agrees_with_kubernetes(k8s_results: dict[str, dict[str, Any]], cid: str, expr: str,
                                variables: dict[str, Any]) -> None:
    theirs = k8s_results[cid]
    mine = ours(expr, variables)
    assert _agree(mine, theirs), f"{expr}\n  nfd:        {mine}\n  Kubernetes: {theirs}"


@pytest.mark.parametrize(("expr", "how"), DIFFERENCES, ids=[e for e, _ in DIFFERENCES])
def test_recorded_differences_from_kubernetes(k8s_differences: dict[str, dict[str, Any]], expr: str,
                                              how: str) -> None:
    theirs = k8s_differences[expr]
    mine = ours(expr, {})
    if how == "refuses":
        assert "value" in theirs and "error" in mine, f"{expr}\n  nfd:        {mine}\n  Kubernetes: {theirs}"
    else:
        assert theirs.get("phase") == "compile" and "value" in mine, \
            f"{expr}\n  nfd:        {mine}\n  Kubernetes: {theirs}"


def test_the_table_covers_every_function() -> None:
    text = "\n".join(e for _, e, _ in CASES)
    for fn in ["semver(", "isSemver(", ".major()", ".minor()", ".patch()", ".isGreaterThan(", ".isLessThan(",
               ".compareTo(", ".isSorted()", ".sum()", ".min()", ".max()", ".indexOf(", ".lastIndexOf(", ".find(",
               ".findAll(", "sets.contains(", "sets.equivalent(", "sets.intersects(", "ip(", "isIP(", "ip.isCanonical(",
               ".family()", ".isUnspecified()", ".isLoopback()", ".isLinkLocalMulticast()", ".isLinkLocalUnicast()",
               ".isGlobalUnicast()", "cidr(", "isCIDR(", ".containsIP(", ".containsCIDR(", ".prefixLength()",
               ".masked()", "url(", "isURL(", ".getScheme()", ".getHost()", ".getHostname()", ".getPort()",
               ".getEscapedPath()", ".getQuery()", ".format(", "strings.quote(", "optional.of(", "optional.none(",
               "optional.ofNonZeroValue(", ".hasValue()", ".value()", ".orValue(", ".or(", ".?", "[?", "cel.bind(",
               "quantity(", "optMap(", "optFlatMap(", "optional.unwrap("]:
        assert fn in text, fn
    assert len(CASES) >= 500


# -- plain tests (no Go needed) ------------------------------------------------------------------


def _value(expr: str) -> Any:
    c = Compiler()
    return c.compile(parse(expr)).fn(Act(Features(), {"name": "n"}, DEFAULT_STEP_LIMIT))


def test_semver_orders_pre_releases_and_ignores_build() -> None:
    assert _value("semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))") is True
    assert _value("semver('1.0.0-alpha.beta').compareTo(semver('1.0.0-beta'))") == -1
    assert _value("semver('1.2.3+a') == semver('1.2.3+b')") is True
    assert _value("semver('v1.2', true).minor()") == 2
    # nfd's version() ignores the pre-release; semver() does not
    assert _value("version('6.0.0-beta') == version('6.0.0')") is True
    assert _value("semver('6.0.0-beta') == semver('6.0.0')") is False


def test_semver_errors_name_the_input() -> None:
    with pytest.raises(CelError, match='leading zeroes "01"'):
        Semver.parse("01.2.3")
    with pytest.raises(CelError, match="short version"):
        Semver.parse("1.2-rc1", normalize=True)


def test_ip_and_cidr_parse_strictly() -> None:
    assert _value("isIP('01.2.3.4')") is False
    assert _value("isIP('::ffff:1.2.3.4')") is False
    assert _value("isIP('fe80::1%eth0')") is False
    assert _value("cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')") is True
    assert _value("cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')") is True
    assert _value("ip('10.0.0.1').isGlobalUnicast()") is True  # private, yet global unicast as in Go
    with pytest.raises(CelError, match="IPv4-mapped"):
        IP.parse("::ffff:10.0.0.1")


def test_url_parts() -> None:
    u = "url('https://user:pw@reg.example.com:5000/v2/a%2Fb?tag=1&tag=2')"
    assert _value(f"{u}.getHostname()") == "reg.example.com"
    assert _value(f"{u}.getPort()") == "5000"
    assert _value(f"{u}.getEscapedPath()") == "/v2/a%2Fb"
    assert _value(f"{u}.getQuery()") == {"tag": ["1", "2"]}
    assert _value("isURL('relative/path')") is False


def test_format_checks_constant_strings_at_compile_time() -> None:
    assert _value("'%s: %.2f'.format(['load', 1234.5])") == "load: 1,234.50"
    with pytest.raises(CelSyntaxError, match="decimal clause"):
        compile_program("'%d'.format(['a']) == ''")
    with pytest.raises(CelSyntaxError, match="too many arguments"):
        compile_program("'%s'.format(['a', 'b']) == ''")


def test_optionals_and_bind() -> None:
    assert _value("{'a': 1}.?b.orValue(7)") == 7
    assert _value("[1, ?optional.none(), ?optional.of(3)]") == [1, 3]
    assert _value("cel.bind(x, [1, 2, 3], x.sum() + x.max())") == 9
    with pytest.raises(CelError, match="optional.none"):
        _value("optional.none().value()")
    with pytest.raises(CelSyntaxError, match="simple identifiers"):
        compile_program("cel.bind(a.b, 1, true)")


def test_a_variable_named_like_a_namespace_is_still_a_variable() -> None:
    # inside a macro, `sets` is the loop variable, not the sets library
    assert _value("[[1]].exists(sets, sets.size() == 1)") is True


def test_find_with_a_bad_constant_pattern_is_a_compile_error() -> None:
    with pytest.raises(CelSyntaxError, match="Illegal regex"):
        compile_program("node.name.find('(') == ''")
