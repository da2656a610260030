"""The released sources the explain tests read: pinned ones (tests/releases.json), fetched once into the release
cache; their tests are `network` (the pinned_release fixture marks them)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def vllm_032(pinned_release):
    return pinned_release("vllm", "0.32.0")


@pytest.fixture(scope="session")
def sglang_0512(pinned_release):
    return pinned_release("sglang", "0.5.12")


@pytest.fixture(scope="session")
def vllm_016(pinned_release):
    return pinned_release("vllm", "0.16.0")


@pytest.fixture(scope="session")
def vllm_034(pinned_release):
    return pinned_release("vllm", "0.34.0")
