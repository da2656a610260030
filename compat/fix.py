"""A fix: one typed value from where it is found (doctor's fixes, explain's catalog, verify) to where it is shown.

Each kind is a frozen dataclass that carries its data, renders its own words and command line in one place (the
`of` constructors, from the `ReleaseRef` of the release the user named), and gives its JSON form (`to_json`, the
keys `compat doctor --json` and `compat explain --json` have always printed). That JSON form is a `FixJson`: the
plain dict json.dumps prints, still holding the fix it was written from, so what renders a diagnosis in this process
(doctor's text, the matrix's cells, the --releases table) takes the dataclass (`typed`) and never parses the JSON
back; `from_json` reads a fix that really arrived as JSON (a fleet host's answer, a file):

    PatchFix    compat patch (and the same patches in memory: compat plugin install)
    ConvertFix  compat convert ckpt (with, from doctor, the patch that fixes it the other way)
    LineFix     the user's launch line, changed (doctor --launch)
    FlagFix     a flag to change, in words; KeyFix: a --speculative-config key to remove (its JSON kind is "flag")
    ReleaseFix  a release to move to
    AskFix      an answer only the user has (the layer-id convention, the layers, the target class)
    NoFix       nothing here fixes it: what would, and the command that looks further when there is one

A new kind of fix is a class here, with its KIND, its words and its JSON.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar

from compat.release_ref import ReleaseRef

__all__ = ["Fix", "FixJson", "typed", "PatchFix", "ConvertFix", "LineFix", "FlagFix", "KeyFix", "ReleaseFix", "AskFix", "NoFix",
           "from_json", "replace"]


@dataclass(frozen=True)
class Fix:
    """What every fix has: its kind, and what a person is shown (the command to run, else the words)."""

    KIND: ClassVar[str] = ""
    ALWAYS: ClassVar[tuple[str, ...]] = ()  # keys the JSON form has even when None

    @property
    def kind(self) -> str:
        return self.KIND

    def shown(self) -> str:
        """The line doctor prints after `fix:`: the command when there is one, else the words."""
        command = getattr(self, "command", None)
        return command or getattr(self, "text", None) or ""

    def phrase(self, check: str, newest_release: str | None = None) -> str:
        """A short phrase for the `doctor --releases` table and the matrix ("patch a,b", "convert", "use >=X")."""
        return self.KIND

    def to_json(self) -> FixJson:
        """The JSON form (printed only at the --json edge); it keeps this fix for the renderers."""
        return FixJson(self._fields_json(), self)

    def _fields_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.KIND}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name not in self.ALWAYS:
                continue
            if isinstance(value, Fix):
                value = value.to_json()
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out


def _quoted(parts: list[str]) -> str:
    return shlex.join(parts)


@dataclass(frozen=True)
class PatchFix(Fix):
    """`compat patch --select ...` with each patch's options, and the same fix changing no engine file (the plugin).

    doctor's form carries what it verified and the plugin line; explain's carries the sentence it reads in."""

    KIND: ClassVar[str] = "patch"
    patch_ids: tuple[str, ...]
    command: str
    options: dict[str, dict[str, Any]] | None = None  # doctor: the options it chose, by patch id
    plugin: str | None = None
    verified: str | None = None
    note: str | None = None
    text: str | None = None

    @staticmethod
    def commands(ref: ReleaseRef, ids: list[str], settings: dict[str, dict[str, Any]]) -> tuple[str, str]:
        """(`compat patch ...`, `compat plugin install ...`) for these patches with these options (by patch id)."""
        from compat.patches import catalog
        from compat.patching import option_flags

        by_id = {p.id: p for p in catalog(ref.engine)} if any(settings.values()) else {}
        flags = [flag for pid, options in settings.items() if options for flag in option_flags(by_id[pid], options)]
        selected = [word for pid in ids for word in ("--select", pid)]
        return (_quoted(["compat", "patch", *ref.args("patch"), *selected, *flags]),
                _quoted(["compat", "plugin", "install", *ref.args("plugin"), *selected, *flags]))

    @staticmethod
    def manifest_command(engine: str, image: str, ids: list[str], settings: dict[str, dict[str, Any]] | None, *,
                         workload: tuple[str, str] | None = None, container: str | None = None) -> str:
        """`compat plugin manifest ...`: the same patches for a container declared in a manifest (doctor --manifest), where
        a patch applied inside a running container is lost at its restart. `workload`: (kind, name) of the Deployment,
        StatefulSet or DaemonSet the Kustomize patch targets."""
        from compat.patching import every_patch, option_flags

        by_id = {p.id: p for p in every_patch()}
        flags = [flag for pid, options in (settings or {}).items() if options and pid in by_id
                 for flag in option_flags(by_id[pid], options)]
        words = ["compat", "plugin", "manifest", "--engine", engine, "--image", image]
        if workload is not None:
            words += ["--kind", workload[0], "--name", workload[1]] if workload[0] != "Deployment" else ["--name", workload[1]]
        if container and container != engine:
            words += ["--container", container]
        words += [word for pid in ids for word in ("--select", pid)] + flags
        return _quoted(words) + " > compat-plugin.yaml"

    @classmethod
    def verified_by_doctor(cls, ref: ReleaseRef, ids: list[str], settings: dict[str, dict[str, Any]], verified: str,
                           note: str | None = None) -> PatchFix:
        command, plugin = cls.commands(ref, ids, settings)
        return cls(tuple(ids), command, settings, plugin, verified, note)

    @classmethod
    def for_error(cls, ref: ReleaseRef, ids: list[str], settings: dict[str, dict[str, Any]], why: str) -> PatchFix:
        command, _ = cls.commands(ref, ids, settings)
        return cls(tuple(ids), command, text=f"{why}: {command} (or in memory: compat plugin)")

    def phrase(self, check: str, newest_release: str | None = None) -> str:
        return "patch " + ",".join(self.patch_ids)


@dataclass(frozen=True)
class ConvertFix(Fix):
    KIND: ClassVar[str] = "convert"
    command: str
    verified: str | None = None
    note: str | None = None
    text: str | None = None
    alternative: PatchFix | None = None  # doctor: the patches that fix it too, without converting

    def phrase(self, check: str, newest_release: str | None = None) -> str:
        return "convert"


@dataclass(frozen=True)
class LineFix(Fix):
    KIND: ClassVar[str] = "line"
    text: str

    def phrase(self, check: str, newest_release: str | None = None) -> str:
        return "the line doctor prints"


@dataclass(frozen=True)
class FlagFix(Fix):
    KIND: ClassVar[str] = "flag"
    text: str


@dataclass(frozen=True)
class KeyFix(Fix):
    """A --speculative-config key the release does not have: remove it (and the field it was probably meant to be)."""

    KIND: ClassVar[str] = "flag"
    ALWAYS: ClassVar[tuple[str, ...]] = ("key", "suggestion")
    text: str
    key: str | None = None
    suggestion: str | None = None


@dataclass(frozen=True)
class ReleaseFix(Fix):
    KIND: ClassVar[str] = "release"
    releases: str  # a specifier: ">=0.18.0"
    text: str

    def phrase(self, check: str, newest_release: str | None = None) -> str:
        return f"use {newest_release or self.releases}"


@dataclass(frozen=True)
class AskFix(Fix):
    """doctor: the question (`convention` or `layers`), the flag that answers it, and what each answer means;
    explain: the patches one answer (the target class) would pick between."""

    KIND: ClassVar[str] = "ask"
    text: str
    question: str | None = None
    flag: str | None = None
    answers: dict[str, Any] | None = None
    patch_ids: tuple[str, ...] | None = None

    def _fields_json(self) -> dict[str, Any]:
        out = super()._fields_json()
        order = ("kind", "patch_ids", "question", "flag", "text", "answers")  # the keys in the order always printed
        return {k: out[k] for k in order if k in out}

    def phrase(self, check: str, newest_release: str | None = None) -> str:
        return f"say {self.flag or '--layer-ids-convention'}"


@dataclass(frozen=True)
class NoFix(Fix):
    KIND: ClassVar[str] = "none"
    text: str
    command: str | None = None

    def shown(self) -> str:
        return self.command or self.text

    def phrase(self, check: str, newest_release: str | None = None) -> str:
        return f"{check}: no fix"


_KINDS: dict[str, tuple[type[Fix], ...]] = {}  # kind -> its classes ("flag": KeyFix, told by its "key", or FlagFix)
for _cls in (PatchFix, ConvertFix, LineFix, KeyFix, FlagFix, ReleaseFix, AskFix, NoFix):
    _KINDS[_cls.KIND] = _KINDS.get(_cls.KIND, ()) + (_cls,)


class FixJson(dict[str, Any]):
    """A fix's JSON form holding the fix it was written from: json.dumps prints the dict, `typed` gives the fix."""

    def __init__(self, data: dict[str, Any], fix: Fix):
        super().__init__(data)
        self.fix = fix


def typed(data: dict[str, Any] | None) -> Fix | None:
    """The fix of a diagnosis's check: the dataclass itself when the diagnosis was made in this process, else (a
    diagnosis that arrived as JSON) read from its JSON form."""
    if isinstance(data, FixJson):
        return data.fix
    return from_json(data)


def from_json(data: dict[str, Any] | None) -> Fix | None:
    """The fix a JSON form was written from (a diagnosis kept in the matrix's cells, a doctor --releases row)."""
    if not data:
        return None
    classes = _KINDS[data["kind"]]
    cls = classes[0] if len(classes) == 1 or "key" in data else classes[-1]
    values = {k: v for k, v in data.items() if k != "kind"}
    for name in ("patch_ids",):
        if isinstance(values.get(name), list):
            values[name] = tuple(values[name])
    if isinstance(values.get("alternative"), dict):
        values["alternative"] = from_json(values["alternative"])
    return cls(**values)
