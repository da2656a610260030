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

from compat.block_drafters import layout_reads, read_layout, reads_by_runner, trained_layout
from compat.checks import FAIL, PASS, WARN, Ctx, LaterRelease, Result, check


@check("method-block", "block: the release reads the draft block in the layout the drafter was trained with", order=62,
       needs=("methods",), fixes=("convert", "release"), methods=("dspark",))
def method_block(ctx: Ctx) -> Result:
    if not ctx.drafter.present:
        return Result(PASS, "no drafter")
    trained, how = trained_layout(ctx.drafter.config, ctx.drafter.recognised)
    reads, where = layout_reads(ctx.report)
    if trained is None:
        read = read_layout(ctx.report, ctx.drafter.config)
        return Result(WARN, f"cannot tell the drafter's block layout ({how}): if trained anchor-first (DeepSpec), "
                      f"{_verdict(read, True)}; if trained with the bonus anchor (speculators, SpecForge), "
                      f"{_verdict(read, False)}", where)
    read = read_layout(ctx.report, ctx.drafter.config)
    said = f"trained {_layout(trained)} ({how}); the release reads it {_layout(read)} ({_reading(reads)})"
    if read == trained:
        return Result(PASS, said, where)
    return Result(FAIL, f"silent collapse (accept length ~1, no error; sglang#30982): {said}", where,
                  evidence={"trained_anchor_first": trained, "read_anchor_first": read},
                  release=None if reads else LaterRelease(_first_reading(ctx)),
                  remedy=None if reads else "a release that reads sample_from_anchor (SGLang >= 0.5.19, vLLM >= 0.25.0)")


def _first_reading(ctx: Ctx) -> str | None:
    """SGLang reads the DSpark block key from 0.5.19 (the matrix test checks it on every release)."""
    from packaging.version import Version

    version = ctx.version
    return "0.5.19" if version is not None and version < Version("0.5.19") and not reads_by_runner(ctx.report) else None


def _reading(reads: list[dict]) -> str:
    if not reads:
        return "it reads no layout key"
    read = reads[0]
    return f"{'not ' if read.get('negated') else ''}{read['key']}, default {read.get('default')!r}"


def _verdict(read: bool, trained: bool) -> str:
    return "it matches" if read == trained else "it is read one slot early"


def _layout(anchor_first: bool) -> str:
    return "anchor-first (gamma wide)" if anchor_first else "with the bonus anchor (gamma + 1 wide)"
