"""doctor's launch checks on every serving container a scan found, each finding at the file and line it is about.

Per container: its words (and its VLLM_* / SGLANG_* / HF_* env) read as the launch line (compat/launch_line.py),
the release its image tells (else `--engine`), that release's source (fetched once per release, cached), and the
target and drafter of the line. A model whose files are here (the path itself, a `--model-root` mapping, the
Hugging Face cache for an id) is read and the whole diagnosis runs (compat/doctor). A model that is not here is
never guessed: the checks run with it marked missing, and every check that would read it is reported unchecked,
saying which model it needs; the checks of the line and the release alone still run. Identical inputs (the same
release, line and models, as in a repository of many replicas of one service) are diagnosed once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from compat import engines
from compat.core.errors import CompatError
from compat.launch_line import LaunchLine, read_line
from compat.manifests.model import Problem, Serving, Where
from compat.manifests.words import entry_index
from compat.sources import EngineSpec

UNCHECKED = "unchecked"
NONE = "none"  # a model the line runs without (a method that takes no drafter), in Checked.models


class Unavailable(BaseException):
    """A check reached for a model that is not on this machine (BaseException: no check's `except Exception` hides it)."""

    def __init__(self, what: str, name: str) -> None:
        super().__init__(what, name)
        self.what = what
        self.name = name


class Missing:
    """Stands for a target or drafter that is not here: any use of it raises Unavailable."""

    def __init__(self, what: str, name: str) -> None:
        self._what = what
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        raise Unavailable(self._what, self._name)


@dataclass
class Finding:
    """One check's answer for one serving container, where it is written."""

    serving: Serving
    check: str
    title: str
    verdict: str  # pass | fail | warn | unchecked
    detail: str
    where: Where
    fix: dict[str, Any] | None = None
    location: str | None = None  # the engine's file and line behind it


@dataclass
class Checked:
    """One serving container's outcome: the release and models it was checked against, its findings."""

    serving: Serving
    engine: str | None = None
    version: str | None = None
    release_from: str = ""  # "image" | "--engine" | "runtime_env"
    target: str | None = None
    drafter: str | None = None
    models: dict[str, str] = field(default_factory=dict)  # "target"/"drafter" -> the local path read, or "unchecked: why"
    findings: list[Finding] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    line: LaunchLine | None = None
    fixed_line: list[str] | None = None  # doctor's line with the fixes (args after the entry point)
    verdict: str | None = None
    release_fix: str | None = None  # ">=0.18.0": a release that fixes what fails (the image tag --fix writes)


@dataclass
class Settings:
    engine: EngineSpec | None = None  # --engine: for images whose tag tells no release
    model_roots: list[tuple[str, Path]] = field(default_factory=list)  # (prefix or "", local directory)
    open_release: Callable[[str, str], Any] | None = None  # (engine, version) -> EngineTree
    layer_ids_convention: str | None = None
    layer_ids: list[int] | None = None
    cache_dir: str | None = None
    offline: bool = False


def launch_words(serving: Serving) -> list[str]:
    start = entry_index([w.text for w in serving.words]) or 0
    env = [f"{name}={word.text}" for name, word in serving.env.items()]
    return [*env, *(w.text for w in serving.words[:start]), *(w.text for w in serving.words[start:])]


def arg_word(serving: Serving, line: LaunchLine, index: int) -> Where:
    """Where argument `index` of the line (line.args) is written."""
    start = entry_index([w.text for w in serving.words]) or 0
    return serving.word_where(start + len(line.entry) + index)


def spec_where(serving: Serving, line: LaunchLine) -> Where | None:
    """Where the speculative settings are written (the --speculative-config value, --speculative-* flags)."""
    config_options = engines.get(line.engine).spec_config_options  # the line's engine's --speculative-config spellings
    for i, word in enumerate(line.args):
        name = word.partition("=")[0]
        if name in config_options or name.startswith("--speculative"):
            return arg_word(serving, line, i + 1 if "=" not in word and i + 1 < len(line.args) else i)
    return None


def edit_where(serving: Serving, line: LaunchLine, edit: Any) -> Where | None:
    if edit.kind == "drop":
        return arg_word(serving, line, edit.start)
    if edit.kind == "spec":
        return (serving.extra.get("spec_keys") or {}).get(edit.key) or spec_where(serving, line)
    names = (edit.option, *edit.aliases)
    hits = [i for i, w in enumerate(line.args) if w.partition("=")[0] in names]
    return arg_word(serving, line, hits[-1]) if hits else None


def read_serving(serving: Serving) -> tuple[LaunchLine | None, Problem | None]:
    try:
        return read_line(launch_words(serving)), None
    except CompatError as err:
        where = serving.words[0].where if serving.words else serving.where
        return None, Problem(where, f"{serving.name}: the launch line cannot be read: {err.message}", err.hint,
                             kind="launch", resource=serving.resource)


def release_of(serving: Serving, line: LaunchLine, settings: Settings) -> tuple[str | None, str, Problem | None]:
    """(the version, where it comes from, or the problem that it cannot be told)."""
    image = serving.image
    if image is not None and image.version and image.engine == line.engine:
        return image.version, ("image" if image.repository else "pinned install"), None
    if image is not None and image.version and image.engine != line.engine:
        return None, "", Problem(image.where, f"{serving.name}: the image {image.ref} is {image.engine}'s, the launch line "
                                 f"starts {line.engine}", None, kind="image", resource=serving.resource)
    spec = settings.engine
    if spec is not None and spec.engine == line.engine and spec.specifier is not None and spec.specifier.startswith("=="):
        return spec.specifier[2:], "--engine", None
    what = f"the image {image.ref}" if image is not None else "no image"
    where = image.where if image is not None else serving.where
    return None, "", Problem(where, f"{serving.name}: {what}: cannot tell the {line.engine} release from it (its tag names "
                             "no release compat knows how to read)",
                             f"name the release it runs: --engine {line.engine}==VERSION (used for every image whose tag "
                             "says nothing), or pin the image to a release tag", kind="image", resource=serving.resource)


def local_model(name: str | None, settings: Settings, serving: Serving | None = None) -> tuple[Path | None, str]:
    """The model's files on this machine, or why not (never a guess)."""
    from compat.hub import looks_like_hub_id, resolve_model

    if not name:
        return None, "not named in the launch line"
    source = serving.extra.get("model_source") if serving is not None and name == serving.extra.get("model_mount") else None
    names = [n for n in (name, source) if n]
    candidates = []
    for each in names:
        for prefix, root in settings.model_roots:
            if prefix and (each == prefix or each.startswith(prefix.rstrip("/") + "/")):
                candidates.append(root / each[len(prefix):].lstrip("/"))
            elif not prefix:
                candidates += [root / each.lstrip("/"), root / Path(each).name]
        candidates.append(Path(each))
    for path in candidates:
        if (path / "config.json").is_file():
            return path, ""
    for hub_name in names:
        if looks_like_hub_id(hub_name):
            try:
                return resolve_model(hub_name, what="model"), ""
            except CompatError:
                pass
    roots = ", ".join(str(r) for _, r in settings.model_roots) or "none given"
    return None, f"{name} is not on this machine (model roots: {roots}; not in the local Hugging Face cache)"
