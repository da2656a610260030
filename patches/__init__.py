"""Patches: one version-pinned source fix per file, applied by `compat patch`.

A patch is a module under `patches/<engine>/` that defines, in plain sight, the fields of `CONTRACT`
below (checked when it is imported):

    ID           "vllm-eagle3-whitelist"  (what --select / --skip and the record use)
    DESCRIPTION  one line
    WHY          links: the upstream issue / PR, the research note
    ENGINE       "vllm" | "sglang" (the folder it sits in)
    VERSIONS     SpecifierSet(">=0.10.1,<=0.17.1"): releases the patch is offered for
    OPTIONS      {"model_types": (...)}: the option values it uses, with their defaults (optional; default {})
    REQUIRES     ids of patches whose fix this one builds on (optional; default ())
    ORDER        where it applies among its engine's patches (optional; default 50; lower first, after
                 the patches it REQUIRES)
    FIXES_ERRORS the engine's own messages (fragments) of the failures it fixes (optional; default ()):
                 `compat verify` offers the patch when its run prints one, `compat explain` finds it by them
    TARGET_CLASSES  the target model classes it makes servable (optional; default (): any target):
                 doctor's and explain's fixes name it for those targets only

    find_files(tree) -> {role: relpath}          located by content: files move between releases
    has_fix(role, source, options) -> bool       the fix is there (applied by us or upstream)
    transform(role, source, options) -> str      the libcst transform of one file

`has_fix` and `transform` raise `FileNotAsExpected` when the file is neither the release's
original nor fixed (edited by hand, a fork): `compat patch` then refuses unless --force.

Optional hooks, for a patch that takes options (LibCST's `add_args` is the model):

    add_args(group)
        Declare the patch's command-line options with `group.add_argument(...)` (an argparse
        argument group that `compat patch --help` shows under the patch's id). Each option's
        `dest` is a key of OPTIONS: the value given on the command line reaches `has_fix` and
        `transform` under that key. A list or tuple default is extended by what is given
        (`action="append"`); any other default is replaced. Two patches may declare the same
        option (an SGLang and a vLLM whitelist both taking --model-type): it is parsed once and
        reaches both.
    options_for_target(model_type: str | None, architecture: str | None) -> dict
        The options (by dest) this patch needs so that a target with that config.json
        `model_type` / architecture is served; {} when its defaults already serve it. Doctor
        calls it to fix a failing check without knowing any patch's options, and prints them
        with `compat.patching.option_flags` (e.g. `--model-type glm4_moe`).

The registry fills itself: `all_patches(engine)` imports every module of the engine's folder
(compat/core/registry.py; the pyupgrade `_plugins/` pattern), so adding a patch is adding a file, and its
before/after test, tests/patches/test_<engine>_<name>.py. Modules whose name starts with `_` are
helpers, not patches.

`catalog(engine)` is `all_patches(engine)` for a process that needs what the patches say, not their code (a warm
doctor: the patched overlays' answers are in the facts cache): their fields, their options' spellings and what
`options_for_target` answers, kept in the facts cache keyed by the patches' code, so libcst (half a second) is not
imported; a catalog patch's module is imported when its code is first used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from compat.core.errors import RefusedError
from compat.core.registry import FUNCTION, Contract, ContractError, Field, Folder, Rule
from compat import engines
from compat.core.tree import EngineTree

CONTRACT = Contract("patch", (
    Field("ID", str, doc='what --select / --skip and the record use, e.g. "vllm-eagle3-whitelist"'),
    Field("DESCRIPTION", str, doc="one line"),
    Field("WHY", (tuple, list), doc="links: the upstream issue / PR, the research note"),
    Field("ENGINE", str, doc='"vllm" | "sglang": the folder it sits in'),
    Field("VERSIONS", SpecifierSet, doc="the releases the patch is offered for"),
    Field("OPTIONS", dict, default={}, doc="the option values it uses, with their defaults"),
    Field("REQUIRES", (tuple, list), default=(), doc="ids of patches whose fix this one builds on"),
    Field("ORDER", int, default=50, doc="where it applies among its engine's patches (lower first)"),
    Field("FIXES_ERRORS", tuple, default=(), doc="the engine's messages (fragments) of the failures it fixes"),
    Field("TARGET_CLASSES", tuple, default=(), doc="the target model classes it makes servable (): any target)"),
    Field("find_files", FUNCTION, doc="find_files(tree) -> {role: relpath}"),
    Field("has_fix", FUNCTION, doc="has_fix(role, source, options) -> bool"),
    Field("transform", FUNCTION, doc="transform(role, source, options) -> str"),
    Field("add_args", FUNCTION, default=None, doc="add_args(group): its command-line options"),
    Field("options_for_target", FUNCTION, default=None,
          doc="options_for_target(model_type, architecture) -> dict: the options a target needs"),
), key="ID")


class FileNotAsExpected(RefusedError):
    """A file a patch edits does not look like the release's own (hand edit, fork, partial fix)."""

    def __init__(self, relpath: str, reason: str):
        self.relpath = relpath
        self.reason = reason
        super().__init__(
            f"{relpath}: {reason}",
            hint="the file is not what this patch expects (edited by hand? a fork?); nothing was changed. "
            "Inspect it, reinstall the engine, or pass --force to apply where the patch still finds its anchors",
        )


@dataclass(frozen=True)
class Patch:
    id: str
    description: str
    why: tuple[str, ...]
    engine: str
    versions: SpecifierSet
    options: dict[str, Any]
    requires: tuple[str, ...]
    module: ModuleType = field(repr=False, compare=False)
    order: int = 50
    fixes_errors: tuple[str, ...] = ()  # the engine's messages of the failures it fixes
    target_classes: tuple[str, ...] = ()  # the target classes it makes servable (): any)
    # a catalog's patch (its module not imported): how its options are spelled, [(dest, flags, nargs, const)]
    spelled: tuple[tuple[str, tuple[str, ...], Any, Any], ...] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_module(cls, module: ModuleType) -> "Patch":
        return cls.from_rule(Rule(module, CONTRACT.read(module)))

    @classmethod
    def from_rule(cls, rule: Rule) -> "Patch":
        return cls(
            id=rule["ID"],
            description=rule["DESCRIPTION"],
            why=tuple(rule["WHY"]),
            engine=rule["ENGINE"],
            versions=rule["VERSIONS"],
            options=dict(rule["OPTIONS"]),
            requires=tuple(rule["REQUIRES"]),
            module=rule.module,
            order=rule["ORDER"],
            fixes_errors=tuple(rule["FIXES_ERRORS"]),
            target_classes=tuple(rule["TARGET_CLASSES"]),
        )

    def fixes(self, error: str) -> bool:
        """Does `error` (an engine's output) show a failure this patch fixes, for a target it serves? A patch for
        some target classes only when the text names one of them (else the text does not say it is the one)."""
        return any(message in error for message in self.fixes_errors) and (
            not self.target_classes or any(name in error for name in self.target_classes))

    def serves(self, target_class: str) -> bool:
        """Is `target_class` one of the targets this patch makes servable?"""
        return target_class in self.target_classes

    def applies_to(self, version: str | None) -> bool:
        """Is `version` (a tree's version, maybe with a local label like +cpu) in VERSIONS?"""
        if not version:
            return False
        try:
            public = Version(version).public
        except InvalidVersion:
            return False
        return self.versions.contains(public, prereleases=True)

    def find_files(self, tree: EngineTree) -> dict[str, str]:
        return self.module.find_files(tree)

    def has_fix(self, role: str, source: str, options: dict[str, Any]) -> bool:
        return self.module.has_fix(role, source, options)

    def transform(self, role: str, source: str, options: dict[str, Any]) -> str:
        return self.module.transform(role, source, options)

    @property
    def takes_options(self) -> bool:
        """Does the patch declare command-line options (an `add_args` hook)?"""
        return callable(getattr(self.module, "add_args", None))

    def add_args(self, group) -> None:
        """Declare the patch's options on an argparse group (nothing when it has none)."""
        if self.takes_options:
            self.module.add_args(group)

    def options_for_target(self, model_type: str | None, architecture: str | None) -> dict[str, Any]:
        """The options this patch needs to serve that target ({}: its defaults do, or it has no options)."""
        if isinstance(self.module, _NotImported):  # what the hook answered, kept with the catalog
            return dict(_targets_answers(self.engine, model_type, architecture)[self.id])
        hook = getattr(self.module, "options_for_target", None)
        return dict(hook(model_type, architecture)) if callable(hook) else {}

    def option_actions(self) -> list[Any]:
        """The argparse actions of the options the patch declares (its `add_args`), [] when none."""
        import argparse

        class Recorder:  # an argument group stand-in that keeps the actions `add_args` declares
            def __init__(self) -> None:
                self.parser = argparse.ArgumentParser(add_help=False)
                self.actions: list[argparse.Action] = []

            def add_argument(self, *flags: str, **kwargs: Any) -> argparse.Action:
                action = self.parser.add_argument(*flags, **kwargs)
                self.actions.append(action)
                return action

        recorder = Recorder()
        self.add_args(recorder)
        return recorder.actions

    def option_spellings(self) -> list[tuple[str, tuple[str, ...], Any, Any]]:
        """(dest, option strings, nargs, const) of each option the patch declares, in order (a catalog's patch: as
        its catalog keeps them, its module not imported)."""
        if self.spelled is not None:
            return list(self.spelled)
        return [(a.dest, tuple(a.option_strings), a.nargs, a.const) for a in self.option_actions()]

    def to_json(self) -> dict:
        return {
            "id": self.id, "description": self.description, "engine": self.engine,
            "versions": str(self.versions), "why": list(self.why), "options": _jsonable(self.options),
        }


def _jsonable(value):
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def _in_its_engine_folder(rule: Rule) -> None:
    folder = rule.module.__name__.split(".")[-2]
    if rule["ENGINE"] != folder:
        raise ContractError("patch", rule.module.__name__, "ENGINE",
                            f"is {rule['ENGINE']!r}, but the patch sits under patches/{folder}/")


_FOLDERS: dict[str, Folder] = {}
_ORDERED: dict[tuple[Rule, ...], list[Patch]] = {}  # per reading of a folder: doctor asks for every release


def all_patches(engine: str) -> list[Patch]:
    """Every patch of `engine`, in the order they apply (a patch after the ones it requires)."""
    package = engines.get(engine).patches  # the folder its unit names (compat/engines/: PATCHES; none: no patch)
    if package is None:
        return []
    folder = _FOLDERS.get(package) or _FOLDERS.setdefault(package, Folder(package, CONTRACT, check=_in_its_engine_folder))
    rules = folder.rules()
    ordered = _ORDERED.get(rules)
    if ordered is None:
        ordered = _ORDERED[rules] = _in_order([Patch.from_rule(rule) for rule in rules])
    return list(ordered)


def _in_order(patches: list[Patch]) -> list[Patch]:
    """By ORDER, each after the patches it REQUIRES (an id no patch of the engine has is no constraint)."""
    known = {p.id for p in patches}
    ordered: list[Patch] = []
    pending = sorted(patches, key=lambda p: p.order)
    while pending:
        ids = {p.id for p in ordered}
        ready = [p for p in pending if all(r in ids or r not in known for r in p.requires)]
        if not ready:
            raise RuntimeError(f"patches with circular REQUIRES: {[p.id for p in pending]}")
        ordered.append(ready[0])
        pending.remove(ready[0])
    return ordered


# -- the catalog: what the patches say, without their code -----------------------------------------------------
class _NotImported(ModuleType):
    """A catalog patch's module, imported (through the registry) when its code is first used."""

    def __init__(self, name: str, engine: str) -> None:
        super().__init__(name)
        self._engine = engine

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        real = self.__dict__.get("_real")
        if real is None:
            real = self.__dict__["_real"] = next(p.module for p in all_patches(self._engine)
                                                 if p.module.__name__ == self.__name__)
        return getattr(real, attribute)


def _tagged(value: Any) -> Any:
    """JSON that keeps tuples apart from lists (an option's default is a tuple, given values a list)."""
    if isinstance(value, tuple):
        return {"tuple": [_tagged(v) for v in value]}
    if isinstance(value, list):
        return [_tagged(v) for v in value]
    if isinstance(value, dict):
        return {"dict": {k: _tagged(v) for k, v in value.items()}}
    return value


def _untagged(value: Any) -> Any:
    if isinstance(value, list):
        return [_untagged(v) for v in value]
    if isinstance(value, dict):
        return tuple(_untagged(v) for v in value["tuple"]) if "tuple" in value else \
            {k: _untagged(v) for k, v in value["dict"].items()}
    return value


def _catalog_place(engine: str) -> tuple[Folder, str] | None:
    """The engine's patch folder and package when a catalog can stand for it: the package's own folder alone (a test
    may add one, whose files the code digest does not cover)."""
    package = engines.get(engine).patches
    if package is None:
        return None
    folder = _FOLDERS.get(package) or _FOLDERS.setdefault(package, Folder(package, CONTRACT, check=_in_its_engine_folder))
    return (folder, package) if len(folder.paths()) == 1 else None


def catalog(engine: str) -> list[Patch]:
    """`all_patches(engine)`, read from the facts cache while this process has not imported the patches (see the
    module's docstring); their modules are imported when their code is first used."""
    from compat import facts

    place = _catalog_place(engine)
    if place is None:
        return all_patches(engine)
    folder, package = place

    def describe() -> list[dict[str, Any]]:
        return [{"id": p.id, "description": p.description, "why": list(p.why), "versions": str(p.versions),
                 "options": _tagged(p.options), "requires": list(p.requires), "module": p.module.__name__,
                 "order": p.order, "fixes_errors": list(p.fixes_errors), "target_classes": list(p.target_classes),
                 "spelled": [[d, list(f), n, _tagged(c)] for d, f, n, c in p.option_spellings()]}
                for p in all_patches(engine)]

    described = facts.code_memo("patch-catalog", {"engine": engine, "patches": folder.names()}, describe,
                                code=("compat.patches",))
    return [Patch(id=d["id"], description=d["description"], why=tuple(d["why"]), engine=engine,
                  versions=SpecifierSet(d["versions"]), options=_untagged(d["options"]), requires=tuple(d["requires"]),
                  module=_NotImported(d["module"], engine), order=d["order"], fixes_errors=tuple(d["fixes_errors"]),
                  target_classes=tuple(d["target_classes"]),
                  spelled=tuple((dest, tuple(flags), nargs, _untagged(const)) for dest, flags, nargs, const in d["spelled"]))
            for d in described]


def _targets_answers(engine: str, model_type: str | None, architecture: str | None) -> dict[str, dict[str, Any]]:
    """{patch id: what its options_for_target answers for this target}, kept in the facts cache like the catalog."""
    from compat import facts

    place = _catalog_place(engine)
    inputs = {"engine": engine, "model_type": model_type, "architecture": architecture,
              "patches": place[0].names() if place else None}
    answers = facts.code_memo("patch-targets", inputs, lambda: {
        p.id: _tagged(p.options_for_target(model_type, architecture)) for p in all_patches(engine)},
        code=("compat.patches",))
    return {pid: _untagged(value) for pid, value in answers.items()}
