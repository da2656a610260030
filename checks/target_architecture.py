"""The release must know the target's architecture at all before any patch can help it.

A patch gives a registered class the EAGLE-3 hook; it cannot make vLLM 0.13.0 load
KimiK25ForConditionalGeneration, which its model registry does not have (it arrives in 0.15.0).
While this fails, no patch is offered for any check (`blocks`), and the fix is a release that has it.
"""

from __future__ import annotations

from compat.checks import ANY_METHOD, FAIL, PASS, Ctx, LaterRelease, Result, check


@check("target-architecture", "the release knows the target's architecture", order=15,
       needs=("target architectures",), fixes=("release",), blocks=("patch",), methods=ANY_METHOD)
def target_architecture(ctx: Ctx) -> Result:
    arch = ctx.target.architecture
    if not arch:
        return Result(FAIL, "the target config.json has no architectures", None)
    known = ctx.fact("target_architectures")
    if arch in known:
        return Result(PASS, f"{arch} is registered", known[arch])
    name = f"{ctx.engine} {ctx.version or ctx.report.get('version')}"
    arrival = ctx.first_release_with("target_architectures", arch)
    when = f"; it arrives in {arrival}" if arrival else "; no later release known here has it either" if arrival == "" else ""
    return Result(FAIL, f"{arch} is not in {name}: its model registry does not list it{when} "
                  "(no compat patch can add a model class)", None, release=LaterRelease(arrival or None))
