"""The launch command uses only the flags and `--speculative-config` keys this release accepts
(vLLM rejects unknown keys from 0.16.0; before, it ignores them). The command is built by _launch.py,
which doctor prints from too."""

from __future__ import annotations

from compat import engines
from compat.checks import ANY_METHOD, FAIL, PASS, WARN, Ctx, Result, check
from compat.checks._launch import launch_command


@check("launch-command", "launch command uses only flags and keys this release accepts", order=90,
       needs=("launch flags",), methods=ANY_METHOD)
def launch(ctx: Ctx) -> Result:
    command = launch_command(ctx)
    verdict = FAIL if command["problems"] else (WARN if command["dropped"] else PASS)
    detail = "; ".join(command["problems"] + [f"dropped {k!r}: {why}" for k, why in command["dropped"].items()]) or (
        "validated against " + ("SpeculativeConfig's fields" if engines.get(ctx.engine).spec_in_config
                                else "the release's CLI flags"))
    return Result(verdict, detail, command.get("location"), evidence={"launch": command})
