"""DSpark: the block layout the release reads the drafter in = the one it was trained with (sglang#30982).

DeepSpec trains the anchor slot as a prediction (the block is gamma wide); speculators (slot 0 loss-masked) and
SpecForge (`proposal_hidden = draft_hidden[:, -block_size + 1:]`, specforge/modeling/draft/dspark.py:334) train the
bonus-anchor block, gamma + 1 wide. Read as the other, every slot is one position early: accept length ~1.1 instead
of ~4.05, no error (RedHatAI/GLM-5.2-speculator.dspark). What the drafter was trained with: its `sample_from_anchor`
when written, else its trainer's layout (compat.methods: dspark.py BLOCK). What the release reads: its probe (vLLM
0.25-0.26 `not dspark_bonus_anchor`, then `sample_from_anchor`, default true; SGLang from 0.5.19 `sample_from_anchor`,
default true; 0.5.16-0.5.18 nothing: always gamma wide).
"""

from __future__ import annotations

from typing import Any

from compat.checks import FAIL, PASS, WARN, Ctx, Result, check
from compat.methods import Recognition, get_method


@check("method-block", "block: the release reads the draft block in the layout the drafter was trained with", order=62,
       needs=("methods",), fixes=("convert", "release"), methods=("dspark",))
def method_block(ctx: Ctx) -> Result:
    if not ctx.drafter.present:
        return Result(PASS, "no drafter")
    rule = get_method("dspark").block
    assert rule is not None and rule.anchor_key is not None
    trained, how = _trained(ctx, rule.anchor_key, rule.trainers)
    reads, where = _reads(ctx)
    if trained is None:
        return Result(WARN, f"cannot tell the drafter's block layout ({how}): if trained anchor-first (DeepSpec), "
                      f"{_verdict(ctx, reads, True)}; if trained with the bonus anchor (speculators, SpecForge), "
                      f"{_verdict(ctx, reads, False)}", where)
    read = _read_as(_as_built(ctx), reads)
    said = f"trained {_layout(trained)} ({how}); the release reads it {_layout(read)} ({_reading(reads)})"
    if read == trained:
        return Result(PASS, said, where)
    fixable = any(r.get("key") for r in reads)
    return Result(FAIL, f"silent collapse (accept length ~1, no error; sglang#30982): {said}", where,
                  evidence={"trained_anchor_first": trained, "read_anchor_first": read},
                  remedy=(f"compat convert ckpt {ctx.drafter.path} DST --engine {ctx.engine}=={ctx.report.get('version')} "
                          f"writes {_written(reads, trained)}") if fixable else
                  f"a release that reads {rule.anchor_key} (SGLang >= 0.5.19; vLLM >= 0.25.0)")


def _trained(ctx: Ctx, key: str, trainers: Any) -> tuple[bool | None, str]:
    value = ctx.drafter.config.get(key)
    if isinstance(value, bool):
        return value, f"its {key} = {value}"
    found = ctx.drafter.recognised
    trainer = found.trainer if isinstance(found, Recognition) else "unknown"
    if trainer in trainers:
        return trainers[trainer], f"no {key} written; {trainer} trains that layout"
    return None, f"no {key} written, trainer {trainer}"


def _reads(ctx: Ctx) -> tuple[list[dict], str | None]:
    fact = ctx.fact("methods")
    per = (fact.get("methods") or {}).get("dspark") or {}
    reads = [r for r in ((per.get("block") or {}).get("reads") or []) if r.get("key") in ("sample_from_anchor", "dspark_bonus_anchor")]
    if not per:
        reads = list((fact.get("block") or {}).get("DSPARK") or [])
    return reads, (reads[0].get("location") if reads else fact.get("location"))


def _as_built(ctx: Ctx) -> dict:
    """A speculators config as the release translates it: a key it leaves out takes the translator's default
    (vLLM's update_dspark: sample_from_anchor False since vllm#48639)."""
    config = dict(ctx.drafter.config)
    kind = config.get("speculators_model_type")
    rule = (ctx.fact("methods").get("speculators_types") or {}).get(kind) or {}
    for key, value in (rule.get("defaults") or {}).items():
        config.setdefault(key, value)
    config.update(rule.get("sets") or {})
    return config


def _read_as(config: dict, reads: list[dict]) -> bool:
    """Anchor-first or not, as the release reads this config (no key read: anchor-first, DSpark's own layout)."""
    for read in reads:
        value = config.get(read["key"], read.get("default"))
        if isinstance(value, bool):
            return (not value) if read.get("negated") else value
    return True


def _reading(reads: list[dict]) -> str:
    if not reads:
        return "it reads no layout key"
    read = reads[0]
    return f"{'not ' if read.get('negated') else ''}{read['key']}, default {read.get('default')!r}"


def _verdict(ctx: Ctx, reads: list[dict], trained: bool) -> str:
    return "it matches" if _read_as(_as_built(ctx), reads) == trained else "it is read one slot early"


def _written(reads: list[dict], trained: bool) -> str:
    read = reads[0]
    value = (not trained) if read.get("negated") else trained
    return f"{read['key']}: {str(value).lower()} into config.json"


def _layout(anchor_first: bool) -> str:
    return "anchor-first (gamma wide)" if anchor_first else "with the bonus anchor (gamma + 1 wide)"
