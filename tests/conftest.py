"""Shared fixtures: the sample app, one index of it per test session, and its engine.

Building the index embeds a few hundred chunks with the packaged MiniLM model, so it is done
once per session; tests that modify an index copy it first (`fresh_minipic_index`).
"""
from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
MINIPIC = REPO_ROOT / "src" / "codeteacher" / "demo" / "minipic"
SHARED = REPO_ROOT.parent / "shared"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def minipic_src() -> Path:
    assert MINIPIC.is_dir(), "the sample app src/codeteacher/demo/minipic is missing"
    return MINIPIC


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"shared data not found at {SHARED}")
    return SHARED


@pytest.fixture(scope="session")
def default_settings():
    from codeteacher.contracts.settings import Settings

    return Settings()


@pytest.fixture(scope="session")
def minipic_index(tmp_path_factory, minipic_src, default_settings) -> Path:
    """A read-only index of the sample app (do not modify; copy it instead)."""
    from codeteacher.ingest.build import build_index

    out = tmp_path_factory.mktemp("index") / "minipic"
    build_index(minipic_src, out=out, name="minipic", settings=default_settings)
    return out


@pytest.fixture(scope="session")
def engine(minipic_index, default_settings):
    from codeteacher.api import Engine

    return Engine.load(minipic_index, default_settings)


@pytest.fixture
def fresh_minipic(tmp_path, minipic_src, minipic_index) -> tuple[Path, Path]:
    """A private copy of the sample app and of its index, safe to modify."""
    repo = tmp_path / "repo"
    shutil.copytree(minipic_src, repo)
    index = tmp_path / "index"
    shutil.copytree(minipic_index, index)
    return repo, index


@pytest.fixture(autouse=True)
def no_network(request, monkeypatch):
    """Any connection or name lookup beyond loopback fails (tests must never reach out). On for
    every test; a test that must reach another host opts out with @pytest.mark.network."""
    if request.node.get_closest_marker("network"):
        return
    import ipaddress

    real_connect, real_gai = socket.socket.connect, socket.getaddrinfo

    def local(host) -> bool:
        """The whole loopback range (127.0.0.0/8, ::1) and localhost: tests run servers there."""
        if isinstance(host, bytes):
            host = host.decode("ascii", "replace")
        host = str(host).strip("[]")
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host.split("%")[0]).is_loopback
        except ValueError:
            return False

    def connect(self, address):
        if isinstance(address, tuple) and not local(address[0]):
            raise OSError(f"network access blocked in tests: {address[0]}")
        return real_connect(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if host is not None and not local(host):
            raise OSError(f"name lookup blocked in tests: {host}")
        return real_gai(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
