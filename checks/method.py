"""EAGLE-3 must be selected explicitly: an EAGLE-3 drafter run as EAGLE(-1) drafts with the wrong head
(SGLang: accept length 1.00), and vLLM guesses the method from the drafter's path when none is given.

The method checked is the one the user runs: the launch line's ("method" in --speculative-config,
--speculative-algorithm), else `doctor --method`, else the one doctor's own launch command passes (EAGLE-3).
With a launch line, the fix sets it in the line doctor prints."""

from __future__ import annotations

from compat import engines
from compat.checks import FAIL, PASS, WARN, Ctx, Result, check
from compat.checks._method import method_option, release_name
from compat.launch_line import LineEdit


@check("method", "method: EAGLE-3 is selected explicitly (no auto-detection trap)", order=70,
       needs=("method selection",), fixes=("line",))
def method(ctx: Ctx) -> Result:
    return _in_config(ctx) if engines.get(ctx.engine).spec_in_config else _in_flags(ctx)


def _asked(ctx: Ctx) -> tuple[str | None, str]:
    """(the method the user runs, where it comes from); None: the launch line gives none."""
    line = ctx.options.launch
    if line is not None:
        return line.method, "the launch line"
    if ctx.options.method is not None:
        return ctx.options.method, "--method"
    if engines.get(ctx.engine).spec_in_config:
        return ctx.options.extra_spec.get("method", "eagle3"), "--spec"
    option = method_option(ctx)
    return _eagle3_name(ctx, ((ctx.flag(option) if option else None) or {}).get("choices")), "doctor's launch command"


def _in_config(ctx: Ctx) -> Result:
    """vLLM: the "method" key of --speculative-config, guessed from the drafter when absent."""
    sc = ctx.fact("speculative_config")
    methods = sc.get("methods") or []
    where = sc.get("methods_location")
    if "eagle3" not in methods:
        return Result(FAIL, f"SpeculativeConfig has no method 'eagle3' (methods: {methods})", where)
    asked, source = _asked(ctx)
    fix = (LineEdit("spec", "EAGLE-3 drafter", key="method", value="eagle3"),)
    if asked is None:  # a launch line without "method": this release guesses
        guess = _guess(ctx)
        if guess.get("method") == "eagle3" and guess.get("certain"):
            return Result(PASS, f"the launch line gives no \"method\"; this release picks 'eagle3' for this drafter "
                          f"({guess.get('location')}); the line doctor prints says so explicitly", guess.get("location"), edits=fix)
        found = guess.get("method")
        return Result(FAIL if found and found != "eagle3" else WARN,
                      f"the launch line gives no \"method\": this release {'runs' if guess.get('certain') else 'may run'} "
                      f"this drafter as {found!r} ({guess.get('location')})"
                      + (": an EAGLE-3 drafter drafts with the wrong head (low acceptance, no error)" if found != "eagle3" else ""),
                      guess.get("location") or where, edits=fix)
    if asked != "eagle3":
        return Result(FAIL, f"{source} runs method={asked!r}: an EAGLE-3 drafter run as {asked!r} drafts "
                      "with the wrong head (low acceptance, no error)", where, edits=fix)
    return Result(PASS, _without_method(ctx), where)


def _guess(ctx: Ctx) -> dict:
    from compat.probes.vllm.method_autodetection import detect_method

    return detect_method(ctx.fact("method_autodetection"), None, str(ctx.drafter.path).lower(),
                         ctx.drafter.config.get("model_type"), ctx.drafter.config.get("architectures") or [])


def _without_method(ctx: Ctx) -> str:
    """What vLLM would guess from the drafter's path without "method" (the method_autodetection rules, replayed)."""
    detail = "the launch command passes \"method\": \"eagle3\""
    guess = _guess(ctx)
    if guess.get("method") and guess["method"] != "eagle3":
        detail += (f"; without it this release {'would' if guess.get('certain') else 'may'} run this drafter as "
                   f"{guess['method']!r} ({guess.get('location')}): the wrong head")
    return detail


def _eagle3_name(ctx: Ctx, choices: list | None) -> str:
    """EAGLE-3's name in this release: its methods' name for it, else the flag's choice that is EAGLE3 in any case."""
    found = release_name(ctx, "eagle3")
    if found is not None:
        return found.name
    return next((c for c in choices or [] if isinstance(c, str) and c.upper() == "EAGLE3"), "EAGLE3")


def _in_flags(ctx: Ctx) -> Result:
    """The method option of the engine's unit (SGLang's and LMDeploy's --speculative-algorithm)."""
    option = method_option(ctx)
    if option is None:
        return Result(WARN, f"cannot tell: {engines.get(ctx.engine).display_name}'s unit names no option for the method "
                      "(SPEC_SETTING_OPTIONS)", None)
    flag = ctx.flag(option)
    if flag is None:
        return Result(FAIL, f"no {option} flag in this release", None)
    where = flag.get("location")
    choices = flag.get("choices")
    name = _eagle3_name(ctx, choices)  # as the release spells it: EAGLE3 (SGLang), eagle3 (LMDeploy)
    if isinstance(choices, list) and name not in choices:
        return Result(FAIL, f"{option} accepts {choices}, not {name}", where)
    asked, source = _asked(ctx)
    fix = (LineEdit("set", "EAGLE-3 drafter", option=option, value=name),)
    if asked is None:
        return Result(FAIL, f"the launch line gives no {option}: the drafter is not used at all "
                      "(no speculative decoding)", where, edits=fix)
    if asked.upper() != name.upper():
        return Result(FAIL, f"{source} runs {option} {asked}: an EAGLE-3 drafter run as {asked} drafts with "
                      "the wrong head (EAGLE with an EAGLE-3 drafter runs at accept length 1.00, no error)", where, edits=fix)
    if asked != name and isinstance(choices, list):
        return Result(FAIL, f"{option} {asked}: not among this release's choices {choices} "
                      "(argparse compares them as typed)", where, edits=fix)
    who = "the launch command" if source == "doctor's launch command" else source
    return Result(PASS, f"{who} passes {option} {name} "
                  "(EAGLE with an EAGLE-3 drafter runs at accept length 1.00)", where)
