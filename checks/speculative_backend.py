"""The launch line runs the engine that speculates: LMDeploy speculates in its PyTorch engine only, and its
`--backend` defaults to TurboMind, which serves without the drafter after a warning (`speculative decoding is not
supported by turbomind`: lmdeploy/serve/core/async_engine.py:148 in 0.18.0), picked for any model TurboMind supports
unless the line says `--backend pytorch` (cli/serve.py `autoget_backend`). The facts are the `speculative_backend`
probe's; a release without that fact (vLLM, SGLang: one engine) has nothing to check."""

from __future__ import annotations

from compat.checks import ANY_METHOD, FAIL, PASS, Ctx, Result, check
from compat.launch_line import LineEdit, options


@check("speculative-backend", "launch line: the backend it runs is the one that speculates", order=6, fixes=("line",),
       when="launch", methods=ANY_METHOD)
def speculative_backend(ctx: Ctx) -> Result:
    fact = ctx.fact("speculative_backend")
    line = ctx.options.launch
    if not fact.get("present") or line is None or not line.spec:
        return Result(PASS, "this release speculates on the backend the line runs", None)
    flag, speculates = fact.get("flag") or {}, str(fact.get("speculates"))
    name = str(flag.get("name") or "--backend")
    given = next((value for option, value, _ in reversed(options(line)) if option == name), None)
    chosen = given if given is not None else flag.get("default")
    drops = fact.get("drops") or {}
    if chosen == speculates:
        return Result(PASS, f"{name} {speculates}: the engine that speculates", flag.get("location"))
    how = "the line gives" if given is not None else f"the default ({flag.get('location')}) is"
    return Result(FAIL, f"{how} {name} {chosen}, which serves without the drafter: \"{str(drops.get('message', '')).strip()}\" "
                  f"is only a warning ({drops.get('location')}); only {name} {speculates} speculates",
                  drops.get("location"), edits=(LineEdit("set", "the engine that speculates", option=name, value=speculates),))
