"""What a check reads and what it answers: the API every check is written against (re-exported by compat.checks).

A check sees one `Ctx` (the probe report, the target, the drafter, the options) and returns a `Result`;
the typed lookups below are the only way checks reach into the probe report, so a change of a probe's
JSON shape is fixed here once. compat/doctor builds the Ctx (compat/doctor/inputs.py reads the drafter),
runs the checks and fixes what they find; nothing here imports compat.doctor.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator, Literal, Mapping

from packaging.version import InvalidVersion, Version

from compat import aux_layers
from compat.checkpoints import CONVENTION_FLAG, AmbiguousConvention, Settled
from compat.core.interpreter import Interpreter
from compat.fix import Fix
from compat.launch_line import LaunchLine, LineEdit
from compat.methods import Recognition, Unrecognised
from compat.preflight import Preflight
from compat.release_ref import ReleaseRef
from compat.target import Target
from compat.vocab_maps import MapTensor

Verdict = Literal["pass", "fail", "warn"]
PASS: Verdict = "pass"
FAIL: Verdict = "fail"
WARN: Verdict = "warn"

DEFAULT_SPEC_TOKENS = 3  # vLLM num_speculative_tokens / SGLang --speculative-num-steps
# what `doctor --platform` takes (vLLM's and SGLang's platform names); the first is the default
PLATFORMS = ("cuda", "rocm", "cpu", "tpu", "xpu")
DEFAULT_TOPK = 1  # SGLang --speculative-eagle-topk; with topk 1 draft tokens = steps + 1 (sglang-eagle3.md 1.4)


@dataclass
class Options:
    num_speculative_tokens: int = DEFAULT_SPEC_TOKENS
    topk: int = DEFAULT_TOPK
    extra_spec: dict[str, Any] = field(default_factory=dict)  # more --speculative-config keys the user wants (vLLM)
    # The serving venv the fixes name (`compat patch --python PY`): the one an installed engine was found in, or the
    # --python given beside a release or a tree; None: not known (the fixes say so). Never where the engine is read.
    fixes_python: Interpreter | None = None
    # `doctor --launch`: the user's launch line (the launch-line checks read it; doctor prints it, fixed)
    launch: LaunchLine | None = None
    method: str | None = None  # `doctor --method` (vLLM "method" / SGLang --speculative-algorithm), without a line
    # `doctor --platform`: the platform the release serves on; its own selection logic (model runner, proposer,
    # attention backend, what the platform refuses) is read with this as an input, never assumed
    platform: str = PLATFORMS[0]
    # the release's own build of the line in the serving interpreter (compat/preflight.py), when doctor ran one
    preflight: Preflight | None = None


# The fields of a Drafter read while someone listens (`drafter_reads`): doctor runs again only the checks that read what
# an answer to its question changes (compat/doctor/reuse.py), found from what each check reads, not from a list.
_LISTENING: list[set[str]] = []


@contextmanager
def drafter_reads() -> Iterator[set[str]]:
    """The names of the Drafter fields read (of any drafter, through any property) while inside."""
    read: set[str] = set()
    _LISTENING.append(read)
    try:
        yield read
    finally:
        _LISTENING.pop()
        if _LISTENING:
            _LISTENING[-1].update(read)


def _note_reads(names: set[str]) -> None:
    if _LISTENING:
        _LISTENING[-1].update(names)


@dataclass
class Drafter:
    """The drafter as the checks see it: its config and tensor headers (never the weights), the layout that
    recognises it and how its layer ids are known (compat/doctor/inputs.py reads and settles it)."""

    def __getattribute__(self, name: str) -> Any:
        if _LISTENING and name in DRAFTER_FIELDS:
            _LISTENING[-1].add(name)
        return object.__getattribute__(self, name)

    path: Path
    config: dict[str, Any]
    tensors: dict[str, tuple[str, tuple[int, ...]]]  # name -> (dtype, shape), from the headers only
    maps: Mapping[str, MapTensor] = field(default_factory=dict)  # "d2t" / "t2d" -> a tensor whose .read() gives its bytes (small)
    layout: ModuleType | None = None  # the checkpoints/ layout module that recognises it
    settled: Settled | None = None  # how its layer ids are known (None: they are not: see read_error)
    read_error: str | None = None  # why the layout could not read the config (e.g. ambiguous ids), in words
    # When only the user can settle the convention of the declared ids: the error, with what each reading trains on.
    ambiguous: AmbiguousConvention | None = None
    # The method family it was trained for (compat.methods: from its trainer's keys), or what was read when no family
    # recognises it; None: not looked at (a drafter built by hand in a test), or no drafter (`present` False)
    recognised: Recognition | Unrecognised | None = None
    present: bool = True  # False: the method launched takes no drafter (n-gram, suffix, MTP heads in the target)

    @property
    def architecture(self) -> str | None:
        archs = self.config.get("architectures") or []
        return archs[0] if archs else None

    @property
    def trained_ids(self) -> list[int] | None:
        """The capture-before layers it was trained on (None: unknown)."""
        return self.settled.capture_before if self.settled is not None else None

    @property
    def settled_by(self) -> str | None:
        return self.settled.source if self.settled is not None else None

    @property
    def convention(self) -> str | None:
        """The convention its declared ids are read in, when the user told it or a fingerprint fixes it."""
        return self.settled.convention if self.settled is not None else None

    @property
    def branches(self) -> dict[str, list[int]] | None:
        """When nothing settles the convention: what each reading says it was trained on."""
        return self.ambiguous.readings if self.ambiguous is not None else None

    @property
    def trained_origin(self) -> str:
        """How the layers trained on are known, in words."""
        settled = self.settled
        if settled is None or settled.capture_before is None:
            return ""
        ids = settled.ids
        if ids is None:  # compat's record, or the default
            return settled.why
        if settled.source == "fingerprint":
            # the trainer's convention, not the user's word: the flag is named only as what needs no saying
            return (f"{ids.declared_field} = {ids.declared} read as {ids.convention} (the trainer's, from its fingerprint: "
                    f"no {CONVENTION_FLAG} needed); {settled.why}")
        return ids.origin


DRAFTER_FIELDS = frozenset(f.name for f in fields(Drafter))


@dataclass(frozen=True)
class ConvertWith:
    """What a conversion must change for a check to pass (aux-inputs: the layer ids, the loss-target id dropped)."""

    layer_ids: list[int]

    def to_json(self) -> dict[str, Any]:
        return {"layer_ids": self.layer_ids}


@dataclass(frozen=True)
class LaterRelease:
    """The releases that have what this one lacks, from `first` on (None: no later release known here has it)."""

    first: str | None
    # the check bisected the later releases and none has it: no release fix is offered (a known issue about the
    # target family, which doctor falls back on when `first` is None, would name a release that does not help)
    none_later: bool = False

    @property
    def specifier(self) -> str | None:
        return f">={self.first}" if self.first else None


@dataclass(frozen=True)
class VenvQuestion:
    """What only the serving venv can answer (a package the method imports that the engine does not depend on), and
    the command that asks it: doctor's verdict then depends on the user's environment, never "works as is"."""

    packages: tuple[str, ...]
    command: str

    def to_json(self) -> dict[str, Any]:
        return {"packages": list(self.packages), "command": self.command}


@dataclass
class Result:
    """A check's answer. `evidence` is what it saw, shown as is under --json (nothing in compat decides on
    it); the typed fields are what doctor's fixes act on. The registry fills `check` and `title`, the
    fixes `fix` and `convert_refused`."""

    verdict: Verdict
    detail: str
    location: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    convert_with: ConvertWith | None = None
    release: LaterRelease | None = None  # a "release" fix: the releases that have what this one lacks
    needs_input: bool = False  # only the user can settle it (the layer-id convention): the fix asks
    unread: bool = False  # not checked: compat reads none of the facts it needs from this engine yet
    check: str = ""
    title: str = ""
    fix: Fix | None = None  # compat/fix.py: one typed value from doctor's fixes to what is shown
    convert_refused: str | None = None  # why the conversion that might fix it was refused, in words
    remedy: str | None = None  # when no patch, conversion or release can fix it: what would, in words
    edits: tuple[LineEdit, ...] = ()  # with --launch: what this check changes in the user's line
    # a WARN that keeps the verdict from "works as is": what the release checks could not be evaluated (cannot tell)
    undecided: bool = False
    words: tuple[tuple[int, int], ...] = ()  # with --launch: the words [start, end) of the line it is about (a refused
    # value), so that doctor --manifest cites the line where they are written
    venv: VenvQuestion | None = None  # only the serving venv can answer: the command that asks it

    def to_json(self) -> dict[str, Any]:
        """The JSON form of a check in doctor's --json (its keys and their order are a stable interface)."""
        out: dict[str, Any] = {"check": self.check, "title": self.title, "verdict": self.verdict, "detail": self.detail,
                               "fix": self.fix.to_json() if self.fix is not None else None, "location": self.location, **self.evidence}
        if self.convert_with is not None:
            out["convert_with"] = self.convert_with.to_json()
        if self.release is not None:
            out["release"] = self.release.specifier
        if self.needs_input:
            out["needs_input"] = True
        if self.convert_refused is not None:
            out["convert_refused"] = self.convert_refused
        if self.edits:
            out["line_edits"] = [e.to_json() for e in self.edits]
        if self.undecided:
            out["undecided"] = True
        if self.words:
            out["line_words"] = [list(span) for span in self.words]
        if self.venv is not None:
            out["venv_question"] = self.venv.to_json()
        return out


@dataclass(frozen=True)
class MethodInPlay:
    """Which method doctor checks: the family whose checks run, the name the user runs (and where it is said)."""

    family: str  # compat.methods family: its checks run
    launched: str | None  # the name the launch line or --method gives; None: neither (doctor prints its own)
    source: str  # "the launch line", "--method", "the drafter" (recognised) or "doctor's default"
    launched_family: str | None  # the family of the launched name (None: no family has that name in this engine)

    @property
    def eagle3(self) -> bool:
        return self.family == "eagle3"


@dataclass
class Ctx:
    report: dict[str, Any]
    target: Target
    drafter: Drafter
    options: Options
    # (fact, key) -> the first later release whose probe fact holds key, "" when none does, None when unknown
    releases: Callable[[str, str], str | None] | None = None
    # architecture -> how this release's class for it loads a checkpoint (compat.probes.model_loader.class_loader,
    # read on demand and kept in the facts cache); None: not known here (a check then cannot tell)
    loaders: Callable[[str], dict[str, Any]] | None = None

    @property
    def engine(self) -> str:
        return str(self.report["engine"])

    @property
    def version(self) -> Version | None:
        try:
            return Version(Version(str(self.report.get("version"))).public)
        except InvalidVersion:
            return None

    @property
    def release(self) -> ReleaseRef:
        """The release diagnosed, as every command doctor prints names it (with the serving venv, when known)."""
        python = self.options.fixes_python
        return ReleaseRef.of_source(self.engine, str(self.version) if self.version is not None else None,
                                    self.report.get("source"), python.path if python is not None else None)

    def at_least(self, gate: Version) -> bool | None:
        return None if self.version is None else self.version >= gate

    @property
    def method(self) -> MethodInPlay:
        """The method family whose checks run and the name the user runs (settled once per context)."""
        found = self.__dict__.get("_method")
        if found is None:
            with drafter_reads() as read:
                found = self.__dict__["_method"] = method_in_play(self)
            self.__dict__["_method_reads"] = read
        else:  # whoever asks depends on what it was settled from, as the first asker did
            _note_reads(self.__dict__["_method_reads"])
        return found

    def with_drafter(self, drafter: Drafter) -> Ctx:
        return Ctx(self.report, self.target, drafter, self.options, self.releases, self.loaders)

    def with_report(self, report: dict[str, Any]) -> Ctx:
        """The same inputs judged by another report (a later release, or this one patched in memory): the class
        loaders stay when the release is the same."""
        same = report.get("version") == self.report.get("version") and report.get("engine") == self.report.get("engine")
        given = report.get("class_loaders")  # a later release's, handed over with its report (doctor's release finder)
        return Ctx(report, self.target, self.drafter, self.options, self.releases,
                   self.loaders if same else given if callable(given) else None)

    def with_options(self, options: Options) -> Ctx:
        return Ctx(self.report, self.target, self.drafter, options, self.releases, self.loaders)

    def class_loader(self, architecture: str) -> dict[str, Any] | None:
        """How this release's class registered under `architecture` loads a checkpoint (None: not known here)."""
        return self.loaders(architecture) if self.loaders is not None else None

    def first_release_with(self, fact: str, key: str) -> str | None:
        """The first release after this one whose probe fact `fact` has `key` ("" none; None: not looked)."""
        return self.releases(fact, key) if self.releases else None

    def first_release_where(self, name: str, holds: Callable[[dict[str, Any]], bool]) -> str | None:
        """The first release after this one whose probe report makes `holds` true ("" none; None: not looked, or the
        finder given answers only fact keys). `name` says what is looked for: the search is remembered by it."""
        where = getattr(self.releases, "where", None)
        return where(name, holds) if where is not None else None

    # -- typed lookups over the probe report ------------------------------------------------------
    def facts(self, key: str) -> list[Any]:
        """A list-valued probe fact; [] when the probe found nothing or failed (it reports a dict then)."""
        value = self.report.get(key)
        return value if isinstance(value, list) else []

    def fact(self, key: str) -> dict[str, Any]:
        """A dict-valued probe fact; {} when absent."""
        value = self.report.get(key)
        return value if isinstance(value, dict) else {}

    def probe_error(self, key: str) -> str | None:
        value = self.report.get(key)
        return value.get("error") if isinstance(value, dict) and value.get("error") else None

    def target_entry(self, architecture: str | None = None) -> dict[str, Any] | None:
        return aux_layers.target_entry(self.report, architecture or self.target.architecture or "")

    def flag(self, name: str) -> dict[str, Any] | None:
        for flag in self.facts("cli_flags"):
            if flag.get("name") == name or name in (flag.get("aliases") or []):
                return flag
        return None

    def drafter_location(self, architecture: str | None) -> str | None:
        for entry in self.facts("eagle3_drafter_classes"):
            if entry.get("architecture") == architecture:
                return entry.get("location") or entry.get("registered")
        return None

    def first_location(self, key: str) -> str | None:
        value = self.report.get(key)
        if isinstance(value, list) and value and isinstance(value[0], dict):
            return value[0].get("location") or value[0].get("registered")
        if isinstance(value, dict):
            return value.get("location")
        return None


DEFAULT_FAMILY = "eagle3"  # what doctor checked first, and checks when nothing says which method


def method_in_play(ctx: Ctx) -> MethodInPlay:
    """The family whose checks run: the drafter's when its trainer's keys say which it was trained for (an EAGLE-3
    drafter launched as EAGLE is checked as EAGLE-3, whose checks say the method is wrong); else the family of the
    name the user runs (the launch line's, else `doctor --method`); else EAGLE-3 (a causal LM's config alone is only a
    weak sign of a draft model: `--method draft_model` says it; a whole causal LM, its embedding and layers, is one)."""
    from compat.methods import family_of

    line = ctx.options.launch
    launched, source = (line.method, "the launch line") if line is not None else (ctx.options.method, "--method")
    # the engine's own name, else compat's id (`--method dflash` on SGLang, `--method DSpark`), else the other engine's
    # (`--method STANDALONE` on vLLM is the draft-model family)
    match = family_of(ctx.engine, launched) if launched else None
    launched_family = match.method.family if match is not None else None
    found = ctx.drafter.recognised
    if isinstance(found, Recognition) and found.certain and ctx.drafter.present:
        return MethodInPlay(found.family, launched, source if launched else "the drafter", launched_family)
    detected = _detected_family(ctx) if line is not None and not launched else None
    if detected is not None:  # a line without a method: the release picks one from the draft checkpoint
        return MethodInPlay(detected, None, "the release's auto-detection", None)
    if launched_family is not None:
        return MethodInPlay(launched_family, launched, source, launched_family)
    return MethodInPlay(DEFAULT_FAMILY, launched, source if launched else "doctor's default", launched_family)


def _detected_family(ctx: Ctx) -> str | None:
    """The family of the method the release detects for a line's draft checkpoint, when the replay is certain."""
    from compat.methods import find_name

    found = replay_detection(ctx, None)
    if not found or not found.get("certain"):
        return None
    if not found.get("method"):  # the release raises before it picks one: the drafter's own (weak) family is checked
        weak = ctx.drafter.recognised
        return weak.family if found.get("raises") and isinstance(weak, Recognition) else None
    match = find_name(ctx.engine, found["method"])
    return match.method.family if match is not None else None


def replay_detection(ctx: Ctx, method: str | None) -> dict[str, Any] | None:
    """The release's method auto-detection (its method_autodetection chain) replayed on the draft checkpoint as the
    release sees it (the line's word for it: a hub id or path, its model_type and architectures), for `method` as
    configured (None: none); None when the release has no such chain or there is no draft checkpoint."""
    from compat.probes.vllm.method_autodetection import detect_method

    auto = ctx.fact("method_autodetection")
    if not auto.get("present") or not ctx.drafter.present:
        return None
    config = ctx.drafter.config
    listed = config.get("architectures")
    archs = [a for a in listed if isinstance(a, str)] if isinstance(listed, list) else []
    model_type = _draft_model_type(ctx, config.get("model_type") if isinstance(config.get("model_type"), str) else None,
                                   archs)
    line = ctx.options.launch
    name = line.drafter if line is not None and line.drafter else str(ctx.drafter.path)
    return detect_method(auto, method, str(name), model_type, archs)


def _draft_model_type(ctx: Ctx, model_type: str | None, archs: list[str]) -> str | None:
    """The draft's model_type as the release's detection sees it: after SpeculativeConfig.hf_config_override (the
    draft's ModelConfig is built with it), which rewrites a DeepSeek-V3 NextN export to deepseek_mtp, ... (the
    drafter_architecture_rename fact's mtp_override)."""
    override = ctx.fact("drafter_architecture_rename").get("mtp_override")
    if not isinstance(override, dict):
        return model_type
    rules = [(override.get("model_types") or {}).get(model_type or "")] + [
        (override.get("architectures") or {}).get(a) for a in archs]
    found = next((r["model_type"] for r in rules if isinstance(r, dict) and isinstance(r.get("model_type"), str)), None)
    return found or model_type
