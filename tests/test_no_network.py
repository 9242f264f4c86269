"""The no-network guard is on for every test (conftest.no_network, autouse)."""
from __future__ import annotations

import socket

import pytest

REAL_GETADDRINFO, REAL_CONNECT = socket.getaddrinfo, socket.socket.connect  # at import


def test_name_lookups_and_connections_beyond_loopback_fail():
    with pytest.raises(OSError, match="name lookup blocked in tests: example.org"):
        socket.getaddrinfo("example.org", 443)
    with socket.socket() as s, pytest.raises(OSError, match="network access blocked in tests"):
        s.connect(("192.0.2.1", 9))  # TEST-NET-1: would only time out anyway


def test_loopback_still_works():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5):
            pass


@pytest.mark.network
def test_the_network_marker_opts_out():
    assert socket.getaddrinfo is REAL_GETADDRINFO and socket.socket.connect is REAL_CONNECT


def test_without_the_marker_the_guard_is_in_place():
    assert socket.getaddrinfo is not REAL_GETADDRINFO
