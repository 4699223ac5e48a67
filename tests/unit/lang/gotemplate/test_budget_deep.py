"""Functions that walk shared structures pay per element visited (a DAG of 21 lists that walks as
a million elements took 4-17 s per call before), and error text stays short."""

from __future__ import annotations

import pytest

from nfd.lang import gotemplate
from nfd.lang.gotemplate import TemplateError
from nfd.lang.gotemplate.budget import deep_count

DAG = "{{ $l := list 1 2 }}" + "{{ $l = list $l $l }}" * 20  # 2**21 leaves, 21 distinct lists


@pytest.mark.parametrize("call", ["deepEqual $l $l", "has 1 $l", "uniq $l", "without $l 1", "sortAlpha $l",
                                  "toStrings $l", "deepCopy $l", "compact $l"])
def test_deep_walkers_are_charged_per_element(call: str) -> None:
    with pytest.raises(TemplateError, match="budget exceeded"):
        gotemplate.parse(DAG + "{{ " + call + " | len }}").execute({})


def test_small_shared_structures_still_work() -> None:
    small = "{{ $l := list 1 2 }}" + "{{ $l = list $l $l }}" * 3
    assert gotemplate.parse(small + "{{ deepEqual $l $l }} {{ has 1 $l }} {{ toStrings $l | len }}").execute({}) == "true false 2"


def test_deep_count() -> None:
    shared = [1, 2]
    assert deep_count([shared, shared, {"a": shared}], 10**9) == 1 + 3 + 3 + (1 + 3)
    x: list[object] = []
    x.append(x)
    assert deep_count(x, 100) == 101  # a cycle never ends
    assert deep_count("abc", 5) == 1


def test_eq_error_does_not_print_megabytes() -> None:
    with pytest.raises(TemplateError) as e:
        gotemplate.parse(DAG + "{{ eq $l $l }}").execute({})
    assert len(str(e.value)) < 500 and "printing to more than 4096 characters" in str(e.value)
