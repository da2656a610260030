"""Raise sites outside the files the error_sites probe covers, read when a text needs them: the file a traceback
ends in (a weight loader's assert in vllm/model_executor/layers/, the model registry), or the file whose raise
pydantic reports in its own words (`Value error, Invalid repository ID or local directory specified: ...`), found
by the message's literal head in the release's source. Each file is read once per run, by the probe's own reader
(probes/site_reader.py), so its sites carry their guards like every other."""

from __future__ import annotations

import re

from compat.core.tree import EngineTree
from compat.explain.sites import Site, SiteIndex

MAX_FILES = 6  # files holding the message's head that are read (a phrase in more files says too little)
MIN_HEAD = 16  # characters of literal head a message needs to be looked for
_HEAD_END = re.compile(r"""['"`/\\:\d\[\]{}()<>=]""")


class Elsewhere:
    def __init__(self, tree: EngineTree) -> None:
        self.tree = tree
        self._files: dict[str, SiteIndex] = {}
        self._joined: dict[tuple[str, ...], SiteIndex] = {}

    def index(self, relpaths: list[str]) -> SiteIndex:
        from compat.probes.site_reader import sites_in

        joined = self._joined.get(tuple(relpaths))
        if joined is not None:
            return joined
        missing = [r for r in relpaths if r not in self._files]
        for relpath in missing:
            self._files[relpath] = SiteIndex(sites_in(self.tree, [relpath]) if self.tree.exists(relpath) else [])
        sites = [s for r in relpaths for s in self._files[r].sites]
        joined = self._joined[tuple(relpaths)] = SiteIndex.of_sites(sites)
        return joined

    def at(self, relpath: str, line: int) -> list[Site]:
        return self.index([relpath]).at(relpath, line)

    def raising(self, message: str) -> Site | None:
        """The raise whose template the message is, in the file(s) of the release that hold its literal head."""
        head = _HEAD_END.split(message, 1)[0].strip()
        words = head.split()
        for count in (6, 4, 3):
            needle = " ".join(words[:count])
            if len(words) < count or len(needle) < MIN_HEAD:
                continue
            files = self.tree.grep(needle, under=self.tree.engine)[:MAX_FILES + 1]
            if not files or len(files) > MAX_FILES:
                continue
            hits = [s for s, _ in self.index(files).match(message) if s.kind != "log"]
            if hits:
                return hits[0]
        return None
