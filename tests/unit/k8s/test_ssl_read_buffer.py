"""The API client's TLS connections use a 64 KiB read buffer instead of asyncio's 256 KiB."""

from __future__ import annotations

import asyncio
import ssl
import sys
from asyncio import sslproto

import pytest

from nfd.k8s import client


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio's buffered SSLProtocol is 3.11+")
def test_new_tls_connections_get_the_smaller_buffer() -> None:
    assert client.SSL_READ_BUFFER == 64 * 1024
    loop = asyncio.new_event_loop()
    try:
        proto = sslproto.SSLProtocol(loop, asyncio.Protocol(), ssl.create_default_context(), None,
                                     server_side=False, server_hostname="localhost")
        assert len(proto._ssl_buffer) == client.SSL_READ_BUFFER
    finally:
        loop.close()


def test_trim_never_grows_the_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sslproto.SSLProtocol, "max_size", 16 * 1024)
    client._trim_ssl_read_buffer()
    assert sslproto.SSLProtocol.max_size == 16 * 1024
