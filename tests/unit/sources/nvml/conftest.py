"""Fixtures for the nvml source tests (the helpers they import are in nvml_help.py)."""

from __future__ import annotations

import copy

import pytest

from nfd.nvml_fake import load_profile


@pytest.fixture
def profile_doc():
    return lambda name: copy.deepcopy(load_profile(name))
