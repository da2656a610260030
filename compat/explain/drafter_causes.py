"""Causes of a drafter that does not load, as the releases refuse it: its directory without a config (or not a
directory), a config.json that is not JSON, an architecture the release's registry does not have, a tensor the
drafter class has no parameter for. Recognised by the release's own words and the traceback's passage through the
drafter's code; what the code checked at the raise is said beside (conditions.py)."""

from __future__ import annotations

import re

from compat.explain.analysis import Event
from compat.explain.causes import DRAFTER_WORDS, ERROR, Cause, Release, in_drafter, event_text, convert_fix, doctor_fix
from compat.fix import FlagFix, NoFix

_QUOTED = re.compile(r"'([^']+)'")


def _about_drafter(event: Event, release: Release) -> bool:
    """The speculative config (pydantic names it), the drafter's code (the traceback passes through it), or a drafter's
    architecture the message names (`['EagleQwen2ForCausalLM']`: a paste or a title without its traceback)."""
    if "SpeculativeConfig" in event_text(event) or in_drafter(event, release):
        return True
    names = re.search(r"architectures (\[[^\]]*\])", event_text(event))
    return names is not None and any(word in names.group(1).lower() for word in DRAFTER_WORDS)


def _says(*words: str, drafter: bool = True):
    return lambda e, r: any(w in event_text(e) for w in words) and (not drafter or _about_drafter(e, r))


def _first_quoted(event: Event, after: str) -> str | None:
    text = event_text(event)
    found = _QUOTED.search(text, max(0, text.find(after)))
    return found.group(1) if found else None


def _not_found_cause(event: Event, release: Release) -> str:
    path = _first_quoted(event, "specified")
    return (f"the drafter's \"model\" ({path or 'the path given'}) is neither a local directory holding a config.json "
            "nor a Hugging Face repository id the local cache has: the speculative config cannot read the drafter's "
            "config")


def _not_json_cause(event: Event, release: Release) -> str:
    path = _first_quoted(event, "config file")
    return (f"{path or 'the config.json'} is not valid JSON (cut short, or edited by hand): the release cannot read "
            "the model's config" + (" (the drafter's, by the traceback)" if in_drafter(event, release) else ""))


def _architecture_cause(event: Event, release: Release) -> str:
    names = re.search(r"architectures (\[[^\]]*\])", event_text(event))
    whose = "the drafter's config" if _about_drafter(event, release) else "the config"
    return (f"{whose} names architectures {names.group(1) if names else ''} that {release.engine} "
            f"{release.version or ''} does not register: no model class of this release loads it").replace("  ", " ")


def _tensor_cause(event: Event, release: Release) -> str:
    name = _first_quoted(event, "named")
    return (f"the drafter holds a tensor ({name or '?'}) the release's drafter class has no parameter for: its tensor "
            "names are another layout's (or another model's)")


DRAFTER_CAUSES: tuple[Cause, ...] = (
    Cause("drafter-not-found", ERROR, _says("Invalid repository ID or local directory", "does not appear to have a file "
                                            "named config.json", "Can't load the configuration of"),
          _not_found_cause,
          lambda e, r: FlagFix("point \"model\" in --speculative-config at the directory that holds the drafter's "
                               "config.json and its weights")),
    Cause("config-not-json", ERROR, _says("is not a valid JSON file", drafter=False), _not_json_cause,
          lambda e, r: NoFix("write the config.json whole again (the trainer's export, or compat convert ckpt from the "
                             "checkpoint)")),
    Cause("drafter-architecture-unknown", ERROR, _says("are not supported for now"), _architecture_cause,
          lambda e, r: convert_fix(r, "write the drafter with an architecture this release loads")),
    Cause("drafter-tensor-unknown", ERROR, _says("There is no module or parameter named"), _tensor_cause,
          lambda e, r: convert_fix(r, "write the drafter's tensors under the names this release loads")),
)

__all__ = ["DRAFTER_CAUSES", "doctor_fix"]
