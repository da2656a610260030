"""What the launch line gives the draft model, and what the draft inherits from the target: shared by the checks
of the draft's attention backend, parallelism, quantization and KV-cache dtype.

Which options carry them is the engine unit's DRAFT_OPTIONS. vLLM: the draft's own settings are
--speculative-config keys (attention_backend, kv_cache_dtype, quantization, draft_tensor_parallel_size), where the
release's SpeculativeConfig has the field; the target's are the top-level options. SGLang: --speculative-draft-*
options where the release has them, else the target's options. Which options exist is the release's own argument list (cli_arguments), with file:line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compat import engines
from compat.checks._context import Ctx
from compat.checks._launch_args import ReadLine, read_against


@dataclass(frozen=True)
class DraftSetting:
    """One setting as the draft gets it: its own (given on the line), else the target's (inherited)."""

    own: Any  # the line's value for the draft (None: not given)
    target: Any  # the line's value for the target (None: not given: the release picks)
    own_option: str | None  # how the line sets the draft's own value in this release (None: it cannot)
    own_location: str | None
    target_option: str
    target_location: str | None = None

    @property
    def location(self) -> str | None:
        return self.own_location or self.target_location

    @property
    def effective(self) -> Any:
        return self.own if self.own is not None else self.target


def spec_field(ctx: Ctx, key: str) -> dict[str, Any] | None:
    for field in ctx.fact("speculative_config").get("fields") or []:
        if field.get("name") == key:
            return field
    return None


def argument(ctx: Ctx, name: str) -> dict[str, Any] | None:
    for arg in ctx.fact("cli_arguments").get("arguments") or []:
        if arg["name"] == name or name in (arg.get("aliases") or []):
            return arg
    return None


def draft_setting(ctx: Ctx, read: ReadLine, setting: str) -> DraftSetting:
    """The draft's own setting and the target's it falls back to, by the engine unit's DRAFT_OPTIONS: a
    --speculative-config key and the target's option where the engine's settings are one JSON object (vLLM), else a
    --speculative-draft-* option and the target's (SGLang); nothing the line sets where the unit names none."""
    unit = engines.get(ctx.engine)
    own_name, targets = unit.draft_option(setting)
    target = read.value(*targets) if targets else None
    target_option = targets[0] if targets else f"the target's {setting}"
    target_location = (argument(ctx, targets[0]) or {}).get("location") if targets else None
    if unit.spec_in_config:
        field = spec_field(ctx, own_name) if own_name else None
        return DraftSetting(read.line.spec.get(own_name) if own_name else None, target,
                            f"{unit.spec_config_options[0]} {own_name}" if field else None, (field or {}).get("location"),
                            target_option, target_location)
    own = argument(ctx, own_name) if own_name else None
    return DraftSetting(read.value(own_name) if own else None, target, own_name if own else None,
                        (own or {}).get("location"), target_option, target_location)


def line(ctx: Ctx) -> ReadLine | None:
    return read_against(ctx)
