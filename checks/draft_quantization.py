"""The draft's quantization and KV-cache dtype against what its checkpoint holds and what the target runs.

Quantization: SGLang loads the draft with --speculative-draft-model-quantization, else the target's
--quantization (probe draft_quantization: where the release copies it, and where `unquant` undoes it); vLLM
with --speculative-config quantization, else what the drafter's own config.json says. A method that needs
quantized weights (anything but fp8, which quantizes bf16 weights at load) on a drafter without a
quantization_config fails at load; a quantized drafter loaded as another method too.
KV-cache dtype: the draft's own (vLLM --speculative-config kv_cache_dtype, SGLang
--speculative-draft-kv-cache-dtype, where the release has them), else the target's --kv-cache-dtype; an
MLA-only cache layout (fp8_ds_mla, ...) cannot hold an MHA drafter's cache."""

from __future__ import annotations

from compat import engines
from compat.checks import ANY_METHOD, FAIL, PASS, WARN, Ctx, Result, check
from compat.checks._draft_settings import DraftSetting, draft_setting, line
from compat.launch_line import LineEdit

ONLINE = ("fp8",)  # methods that quantize unquantized weights at load


@check("draft-quantization", "draft quantization and KV-cache dtype: ones the drafter's checkpoint and attention take",
       order=9, needs=("launch options", "draft quantization"),
       fixes=("line",), when="launch", methods=ANY_METHOD)
def draft_quantization(ctx: Ctx) -> Result:
    read = line(ctx)
    if read is None:
        return Result(PASS, "no launch line given", None)
    quant = draft_setting(ctx, read, "quantization")
    kv = draft_setting(ctx, read, "kv_cache_dtype")
    fails, warns, edits, where = [], [], [], None
    q_fail, q_warn, q_edit, q_where = _quantization(ctx, quant)
    k_fail, k_edit = _kv_cache(ctx, kv)
    fails += q_fail + k_fail
    warns += q_warn
    edits += q_edit + k_edit
    where = q_where or kv.location
    if fails:
        return Result(FAIL, "; ".join(fails + warns), where, edits=tuple(edits),
                      remedy=None if edits else "give the draft its own quantization / KV-cache dtype (this release has no option)")
    if warns:
        return Result(WARN, "; ".join(warns), where, edits=tuple(edits))
    return Result(PASS, f"the draft loads as {_shown(_draft_method(ctx, quant))} with KV cache "
                  f"{kv.effective or 'auto'}", where)


def _checkpoint_method(ctx: Ctx) -> str | None:
    config = ctx.drafter.config.get("quantization_config")
    return str(config.get("quant_method")) if isinstance(config, dict) and config.get("quant_method") else None


def _draft_method(ctx: Ctx, quant: DraftSetting) -> str | None:
    """The method the release loads the draft with (None: unquantized)."""
    if not engines.get(ctx.engine).draft_inherits:
        return quant.own if quant.own is not None else _checkpoint_method(ctx)
    if quant.own is not None:
        return None if quant.own == "unquant" else quant.own
    inherits = ctx.fact("draft_quantization").get("inherits_target")
    return quant.target if inherits else None


def _shown(method: str | None) -> str:
    return method or "unquantized"


def _quantization(ctx: Ctx, quant: DraftSetting) -> tuple[list[str], list[str], list[LineEdit], str | None]:
    fact = ctx.fact("draft_quantization")
    inherits = engines.get(ctx.engine).draft_inherits
    where = fact.get("inherits_location") if inherits and quant.own is None else quant.location
    if inherits and quant.own is None and quant.target is not None and not fact.get("inherits_target"):
        return [], [f"cannot tell whether this release loads the draft with the target's --quantization {quant.target}"], [], None
    method, ckpt = _draft_method(ctx, quant), _checkpoint_method(ctx)
    how = (f"its own ({quant.own_option})" if quant.own is not None
           else f"the target's ({quant.target_option}, {fact.get('inherits_location')})" if inherits
           else "its config.json")
    if method is None or method == ckpt:
        return [], [], [], where
    if ckpt is None and method in ONLINE:
        return [], [f"the draft is quantized to {method} at load ({how}): its bf16 weights become {method} "
                    "(lower acceptance possible; no error)"], [], where
    problem = (f"the draft is loaded as {method} ({how}) but its checkpoint is "
               + (f"quantized with {ckpt}" if ckpt else "not quantized (no quantization_config)") + ": it fails at load")
    fix = _quant_fix(ctx, quant, ckpt)
    return [problem], [], [fix] if fix else [], where


def _quant_fix(ctx: Ctx, quant: DraftSetting, ckpt: str | None) -> LineEdit | None:
    if quant.own_option is None:
        return None
    if engines.get(ctx.engine).spec_in_config:
        return LineEdit("spec", "the drafter's own weights", key="quantization", value=ckpt)
    unquant = ctx.fact("draft_quantization").get("unquant_location")
    if ckpt is None and unquant is None:
        return None
    return LineEdit("set", f"the drafter's own weights ({unquant})" if ckpt is None else "the drafter's own weights",
                    option=quant.own_option, value=ckpt or "unquant")


def _kv_cache(ctx: Ctx, kv: DraftSetting) -> tuple[list[str], list[LineEdit]]:
    dtype = str(kv.effective or "")
    if "mla" not in dtype.lower() or "kv_lora_rank" in ctx.drafter.config:
        return [], []
    how = f"its own ({kv.own_option})" if kv.own is not None else f"the target's ({kv.target_option})"
    problem = f"the draft's KV cache is {dtype!r}, {how}: an MLA-only layout for an MHA drafter"
    if kv.own_option is None:
        return [problem + "; this release has no option for the draft's own"], []
    edit = (LineEdit("spec", "the MHA drafter's own KV cache", key="kv_cache_dtype", value="auto")
            if engines.get(ctx.engine).spec_in_config
            else LineEdit("set", "the MHA drafter's own KV cache", option=kv.own_option, value="auto"))
    return [problem], [edit]
