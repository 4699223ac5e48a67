"""The master pins glibc's mmap threshold so freed big values leave the process."""

from __future__ import annotations

import ctypes.util

import pytest

from nfd.common.mmapthreshold import pin_mmap_threshold


def test_pin_mmap_threshold_takes_effect_on_glibc() -> None:
    if not ctypes.util.find_library("c"):
        pytest.skip("no C library to ask (not glibc)")
    assert pin_mmap_threshold() is True
