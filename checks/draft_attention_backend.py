"""The draft's attention backend: an MHA drafter (Llama EAGLE-3 head) that gets an MLA-only backend fails at
start-up (sglang#23490: a Kimi/DeepSeek target on trtllm_mla hands it to the drafter). SGLang's draft worker takes
--speculative-draft-attention-backend when given, else the target's --attention-backend; vLLM's drafter takes
--speculative-config attention_backend where SpeculativeConfig has it, else the global --attention-backend.
A backend is taken as MLA-only when its name says MLA (trtllm_mla, flashmla, cutlass_mla, FLASHMLA, ...) or it
is a DeepSeek sparse-attention one (nsa, dsa)."""

from __future__ import annotations

from compat import engines
from compat.checks import ANY_METHOD, FAIL, PASS, WARN, Ctx, Result, check
from compat.checks._draft_settings import argument, draft_setting, line
from compat.launch_line import LineEdit

SPARSE_MLA = ("nsa", "dsa", "dsv4", "qsa")


def mla_only(backend: object) -> bool:
    name = str(backend or "").lower()
    return "mla" in name or name in SPARSE_MLA


@check("draft-attention-backend", "draft attention backend: one the drafter's attention (MHA or MLA) runs on", order=7,
       needs=("launch options", "draft attention"), fixes=("line",),
       when="launch", methods=ANY_METHOD)
def draft_attention_backend(ctx: Ctx) -> Result:
    read = line(ctx)
    if read is None:
        return Result(PASS, "no launch line given", None)
    setting = draft_setting(ctx, read, "attention_backend")
    target_mla = "kv_lora_rank" in (ctx.target.text_config or ctx.target.config)
    # no separate drafter: MTP heads are the target's own layers (its attention), n-gram and suffix draft without one
    drafter_mla = "kv_lora_rank" in ctx.drafter.config if ctx.drafter.present else target_mla
    backend = setting.effective
    how = (f"its own ({setting.own_option})" if setting.own is not None
           else f"inherited from the target ({setting.target_option})")
    fix = _fix(ctx, setting)
    if backend is not None and mla_only(backend) and not drafter_mla:
        detail = (f"the drafter has MHA attention (no kv_lora_rank) and gets the MLA-only backend {backend!r}, "
                  f"{how}: it fails at start-up")
        if fix is None:
            return Result(FAIL, detail + f"; this release has no option for the draft's own backend (drop {setting.target_option} "
                          "or use a release that has one)", setting.location,
                          remedy=f"drop {setting.target_option} {backend}, or a release with a draft attention backend option")
        return Result(FAIL, detail, setting.location, edits=(fix,))
    if backend is None and target_mla and not drafter_mla and engines.get(ctx.engine).draft_inherits:
        detail = ("the target is MLA and the drafter MHA; the line names no attention backend, so the release picks one "
                  "for the target on your GPU and the draft worker inherits it (on Blackwell: trtllm_mla, an MLA-only "
                  "backend: sglang#23490)")
        if fix is None:
            own = engines.get(ctx.engine).draft_option("attention_backend")[0] or "option for the draft's backend"
            return Result(WARN, detail + f"; this release has no {own}", None)
        return Result(WARN, detail + f"; the printed line names an MHA backend for the draft ({fix.option} {fix.value})",
                      setting.location, edits=(fix,))
    shown = repr(backend) if backend is not None else "the one the release picks for the drafter's own attention"
    return Result(PASS, f"the draft runs on {shown} ({how if backend is not None else 'no backend on the line'})",
                  setting.location)


def _fix(ctx: Ctx, setting) -> LineEdit | None:
    if setting.own_option is None:
        return None
    unit = engines.get(ctx.engine)
    mha = unit.mha_attention_backends  # the engine unit's MHA backends, preferred first
    if not mha:
        return None
    if unit.spec_in_config:
        return LineEdit("spec", "an MHA backend for the MHA drafter", key=setting.own_option.split()[-1], value=mha[0])
    choices = (argument(ctx, setting.target_option) or {}).get("choices") or []
    pick = next((c for c in mha if c in choices), mha[-1])
    return LineEdit("set", "an MHA backend for the MHA drafter", option=setting.own_option, value=pick)
