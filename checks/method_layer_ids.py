"""DFlash and DSpark: the target layers this release feeds the drafter = the ones it was trained on.

The trainers and the engines index them differently: z-lab's dflash and SpecForge write output-of ids (they train on
hidden_states[id + 1]); speculators writes capture-before ids; vLLM reads `dflash_config.target_layer_ids` with +1
since vllm#40727 (0.20.0 read it as is; the V2 runner read only the EAGLE key before 0.24.0), DSpark's top-level ids
with +1 (except deepseek_v41), and maps speculators' ids to i - 1 (speculators#456, #440). Off by one, the server
runs at low acceptance with no error (vllm#42704). Both sides are read: the trainer's key (compat.methods) and the
release's readers (its probe), in compat/block_drafters.py; `compat convert ckpt` writes them where the release
reads them.
"""

from __future__ import annotations

from compat.checks import FAIL, PASS, WARN, Ctx, Result, check
from compat.block_drafters import fed, reads_by_runner, trained
from compat.checks._method import release_name
from compat.runner_choice import choose, feeds_for


@check("method-layer-ids", "layer ids: the layers this release feeds the block drafter = the ones it was trained on",
       order=61, needs=("block layer ids", "methods"),
       fixes=("convert",), methods=("dflash", "dspark"))
def method_layer_ids(ctx: Ctx) -> Result:
    if not ctx.drafter.present:
        return Result(PASS, "no drafter")
    if not ctx.target.num_hidden_layers:
        return Result(WARN, "cannot tell: the target config declares no num_hidden_layers")
    wanted = trained(ctx.drafter.config, ctx.method.family, ctx.target.num_hidden_layers)
    if wanted.ids is None:
        return Result(WARN, f"cannot tell which layers the drafter was trained on: {wanted.how}")
    own = release_name(ctx, ctx.method.family)
    # only the runners the release takes on this platform feed it (compat/runner_choice.py: the method-path check)
    feeds = feeds_for(fed(ctx.report, ctx.drafter.config, ctx.target, own.name if own else None),
                      choose(ctx.report, ctx.options.platform))
    shown = "; ".join(f"{f.by}: {f.ids} ({f.how})" for f in feeds)
    evidence = {"trained_layer_ids": wanted.ids, "fed": [f.to_json() for f in feeds]}
    where = (ctx.fact("aux_layer_ids").get("runners") or [{}])[0].get("location") if reads_by_runner(ctx.report) else None
    unknown = [f for f in feeds if f.ids is None]
    wrong = [f for f in feeds if f.ids is not None and f.ids != wanted.ids]
    if wrong:
        return Result(FAIL, f"silent wrong layers (it launches, acceptance is low, no error): trained on {wanted.ids} "
                      f"({wanted.how}); fed {shown}", where, evidence=evidence)
    if unknown:
        return Result(WARN, f"cannot tell what this release feeds: trained on {wanted.ids} ({wanted.how}); {shown}",
                      where, evidence=evidence)
    return Result(PASS, f"trained on {wanted.ids} ({wanted.how}); fed {shown}", where, evidence=evidence)
