"""What several checks ask of the drafter and the release's drafter facts: which class loads this drafter,
under which name, and which of its tensors is which.

The facts are the drafter_loader and drafter_architecture_rename probes; the replay of them on a
checkpoint is compat.probes.drafter_replay. Nothing here knows a release number.
"""

from __future__ import annotations

import ast
import operator
from typing import TYPE_CHECKING, Any

from compat.checks._context import Ctx
from compat.probes.drafter_replay import config_value, land

if TYPE_CHECKING:
    from compat.probes.vllm.speculators_format import Translation


def speculators_reading(ctx: Ctx) -> Translation | None:
    """The release's own reading of a speculators-format drafter (probe speculators_format), or None for
    any other drafter: vLLM >= 0.10.1 builds its drafter from that reading; SGLang has none."""
    from compat.probes.vllm.speculators_format import translate

    return translate(ctx.fact("speculators_format"), ctx.drafter.config)


def loaded_config(ctx: Ctx) -> dict[str, Any]:
    """The config the release builds the drafter class from: the drafter's config.json, or for a
    speculators checkpoint the HF config the release's SpeculatorsConfig makes of it."""
    reading = speculators_reading(ctx)
    return reading.config if reading is not None and reading.config is not None else ctx.drafter.config


def resolved_architecture(ctx: Ctx) -> str | None:
    """The class name the release looks up for the drafter (vLLM's EAGLEConfig may prefix Eagle3; a
    speculators config names the class its translation picks)."""
    from compat.probes.vllm.drafter_architecture_rename import eagle_architecture

    archs = loaded_config(ctx).get("architectures") or []
    arch = archs[0] if archs else None
    if "eagle_config" not in ctx.fact("drafter_architecture_rename") or not arch:  # vLLM's EAGLEConfig renames
        return arch
    return eagle_architecture(ctx.fact("drafter_architecture_rename"), "eagle3", arch) or arch


def loader_entry(ctx: Ctx) -> tuple[str | None, dict[str, Any] | None]:
    """(class, drafter_loader entry) of the drafter class the release builds for this drafter."""
    name = resolved_architecture(ctx)
    drafters = ctx.fact("drafter_loader").get("drafters") or {}
    for cls, entry in drafters.items():
        if name == cls or name in (entry.get("architectures") or []) or name in (entry.get("aliases") or []):
            return cls, entry
    return None, None


def target_vocab(ctx: Ctx) -> int | None:
    return ctx.target.vocab_size or _int(loaded_config(ctx).get("vocab_size"))


def tensor_fates(ctx: Ctx, entry: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What the release's loader does with each drafter tensor, replayed on the config it builds the drafter from
    (a speculators checkpoint: after the release's translation, which may drop the switch that builds a module)."""
    config, names, vocab = loaded_config(ctx), set(ctx.drafter.tensors), target_vocab(ctx)
    return {name: land(entry, name, config, names, vocab) for name in sorted(ctx.drafter.tensors)}


def switched_off(fate: dict[str, Any]) -> bool:
    """A tensor a skip step drops because a config switch is off (vLLM's `if not self.model.norm_before_fc:
    skip_substrs.append("input_norm.")`): trained weights the drafter is then built without."""
    step = fate.get("step") or {}
    return fate["fate"] == "skip" and any("config" in clause for clause in step.get("when") or [])


def first_release_loading(ctx: Ctx, name: str) -> str | None:
    """The first later release whose loader takes drafter tensor `name` ("" none; None: not looked)."""
    def loads(report: dict[str, Any]) -> bool:
        later = ctx.with_report(report)
        _, entry = loader_entry(later)
        if entry is None:
            return False
        fate = tensor_fates(later, entry)[name]
        return fate["fate"] in ("load", "consume") and not switched_off(fate)

    return ctx.first_release_where(f"drafter tensor {ctx.drafter.path}:{name}", loads)


def find_tensor(tensors: dict[str, tuple[str, tuple[int, ...]]], canonical: str) -> tuple[str, tuple[int, ...]] | None:
    """(name, shape) of the drafter tensor that is `canonical` (with or without a `model.` prefix)."""
    for name, info in tensors.items():
        bare = name[len("model."):] if name.startswith("model.") and not name.startswith("model.lm_head") else name
        if bare == canonical or bare.endswith("." + canonical) and canonical in ("d2t", "t2d"):
            return name, info[1]
    return None


_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}


def rejected(entry: dict[str, Any], config: dict[str, Any]) -> str | None:
    """The error the drafter class raises at init for this config (its `layers.rejects` rule), else None."""
    rule = (entry.get("layers") or {}).get("rejects")
    if not rule:
        return None
    try:
        node = ast.parse(rule["condition"], mode="eval").body
        holds = _evaluate(node, config)
    except (SyntaxError, ValueError, TypeError, KeyError):
        return None
    return f"{rule['error']} ({rule['condition']}, {rule['location']})" if holds else None


def _evaluate(node: ast.AST, config: dict[str, Any]) -> Any:
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        return _COMPARE[type(node.ops[0])](_evaluate(node.left, config), _evaluate(node.comparators[0], config))
    if isinstance(node, ast.Attribute):  # self.config.num_hidden_layers / config.num_hidden_layers
        return config_value([{"key": node.attr, "where": "top-level", "use": "value"}], config)
    if isinstance(node, ast.Constant):
        return node.value
    raise ValueError(ast.dump(node))


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
