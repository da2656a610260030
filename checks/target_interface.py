"""The target class must hand its aux hidden states to an EAGLE-3 drafter.

vLLM: a registered class for the target's architecture implementing SupportsEagle3 (else "Model does
not support EAGLE3 interface" at model load, after the target weights are loaded). SGLang: the class
has `set_eagle3_layers_to_capture` (else AttributeError when the runner asks for aux hidden states). LMDeploy: the
class captures the layers its config builder sets (else the drafter gets the last hidden state, silently).
Whether the whitelist lets the target through first is _whitelist.py's reading, the one target-whitelist reports.
"""

from __future__ import annotations

from compat import engines
from compat.checks import FAIL, PASS, Ctx, Result, check
from compat.checks._whitelist import passes_config_validation


@check("target-interface", "target class can feed aux hidden states to an EAGLE-3 drafter", order=20,
       needs=("eagle3 targets",), fixes=("patch", "release"), methods=("eagle3", "peagle"))
def target_interface(ctx: Ctx) -> Result:
    arch = ctx.target.architecture
    if not arch:
        return Result(FAIL, "the target config.json has no architectures", None)
    entry = ctx.target_entry(arch)
    gate = engines.get(ctx.engine).target_gate
    if gate == "config_builder":  # LMDeploy: the builder sets the layers, the class captures them; no error without
        if entry is not None:
            return Result(PASS, f"{arch} -> {entry['class']} captures the layers its config builder sets for EAGLE-3",
                          entry.get("capture_location") or entry.get("location"))
        return Result(FAIL, f"no class of this release captures aux hidden states for {arch}: the drafter is fed the "
                      "target's last hidden state instead, with no error (acceptance near zero)", None)
    if gate == "interface":
        if entry is not None and entry.get("interface"):
            return Result(PASS, f"{arch} -> {entry['class']} implements {entry['interface']}", entry.get("location"))
        trap = (" It passes config validation, then fails at model load, after the target weights are loaded"
                if passes_config_validation(ctx) else " (The whitelist refuses it first; once a patch admits the target, it still "
                "fails at model load, after the target weights are loaded.)")
        return Result(FAIL, f"no registered class for {arch} implements SupportsEagle3 in this release: "
                      f"\"Model does not support EAGLE3 interface\".{trap}", interface_use_location(ctx))
    if entry is not None:
        return Result(PASS, f"{arch} -> {entry['class']} has set_eagle3_layers_to_capture",
                      entry.get("method_location") or entry.get("location"))
    return Result(FAIL, f"{arch} has no set_eagle3_layers_to_capture in this release: EAGLE3 dies with AttributeError "
                  "when the runner asks it for aux hidden states", interface_use_location(ctx))


def interface_use_location(ctx: Ctx) -> str | None:
    """Where the release asks the target for aux hidden states (the call that fails without the interface)."""
    checks = ctx.fact("eagle3_whitelist").get("load_time_checks") or []
    if checks:
        return checks[0].get("location")
    aux = ctx.fact("aux_layer_ids")
    calls = [c for c in aux.get("capture_calls") or [] if c.get("with_ids")] or aux.get("capture_calls") or []
    runners = aux.get("runners") or []
    return ((calls[0].get("location") if calls else None) or aux.get("default_used_at")
            or (runners[0].get("location") if runners else None))
