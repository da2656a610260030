"""Which target layers an engine release feeds an EAGLE-3 drafter: one reading, from the probe facts.

Doctor's layer-ids check predicts with it and `compat verify --canary` measures against it, so a
prediction and a measurement can only disagree when the probe misread the engine.

Inputs are the `compat probe` report (`aux_layer_ids`, `eagle3_targets`), the drafter's config.json
and the target's layer count. Every id here is *capture-before*: the residual stream entering target
layer i (HF `hidden_states[i]`), which is what both engines store.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass

from compat import engines


@dataclass(frozen=True)
class Feed:
    """What one reader of the release (a vLLM model runner, an SGLang target class) feeds the drafter."""

    by: str  # "runner v1", "every runner", "target"
    ids: list[int] | None  # capture-before layers fed; None when nothing is fed or the rule is unknown
    how: str  # in words: which key, which offset, or why the default

    def to_json(self) -> dict:
        return {"by": self.by, "ids": self.ids, "how": self.how}


def fed_layers(report: dict, drafter_config: dict, num_layers: int, target_architecture: str | None) -> list[Feed]:
    """The layers each reader feeds for this drafter config on a target with `num_layers` layers."""
    aux = report.get("aux_layer_ids") or {}
    default = default_ids(report, num_layers)
    unit = engines.find(report.get("engine"))
    if unit is not None and unit.layer_ids_fed_by == "runners":
        return _vllm_feeds(aux, drafter_config, default)
    return [_sglang_feed(report, aux, drafter_config, default, target_architecture)]


def default_ids(report: dict, num_layers: int) -> list[int] | None:
    """The release's default ids (the probe's expression, e.g. `(2, n // 2, n - 3)`) for `num_layers`."""
    return evaluate_default((report.get("aux_layer_ids") or {}).get("default"), num_layers)


def declared_ids(report: dict, drafter_config: dict) -> tuple[list[int] | None, str | None]:
    """The ids the release reads from this drafter config and the key they come from (first key that is set)."""
    aux = report.get("aux_layer_ids") or {}
    keys = [k for runner in aux.get("runners") or [] for k in runner.get("keys") or []] or aux.get("keys") or []
    for key in keys:
        value = config_value(drafter_config, key.get("where"), key.get("key"))
        if is_id_list(value):
            return list(value), key_name(key)
    return None, None


def _vllm_feeds(aux: dict, cfg: dict, default: list[int] | None) -> list[Feed]:
    runners = aux.get("runners") or []
    if not aux.get("read_from_config") or not runners:
        return [Feed("every runner", default, "drafter ids are not read; the target's default")]
    out = []
    for runner in runners:
        ids, how = default, "no key it reads is set: default"
        for key in runner.get("keys") or []:
            value = config_value(cfg, key.get("where"), key.get("key"))
            if is_id_list(value):
                offset = int(key.get("offset") or 0)
                ids, how = [i + offset for i in value], f"{key_name(key)} + {offset}"
                break
        out.append(Feed(f"runner {runner.get('runner')}", ids, how))
    return out


def _sglang_feed(report: dict, aux: dict, cfg: dict, default: list[int] | None, architecture: str | None) -> Feed:
    entry = target_entry(report, architecture or "")
    if entry is None:
        return Feed("target", None, "the target class cannot capture aux hidden states")
    if not aux.get("read_from_config"):
        return Feed("target", default, "drafter ids are not read; the default")
    declared, how = None, "no key it reads is set: default"
    for key in aux.get("keys") or []:
        value = config_value(cfg, key.get("where"), key.get("key"))
        if is_id_list(value):
            declared, how = list(value), key_name(key)
            break
    if declared is None:
        return Feed("target", default, how)
    shift = sglang_shift(entry, declared)
    if shift is None:
        return Feed("target", None, f"{how}: the target's offset rule is not understood")
    offset, rule = shift
    return Feed("target", [i + offset for i in declared], f"{how} {rule}")


def sglang_shift(entry: dict, declared: list[int]) -> tuple[int, str] | None:
    """The offset an SGLang target class adds to `declared` (the probe's rule, evaluated), and in words."""
    rule = entry.get("layer_id_offset")
    owner = entry.get("class")
    if rule == "delegates":
        rule = (entry.get("delegates_to") or {}).get("layer_id_offset")
    if isinstance(rule, int) and not isinstance(rule, bool):
        return rule, f"+ {rule} ({owner})"
    if isinstance(rule, dict) and isinstance(rule.get("offset"), int):
        holds = evaluate_condition(str(rule.get("when") or ""), declared)
        if holds is None or (not holds and "otherwise" not in rule):
            return None
        offset = int(rule["offset"]) if holds else int(rule["otherwise"])
        condition = rule["when"] if holds else f"not ({rule['when']})"
        return offset, f"+ {offset} (since {condition}; {owner})"
    return None


def target_entry(report: dict, architecture: str) -> dict | None:
    """The probe's entry for the registered target class serving `architecture` (drafters excluded)."""
    targets = report.get("eagle3_targets")
    for entry in targets if isinstance(targets, list) else []:
        if entry.get("role") in ("drafter", "unregistered") or entry.get("is_drafter"):
            continue
        if architecture in (entry.get("architectures") or []):
            return entry
    return None


def config_value(cfg: dict, where: str | None, key: str | None):
    if not key:
        return None
    if where in (None, "top-level"):
        return cfg.get(key)
    nested = cfg.get(where)
    return nested.get(key) if isinstance(nested, dict) else None


def key_name(key: dict) -> str:
    where, name = key.get("where"), str(key.get("key"))
    return name if where in (None, "top-level") else f"{where}.{name}"


def is_id_list(value) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)


# -- the probe's expressions, evaluated safely (ints, the layer count, the ids; nothing else) -------------
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.FloorDiv: operator.floordiv, ast.Mult: operator.mul}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}
LAYER_COUNT_NAMES = ("n", "N", "num_layers", "num_hidden_layers")


def evaluate_default(expr: str | None, n: int) -> list[int] | None:
    """`(2, n // 2, n - 3)` for n layers; None when the expression is absent or not understood."""
    try:
        node = ast.parse((expr or "").strip(), mode="eval").body
        if not isinstance(node, (ast.Tuple, ast.List)):
            return None
        return [_int_value(e, n) for e in node.elts]
    except (SyntaxError, ValueError, ZeroDivisionError):
        return None


def _int_value(node: ast.AST, n: int) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in LAYER_COUNT_NAMES:
        return n
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_int_value(node.left, n), _int_value(node.right, n))
    raise ValueError(ast.dump(node))


def evaluate_condition(expr: str, ids: list[int]) -> bool | None:
    """A capture method's condition on its ids (`layer_ids[0] == 1`), any name standing for the ids."""
    try:
        return bool(_condition(ast.parse(expr.strip(), mode="eval").body, ids))
    except (SyntaxError, ValueError, IndexError, TypeError):
        return None


def _condition(node: ast.AST, ids: list[int]):
    if isinstance(node, ast.BoolOp):
        values = [_condition(v, ids) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _condition(node.operand, ids)
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        left = _condition(node.left, ids)
        for op, right_node in zip(node.ops, node.comparators):
            right = _condition(right_node, ids)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        index = _condition(node.slice, ids)
        return ids[index]
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "len" and len(node.args) == 1:
        return len(ids)
    if isinstance(node, ast.Name):
        return ids
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, type(None))):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_condition(node.operand, ids)
    raise ValueError(ast.dump(node))
