"""When the drafter ships a tokenizer, it must be the target's: the same vocabulary, the same special token ids.

Engines tokenize with the target's tokenizer and never read the drafter's, so a drafter trained for
another tokenizer loads, runs and proposes ids that mean other tokens: acceptance collapses with no error.
Its own tokenizer files are the evidence. Compared (checks/_tokenizer.py reads them, bounded):
- the vocabulary size (the largest id + 1): another size is another vocabulary;
- the added special tokens: the same token under another id is another vocabulary; one only one side
  has is named;
- the bos/eos/pad ids (generation_config.json, config.json, else tokenizer_config.json's tokens): named
  when they differ (a drafter trained on another chat format stops or pads elsewhere);
- whether the target has a chat template (chat requests need one; the drafter learned chat-formatted text).
"""

from __future__ import annotations

from compat.checks import FAIL, PASS, WARN, Ctx, Result, check
from compat.checks._tokenizer import ROLES, Tokenizer, read_tokenizer

SHOWN = 6  # tokens named per list


@check("tokenizer", "the drafter's tokenizer files match the target's (vocabulary, special token ids, chat template)",
       order=55, methods=("eagle3", "peagle", "eagle", "dflash", "dspark", "draft_model", "medusa"))
def tokenizer(ctx: Ctx) -> Result:
    drafter = read_tokenizer(ctx.drafter.path)
    if not drafter.ships_tokenizer:
        return Result(PASS, "the drafter ships no tokenizer files: the engine tokenizes with the target's", None)
    target = read_tokenizer(ctx.target.path)
    failures, warnings = _compare(drafter, target, ctx.target.vocab_size)
    if not target.chat_template and target.ships_tokenizer:
        warnings.append("the target has no chat template (tokenizer_config.json chat_template, chat_template.jinja): "
                        "chat requests fail or fall back to a default format the drafter was not trained on")
    warnings += [f"drafter: {p}" for p in drafter.problems] + [f"target: {p}" for p in target.problems]
    evidence = {"tokenizer": {"drafter": _summary(drafter), "target": _summary(target)}}
    where = str(ctx.drafter.path / drafter.files[0])
    if failures:
        return Result(FAIL, "the drafter was trained for another tokenizer (it loads and runs, and its drafts mean other "
                      "tokens: acceptance collapses, no error): " + "; ".join(failures + warnings), where, evidence=evidence,
                      remedy="no compat patch, conversion or release fixes this: use a drafter trained for this target's "
                      "tokenizer (or, if its tokenizer files are stale copies, replace them with the target's)")
    if warnings:
        return Result(WARN, "; ".join(warnings), where, evidence=evidence)
    same = "byte-identical tokenizer.json" if _same_file(drafter, target, "tokenizer.json") else "the same"
    return Result(PASS, f"{same} vocabulary ({drafter.vocab_size} ids), special tokens and bos/eos/pad ids as the target's"
                  + ("; the target has a chat template" if target.chat_template else ""), where, evidence=evidence)


def _compare(drafter: Tokenizer, target: Tokenizer, target_vocab: int | None) -> tuple[list[str], list[str]]:
    failures: list[str] = []
    warnings: list[str] = []
    if not target.ships_tokenizer:
        warnings.append("the target directory has no tokenizer files to compare with (only its config.json is read)")
        if drafter.vocab_size and target_vocab and drafter.vocab_size > target_vocab:
            failures.append(f"the drafter's tokenizer has {drafter.vocab_size} ids, more than the target's vocab_size "
                            f"{target_vocab}")
    elif drafter.vocab_size and target.vocab_size and drafter.vocab_size != target.vocab_size:
        failures.append(f"vocabulary size: drafter {drafter.vocab_size} ids, target {target.vocab_size}")
    moved = sorted((t, i, target.special_tokens[t]) for t, i in drafter.special_tokens.items()
                   if t in target.special_tokens and target.special_tokens[t] != i)
    if moved:
        failures.append("special tokens under other ids: " + ", ".join(f"{t} drafter {d} / target {g}" for t, d, g in moved[:SHOWN]))
    for who, mine, theirs in (("drafter", drafter, target), ("target", target, drafter)):
        only = sorted((i, t) for t, i in mine.special_tokens.items() if t not in theirs.special_tokens)
        if only and theirs.ships_tokenizer and theirs.special_tokens:
            more = f" (+{len(only) - SHOWN} more)" if len(only) > SHOWN else ""
            warnings.append(f"special tokens only the {who} has: " + ", ".join(f"{t} ({i})" for i, t in only[:SHOWN]) + more)
    for role in ROLES:
        ours, its = drafter.special_ids.get(role) or [], target.special_ids.get(role) or []
        if ours and its and not set(ours) & set(its):
            warnings.append(f"{role} id: drafter {_ids(ours)}, target {_ids(its)}")
    return failures, warnings


def _ids(ids: list[int]) -> str:
    return str(ids[0]) if len(ids) == 1 else str(ids)


def _same_file(a: Tokenizer, b: Tokenizer, name: str) -> bool:
    return name in a.digests and a.digests.get(name) == b.digests.get(name)


def _summary(tok: Tokenizer) -> dict[str, object]:
    return {"files": tok.files, "vocab_size": tok.vocab_size, "special_ids": tok.special_ids,
            "special_tokens": len(tok.special_tokens), "chat_template": tok.chat_template, "problems": tok.problems}
