"""The raise sites of any file of a tree, read the way the error_sites probe reads the spec-decoding files: what
`compat explain` reads when a traceback ends in a file the probe does not cover (a weight loader's assert, the model
registry) or pydantic names a raise elsewhere."""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes._error_sites import sites_of


def sites_in(tree: EngineTree, relpaths: list[str]) -> list[dict]:
    """The sites of `relpaths` (a file this Python cannot parse has none)."""
    return sites_of(tree, relpaths)[0]
