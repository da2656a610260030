"""The released sources the explain tests read (fetched once into the release cache, then offline; skipped when the
release can be had neither way)."""

from __future__ import annotations

import pytest


def _tree(spec: str):
    from compat.core.errors import SourceError
    from compat.sources import open_tree

    for offline in (True, False):
        try:
            return open_tree(spec, offline=offline, progress=False)
        except SourceError as err:
            reason = err.message
    pytest.skip(f"{spec} cannot be had here: {reason}")


@pytest.fixture(scope="session")
def vllm_032():
    return _tree("vllm==0.32.0")


@pytest.fixture(scope="session")
def sglang_0512():
    return _tree("sglang==0.5.12")


@pytest.fixture(scope="session")
def vllm_016():
    return _tree("vllm==0.16.0")
