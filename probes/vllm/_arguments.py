"""Every option the vLLM server's parser has, read from the add_argument calls that build it (a reader, not a probe).

The server's parser is `make_arg_parser`, found where `vllm serve` (vllm/entrypoints/cli/serve.py) imports it
from: vllm/entrypoints/openai/cli_args.py, 0.30 vllm/entrypoints/launchers/cli_args.py, 0.33
vllm/entrypoints/common/cli_args.py (a home not followed there loses the positional MODEL and the frontend's
options: "unrecognized arguments: MODEL" on the commonest line). Its own add_argument calls, `FrontendArgs.add_cli_args`
(one `--field-name` per field of FrontendArgs and its bases, generated in a loop) and
`AsyncEngineArgs.add_cli_args` / `EngineArgs.add_cli_args` (vllm/engine/arg_utils.py), whose
arguments are mostly `group.add_argument("--name", "-alias", **kwargs["field"])` with
`kwargs = get_kwargs(SomeConfig)`: the value type is then what get_kwargs makes of the field's
annotation (Literal -> choices, bool -> BooleanOptionalAction, so `--no-name` too), unless the code
assigns `kwargs["field"]["type"]` first.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import TypeGuard

from compat.probes._ast import base_names, class_fields, literal, unparse
from compat.probes.vllm._common import arg_utils_file, find_class_def, literal_strings, resolve_function
from compat.probes.vllm._kwargs import Traits, class_shapes, derive, traits
from compat.core.tree import EngineTree

SERVE_COMMAND = "vllm/entrypoints/cli/serve.py"
CLI_ARGS_HOMES = ("vllm/entrypoints/common/cli_args.py", "vllm/entrypoints/launchers/cli_args.py",
                  "vllm/entrypoints/openai/cli_args.py")
SCALARS = ("int", "float", "str")
KNOWN_ACTIONS = ("store", "store_true", "store_false", "store_const", "count", "append", "extend")


@dataclass
class Argument:
    name: str  # the first long option string, or the positional's dest
    aliases: list[str]
    value: str  # int | float | str | json | bool (BooleanOptionalAction) | flag (store_true) | list | positional | TEXT
    location: str
    choices: list | None = None
    negatable: bool = False  # BooleanOptionalAction: --no-NAME too
    nargs: str | None = None
    field: str | None = None  # Config.field it is generated from
    annotation: str | None = None
    default: object = None  # the field's default, when a literal (what the setting is when the line omits it)
    item: str | None = None  # a list's items: int | float | str (None: not checked)
    choices_from: str | None = None  # choices computed at run time (a registry, the platform): the expression
    empty_is_none: bool = False  # its type is optional_type(...): "" and "None" are taken as no value

    def to_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, False) or k in ("name", "value")}


@dataclass
class _Reader:
    tree: EngineTree
    classes: dict[str, tuple[str, ast.ClassDef] | None] = field(default_factory=dict)
    rules: Traits = field(default_factory=Traits)
    shapes: dict[str, str] | None = None

    def shape(self, name: str) -> str:
        if self.shapes is None:
            self.shapes = class_shapes(self.tree)
        return self.shapes.get(name, "class")

    def cls(self, name: str) -> tuple[str, ast.ClassDef] | None:
        if name not in self.classes:
            self.classes[name] = find_class_def(self.tree, name, under="vllm")
        return self.classes[name]

    def annotation(self, cls_name: str, field_name: str, depth: int = 0) -> tuple[str, ast.AnnAssign] | None:
        found = self.cls(cls_name)
        if found is None:
            return None
        for stmt in class_fields(found[1]):
            if isinstance(stmt.target, ast.Name) and stmt.target.id == field_name:
                return found[0], stmt
        if depth < 3:
            for base in base_names(found[1]):
                hit = self.annotation(base.split(".")[-1], field_name, depth + 1)
                if hit:
                    return hit
        return None


def cli_file(tree: EngineTree) -> str | None:
    """The module whose make_arg_parser builds the server's parser: the one `vllm serve` imports, else a known
    home, else any module defining it outside run_batch (the batch runner has a make_arg_parser of its own)."""
    found = resolve_function(tree, SERVE_COMMAND, "make_arg_parser")
    if found is not None:
        return found[0]
    for relpath in CLI_ARGS_HOMES:
        if tree.exists(relpath) and b"def make_arg_parser" in tree.read_bytes(relpath):
            return relpath
    hits = [p for p in tree.grep(b"def make_arg_parser", under="vllm/entrypoints") if "run_batch" not in p]
    return sorted(hits)[0] if hits else None


def server_arguments(tree: EngineTree) -> list[Argument]:
    """make_arg_parser's own arguments, the frontend's, then the engine's (the order argparse registers them)."""
    reader = _Reader(tree, rules=traits(tree))
    out: list[Argument] = []
    cli = cli_file(tree)
    if cli is not None:
        module = tree.parse(cli)
        classes = {n.name: n for n in module.body if isinstance(n, ast.ClassDef)}
        for func in _functions(module, "make_arg_parser"):
            out += _calls(reader, cli, func)
            for name in _frontends_called(func):  # FrontendArgs.add_cli_args(parser): maybe a base's method
                out += _frontend_fields(reader, cli, classes[name]) if name in classes else []
    arg_utils = arg_utils_file(tree)
    if arg_utils is not None:
        for func in _functions(tree.parse(arg_utils), "add_cli_args"):
            out += _calls(reader, arg_utils, func)
    seen: set[str] = set()
    unique = []
    for arg in out:
        if arg.name not in seen:
            seen.add(arg.name)
            unique.append(arg)
    return unique


def _functions(node: ast.AST, name: str) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(node) if isinstance(n, ast.FunctionDef) and n.name == name]


def _is_add_argument(node: ast.AST) -> TypeGuard[ast.Call]:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"


def _calls(reader: _Reader, relpath: str, func: ast.FunctionDef) -> list[Argument]:
    assigns = [n for n in ast.walk(func) if isinstance(n, ast.Assign)]
    sources = _kwargs_sources(assigns)
    out = []
    for call in sorted((n for n in ast.walk(func) if _is_add_argument(n)), key=lambda n: n.lineno):
        if any(isinstance(a, ast.JoinedStr) for a in call.args):  # f"--{key}" in a loop: _frontend_fields
            continue
        names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if not names:
            continue
        long_names = [n for n in names if n.startswith("--")]
        first = long_names[0] if long_names else names[0]
        arg = Argument(first, [n for n in names if n != first], "str", reader.tree.loc(relpath, call))
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        splat = next((k.value for k in call.keywords if k.arg is None), None)
        if splat is not None:
            _generated(reader, relpath, assigns, call, splat, sources, arg)
        _explicit(keywords, arg)
        if not first.startswith("-"):
            arg.value = "positional"
        out.append(arg)
    return out


def _explicit(keywords: Mapping[str, ast.AST], arg: Argument) -> None:
    action = keywords.get("action")
    action_text = (literal(action) if isinstance(action, ast.Constant) else unparse(action)) if action is not None else None
    if action_text in ("store_true", "store_false", "store_const", "count"):
        arg.value = "flag"
    elif action_text and "BooleanOptionalAction" in action_text:
        arg.value, arg.negatable = "bool", True
    if "type" in keywords:
        _set_type(arg, unparse(keywords["type"]) or "")
    if action_text and action_text not in KNOWN_ACTIONS and "BooleanOptionalAction" not in action_text:
        arg.value = "unknown"  # the release's own Action class parses the value
    if "choices" in keywords:
        _set_choices(arg, keywords["choices"])
    if "nargs" in keywords:
        arg.nargs = str(literal(keywords["nargs"]))


def _set_choices(arg: Argument, node: ast.AST) -> None:
    """Literal choices are listed; computed ones (a registry's keys, get_args(Alias), the platform's device) are
    kept as their expression: doctor does not judge a value against choices it cannot list."""
    value = literal(node)
    if isinstance(value, (list, tuple, set)):  # a set has no order: sorted, so the fact is the same in every process
        arg.choices, arg.choices_from = (sorted(value, key=str) if isinstance(value, set) else list(value)), None
    else:
        arg.choices, arg.choices_from = None, unparse(node)


def _set_type(arg: Argument, text: str) -> None:
    arg.value, arg.empty_is_none = _parse_name(text), text.startswith("optional_type(")


def _parse_name(text: str) -> str:
    """`int`, `optional_type(int)`, `json.loads`, `human_readable_int` -> what the value must be."""
    for scalar in SCALARS:
        if text in (scalar, f"optional_type({scalar})"):
            return scalar
    if "json" in text:
        return "json"
    return text


def _kwargs_sources(assigns: list[ast.Assign]) -> dict[str, str]:
    """`model_kwargs = get_kwargs(ModelConfig)` -> {"model_kwargs": "ModelConfig"}."""
    out = {}
    for node in assigns:
        value = node.value
        if isinstance(value, ast.Call) and value.args and getattr(value.func, "id", None) == "get_kwargs":
            if isinstance(value.args[0], ast.Name):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        out[target.id] = value.args[0].id
    return out


def _generated(reader, relpath, assigns, call, splat, sources, arg: Argument) -> None:
    """`**model_kwargs["dtype"]`: what get_kwargs makes of ModelConfig.dtype, then the overrides assigned before."""
    if isinstance(splat, ast.Dict):  # `**{**cache_kwargs["x"], "default": None}`
        splat = next((v for k, v in zip(splat.keys, splat.values) if k is None), splat)
    if not (isinstance(splat, ast.Subscript) and isinstance(splat.value, ast.Name) and isinstance(splat.slice, ast.Constant)):
        arg.value = "unknown"
        return
    cls_name, field_name = sources.get(splat.value.id), str(splat.slice.value)
    arg.field = f"{cls_name}.{field_name}"
    found = reader.annotation(cls_name, field_name) if cls_name else None
    if found is not None:
        where, stmt = found
        arg.annotation = unparse(stmt.annotation)
        arg.default = _literal_default(stmt)
        derive(reader.tree, where, stmt.annotation, arg, reader.rules, reader.shape)
    else:
        arg.value = "unknown"
    for node in assigns:
        if node.lineno >= call.lineno:
            continue
        for target in node.targets:
            if (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant)
                    and unparse(target.value) == unparse(splat)):
                if target.slice.value == "type":
                    _set_type(arg, unparse(node.value) or "")
                elif target.slice.value == "choices":
                    _set_choices(arg, node.value)


def _literal_default(stmt: ast.AnnAssign) -> object:
    """`tensor_parallel_size: int = 1` -> 1; `Field(default=1, ...)` -> 1; anything else None."""
    value = stmt.value
    if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "Field":
        value = next((k.value for k in value.keywords if k.arg == "default"), None)
    result = literal(value) if isinstance(value, ast.Constant) else None
    return result if isinstance(result, (bool, int, float, str)) else None


def _frontends_called(func: ast.FunctionDef) -> list[str]:
    """`FrontendArgs.add_cli_args(parser)` in make_arg_parser -> ["FrontendArgs"]."""
    return [n.func.value.id for n in ast.walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == "add_cli_args" and isinstance(n.func.value, ast.Name) and "Frontend" in n.func.value.id]


def _frontend_fields(reader: _Reader, relpath: str, cls: ast.ClassDef) -> list[Argument]:
    """One `--field-name` per field of the frontend class and its bases (add_cli_args loops over get_kwargs(cls))."""
    out = []
    chain = [cls]
    while len(chain) < 4:
        bases = [reader.cls(b.split(".")[-1]) for b in base_names(chain[-1])]
        found = next((b for b in bases if b is not None), None)
        if found is None:
            break
        chain.append(found[1])
    overrides = _frontend_overrides(chain)
    for owner in chain:
        for stmt in class_fields(owner):
            if not isinstance(stmt.target, ast.Name) or stmt.target.id.startswith("_"):
                continue
            name = stmt.target.id
            arg = Argument("--" + name.replace("_", "-"), [], "str", reader.tree.loc(relpath, stmt),
                           field=f"{cls.name}.{name}", annotation=unparse(stmt.annotation))
            derive(reader.tree, relpath, stmt.annotation, arg, reader.rules, reader.shape)
            for key, value in overrides.get(name, []):
                _override(arg, key, value)
            out.append(arg)
    return out


def _frontend_overrides(chain: list[ast.ClassDef]) -> dict[str, list[tuple[str, ast.AST | None]]]:
    """`frontend_kwargs["allowed_origins"]["type"] = json.loads` and `del frontend_kwargs["x"]["nargs"]` in the
    frontend classes' methods (add_cli_args, from 0.1x _customize_cli_kwargs, a base's first): field ->
    [(key, value; None: deleted)], in the order they run."""
    out: dict[str, list[tuple[str, ast.AST | None]]] = {}
    for owner in reversed(chain):
        for func in [n for n in owner.body if isinstance(n, ast.FunctionDef)]:
            steps: list[tuple[int, ast.expr, ast.AST | None]] = []
            for node in ast.walk(func):
                if isinstance(node, ast.Assign):
                    steps += [(node.lineno, t, node.value) for t in node.targets]
                elif isinstance(node, ast.Delete):
                    steps += [(node.lineno, t, None) for t in node.targets]
            for _, target, value in sorted(steps, key=lambda step: step[0]):
                if (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant)
                        and isinstance(target.value, ast.Subscript) and isinstance(target.value.slice, ast.Constant)):
                    out.setdefault(str(target.value.slice.value), []).append((str(target.slice.value), value))
    return out


def _override(arg: Argument, key: str, value: ast.AST | None) -> None:
    if key == "type" and value is not None:
        _set_type(arg, unparse(value) or "")
        arg.item = None
    elif key == "nargs":
        arg.nargs = None if value is None else str(literal(value))
        if value is None and arg.value == "list":
            arg.value = "str"
    elif key == "choices" and value is not None:
        _set_choices(arg, value)
    elif key == "action" and value is not None:
        text = literal(value) if isinstance(value, ast.Constant) else unparse(value)
        if text not in KNOWN_ACTIONS:
            arg.value = "unknown"  # the release's own Action class parses the value
