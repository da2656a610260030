"""Fixtures of the compat/sources tests: an isolated environment, a fake index, its HTTP servers, a cache."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_index import Index, Server, make_sdist, make_wheel  # noqa: E402

from compat.sources import auth, settings  # noqa: E402


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """No pip config, index variables or user cache of this machine leak into the tests."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CERT", "PIP_CLIENT_CERT", "PIP_PROXY", "PIP_RETRIES",
                 "PIP_TIMEOUT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "VIRTUAL_ENV", "NETRC", "http_proxy", "https_proxy",
                 "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.netrc of this machine
    auth.forget_credentials()
    settings.configure()


@pytest.fixture
def index(tmp_path) -> Index:
    """vllm: 0.9.0 (sdist), 0.10.0 (sdist + wheel), 0.10.1 (yanked), 0.11.0rc1 (pre-release), 0.11.0.dev3 (dev)."""
    index = Index(tmp_path / "index")
    index.publish("vllm", "vllm-0.9.0.tar.gz", make_sdist("vllm", "0.9.0"))
    index.publish("vllm", "vllm-0.10.0.tar.gz", make_sdist("vllm", "0.10.0"))
    index.publish("vllm", "vllm-0.10.0-cp38-abi3-manylinux1_x86_64.whl", make_wheel("vllm", "0.10.0"))
    index.publish("vllm", "vllm-0.10.1.tar.gz", make_sdist("vllm", "0.10.1"), yanked=True)
    index.publish("vllm", "vllm-0.11.0rc1.tar.gz", make_sdist("vllm", "0.11.0rc1"))
    index.publish("vllm", "vllm-0.11.0.dev3.tar.gz", make_sdist("vllm", "0.11.0.dev3"))
    return index


@pytest.fixture
def server_factory():
    servers = []

    def start(index: Index, **options) -> Server:
        servers.append(Server(index, **options))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def cache(tmp_path) -> Path:
    return tmp_path / "cache"
