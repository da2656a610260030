"""The dtype the draft runs in against the one it was trained in. Both engines run the draft in the server's
dtype (--dtype; `auto`: the target's torch_dtype), read from where each builds the draft's config (probe
draft_dtype); an engine whose `auto` resolves on the draft's own config says so (`auto_from: "draft"`: LMDeploy). A bfloat16-trained head run in float16 can overflow (inf, NaN drafts: acceptance near zero, no
error); the line's --dtype sets the target's dtype too, so doctor warns and names it rather than changing it."""

from __future__ import annotations

from compat.checks import ANY_METHOD, PASS, WARN, Ctx, Result, check
from compat.checks._draft_settings import line

FLOAT16 = ("float16", "half", "fp16")
BFLOAT16 = ("bfloat16", "bf16")


@check("draft-dtype", "draft dtype: the server's dtype fits the one the drafter was trained in", order=9,
       needs=("draft dtype",), when="launch", methods=ANY_METHOD)
def draft_dtype(ctx: Ctx) -> Result:
    read = line(ctx)
    if read is None:
        return Result(PASS, "no launch line given", None)
    fact = ctx.fact("draft_dtype")
    if not fact.get("present"):
        return Result(WARN, f"cannot tell which dtype the draft runs in: {fact.get('reason')}", None)
    given = read.value("--dtype")
    target_dtype = (ctx.target.text_config or ctx.target.config).get("torch_dtype") or ctx.target.config.get("torch_dtype")
    runs = str(given if given not in (None, "auto") else target_dtype or "auto").lower()
    trained = str(ctx.drafter.config.get("torch_dtype") or _tensor_dtype(ctx) or "unknown").lower()
    how = f"--dtype {given}" if given not in (None, "auto") else f"auto: the target's torch_dtype {target_dtype}"
    if given in (None, "auto") and fact.get("auto_from") == "draft":  # LMDeploy: auto resolves on the draft's config
        runs = trained if trained in (*FLOAT16, *BFLOAT16) else "float16"
        how = f"auto: the drafter's own torch_dtype, {fact.get('auto_location')}"
    detail = f"the draft runs in {runs} ({how}; {fact.get('location')}), trained in {trained}"
    if runs in FLOAT16 and trained in BFLOAT16:
        return Result(WARN, detail + ": bfloat16 values beyond float16's range become inf (NaN drafts, acceptance near "
                      "zero, no error); --dtype bfloat16 runs both in the drafter's dtype", fact.get("location"))
    return Result(PASS, detail, fact.get("location"))


def _tensor_dtype(ctx: Ctx) -> str | None:
    names = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}
    dtypes = [names.get(d) for d, _ in ctx.drafter.tensors.values() if d in names]
    return max(set(dtypes), key=dtypes.count) if dtypes else None
