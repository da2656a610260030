"""The vocab maps, by content: d2t maps the draft vocabulary into the target's; a wrong or missing map
makes the engine draft the wrong tokens, acceptance collapses, and nothing says why.

The rules are compat/vocab_maps.py, the ones `compat convert ckpt` refuses by, so doctor passes no
drafter convert would refuse: d2t offsets non-negative, strictly increasing, within the vocab; t2d a 0/1
mask marking exactly the draft vocabulary, agreeing with d2t; an all-zero d2t refused when the draft
vocab is smaller. Only the two small maps are read.
"""

from __future__ import annotations

from compat.checks import FAIL, PASS, Ctx, Result, check
from compat.checks._drafter import find_tensor, loaded_config, loader_entry
from compat.vocab_maps import vocab_map_problems


@check("vocab-maps", "vocab maps present, consistent and mapping into the target vocab", order=50,
       needs=("drafter loader",), fixes=("convert",))
def vocab_maps(ctx: Ctx) -> Result:
    cfg, tensors = loaded_config(ctx), ctx.drafter.tensors
    vocab, target_vocab = _int(cfg.get("vocab_size")), ctx.target.vocab_size
    draft_vocab = _int(cfg.get("draft_vocab_size")) or vocab
    lm_head = find_tensor(tensors, "lm_head.weight")
    d2t, t2d = ctx.drafter.maps.get("d2t"), ctx.drafter.maps.get("t2d")
    problems = []
    if target_vocab and vocab and vocab != target_vocab:
        problems.append(f"drafter vocab_size {vocab} != target vocab_size {target_vocab}: d2t offsets and the shared "
                        "embedding index another vocabulary")
    if lm_head and draft_vocab and lm_head[1][0] != draft_vocab:
        problems.append(f"lm_head.weight has {lm_head[1][0]} rows but draft_vocab_size is {draft_vocab}")
    problems += [p.message for p in vocab_map_problems(draft_vocab, target_vocab or vocab, d2t, t2d)]
    full = target_vocab or vocab
    _, entry = loader_entry(ctx)
    rule = ((entry or {}).get("vocab_map") or {}).get("d2t") or {}
    if draft_vocab and full and draft_vocab == full and d2t is not None and rule.get("only_when_vocab_differs"):
        problems.append(f"d2t ships with a full draft vocab: this release has a draft_id_to_target_id parameter only when "
                        f"the vocabularies differ and refuses it ({rule.get('parameter_location') or rule.get('location')})")
    if problems:
        return Result(FAIL, "; ".join(problems), rule.get("location"))
    if draft_vocab and full and draft_vocab < full:
        return Result(PASS, f"d2t [{draft_vocab}] maps the draft vocab into the target's {full}, strictly increasing "
                      "and within it" + ("; t2d agrees" if t2d is not None else ""), rule.get("location"))
    return Result(PASS, f"draft vocab = target vocab ({full}): no map needed" if full else "no vocab facts", rule.get("location"))


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
