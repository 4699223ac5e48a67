"""Fixtures for e2e tests against a real kube-apiserver (see harness.py).

- `kube` (session): a started KubeCluster with crds/ installed.
- `namespace` (function): a fresh namespace name; its objects are deleted afterwards.
- `make_node` (function): make_node(name=None, *, labels=None, capacity=None) -> Node dict;
  the nodes it made are deleted afterwards.

Every test under tests/e2e is marked `e2e`. Without Go (or with NFD_E2E=0) they are
all skipped with the reason. The apiserver binary is built (if needed) once after
collection, outside any test's timeout; a build failure fails the e2e tests.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.build import BuildError, ensure_built, find_go
from tests.e2e.harness import KubeCluster

E2E_DIR = Path(__file__).resolve().parent

_binary: Path | None = None
_build_error: str | None = None


def _skip_reason() -> str | None:
    if os.environ.get("NFD_E2E", "1") == "0":
        return "e2e tests disabled by NFD_E2E=0"
    if find_go() is None:
        return "Go is not installed: cannot build the real kube-apiserver for e2e tests"
    return None


def _is_e2e(item: pytest.Item) -> bool:
    return E2E_DIR in Path(str(item.fspath)).resolve().parents


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    global _binary, _build_error
    e2e_items = [it for it in items if _is_e2e(it)]
    if not e2e_items:
        return
    # a test that deletes the real node's Node runs after all others, whatever their file names
    items.sort(key=lambda it: it.get_closest_marker("deletes_node") is not None)  # stable
    reason = _skip_reason()
    for it in e2e_items:
        it.add_marker(pytest.mark.e2e)
        if reason:
            it.add_marker(pytest.mark.skip(reason=reason))
    if reason or _binary is not None or _build_error is not None:
        return
    # Build here, not in a fixture, so a cold build is not cut short by a test timeout.
    tw = config.get_terminal_writer() if hasattr(config, "get_terminal_writer") else None

    def log(msg: str) -> None:
        if tw is not None:
            tw.line(f"nfd e2e: {msg}")
        else:
            print(f"nfd e2e: {msg}", file=sys.__stderr__, flush=True)

    try:
        _binary = ensure_built(log=log)
    except BuildError as e:
        _build_error = str(e)


@pytest.fixture(scope="session")
def kube() -> Iterator[KubeCluster]:
    if _build_error is not None:
        pytest.fail(f"cannot build the test kube-apiserver: {_build_error}", pytrace=False)
    binary = _binary if _binary is not None else ensure_built()
    cluster = KubeCluster.start(binary=binary)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(autouse=True)
def _apiserver_back_up(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test that left the apiserver stopped (a failed outage test), start it again."""
    yield
    if "kube" in request.fixturenames:
        kube: KubeCluster = request.getfixturevalue("kube")
        if not kube.apiserver_running:
            kube.start_apiserver()


@pytest.fixture
def namespace(kube: KubeCluster) -> Iterator[str]:
    name = kube.unique_name("e2e")
    kube.create_namespace(name)
    try:
        yield name
    finally:
        if not kube.apiserver_running:
            kube.start_apiserver()
        kube.delete_namespace(name)


@pytest.fixture
def make_node(kube: KubeCluster) -> Iterator[Callable[..., dict[str, Any]]]:
    made: list[str] = []

    def make(name: str | None = None, *, labels: dict[str, str] | None = None,
             capacity: dict[str, str] | None = None) -> dict[str, Any]:
        node = kube.create_node(name or kube.unique_name("node"), labels=labels, capacity=capacity)
        made.append(node["metadata"]["name"])
        return node

    yield make
    if not kube.apiserver_running:
        kube.start_apiserver()
    for name in made:
        kube.delete_node(name)
