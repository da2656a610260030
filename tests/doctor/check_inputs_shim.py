"""A Ctx over a real release's probe report, for running one check on it (a module with a unique name)."""

from __future__ import annotations

from pathlib import Path

from compat.checks import Ctx, Drafter, Options
from compat.target import Target


def ctx_for(report: dict, options: Options) -> Ctx:
    target = Target(Path("/m/t"), Path("/m/t/config.json"), {}, "llama", "llama", ["LlamaForCausalLM"], "LlamaForCausalLM",
                    8, 1024, 64, None)
    drafter = Drafter(Path("/m/d"), {"architectures": ["LlamaForCausalLMEagle3"]}, {})
    return Ctx(report, target, drafter, options)
