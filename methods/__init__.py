"""Speculative-decoding methods: one family per file, each declaring what compat knows of it.

A method file (any module here whose name does not start with `_`) defines the fields of `CONTRACT` below,
checked when it is imported (compat/core/registry.py, the pyupgrade `_plugins/` pattern):

- `FAMILY` (compat's id, which `doctor --method` takes too), `TITLE`, `DESCRIPTION`;
- the names each engine gives the family are the engine's (`METHOD_NAMES` in compat/engines/<name>.py: family ->
  `Name`s with their version gates in plain sight, `Name("DFLASH", since="0.5.11")`); `Method.names` gathers them;
- `TAKES_DRAFTER`: whether a separate drafter checkpoint is launched with it (n-gram, suffix, UNO and MTP heads
  in the target take none);
- `recognise(config, tensors) -> Recognition | None`: was this drafter (its config.json and tensor headers)
  trained for the family, by which trainer, from which keys; `KEYS_READ` names what it reads, so a drafter no
  family recognises is answered with the keys that were read; `ARCHITECTURES` (a regex) groups an engine's
  registered drafter classes by family where the release does not declare it;
- `LAYER_IDS`: where each trainer writes the target layers and in which convention (`LayerIdKey`);
- `BLOCK`: the block rule of a block drafter (`BlockRule`: the width key, the anchor key, each trainer's layout);
- `TARGET_NEEDS`, `VENV`: what the target must implement, what the serving venv needs beyond the engine;
- `THREADS`: the upstream threads the file's facts come from; `ORDER`: recognition order (specific first).

What a release does with a name (whether it accepts it, which key it reads at which offset, which classes
load the drafter, how wide the block it verifies is) is read from the release by the probes (the `methods`
fact), never declared here. The types are in _unit.py, re-exported from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from compat.core.registry import FUNCTION, Contract, Field, Folder

from ._unit import (  # the vocabulary method files use, re-exported: import these from compat.methods
    CAPTURE_BEFORE, OUTPUT_OF, TRAINERS, BlockRule, LayerIdKey, Name, Recognition, VenvPackage, architectures,
    speculators_type,
)

__all__ = [
    "CAPTURE_BEFORE", "OUTPUT_OF", "TRAINERS", "BlockRule", "LayerIdKey", "Name", "Recognition", "VenvPackage",
    "architectures", "speculators_type", "CONTRACT", "Method", "NameMatch", "Unrecognised", "all_methods", "get_method",
    "find_name", "families", "recognise_drafter", "names_for", "FamilyMatch", "family_of", "takes_drafter",
]

CONTRACT = Contract("method", (
    Field("FAMILY", str, doc="compat's id of the family (doctor --method takes it too)"),
    Field("TITLE", str, doc="the family as people name it"),
    Field("DESCRIPTION", str, doc="one line"),
    Field("TAKES_DRAFTER", bool, doc="a drafter checkpoint is launched with it"),
    Field("recognise", FUNCTION, doc="recognise(config, tensors) -> Recognition | None"),
    Field("KEYS_READ", tuple, default=(), doc="the config keys and tensor names recognise reads"),
    Field("ARCHITECTURES", str, default="", doc="a regex over registered drafter architectures: how compat groups an "
          "engine's drafter classes by family where the release's code does not say (0.34's declared config classes do)"),
    Field("LAYER_IDS", tuple, default=(), doc="tuple of LayerIdKey: where trainers write the layers, in which convention"),
    Field("BLOCK", (BlockRule, type(None)), default=None, doc="the block rule of a block drafter"),
    Field("TARGET_NEEDS", str, default="", doc="what the target must implement, in words"),
    Field("VENV", tuple, default=(), doc="tuple of VenvPackage: what the serving venv needs beyond the engine"),
    Field("THREADS", tuple, default=(), doc="the upstream threads its facts come from"),
    Field("ORDER", int, default=50, doc="recognition order: the more specific family first"),
), key="FAMILY")
FOLDER = Folder(__name__, CONTRACT)


@dataclass(frozen=True, repr=False)
class Method:
    """One method family, as its file declares it (the contract's fields, typed)."""

    family: str
    title: str
    description: str
    takes_drafter: bool
    recognise: Any  # (config, tensors) -> Recognition | None
    keys_read: tuple[str, ...]
    architectures: str
    layer_ids: tuple[LayerIdKey, ...]
    block: BlockRule | None
    target_needs: str
    venv: tuple[VenvPackage, ...]
    threads: tuple[str, ...]
    order: int

    def __repr__(self) -> str:
        return f"Method({self.family!r})"

    @property
    def names(self) -> Mapping[str, tuple[Name, ...]]:
        """engine -> its names for the family (each engine unit's METHOD_NAMES), for the engines that have one."""
        from compat import engines

        return {e.name: e.method_names[self.family] for e in engines.all_engines() if self.family in e.method_names}

    def engine_names(self, engine: str) -> tuple[Name, ...]:
        from compat import engines

        unit = engines.find(engine)
        return tuple(unit.method_names.get(self.family, ())) if unit is not None else ()

    def accepted(self, engine: str, version: str) -> list[Name]:
        """Its names the release accepts, by their gates (a shared name counts: it is how the family runs)."""
        return [n for n in self.engine_names(engine) if n.accepted_in(version)]


@dataclass(frozen=True)
class NameMatch:
    """A name an engine takes, matched to its family (`exact` False: it matched only with the case folded)."""

    method: Method
    name: Name
    exact: bool = True


@dataclass(frozen=True)
class Unrecognised:
    """No family recognises the drafter: what was read, in words."""

    keys_read: tuple[str, ...]
    seen: str  # what the config does say (architectures, model_type), in words


def _method(values: dict[str, Any]) -> Method:
    return Method(values["FAMILY"], values["TITLE"], values["DESCRIPTION"], values["TAKES_DRAFTER"],
                  values["recognise"], values["KEYS_READ"], values["ARCHITECTURES"], values["LAYER_IDS"], values["BLOCK"], values["TARGET_NEEDS"],
                  values["VENV"], values["THREADS"], values["ORDER"])


_BUILT: dict[int, tuple[Method, ...]] = {}


def all_methods() -> tuple[Method, ...]:
    """Every method family, in recognition order (then by id)."""
    rules = FOLDER.rules()
    built = _BUILT.get(id(rules))
    if built is None:
        built = tuple(sorted((_method(rule.values) for rule in rules), key=lambda m: (m.order, m.family)))
        _BUILT.clear()
        _BUILT[id(rules)] = built
    return built


def families() -> list[str]:
    return [m.family for m in all_methods()]


def get_method(family: str) -> Method:
    for method in all_methods():
        if method.family == family:
            return method
    raise KeyError(family)


def find_name(engine: str, name: str) -> NameMatch | None:
    """The family an engine's method name belongs to (an exact match first, then with the case folded)."""
    folded: NameMatch | None = None
    for method in all_methods():
        for entry in method.engine_names(engine):
            if entry.shared:
                continue
            if entry.name == name:
                return NameMatch(method, entry)
            if folded is None and entry.name.lower() == name.lower():
                folded = NameMatch(method, entry, exact=False)
    return folded


@dataclass(frozen=True)
class FamilyMatch:
    """A method name matched to its family, and how: "engine" (a name this engine gives it), "family" (compat's id,
    `doctor --method draft_model`), or "other" (another engine's name for it: SGLang's STANDALONE asked of vLLM)."""

    method: Method
    how: str
    name: Name | None = None  # the engine's own Name, when `how` is "engine"
    other_engine: str | None = None  # whose name it is, when `how` is "other"


def family_of(engine: str, name: str) -> FamilyMatch | None:
    """The family a name given to doctor means for `engine`: the engine's own name first (find_name), then compat's id
    of a family, then another engine's name for it (each with the case folded); None: no family has it."""
    own = find_name(engine, name)
    if own is not None:
        return FamilyMatch(own.method, "engine", own.name)
    folded = name.lower()
    for method in all_methods():
        if method.family == folded:
            return FamilyMatch(method, "family")
    for method in all_methods():
        for other, entries in sorted(method.names.items()):
            if other != engine and any(not n.shared and n.name.lower() == folded for n in entries):
                return FamilyMatch(method, "other", other_engine=other)
    return None


def takes_drafter(engine: str, name: str | None) -> bool | None:
    """Whether the method a name means takes a drafter checkpoint (n-gram, suffix, MTP heads take none); None: no
    family has the name."""
    match = family_of(engine, name) if name else None
    return match.method.takes_drafter if match is not None else None


def names_for(engine: str, family: str) -> tuple[Name, ...]:
    return get_method(family).engine_names(engine)


def recognise_drafter(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> Recognition | Unrecognised:
    """The family a drafter was trained for (the first family, in ORDER, whose file recognises it), or what was read.

    A weak recognition (a plain causal LM read as a draft model) loses to any certain one."""
    weak: Recognition | None = None
    for method in all_methods():
        found = method.recognise(config, tensors)
        if found is None:
            continue
        if found.certain:
            return found
        weak = weak or found
    if weak is not None:
        return weak
    keys = tuple(dict.fromkeys(k for m in all_methods() for k in m.keys_read))
    archs = architectures(config)
    seen = f"architectures {archs}" if archs else "no architectures"
    if isinstance(config.get("model_type"), str):
        seen += f", model_type {config['model_type']!r}"
    return Unrecognised(keys, seen)
