"""The real node's network namespace (tests/e2e/netns.py): the test process reaches in, nothing
inside reaches out, and nothing is left behind."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator

import pytest

from tests.e2e import netns


@pytest.fixture
def ns() -> Iterator[netns.NetNamespace]:
    reason = netns.unavailable() or (None if shutil.which("nft") else "no nft (Debian nftables)")
    if reason:
        pytest.skip(reason)
    made = netns.NetNamespace.create(name="nfd-e2e-test-netns")
    yield made
    made.close()


def test_the_test_process_reaches_in_and_nothing_reaches_out(ns: netns.NetNamespace) -> None:
    with ns.entered():
        inside = socket.socket()
        inside.bind(("0.0.0.0", 0))
        inside.listen()
        port = inside.getsockname()[1]
    with socket.create_connection((netns.NODE_IP, port), timeout=5):
        pass  # the tests' way to the apiserver
    outside = socket.socket()
    outside.bind((netns.HOST_IP, 0))
    outside.listen()
    with ns.entered():
        # a conversation started inside towards the test machine is dropped (times out) ...
        with pytest.raises(OSError):
            socket.create_connection((netns.HOST_IP, outside.getsockname()[1]), timeout=2)
        # ... and no other address outside is routed at all
        with pytest.raises(OSError) as ei:
            socket.create_connection(("192.0.2.1", 80), timeout=2)
        assert "unreachable" in str(ei.value).lower()
    inside.close()
    outside.close()


def test_close_removes_the_namespace_and_its_veth(ns: netns.NetNamespace) -> None:
    assert ns.path.exists()
    ns.close()
    assert not ns.path.exists()
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True, check=True).stdout
    assert ns.host_if not in links
