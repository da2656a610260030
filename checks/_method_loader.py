"""Which class the release builds for the method in play, from which checkpoint, and what its loader does with it.

The class is found as the release finds it: a drafter's `architectures[0]` (after vLLM's EAGLEConfig rename for
the method, or the release's translation of a speculators checkpoint), a draft model's own architecture, or for MTP
heads the target's architecture as the release rewrites it (vLLM's `hf_config_override`, SGLang's NextN rewrite in
ModelConfig); the release's class loader (Ctx.class_loader) says how it loads. The checkpoint is the drafter's tensor
headers, or for MTP heads the target's own index (no weight is read). `judge` replays the loader on every name
(compat.probes.drafter_replay.land) and finds the modules no name lands in (drafter_coverage.missing_modules); what
the release does about those is its own: a `raise` in the class (`completeness`), vLLM's loader refusing parameters
never loaded (the weights_check fact: only for a model that is not quantized and whose `load_weights` returns the
names), else nothing: they keep their initial values.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from compat.checks._context import Ctx
from compat.checks._drafter import loaded_config, target_vocab
from compat.checks._method import release_name
from compat.probes.drafter_coverage import missing_modules, representatives
from compat.probes.drafter_replay import land
from compat.probes.name_eval import Unsupported, evaluate, refusal
from compat.target import weight_names

SHARED = ("embed_tokens", "lm_head")  # what a drafter takes from the target when it has none of its own
OWN_HEADS = ("draft_model", "medusa")  # the families whose model is not given the target's embedding and head


@dataclass
class Source:
    """The class to load with, the checkpoint it loads and the config it is built from."""

    architecture: str
    how: str  # how the release came to this class, in words
    location: str | None
    config: dict[str, Any]
    names: set[str]
    names_from: str
    candidates: tuple[str, ...] = ()  # other classes the release may pick instead (a rewrite with an `if`)
    quantized: bool = False


@dataclass
class Judgement:
    cls: str
    entry: dict[str, Any]
    refused: tuple[str, str] | None = None  # (message, location) of a prologue assert/raise
    raises: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    unsure: list[str] = field(default_factory=list)
    missing: list[dict[str, Any]] = field(default_factory=list)
    loaded: int = 0
    replayed: int = 0  # the names replayed (a large checkpoint: one per shape and layer)


def source(ctx: Ctx) -> Source | str:
    """The class and checkpoint of the method in play, or why they cannot be told."""
    family = ctx.method.family
    if ctx.drafter.present:
        config = loaded_config(ctx)
        names, names_from = set(ctx.drafter.tensors), f"{ctx.drafter.path} (tensor headers)"
        archs, what = config.get("architectures") or [], "the drafter's"
        model_type = config.get("model_type")
        translated = _speculators_classes(ctx, config)
        if translated is not None:  # vLLM's `@register_speculator` translation names the class itself
            layer = config.get("transformer_layer_config")
            flat = {**config, **(layer if isinstance(layer, dict) else {})}
            return Source(translated[0][0], f"{what} speculators_model_type {config.get('speculators_model_type')!r} as "
                          f"the release's speculators translation names it", translated[1], flat, names, names_from,
                          tuple(translated[0][1:]), _quantized(config))
    elif family == "mtp":  # the heads ship in the target
        target = ctx.target
        config = {**target.config, **target.text_config}
        found = weight_names(target.path)
        if found is None:
            return (f"the target directory {target.path} has no model.safetensors.index.json or model.safetensors to "
                    "read the tensor names from")
        names, names_from = set(found.names), f"{found.source} (names only)"
        archs, what, model_type = [target.architecture] if target.architecture else [], "the target's", target.model_type
    else:
        return "no drafter given"
    if not archs:
        return f"{what} config names no architectures"
    candidates, how, where = _classes(ctx, family, str(archs[0]), model_type if isinstance(model_type, str) else None,
                                      config)
    if not candidates:
        return f"this release maps {what} {archs[0]} to no class for {family} (see method-target)"
    return Source(candidates[0], f"{what} {archs[0]}{how}", where, config, names, names_from, tuple(candidates[1:]),
                  _quantized(config))


def _speculators_classes(ctx: Ctx, config: dict[str, Any]) -> tuple[list[str], str | None] | None:
    """The classes a speculators-format block drafter is translated to (vLLM's `@register_speculator` functions, the
    methods fact), when the release reads that type; an EAGLE-3 one is translated by loaded_config already."""
    kind = config.get("speculators_model_type")
    found = ((ctx.fact("methods").get("speculators_types") or {}).get(kind) or {}) if isinstance(kind, str) else {}
    archs = [str(a) for a in found.get("architectures") or []]
    return (archs, found.get("location")) if archs and kind != "eagle3" else None


def _classes(ctx: Ctx, family: str, arch: str, model_type: str | None,
             config: dict[str, Any]) -> tuple[list[str], str, str | None]:
    """The class names the release may build for `arch` (the first the likeliest), how, and where it says so."""
    from compat.probes.vllm.drafter_architecture_rename import eagle_architecture

    fact = ctx.fact("drafter_architecture_rename")
    how, where = "", None
    if "mtp_override" in fact:  # vLLM hands every draft config to hf_config_override (MTP models, DSpark's Qwen3 name)
        override = fact.get("mtp_override") or {}
        ran = _override(override, config)
        if ran is not None and ran != arch:
            arch, how, where = ran, " as hf_config_override rewrites it (run on its config)", override.get("location")
        elif family == "mtp":
            rule = (override.get("model_types") or {}).get(model_type or "") or (override.get("architectures") or {}).get(arch)
            if rule and rule.get("architectures"):  # an `if` picks the first; its `else` is the plain case
                return [str(a) for a in reversed(rule["architectures"])], " as hf_config_override rewrites it", rule.get("location")
            return ([arch], "", None) if "MTP" in arch or "NextN" in arch else ([], "", None)
        if family == "mtp":
            return [arch], how, where
    name = release_name(ctx, family)
    if "eagle_config" in fact and name is not None:
        renamed = eagle_architecture(fact, name.name, arch)
        if renamed and renamed != arch:
            return [renamed], how + " as EAGLEConfig renames it", (fact.get("eagle_config") or {}).get("location")
    if how:
        return [arch], how, where
    rule = (fact.get("architectures") or {}).get(arch)  # SGLang: ModelConfig's NextN rewrite, whatever the algorithm
    if isinstance(rule, dict) and rule.get("to"):
        return [str(a) for a in rule["to"]], " as ModelConfig rewrites it", rule.get("location")
    if family == "mtp" and "MTP" not in arch and "NextN" not in arch:
        return [], "", None
    return [arch], "", None


def _override(override: dict[str, Any], config: dict[str, Any]) -> str | None:
    """architectures[0] after the release's own hf_config_override, run on the config (None: it cannot be run)."""
    helper = override.get("helper")
    if not helper:
        return None
    try:
        out = evaluate(helper, {}, json.loads(json.dumps(config)))
    except Unsupported:
        return None
    archs = out.get("architectures") if isinstance(out, dict) else None
    return str(archs[0]) if isinstance(archs, list) and archs else None


def _quantized(config: dict[str, Any]) -> bool:
    inner = config.get("text_config")
    text: dict[str, Any] = inner if isinstance(inner, dict) else {}
    return any(isinstance(h.get(k), dict) for h in (config, text) for k in ("quantization_config", "compression_config"))


def judge(ctx: Ctx, src: Source, entry: dict[str, Any]) -> Judgement:
    """The release's class loader replayed on the checkpoint."""
    out = Judgement(str(entry.get("class")), entry)
    prologue = entry.get("prologue")
    if prologue:
        found = refusal(prologue["source"], src.config, prologue["first_line"])
        if found is not None:
            out.refused = (found[0], f"{prologue['relpath']}:{found[1]}")
            return out
    if entry.get("unknown") is None and entry.get("mtp_layers") and ctx.method.family == "mtp":
        out.missing, out.loaded = _mtp_layers_missing(entry["mtp_layers"], src)  # a loader not replayed: where it looks
        return out
    vocab = target_vocab(ctx)
    replayed = representatives(src.names)
    out.replayed = len(replayed)
    fates = {n: land(entry, n, src.config, src.names, vocab) for n in sorted(replayed)}
    for name, fate in fates.items():
        kind = fate["fate"]
        if kind == "raise" and entry.get("unknown") is None:  # the class's rule for unknown names was not read
            out.unsure.append(name)
        elif kind == "raise":
            out.raises.append(_said(name, fate))
        elif kind in ("warn", "skip") and "step" not in fate:
            out.dropped.append(_said(name, fate))
        elif kind == "depends":
            out.unsure.append(name)
        elif kind in ("load", "consume"):
            out.loaded += 1
    shared = () if ctx.method.family in OWN_HEADS else SHARED
    out.missing = missing_modules(entry, fates, src.config, src.names, vocab, shared)
    return out


def _mtp_layers_missing(found: dict[str, Any], src: Source) -> tuple[list[dict[str, Any]], int]:
    """The MTP layers (model.layers.{num_hidden_layers + i} for each declared one) no checkpoint name is under, and
    how many names are under the others."""
    config = src.config
    first = config.get("num_hidden_layers")
    count = next((v for k in ("num_nextn_predict_layers", "mtp_num_hidden_layers")
                  if isinstance(v := config.get(k), int) and not isinstance(v, bool)), 1)
    if not isinstance(first, int):
        return [], 0
    under = {i: [n for n in src.names if n.startswith(f"{found['prefix']}{first + i}.")] for i in range(count)}
    lacking = [first + i for i, got in under.items() if not got]
    missing = [{"module": found["prefix"].rstrip("."), "indices": lacking, "location": found["location"],
                "builds": "the MTP layer the loader selects"}] if lacking else []
    return missing, sum(len(got) for got in under.values())


def _said(name: str, fate: dict[str, Any]) -> str:
    return name if fate.get("name") == name else f"{name} (looked up as {fate.get('name')})"


def on_missing(ctx: Ctx, src: Source, j: Judgement) -> tuple[str, str | None, str]:
    """What the release does about the modules no tensor reaches: ("raise" | "silent", location, words)."""
    stacks = [m for m in j.missing if "indices" in m]
    complete = j.entry.get("completeness")
    if complete and stacks:
        return "raise", complete.get("location"), f"the loader raises: {complete.get('error')}"
    strict = ctx.fact("weights_check")
    returned = (j.entry.get("returns_loaded") or {}).get("returns")
    if strict.get("present") and (returned or not strict.get("needs_returned_names")):
        if src.quantized and strict.get("only_unquantized"):
            return "silent", None, (f"they keep their initial values: the checkpoint is quantized, and this release "
                                    f"refuses parameters never loaded only for unquantized models ({strict.get('location')})")
        said = re.sub(r"\{[^}]*\}", "{" + ", ".join(m["module"] for m in j.missing) + ", ...}", str(strict.get("message")))
        return "raise", strict.get("location"), f"the loader raises: {said}"
    why = ("its load_weights returns no names to compare" if strict.get("present") else
           "this release's loader does not compare what was loaded with the parameters")
    return "silent", (j.entry.get("returns_loaded") or {}).get("location"), (
        f"they keep their initial values, with no error ({why}): the heads draft noise and acceptance collapses")


def module_words(missing: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in missing:
        indices = m.get("indices")
        shown = f"{m['module']}.{{{', '.join(map(str, indices[:6]))}{' ...' if len(indices) > 6 else ''}}}" if indices else m["module"]
        out.append(f"{shown} ({m.get('builds') or 'module'}, {m.get('location')})")
    return out
