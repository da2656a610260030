"""The vocab maps: d2t maps the draft vocabulary into the target's; without it (or with the wrong one)
the engine drafts the wrong tokens, acceptance collapses, and nothing says why."""

from __future__ import annotations

from compat.checkpoints import vllm as vllm_layout
from compat.checks import check
from compat.doctor.context import FAIL, PASS, result


@check("vocab-maps", "vocab maps present and consistent with draft_vocab_size and the target vocab", order=50,
       fixes=("convert",))
def vocab_maps(ctx) -> dict:
    cfg, tensors = ctx.drafter.config, ctx.drafter.tensors
    vocab, target_vocab = _int(cfg.get("vocab_size")), ctx.target.vocab_size
    draft_vocab = _int(cfg.get("draft_vocab_size")) or vocab
    lm_head, d2t, t2d = find_tensor(tensors, "lm_head.weight"), find_tensor(tensors, "d2t"), find_tensor(tensors, "t2d")
    problems, facts = [], []
    if target_vocab and vocab and vocab != target_vocab:
        problems.append(f"drafter vocab_size {vocab} != target vocab_size {target_vocab}: d2t offsets and the shared "
                        "embedding index another vocabulary")
    if lm_head and draft_vocab and lm_head[1][0] != draft_vocab:
        problems.append(f"lm_head.weight has {lm_head[1][0]} rows but draft_vocab_size is {draft_vocab}")
    full = target_vocab or vocab
    if draft_vocab and full and draft_vocab < full:
        if d2t is None:
            problems.append(f"draft_vocab_size {draft_vocab} < target vocab {full} but there is no d2t: the engine takes "
                            "draft ids for target ids (drafts the wrong tokens, acceptance collapses, no error)")
        elif d2t[1] != (draft_vocab,):
            problems.append(f"d2t has shape {list(d2t[1])}, expected [{draft_vocab}] (draft_vocab_size)")
        else:
            facts.append(f"d2t [{draft_vocab}] maps the draft vocab into the target's {full}")
        if t2d is not None and t2d[1] != (full,):
            problems.append(f"t2d has shape {list(t2d[1])}, expected [{full}] (the target vocab)")
    elif draft_vocab and full:
        facts.append(f"draft vocab = target vocab ({full}): no map needed")
        if d2t is not None and ctx.engine == "vllm" and ctx.at_least(vllm_layout.FULL_VOCAB_REJECTS_D2T):
            problems.append(f"d2t ships with a full draft vocab: vLLM >= {vllm_layout.FULL_VOCAB_REJECTS_D2T} "
                            "has no draft_id_to_target_id and refuses it")
    return result(FAIL if problems else PASS, "; ".join(problems or facts) or "no vocab facts", None)


def find_tensor(tensors: dict, canonical: str):
    """(name, shape) of the drafter tensor that is `canonical` (with or without a `model.` prefix)."""
    for name, info in tensors.items():
        bare = name[len("model."):] if name.startswith("model.") and not name.startswith("model.lm_head") else name
        if bare == canonical or bare.endswith("." + canonical) and canonical in ("d2t", "t2d"):
            return name, info[1]
    return None


def full_vocab(drafter) -> bool:
    vocab, draft = _int(drafter.config.get("vocab_size")), _int(drafter.config.get("draft_vocab_size"))
    return vocab is not None and (draft is None or draft == vocab)


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
