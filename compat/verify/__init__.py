"""`compat verify`: run the installed engine and measure what `compat doctor` predicts.

- `run_verify(target, drafter, python=...)`: the pair, greedy, with and without EAGLE-3: equal
  outputs, acceptance overall and per draft position, tokens/s both ways (verify.py);
- `run_canary(python=..., families=...)`: tiny oracle pairs that reveal which target layers the
  engine feeds a drafter, against the probe's prediction (canary.py).

The engine runs in a child process of its own interpreter (the serving venv), from the scripts
in engine_side/ (they need vLLM and torch; compat never imports either). What is printed for people
is render.py (rich, imported when printing; `compat verify` and `compat doctor --verify` share it); no
argparse here: compat/commands/verify.py is the command line.
"""

from typing import Any

# Imported when first asked for, so `compat verify --server` (compat.verify.server) does not load the engine runner.
_HOMES = {"CASES": "canary", "DEFAULT_FAMILIES": "canary", "FAMILIES": "canary", "judge_canary": "canary",
          "measure_canary": "canary", "run_canary": "canary", "EngineRunError": "engine", "DEFAULT_MAX_TOKENS": "verify",
          "DEFAULT_PROMPTS": "verify", "DEFAULT_SPEC_TOKENS": "verify", "run_verify": "verify"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)


__all__ = ["run_verify", "run_canary", "measure_canary", "judge_canary", "EngineRunError", "CASES", "FAMILIES", "DEFAULT_FAMILIES",
           "DEFAULT_MAX_TOKENS", "DEFAULT_PROMPTS", "DEFAULT_SPEC_TOKENS"]
