"""The serving venv holds what the method needs beyond the engine: suffix decoding on vLLM up to 0.33.0 runs on
Snowflake's Arctic Inference, not a vLLM dependency ("Arctic Inference is required for suffix decoding. Install via
`pip install arctic-inference==0.1.1`", raised at start-up). The release's own check is read (the methods fact:
the module it looks for, the install line it prints); the serving venv is asked when doctor knows it (--python, or
the installed engine's), else both answers are given.
"""

from __future__ import annotations

from compat.checks import FAIL, PASS, WARN, Ctx, Result, check
from compat.core.interpreter import InterpreterError


@check("method-venv", "venv: the serving venv has the packages the method needs", order=72, needs=("methods",),
       methods=("suffix",))
def method_venv(ctx: Ctx) -> Result:
    fact = ctx.fact("methods")
    per = (fact.get("methods") or {}).get("suffix") or {}
    need = per.get("venv")
    if not isinstance(need, dict):
        return Result(PASS, "this release checks for no package beyond its own dependencies for suffix decoding",
                      fact.get("location"))
    module, install, where = need.get("module"), need.get("install") or f"pip install {need.get('module')}", need.get("where_checked")
    python = ctx.options.fixes_python
    if python is None:
        return Result(WARN, f"the serving venv needs {module} ({where}): if it has it, suffix decoding starts; if not, the "
                      f"server refuses at start-up (install it: {install} in the venv that serves, or give --python)", where)
    try:
        found = python.run_json(f"import importlib.util, json; print(json.dumps(importlib.util.find_spec({module!r}) is not None))",
                                what=f"whether {module} is installed")
    except InterpreterError as err:  # the interpreter failed: say so, do not guess
        return Result(WARN, f"cannot tell whether {python} has {module}: {err}", where)
    if found:
        return Result(PASS, f"{python} has {module} ({where})", where)
    return Result(FAIL, f"{python} has no {module}: the server refuses suffix decoding at start-up ({where})", where,
                  remedy=f"{python} -m {install}")
