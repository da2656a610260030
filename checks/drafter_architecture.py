"""The drafter's `architectures[0]` must resolve to a registered EAGLE-3 drafter class of the release.

vLLM's EAGLEConfig may rename the drafter architecture (prefixing "Eagle3") and SpeculativeConfig
rewrites some drafter model_types to an MTP module; SGLang rewrites some draft architectures to
its NextN class. Either rewrite runs a different head than the one that was trained. The rules are
the drafter_architecture_rename probe's, replayed on this drafter.
"""

from __future__ import annotations

from compat.checks import FAIL, PASS, WARN, Ctx, Result, check
from compat.checks._drafter import resolved_architecture, speculators_reading


@check("drafter-architecture", "drafter architecture is a registered EAGLE-3 drafter", order=30,
       needs=("drafter classes", "drafter renames"), fixes=("convert",))
def drafter_architecture(ctx: Ctx) -> Result:
    arch = ctx.drafter.architecture
    registered = ctx.facts("eagle3_drafters")
    where = ctx.drafter_location(arch) or ctx.first_location("eagle3_drafter_classes")
    if not arch:
        return Result(FAIL, "the drafter config.json has no architectures", where)
    reading = speculators_reading(ctx)
    if reading is not None and reading.config is None:  # a speculators config this release does not read
        loader = (ctx.fact("speculators_format").get("loader") or {}).get("location")
        return Result(FAIL, f"speculators-format drafter ({arch}): {reading.error}", reading.location or loader or where)
    rewritten = _rewritten(ctx, arch)
    if rewritten is not None:
        return rewritten
    resolved = resolved_architecture(ctx)
    if resolved in registered:
        how = "" if resolved == arch else f" (vLLM's EAGLEConfig renames {arch} to {resolved})"
        if reading is not None:
            how = f" (the release reads the speculators config {arch} itself, as {resolved}, at {reading.location})"
        return Result(PASS, f"{resolved} is registered{how}", ctx.drafter_location(resolved) or where)
    renamed = f"{arch} resolves to {resolved}, which" if resolved != arch else f"{arch} is not a registered EAGLE-3 drafter:"
    return Result(FAIL, f"{renamed} this release does not register (registered: {', '.join(registered) or 'none'})", where)


def _rewritten(ctx: Ctx, arch: str) -> Result | None:
    """A rewrite of the drafter into an MTP/NextN module, which runs a head the drafter does not have."""
    fact = ctx.fact("drafter_architecture_rename")
    if "mtp_override" in fact:  # vLLM's hf_config_override, replayed on the drafter's config
        from compat.probes.vllm.drafter_architecture_rename import mtp_rewrite

        model_type = ctx.drafter.config.get("model_type")
        rewrite = mtp_rewrite(fact, model_type, arch)
        if rewrite is None or rewrite["model_type"] == model_type and not rewrite["architectures"]:
            return None
        verdict = WARN if rewrite["conditional"] else FAIL
        return Result(verdict, f"drafter model_type {model_type!r}: vLLM's hf_config_override "
                      f"{'may rewrite' if rewrite['conditional'] else 'rewrites'} it to {rewrite['model_type']} "
                      "(an MTP module, not this EAGLE-3 head)", rewrite["locations"][0])
    for rule in fact.get("rules") or []:
        if arch in (rule.get("architectures") or []):
            verdict = WARN if rule.get("conditional") else FAIL
            return Result(verdict, f"{arch}: SGLang's ModelConfig {'may rewrite' if verdict == WARN else 'rewrites'} a draft "
                          f"with this architecture to {', '.join(rule.get('to') or ['its NextN class'])} (MTP, not this "
                          "EAGLE-3 head)", rule.get("location"))
    return None
