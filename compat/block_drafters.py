"""Block drafters (DFlash, DSpark): the target layers one was trained on and the ones a release feeds it, the block
layout it was trained with and the one a release reads, and the config that makes them agree. Doctor's method checks
(layer ids, block) and `compat convert ckpt` (compat/convert/blocks.py) read them here, once.

Ids are capture-before (the residual stream entering layer i, HF hidden_states[i]).

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
from compat.checkpoints import RECORD_KEY
from compat.methods import CAPTURE_BEFORE, Recognition, Unrecognised, get_method, speculators_type
from compat.target import Target


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


def trained(config: dict[str, Any], family: str, target_layers: int | None) -> Trained:
    record = config.get(RECORD_KEY)
    recorded = ((record.get("layer_ids") or {}).get("capture_before")) if isinstance(record, dict) else None
    if isinstance(recorded, list) and aux_layers.is_id_list(recorded):
        return Trained(list(recorded), f"compat convert's record: trained on capture-before {recorded}")
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
    n, layers = target_layers, config.get("num_hidden_layers")
    if isinstance(n, int) and isinstance(layers, int) and layers > 0:
        ids = default_ids(config.get("num_target_layers") or n, layers)
        return Trained([i + 1 for i in ids], f"no ids written: the trainers' default for {layers} draft layers "
                       f"{ids} (output-of)")
    return Trained(None, "no ids written and no layer counts to build the trainers' default from")


def _fact(report: dict[str, Any], key: str) -> dict[str, Any]:
    value = report.get(key)
    return value if isinstance(value, dict) else {}


def translated(report: dict[str, Any], drafter_config: dict[str, Any]) -> dict[str, Any]:
    """The drafter config as the release builds it: a speculators config through its `@register_speculator` maps."""
    config = dict(drafter_config)
    kind = speculators_type(config)
    maps = (((_fact(report, "methods").get("speculators_types") or {}).get(kind) or {}).get("layer_ids")) if kind else None
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


def reads_by_runner(report: dict[str, Any]) -> bool:
    """vLLM's shape: a layer-id reader per model runner (SGLang's: the target class's block hook)."""
    return _fact(report, "aux_layer_ids").get("runners") is not None and "block_targets" not in report


def fed(report: dict[str, Any], config: dict[str, Any], target: Target, member: str | None) -> list[aux_layers.Feed]:
    """What the release feeds, per reader (vLLM: per model runner; SGLang: the target class)."""
    n = target.num_hidden_layers or 0
    if reads_by_runner(report):
        return aux_layers.fed_layers(report, translated(report, config), n, target.architecture)
    return [_sglang(report, config, target, member, n)]


def hook(report: dict[str, Any], target: Target, member: str | None) -> dict[str, Any] | None:
    """The target class's DFlash/DSpark capture hook in an SGLang release (its offset), or None."""
    found = report.get("block_targets")
    targets: dict[str, Any] = found if isinstance(found, dict) else {}
    # the method's own hook wins over DFlash's (DSpark falls back to set_dflash_layers_to_capture)
    classes = {e.get("class"): e for e in (targets.get("DFLASH") or []) + (targets.get(member or "") or [])}
    return classes.get(target.architecture)


def _sglang(report: dict[str, Any], config: dict[str, Any], target: Target, member: str | None, n: int) -> aux_layers.Feed:
    entry = hook(report, target, member)
    if entry is None:
        return aux_layers.Feed("target", None, f"{target.architecture} has no {member} capture hook in this release")
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


# -- the block layout (DSpark: sglang#30982) -----------------------------------------------------------------
ANCHOR_KEYS = ("sample_from_anchor", "dspark_bonus_anchor")


def trained_layout(config: dict[str, Any], found: Recognition | Unrecognised | None) -> tuple[bool | None, str]:
    """Anchor-first (True) or the bonus-anchor block (False) as the drafter was trained; None: nothing says."""
    rule = get_method("dspark").block
    assert rule is not None and rule.anchor_key is not None
    record = config.get(RECORD_KEY)
    recorded = (record.get("block") or {}).get("trained_anchor_first") if isinstance(record, dict) else None
    if isinstance(recorded, bool):
        return recorded, "compat convert's record"
    value = config.get(rule.anchor_key)
    if isinstance(value, bool):
        return value, f"its {rule.anchor_key} = {value}"
    trainer = found.trainer if isinstance(found, Recognition) else "unknown"
    if trainer in rule.trainers:
        return rule.trainers[trainer], f"no {rule.anchor_key} written; {trainer} trains that layout"
    return None, f"no {rule.anchor_key} written, trainer {trainer}"


def layout_reads(report: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """The anchor keys the release reads for DSpark (with defaults, negation) and where."""
    fact = _fact(report, "methods")
    per = (fact.get("methods") or {}).get("dspark") or {}
    reads = [r for r in ((per.get("block") or {}).get("reads") or []) if r.get("key") in ANCHOR_KEYS]
    if not per:
        reads = list((fact.get("block") or {}).get("DSPARK") or [])
    return reads, (reads[0].get("location") if reads else fact.get("location"))


def as_built(report: dict[str, Any], drafter_config: dict[str, Any]) -> dict[str, Any]:
    """A speculators config as the release translates it: a key it leaves out takes the translator's default
    (vLLM's update_dspark: sample_from_anchor False since vllm#48639; 0.25.0 sets dspark_bonus_anchor)."""
    config = dict(drafter_config)
    rule = (_fact(report, "methods").get("speculators_types") or {}).get(config.get("speculators_model_type")) or {}
    for key, value in (rule.get("defaults") or {}).items():
        config.setdefault(key, value)
    config.update(rule.get("sets") or {})
    return config


def read_layout(report: dict[str, Any], drafter_config: dict[str, Any]) -> bool:
    """Anchor-first or not, as the release reads this config (no key read: anchor-first, DSpark's own layout)."""
    config = as_built(report, drafter_config)
    for read in layout_reads(report)[0]:
        value = config.get(read["key"], read.get("default"))
        if isinstance(value, bool):
            return (not value) if read.get("negated") else value
    return True


# -- the config that makes them agree (compat convert ckpt) -----------------------------------------------------
@dataclass(frozen=True)
class Rewrite:
    config: dict[str, Any]  # config.json as written
    written: dict[str, Any]  # key -> value changed
    why: list[str]  # per change, in words
    record: dict[str, Any]  # layer_ids and block, for compat_convert.json


class CannotRewrite(ValueError):
    """No key this release reads can say what the drafter was trained with (the reason, in words)."""


def rewrite(report: dict[str, Any], drafter_config: dict[str, Any], found: Recognition | Unrecognised | None,
            target: Target, member: str | None) -> Rewrite:
    """drafter_config rewritten so that the release feeds the layers it was trained on and reads its block in the
    layout it was trained with; raises CannotRewrite."""
    family = found.family if isinstance(found, Recognition) else "dflash"
    config = {k: v for k, v in drafter_config.items() if k != RECORD_KEY}
    written: dict[str, Any] = {}
    why: list[str] = []
    wanted = trained(drafter_config, family, target.num_hidden_layers)
    if wanted.ids is None:
        raise CannotRewrite(f"which layers the drafter was trained on: {wanted.how}")
    if any(f.ids != wanted.ids for f in fed(report, config, target, member)):
        _write_ids(report, config, target, member, wanted.ids, written, why)
    if any(f.ids != wanted.ids for f in fed(report, config, target, member)):
        raise CannotRewrite(f"no key this release reads feeds the layers the drafter was trained on ({wanted.ids})")
    record: dict[str, Any] = {"layer_ids": {"capture_before": wanted.ids, "from": wanted.how, "written": dict(written)}}
    if family == "dspark":
        layout, how = trained_layout(drafter_config, found)
        reads = layout_reads(report)[0]
        if layout is None:
            raise CannotRewrite(f"the block layout the drafter was trained with ({how})")
        if read_layout(report, config) != layout:
            if not reads:
                raise CannotRewrite("this release reads no block layout key: it always reads the block anchor-first")
            key = reads[0]["key"]
            config[key] = (not layout) if reads[0].get("negated") else layout
            written[key] = config[key]
            why.append(f"{key}: {config[key]}: the drafter was trained {'anchor-first' if layout else 'with the bonus anchor'} "
                       f"({how}); the release read it the other way (sglang#30982)")
        record["block"] = {"trained_anchor_first": layout, "from": how, "written": {k: written[k] for k in ANCHOR_KEYS if k in written}}
    return Rewrite(config, written, why, record)


def _write_ids(report: dict[str, Any], config: dict[str, Any], target: Target, member: str | None, ids: list[int],
               written: dict[str, Any], why: list[str]) -> None:
    if reads_by_runner(report):
        # vLLM: every runner reads the top-level EAGLE key first, as is (eagle3_utils.py; the V1 runner's reader)
        config["eagle_aux_hidden_state_layer_ids"] = ids
        written["eagle_aux_hidden_state_layer_ids"] = ids
        why.append(f"eagle_aux_hidden_state_layer_ids = {ids}: the key every runner of this release reads first, as is")
        return
    entry = hook(report, target, member)
    offset = entry.get("layer_id_offset") if entry else None
    if not isinstance(offset, int):
        return
    shifted = [i - offset for i in ids]
    block = config.get("dflash_config")
    if isinstance(block, dict) or not isinstance(config.get("target_layer_ids"), list):
        config["dflash_config"] = {**(block if isinstance(block, dict) else {}), "target_layer_ids": shifted}
        written["dflash_config.target_layer_ids"] = shifted
    else:
        config["target_layer_ids"] = shifted
        written["target_layer_ids"] = shifted
    why.append(f"target layer ids {shifted}: {target.architecture} captures before id + {offset} ({entry.get('location') if entry else ''})")


def release_member(report: dict[str, Any], family: str) -> str | None:
    """The name the release runs the family by (its first name the release accepts): SGLang's DSPARK picks its hook."""
    fact = _fact(report, "methods")
    accepted = fact.get("accepted") or [n.get("name") for n in fact.get("names") or [] if isinstance(n, dict)]
    return next((n.name for n in get_method(family).engine_names(str(report.get("engine"))) if n.name in accepted), None)
