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

from compat.verify.canary import CASES, DEFAULT_FAMILIES, FAMILIES, judge_canary, measure_canary, run_canary
from compat.verify.engine import EngineRunError
from compat.verify.verify import DEFAULT_MAX_TOKENS, DEFAULT_PROMPTS, DEFAULT_SPEC_TOKENS, run_verify

__all__ = ["run_verify", "run_canary", "measure_canary", "judge_canary", "EngineRunError", "CASES", "FAMILIES", "DEFAULT_FAMILIES",
           "DEFAULT_MAX_TOKENS", "DEFAULT_PROMPTS", "DEFAULT_SPEC_TOKENS"]
