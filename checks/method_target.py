"""The target implements what the method needs from it.

- DFlash, DSpark (and P-EAGLE): the target feeds the drafter its hidden states: vLLM's SupportsEagle3 interface
  (the aux-hidden-state hook its layer-id reader sets: "Model does not support EAGLE3 interface"), SGLang's
  `set_dflash_layers_to_capture` / `set_dspark_layers_to_capture` (the block_targets fact);
- MTP heads: the release maps the target to an MTP drafter class (vLLM's `hf_config_override` rewrites the
  target's model type to `<x>_mtp`; SGLang registers `<Arch>NextN` / `<Arch>MTP`), and the target declares heads:
  `num_nextn_predict_layers` / `mtp_num_hidden_layers` > 0 (compat.methods.mtp.heads says where they sit: DeepSeek's
  model.layers.{n}, Qwen3-Next's mtp.*, MiMo's model.mtp_layers.*). Whether the checkpoint holds what the release's
  MTP class loads is method-tensors' (the release's own loader, replayed on the target's index).
"""

from __future__ import annotations

from typing import Any

from compat.checks import FAIL, PASS, WARN, Ctx, Result, check
from compat.checks._method import release_name


@check("method-target", "target: it implements what the method needs", order=32,
       needs=("method targets",),
       fixes=("release",), methods=("dflash", "dspark", "mtp"))
def method_target(ctx: Ctx) -> Result:
    arch = ctx.target.architecture
    if not arch:
        return Result(FAIL, "the target config.json has no architectures")
    if ctx.method.family == "mtp":
        return _mtp(ctx, arch)
    if "block_targets" in ctx.report:
        own = release_name(ctx, ctx.method.family)
        hooks = ctx.report.get("block_targets") or {}
        entries = [e for member in ((own.name if own else ""), "DFLASH") for e in hooks.get(member) or []]
        entry = next((e for e in entries if e.get("class") == arch), None)
        if entry is None:
            return Result(FAIL, f"{arch} has no DFlash/DSpark capture hook (set_dflash_layers_to_capture) in this release: "
                          "the server fails when it sets the layers to capture", None,
                          remedy="a target class with the hook (a later release may add it)")
        return Result(PASS, f"{arch} captures the drafter's layers ({entry.get('location')})", entry.get("location"))
    entry = ctx.target_entry(arch)
    if entry is not None and entry.get("interface"):
        return Result(PASS, f"{arch} -> {entry['class']} implements {entry['interface']}: it feeds the block drafter "
                      "its hidden states", entry.get("location"))
    return Result(FAIL, f"{arch} does not implement the aux-hidden-state interface (SupportsEagle3) in this release: "
                  "\"Model does not support EAGLE3 interface\" at start-up", ctx.first_location("eagle3_targets"),
                  remedy="a release whose target class implements SupportsEagle3 (doctor --releases finds it)")


def _mtp(ctx: Ctx, arch: str) -> Result:
    from compat.methods.mtp import heads

    config = ctx.target.config
    inner = config.get("text_config")
    text: dict[str, Any] = inner if isinstance(inner, dict) else {}
    count = next((v for h in (config, text) for k in ("num_nextn_predict_layers", "mtp_num_hidden_layers")
                  if isinstance(v := h.get(k), int) and not isinstance(v, bool) and v > 0), 0)
    where = heads({**text, **config}, {}).replace("the tensors were not read", "whether the checkpoint holds them: "
                                                  "method-tensors, by the release's loader")
    if not count:
        return Result(FAIL, f"the target declares no MTP layers (num_nextn_predict_layers / mtp_num_hidden_layers): there "
                      "are no heads to draft with", str(ctx.target.config_path),
                      remedy="a target checkpoint that ships MTP heads, or another method")
    mapped = _mtp_class(ctx, arch)
    if mapped is None:
        return Result(WARN, f"the heads: {where}; cannot tell whether this release maps {arch} to an MTP drafter")
    if not mapped[0]:
        return Result(FAIL, f"this release maps no MTP drafter for {arch} ({ctx.target.model_type}): {mapped[1]}", mapped[2],
                      remedy="a release with an MTP class for the target (doctor --releases finds it)")
    return Result(PASS, f"the heads: {where}; {mapped[1]}", mapped[2])


def _mtp_class(ctx: Ctx, arch: str) -> tuple[bool, str, str | None] | None:
    override = ctx.fact("drafter_architecture_rename").get("mtp_override")
    if isinstance(override, dict):
        for rule in override.get("rules") or []:
            trigger, sets = rule.get("trigger") or {}, rule.get("sets_model_type")
            value = arch if trigger.get("field") == "architecture" else ctx.target.model_type or ""
            values = trigger.get("values") or []
            hit = value in values if trigger.get("match") == "equals" else any(v in value for v in values)
            if hit and sets:
                return True, f"{arch} runs its heads as {sets!r} (hf_config_override)", rule.get("location")
        return False, "no hf_config_override rule names its model type or architecture", override.get("location")
    known = ctx.fact("target_architectures")
    if known:
        for suffix in ("NextN", "MTP"):
            if f"{arch}{suffix}" in known:
                return True, f"{arch}{suffix} is registered", known[f"{arch}{suffix}"]
        return False, f"no {arch}NextN / {arch}MTP class is registered", None
    return None
