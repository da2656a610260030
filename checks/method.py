"""EAGLE-3 must be selected explicitly: an EAGLE-3 drafter run as EAGLE(-1) drafts with the wrong head
(SGLang: accept length 1.00), and vLLM guesses the method from the drafter's path when none is given."""

from __future__ import annotations

from compat.checks import FAIL, PASS, Ctx, Result, check


@check("method", "method: EAGLE-3 is selected explicitly (no auto-detection trap)", order=70,
       needs={"vllm": ("speculative_config", "method_autodetection"), "sglang": ("cli_flags",)})
def method(ctx: Ctx) -> Result:
    if ctx.engine == "vllm":
        sc = ctx.fact("speculative_config")
        methods = sc.get("methods") or []
        if "eagle3" not in methods:
            return Result(FAIL, f"SpeculativeConfig has no method 'eagle3' (methods: {methods})", sc.get("methods_location"))
        asked = ctx.options.extra_spec.get("method", "eagle3")
        if asked != "eagle3":
            return Result(FAIL, f"--spec method={asked!r}: an EAGLE-3 drafter run as {asked!r} drafts "
                          "with the wrong head (low acceptance, no error)", sc.get("methods_location"))
        return Result(PASS, _without_method(ctx), sc.get("methods_location"))
    flag = ctx.flag("--speculative-algorithm")
    if flag is None:
        return Result(FAIL, "no --speculative-algorithm flag in this release", None)
    choices = flag.get("choices")
    if isinstance(choices, list) and "EAGLE3" not in choices:
        return Result(FAIL, f"--speculative-algorithm accepts {choices}, not EAGLE3", flag.get("location"))
    return Result(PASS, "the launch command passes --speculative-algorithm EAGLE3 "
                  "(EAGLE with an EAGLE-3 drafter runs at accept length 1.00)", flag.get("location"))


def _without_method(ctx: Ctx) -> str:
    """What vLLM would guess from the drafter's path without "method" (the method_autodetection rules, replayed)."""
    from compat.probes.vllm.method_autodetection import detect_method

    detail = "the launch command passes \"method\": \"eagle3\""
    guess = detect_method(ctx.fact("method_autodetection"), None, str(ctx.drafter.path).lower(),
                          ctx.drafter.config.get("model_type"), ctx.drafter.config.get("architectures") or [])
    if guess.get("method") and guess["method"] != "eagle3":
        detail += (f"; without it this release {'would' if guess.get('certain') else 'may'} run this drafter as "
                   f"{guess['method']!r} ({guess.get('location')}): the wrong head")
    return detail
