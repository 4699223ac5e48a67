"""Fixtures for the nvml source tests (the helpers they import are in nvml_help.py)."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from nfd.nvml_fake import load_profile
from tests.support import mocknvml


@pytest.fixture
def profile_doc():
    return lambda name: copy.deepcopy(load_profile(name))


@pytest.fixture(scope="session")
def lib_dir() -> Path:
    """The mock libnvidia-ml.so (built once, cached), or a skip saying why it cannot be."""
    try:
        return mocknvml.build(log=lambda m: print(f"mocknvml: {m}", file=sys.__stderr__, flush=True))
    except mocknvml.MockNvmlUnavailable as e:
        pytest.skip(str(e))
