"""The speculative-decoding command-line flags of `vllm serve` (`EngineArgs.add_cli_args`).

Flags are read from the `add_argument` calls. Most are generated from config dataclass fields
(`vllm_group.add_argument("--speculative-config", **vllm_kwargs["speculative_config"])`), so
the parser is whatever the code assigns to `vllm_kwargs["speculative_config"]["type"]` (vLLM
sets `optional_type(json.loads)` there: the value is a JSON string), or else what vLLM's
`get_kwargs` derives from the field's annotation (a `Literal` becomes choices, `| None` wraps
the type in `optional_type`). The annotation is reported either way.
"""

from __future__ import annotations

import ast
import re
from typing import TypeGuard, cast

from compat.probes import probe
from compat.probes._ast import find_class_field, find_def, literal, unparse
from compat.probes.vllm._common import arg_utils_file, literal_strings, speculative_config_class
from compat.core.tree import EngineTree

SPEC_FLAG = re.compile(r"^--spec(ulative)?[-_]")
VLLM_CONFIG_HOMES = ("vllm/config/vllm.py", "vllm/config/__init__.py", "vllm/config.py")
SCALARS = {"int": "int", "str": "str", "float": "float"}


@probe("vllm", "cli_flags", "Speculative-decoding CLI flags", order=30)
def cli_flags(tree: EngineTree) -> list[dict]:
    relpath = arg_utils_file(tree)
    func = find_def(tree, relpath, "add_cli_args") if relpath else None
    if func is None or relpath is None:
        return []
    assigns = [n for n in ast.walk(func) if isinstance(n, ast.Assign)]
    groups = _groups(assigns)
    kwargs_sources = _kwargs_sources(assigns)
    out = []
    for call in sorted((n for n in ast.walk(func) if _is_add_argument(n)), key=lambda n: n.lineno):
        names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-")]
        long_names = [n for n in names if n.startswith("--")]
        if not long_names or not any(SPEC_FLAG.match(n) for n in long_names):
            continue
        flag = {
            "name": long_names[0],
            "aliases": [n for n in names if n != long_names[0]],
            "parse": None,
            "choices": None,
            "group": groups.get(_holder(call), _holder(call)),
            "location": tree.loc(relpath, call),
        }
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        if "type" in keywords:
            flag["parse"] = unparse(keywords["type"])
        if "choices" in keywords:
            flag["choices"] = literal(keywords["choices"])
        splat = next((k.value for k in call.keywords if k.arg is None), None)
        if splat is not None:
            flag.update(_from_generated_kwargs(tree, relpath, assigns, call, splat, kwargs_sources, flag))
        out.append(flag)
    return out


def _is_add_argument(node: ast.AST) -> TypeGuard[ast.Call]:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"


def _holder(call: ast.Call) -> str:
    """`vllm_group` of `vllm_group.add_argument(...)` (_is_add_argument checked the attribute call)."""
    return unparse(cast(ast.Attribute, call.func).value)


def _groups(assigns: list[ast.Assign]) -> dict[str, str]:
    """`vllm_group = parser.add_argument_group(title="VllmConfig", ...)` -> {"vllm_group": "VllmConfig"}."""
    out: dict[str, str] = {}
    for node in assigns:
        if isinstance(node.value, ast.Call):
            call = node.value
            if isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument_group":
                title = next((k.value for k in call.keywords if k.arg == "title"), call.args[0] if call.args else None)
                if isinstance(title, ast.Constant) and isinstance(title.value, str):
                    for target in node.targets:
                        out[unparse(target)] = title.value
    return out


def _kwargs_sources(assigns: list[ast.Assign]) -> dict[str, str]:
    """`vllm_kwargs = get_kwargs(VllmConfig)` -> {"vllm_kwargs": "VllmConfig"}."""
    out = {}
    for node in assigns:
        if isinstance(node.value, ast.Call) and node.value.args:
            if getattr(node.value.func, "id", None) == "get_kwargs" and isinstance(node.value.args[0], ast.Name):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        out[target.id] = node.value.args[0].id
    return out


def _from_generated_kwargs(tree, relpath, assigns, call, splat, sources, flag) -> dict:
    """`**vllm_kwargs["speculative_config"]`: an override assigned before the call, else the annotation."""
    if not (isinstance(splat, ast.Subscript) and isinstance(splat.value, ast.Name) and isinstance(splat.slice, ast.Constant)
            and isinstance(splat.slice.value, str)):
        return {}
    holder, field = splat.value.id, splat.slice.value
    out: dict = {"field": f"{sources.get(holder, holder)}.{field}"}
    for node in assigns:
        if node.lineno < call.lineno:
            for target in node.targets:
                if (
                    isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant)
                    and target.slice.value in ("type", "choices")
                    and unparse(target.value) == unparse(splat)
                ):
                    key = "parse" if target.slice.value == "type" else "choices"
                    out[key] = unparse(node.value) if key == "parse" else literal(node.value)
                    out[f"{key}_location"] = tree.loc(relpath, node)
    annotation = _annotation(tree, sources.get(holder), field)
    if annotation is not None:
        where, stmt = annotation
        out["annotation"] = unparse(stmt.annotation)
        out["annotation_location"] = tree.loc(where, stmt)
        if "parse" not in out and not flag.get("parse"):  # no override: what get_kwargs makes of the type
            derived = _derive(tree, where, stmt.annotation)
            out["parse"] = derived.get("parse")
            if "choices" not in out and not flag.get("choices") and derived.get("choices"):
                out["choices"] = derived["choices"]
    return out


def _annotation(tree: EngineTree, cls_name: str | None, field: str) -> tuple[str, ast.AnnAssign] | None:
    if cls_name == "SpeculativeConfig":
        found = speculative_config_class(tree)
        if found:
            for stmt in found[1].body:
                if isinstance(stmt, ast.AnnAssign) and getattr(stmt.target, "id", None) == field:
                    return found[0], stmt
        return None
    if cls_name == "VllmConfig":
        homes = VLLM_CONFIG_HOMES
    else:
        return None
    for relpath in homes:
        if tree.exists(relpath):
            field_stmt = find_class_field(tree, relpath, cls_name, field)
            if field_stmt is not None:
                return relpath, field_stmt
    return None


def _derive(tree: EngineTree, relpath: str, annotation: ast.AST) -> dict:
    """What vLLM's get_kwargs makes of an annotation, in the same spirit (not every case)."""
    text = unparse(annotation)
    optional = "None" in text or text.startswith("Optional[")
    choices = literal_strings(tree, relpath, annotation)
    inner: str | None
    if choices:
        inner = "str"
    else:
        names = {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)} - {"Optional", "None", "SkipValidation"}
        scalar = [SCALARS[n] for n in names if n in SCALARS]
        if "bool" in names:
            return {"parse": "argparse.BooleanOptionalAction"}
        inner = scalar[0] if len(scalar) == 1 else "json (pydantic TypeAdapter)" if names else None
    parse = f"optional_type({inner})" if optional and inner else inner
    return {"parse": parse, "choices": (choices + ["None"]) if choices and optional else choices or None}
