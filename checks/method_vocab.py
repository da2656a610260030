"""A draft model shares the target's vocabulary: vLLM builds the draft with the target's tokenizer (0.34.0
speculator_config.py:191-211 `tokenizer=target.tokenizer`), SGLang's STANDALONE likewise, so a draft with another
vocabulary proposes ids that mean other tokens (acceptance near zero, no error) or indexes past its embedding. The
config's vocab_size is compared here; the tokenizer files by the tokenizer check.
"""

from __future__ import annotations

from compat.checks import FAIL, PASS, WARN, Ctx, Result, check


@check("method-vocab", "vocabulary: the draft model's is the target's", order=56, methods=("draft_model",))
def method_vocab(ctx: Ctx) -> Result:
    drafter = ctx.drafter.config.get("vocab_size")
    target = ctx.target.vocab_size
    where = str(ctx.drafter.path / "config.json")
    if not isinstance(drafter, int) or not target:
        return Result(WARN, f"cannot tell: vocab_size drafter {drafter!r}, target {target!r}", where)
    if drafter != target:
        more = " (the draft's embedding is smaller: ids past it fail or wrap)" if drafter < target else ""
        return Result(FAIL, f"vocab_size: draft model {drafter}, target {target}: the draft proposes ids of another "
                      f"vocabulary{more}", where, remedy="a draft model of the target's family (the same tokenizer)")
    return Result(PASS, f"vocab_size {drafter}, the target's", where)
