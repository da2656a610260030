"""The target layers a DFlash or DSpark drafter was trained on, and the ones a release feeds it (capture-before ids:
the residual stream entering layer i, HF hidden_states[i]). Shared by the method-layer-ids check and the conversion
that rewrites them (compat/convert/blocks.py).

Trained: the first key a trainer writes (compat.methods: dflash.py / dspark.py LAYER_IDS, each in its trainer's
convention); none written: the trainers' default, `build_target_layer_ids(n, draft_layers)` of z-lab's dflash
(dflash/model.py:27-36), SpecForge (specforge/modeling/draft/dflash.py:271-281) and SGLang (dflash_utils.py:348),
output-of. Fed: vLLM's layer-id reader (the aux_layer_ids fact: each key with its offset, the first set wins), after
its speculators translation (`aux_hidden_state_layer_ids` -> target ids i - 1); SGLang: the DFlash ids, or the
dense DSpark ids, through the target class's `set_dflash_layers_to_capture` offset (the block_targets fact).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compat import aux_layers
from compat.checks._context import Ctx
from compat.methods import CAPTURE_BEFORE, get_method, speculators_type


@dataclass(frozen=True)
class Trained:
    ids: list[int] | None  # capture-before; None: cannot tell
    how: str  # in words: the key and its convention, or the default


def default_ids(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """The trainers' default DFlash ids (output-of), as z-lab's dflash builds them."""
    if num_draft_layers <= 1:
        return [num_target_layers // 2]
    start, end = 1, num_target_layers - 3
    return [int(round(start + (i * (end - start)) / (num_draft_layers - 1))) for i in range(num_draft_layers)]


def trained(ctx: Ctx, family: str) -> Trained:
    config = ctx.drafter.config
    method = get_method(family)
    if speculators_type(config) in ("dflash", "dflash2", "dspark"):
        key = next(k for k in method.layer_ids if k.key == "aux_hidden_state_layer_ids")
        ids = key.value(config)
        return Trained(ids, f"aux_hidden_state_layer_ids = {ids} (speculators: capture-before)")
    for key in method.layer_ids:
        if key.key == "aux_hidden_state_layer_ids":
            continue
        ids = key.value(config)
        if ids is not None:
            return Trained(key.capture_before(config), f"{key.key} = {ids} ({key.convention}: {', '.join(key.writers)})")
    eagle = config.get("eagle_aux_hidden_state_layer_ids")
    if isinstance(eagle, list) and aux_layers.is_id_list(eagle):
        return Trained(list(eagle), f"eagle_aux_hidden_state_layer_ids = {eagle} ({CAPTURE_BEFORE})")
    n, layers = ctx.target.num_hidden_layers, config.get("num_hidden_layers")
    if isinstance(n, int) and isinstance(layers, int) and layers > 0:
        ids = default_ids(config.get("num_target_layers") or n, layers)
        return Trained([i + 1 for i in ids], f"no ids written: the trainers' default for {layers} draft layers "
                       f"{ids} (output-of)")
    return Trained(None, "no ids written and no layer counts to build the trainers' default from")


def translated(ctx: Ctx) -> dict[str, Any]:
    """The drafter config as the release builds it: a speculators config through its `@register_speculator` maps."""
    config = dict(ctx.drafter.config)
    kind = speculators_type(config)
    maps = (((ctx.fact("methods").get("speculators_types") or {}).get(kind) or {}).get("layer_ids")) if kind else None
    for rule in maps or []:
        source = config.get(str(rule.get("from")))
        if not isinstance(source, list) or not aux_layers.is_id_list(source):
            continue
        ids = [i + int(rule.get("offset") or 0) for i in source]
        where, _, leaf = str(rule.get("writes")).rpartition(".")
        if where:
            config[where] = {**(config.get(where) or {}), leaf: ids}
        else:
            config[leaf] = ids
    return config


def fed(ctx: Ctx, member: str | None) -> list[aux_layers.Feed]:
    """What the release feeds, per reader (vLLM: per model runner; SGLang: the target class)."""
    n = ctx.target.num_hidden_layers or 0
    if ctx.fact("aux_layer_ids").get("runners") is not None and "block_targets" not in ctx.report:
        return aux_layers.fed_layers(ctx.report, translated(ctx), n, ctx.target.architecture)
    return [_sglang(ctx, member, n)]


def _sglang(ctx: Ctx, member: str | None, n: int) -> aux_layers.Feed:
    found = ctx.report.get("block_targets")
    targets: dict[str, Any] = found if isinstance(found, dict) else {}
    classes = {e.get("class"): e for e in (targets.get(member or "") or targets.get("DFLASH") or [])}
    entry = classes.get(ctx.target.architecture)
    if entry is None:
        return aux_layers.Feed("target", None, f"{ctx.target.architecture} has no {member} capture hook in this release")
    config = ctx.drafter.config
    block = config.get("dflash_config")
    nested: dict[str, Any] = block if isinstance(block, dict) else {}
    ids = nested.get("target_layer_ids") or config.get("target_layer_ids")
    how = "dflash_config.target_layer_ids" if nested.get("target_layer_ids") else "target_layer_ids"
    if not isinstance(ids, list) or not aux_layers.is_id_list(ids):
        layers = config.get("num_hidden_layers")
        if not isinstance(layers, int):
            return aux_layers.Feed("target", None, "no ids and no draft layer count")
        ids, how = default_ids(n, layers), "the default build_target_layer_ids"
    offset = entry.get("layer_id_offset")
    if not isinstance(offset, int):
        return aux_layers.Feed("target", None, f"{how}: the offset of {entry.get('class')} is not understood ({offset!r})")
    return aux_layers.Feed("target", [i + offset for i in ids], f"{how} + {offset} ({entry.get('class')}, {entry.get('location')})")
