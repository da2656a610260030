"""The values a manifest is read into: where a thing is written, the serving containers found, what could not be read.

Each is settled once by the reader of its format (compat/manifests/formats/) and carried as is: the doctor run,
the cross-resource comparison, the renderers (text, JSON, SARIF, JUnit) and --fix all read these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Where:
    """A place in a file: 1-based line and column."""

    file: str
    line: int
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "column": self.column}


@dataclass(frozen=True)
class Word:
    """One word of a launch line and where it is written (a word a reader made up, e.g. the `vllm serve` a
    chart adds, is placed at what made it: the chart's `modelCommand`, the image)."""

    text: str
    where: Where
    # how --fix edits it: the YAML path of the node holding it, and whether the node is a list of words ("list"),
    # one word ("word"), a shell script or one string of words ("string"), or a mapping of engine arguments ("kwargs")
    path: tuple[str | int, ...] = ()
    holder: str = "list"
    document: int = -1  # which document of its file holds it (set by the scan)


@dataclass(frozen=True)
class Problem:
    """What could not be read, where, and what to do: a file that is not YAML, a Helm template, an unknown kind,
    an image whose release cannot be told, a launch line doctor cannot read. The rest is still checked."""

    where: Where
    message: str
    hint: str | None = None
    kind: str = "input"  # parse | template | kind | image | launch | budget | too-large | unreadable | release | model
    resource: str | None = None
    level: str = "error"  # error | warning | note

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "level": self.level, "message": self.message, "hint": self.hint,
                "resource": self.resource, **self.where.to_json()}


@dataclass(frozen=True)
class Image:
    """A container image reference, and the engine release its tag tells (None: the tag does not tell)."""

    ref: str
    where: Where
    repository: str = ""
    tag: str | None = None
    digest: str | None = None
    engine: str | None = None  # the engine whose image naming the repository matches
    version: str | None = None  # the release its tag names
    path: tuple[str | int, ...] = ()  # the YAML path of the node holding it (--fix writes a new tag there)
    tag_path: tuple[str | int, ...] = ()  # a chart's separate `tag:` value (production-stack), when it has one
    document: int = -1  # which document of its file holds it (set by the scan)


@dataclass
class Serving:
    """One serving container (or engine) of a resource: its launch line, env, image, replicas."""

    resource: str  # "Deployment/vllm-eagle3", "values.yaml servingEngineSpec.modelSpec[0] (llama)", ...
    kind: str  # the format's kind or section
    format: str  # the reader's NAME
    where: Where  # the resource (its first line)
    container: str | None = None
    words: list[Word] = field(default_factory=list)  # entry point + arguments
    env: dict[str, Word] = field(default_factory=dict)  # VLLM_* / SGLANG_* / HF_* with their values as words
    image: Image | None = None
    replicas: str | None = None  # "2", "1-4" (autoscaled), "2 groups x 4 pods"
    engine: str | None = None  # what the format says the engine is, when nothing else does (Ray Serve: vLLM)
    unread: list[str] = field(default_factory=list)  # what of it could not be read (valueFrom, a Helm value)
    extra: dict[str, Any] = field(default_factory=dict)  # the format's own facts worth showing (model URIs, ...)

    @property
    def name(self) -> str:
        return self.resource + (f" container {self.container}" if self.container else "")

    def word_where(self, index: int) -> Where:
        """Where argument `index` of the line (after the entry point) is written."""
        return self.words[index].where if 0 <= index < len(self.words) else self.where
