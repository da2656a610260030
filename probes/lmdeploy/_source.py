"""Readers the LMDeploy probes share: where a release says what, read by ast and found by what the code does.

LMDeploy's speculative decoding lives in its PyTorch engine (0.11.0+). The pieces, each found by a grep for what it
does (not by a file name, so a move between releases is still read):
- the CLI: `add_argument('--speculative-algorithm', ...)` and its siblings, in an `ArgumentHelper` method
  (lmdeploy/cli/utils.py `add_spec_group`), added to the parsers that call that method (cli/serve.py: api_server);
- the proposers: classes under lmdeploy/pytorch/spec_decode decorated `@SPEC_PROPOSERS.register_module(name=...)`;
- the model map: `MODULE_MAP.update({'Eagle3LlamaForCausalLM': f'{LMDEPLOY_PYTORCH_MODEL_PATH}.llama_eagle3...'})`
  (lmdeploy/pytorch/models/module_map.py): the architecture name -> the class the engine builds;
- the config builders: `AutoModelConfigBuilder` subclasses (lmdeploy/pytorch/configurations/*.py), each with a
  `condition(hf_config)` (which configs it takes) and a `build(..., is_draft_model, spec_method)` that names a draft's
  architecture (`hf_config.architectures[0] = ...`), refuses methods (`assert spec_method == 'deepseek_mtp'`) and sets
  the layers an EAGLE-3 target captures (`hf_config.aux_hidden_state_layers = (2, n // 2, n - 3)`).
"""

from __future__ import annotations

import ast
import re
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

from compat.core.tree import EngineTree
from compat.probes._ast import methods, safe_parse

CLI = "lmdeploy/cli"
SPEC_DECODE = "lmdeploy/pytorch/spec_decode"
MODELS = "lmdeploy/pytorch/models"
CONFIGURATIONS = "lmdeploy/pytorch/configurations"
ALGORITHM_FLAG = "--speculative-algorithm"


_MEMO: "weakref.WeakKeyDictionary[EngineTree, dict[str, Any]]" = weakref.WeakKeyDictionary()


def memo(tree: EngineTree, key: str, build: Callable[[EngineTree], Any]) -> Any:
    """One reading per tree of what several probes ask (the model map, the config builders): never mutate it."""
    slot = _MEMO.setdefault(tree, {})
    if key not in slot:
        slot[key] = build(tree)
    return slot[key]


def call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def strings(node: ast.AST | None) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)] if node else []


def module_constants(module: ast.Module) -> dict[str, str]:
    """NAME -> 'value' for the module's top-level string assignments (`_EAGLE3_DEEPSEEK_ARCH = '...'`)."""
    out = {}
    for stmt in module.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = string(stmt.value)
            if value is not None:
                out[stmt.targets[0].id] = value
    return out


# -- the CLI ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Flag:
    name: str
    call: ast.Call
    relpath: str
    function: str  # the ArgumentHelper method that adds it

    def value(self, name: str):
        node = keyword(self.call, name)
        if node is None:
            return None
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError):
            return ast.unparse(node)


def speculative_flags(tree: EngineTree) -> list[Flag]:
    """Every `add_argument('--speculative-...')` of the CLI, in source order."""
    out: list[Flag] = []
    for relpath in tree.grep(ALGORITHM_FLAG.encode(), under=CLI):
        module = safe_parse(tree, relpath)
        for func in (n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))) if module else ():
            for call in (n for n in ast.walk(func) if isinstance(n, ast.Call) and call_name(n) == "add_argument"):
                name = string(call.args[0]) if call.args else None
                if name and name.startswith("--speculative-"):
                    out.append(Flag(name, call, relpath, func.name))
    first: dict[str, Flag] = {}
    for flag in sorted(out, key=lambda f: (f.relpath, f.call.lineno)):
        first.setdefault(flag.name, flag)
    return list(first.values())


def flag_adders(tree: EngineTree, function: str) -> list[tuple[str, ast.Call, str]]:
    """Where the CLI calls `ArgumentHelper.<function>(parser)`: (relpath, call, the enclosing function)."""
    out = []
    for relpath in tree.grep(function.encode(), under=CLI):
        module = safe_parse(tree, relpath)
        for func in (n for n in ast.walk(module) if isinstance(n, ast.FunctionDef)) if module else ():
            for call in (n for n in ast.walk(func) if isinstance(n, ast.Call) and call_name(n) == function):
                if func.name != function:
                    out.append((relpath, call, func.name))
    return out


def subcommand_of(tree: EngineTree, relpath: str, function: str) -> str | None:
    """The sub-command a parser-building function adds: `add_parser('api_server', ...)` in it."""
    module = safe_parse(tree, relpath)
    func = next((n for n in ast.walk(module) if isinstance(n, ast.FunctionDef) and n.name == function), None) if module else None
    for call in (n for n in ast.walk(func) if isinstance(n, ast.Call) and call_name(n) == "add_parser") if func else ():
        name = string(call.args[0]) if call.args else None
        if name:
            return name
    return None


# -- the proposers ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Proposer:
    method: str
    cls: str
    relpath: str
    node: ast.ClassDef
    bases: tuple[str, ...]


def registered_proposers(tree: EngineTree) -> list[Proposer]:
    """`@SPEC_PROPOSERS.register_module(name='eagle3') class Eagle3(DeepseekMTP)`: one per method name."""
    out = []
    for relpath in tree.grep(b"register_module", under=SPEC_DECODE):
        module = safe_parse(tree, relpath)
        for cls in (n for n in module.body if isinstance(n, ast.ClassDef)) if module else ():
            for dec in cls.decorator_list:
                if isinstance(dec, ast.Call) and call_name(dec) == "register_module":
                    name = string(keyword(dec, "name")) or (string(dec.args[0]) if dec.args else None) or cls.name
                    bases = tuple(ast.unparse(b) for b in cls.bases)
                    out.append(Proposer(name, cls.name, relpath, cls, bases))
    return sorted(out, key=lambda p: (p.relpath, p.node.lineno))


# -- the model map -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mapped:
    architecture: str
    target: str  # lmdeploy.pytorch.models.llama_eagle3.Eagle3LlamaForCausalLM
    relpath: str
    line: int

    @property
    def module_relpath(self) -> str:
        return self.target.rsplit(".", 1)[0].replace(".", "/") + ".py"

    @property
    def cls(self) -> str:
        return self.target.rsplit(".", 1)[-1]


def module_map(tree: EngineTree) -> dict[str, Mapped]:
    """Architecture -> the class it builds, from every dict literal given to MODULE_MAP (first entry wins)."""
    return dict(memo(tree, "module_map", _module_map))


def _module_map(tree: EngineTree) -> dict[str, Mapped]:
    out: dict[str, Mapped] = {}
    for relpath in tree.grep(b"MODULE_MAP", under=MODELS):
        module = safe_parse(tree, relpath)
        if module is None:
            continue
        constants = module_constants(module)
        for node in ast.walk(module):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    arch, target = string(key), _dotted(value, constants)
                    if key is not None and arch and target and "." in target:
                        out.setdefault(arch, Mapped(arch, target, relpath, key.lineno))
    return out


def _dotted(node: ast.AST, constants: dict[str, str]) -> str | None:
    """'a.b.C' or f'{PATH}.b.C' with PATH a module constant."""
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name) and value.value.id in constants:
                parts.append(constants[value.value.id])
            else:
                return None
        return "".join(parts)
    return string(node)


def class_location(tree: EngineTree, mapped: Mapped) -> str | None:
    module = safe_parse(tree, mapped.module_relpath) if tree.exists(mapped.module_relpath) else None
    cls = next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == mapped.cls), None) if module else None
    return tree.loc(mapped.module_relpath, cls) if cls is not None else None


# -- the config builders -------------------------------------------------------------------------------------
@dataclass
class Builder:
    name: str
    relpath: str
    node: ast.ClassDef
    bases: list[str]
    architectures: list[str] = field(default_factory=list)  # what its condition compares architectures with
    model_types: list[str] = field(default_factory=list)  # ... and model_type with
    condition: str | None = None
    condition_line: int | None = None
    draft_architectures: list[tuple[str, ast.AST]] = field(default_factory=list)  # set when building a draft
    renames: list[tuple[str, ast.Assign]] = field(default_factory=list)  # `spec_method.capitalize() + architectures[0]`
    required_draft: list[tuple[str, ast.AST]] = field(default_factory=list)  # a draft architecture it insists on
    methods: list[tuple[list[str], ast.AST]] = field(default_factory=list)  # the spec methods it admits
    aux_layers: list[tuple[str, str, ast.AST]] = field(default_factory=list)  # (value, when, node)
    delegates_to: list[str] = field(default_factory=list)  # `OtherBuilder.build(...)` it hands the config to


def config_builders(tree: EngineTree) -> list[Builder]:
    return list(memo(tree, "config_builders", _config_builders))


def _config_builders(tree: EngineTree) -> list[Builder]:
    out = []
    for relpath in sorted(f for f in tree.files(CONFIGURATIONS) if f.endswith(".py")):
        module = safe_parse(tree, relpath)
        if module is None:
            continue
        constants = module_constants(module)
        for cls in (n for n in module.body if isinstance(n, ast.ClassDef)):
            funcs = methods(cls)
            if "condition" not in funcs or any(isinstance(n, ast.Raise) for n in funcs["condition"].body):  # the base
                continue
            builder = Builder(cls.name, relpath, cls, [ast.unparse(b) for b in cls.bases])
            if "condition" in funcs:
                _read_condition(builder, funcs["condition"], constants)
            if "build" in funcs:
                _read_build(builder, funcs["build"], constants)
            out.append(builder)
    return out


def _read_condition(builder: Builder, func: ast.AST, constants: dict[str, str]) -> None:
    ret = next((n for n in ast.walk(func) if isinstance(n, ast.Return) and n.value is not None), None)
    if ret is None or ret.value is None:
        return
    builder.condition, builder.condition_line = ast.unparse(ret.value), ret.lineno
    for compare in (n for n in ast.walk(func) if isinstance(n, ast.Compare)):
        left = ast.unparse(compare.left)
        found = [s for c in compare.comparators for s in _strings_or_constants(c, constants)]
        if "model_type" in left:
            builder.model_types += found
        elif "architectures" in left or "arch" in left:
            builder.architectures += found
        elif "architectures" in "".join(ast.unparse(c) for c in compare.comparators):  # `x in hf_config.architectures`
            builder.architectures += _strings_or_constants(compare.left, constants)


def _strings_or_constants(node: ast.AST, constants: dict[str, str]) -> list[str]:
    return strings(node) + [constants[n.id] for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in constants]


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _read_build(builder: Builder, func: ast.AST, constants: dict[str, str]) -> None:
    for node, tests in _walk_with_tests(func, ()):
        draft = any(_mentions(t, "is_draft_model") and not negated for t, negated in tests)
        if isinstance(node, ast.Assign):
            target = ast.unparse(node.targets[0])
            if target.endswith("architectures[0]") or target.endswith(".architectures"):
                if draft and isinstance(node.value, ast.BinOp) and _mentions(node.value, "spec_method"):
                    builder.renames.append((ast.unparse(node.value), node))
                elif draft:
                    builder.draft_architectures += [(s, node) for s in _strings_or_constants(node.value, constants)]
            elif target.endswith("aux_hidden_state_layers"):
                when = " and ".join(_test_text(t, n) for t, n in tests)
                builder.aux_layers.append((ast.unparse(node.value), when, node))
            elif isinstance(node.targets[0], ast.Name) and "spec_method" in node.targets[0].id:  # supported_spec_methods = {...}
                builder.methods.append((strings(node.value), node))
        elif isinstance(node, ast.Assert) and _mentions(node.test, "spec_method") and strings(node.test):
            builder.methods.append((strings(node.test), node))
        elif isinstance(node, ast.If) and any(isinstance(s, ast.Raise) for s in node.body) and _refuses_other_methods(node.test):
            builder.methods.append((_refuses_other_methods(node.test), node))  # `if spec_method != 'hy3_mtp': raise`
        elif isinstance(node, ast.If) and draft and any(isinstance(s, ast.Raise) for s in node.body):
            for compare in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare) and "architectures" in ast.unparse(n)):
                # `if not architectures or architectures[0] != _EAGLE3_DEEPSEEK_ARCH: raise ValueError(...)`
                builder.required_draft += [(s, node) for c in compare.comparators for s in _strings_or_constants(c, constants)]
        elif isinstance(node, ast.Call) and call_name(node) == "build" and isinstance(node.func, ast.Attribute):
            owner = ast.unparse(node.func.value)
            if owner.endswith("Builder") and owner not in builder.delegates_to:
                builder.delegates_to.append(owner)


def _refuses_other_methods(test: ast.AST) -> list[str]:
    for compare in (n for n in ast.walk(test) if isinstance(n, ast.Compare) and len(n.ops) == 1):
        if isinstance(compare.ops[0], ast.NotEq) and _mentions(compare.left, "spec_method"):
            return strings(compare.comparators[0])
    return []


def _walk_with_tests(node: ast.AST, tests: tuple) -> list[tuple[ast.AST, tuple]]:
    """Every node under `node` with the `if` tests it sits under ((test, in the else branch), ...)."""
    out: list[tuple[ast.AST, tuple]] = []
    for child in ast.iter_child_nodes(node):
        out += _walk_one(child, tests)
    return out


def _walk_one(node: ast.AST, tests: tuple) -> list[tuple[ast.AST, tuple]]:
    out: list[tuple[ast.AST, tuple]] = [(node, tests)]
    if isinstance(node, ast.If):
        out += _walk_one(node.test, tests)
        for stmt in node.body:
            out += _walk_one(stmt, tests + ((node.test, False),))
        for stmt in node.orelse:
            out += _walk_one(stmt, tests + ((node.test, True),))
        return out
    return out + _walk_with_tests(node, tests)


# -- what a target class captures ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Capture:
    relpath: str
    node: ast.AST
    source: str  # "config": getattr(config, 'aux_hidden_state_layers'); "build context": the draft's (DFlash) ids


def captures(tree: EngineTree, relpath: str, seen: frozenset[str] = frozenset()) -> Capture | None:
    """Where a model module (or a model module it imports a class from) reads the layers to capture."""
    if not tree.exists(relpath):
        return None
    data = tree.read_bytes(relpath)
    module = safe_parse(tree, relpath) if b"aux_hidden_state_layers" in data else None  # most modules: no parse
    for node in ast.walk(module) if module else ():
        if isinstance(node, ast.Attribute) and node.attr == "target_aux_hidden_state_layers":
            return Capture(relpath, node, "build context")
        if isinstance(node, ast.Call) and call_name(node) == "getattr" and "aux_hidden_state_layers" in strings(node):
            return Capture(relpath, node, "config")
    # one level of delegation: kimi_k25 builds its language model from `from .kimi_k2_language import KimiK2ForCausalLM`
    for match in _RELATIVE_IMPORT.finditer(data):
        other = f"{relpath.rsplit('/', 1)[0]}/{match.group(1).decode().replace('.', '/')}.py"
        if other not in seen and other != relpath and _MODEL_CLASS.search(match.group(2)):
            found = captures(tree, other, seen | {relpath})
            if found is not None:
                return found
    return None


_RELATIVE_IMPORT = re.compile(rb"^from \.([\w.]+) import ([^\n]+)", re.M)
_MODEL_CLASS = re.compile(rb"\w+(?:ForCausalLM|Model)\b")


# -- what a release refuses -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Refusal:
    relpath: str
    node: ast.Raise | ast.Assert
    function: str
    when: str | None  # the `if` tests it sits under, as written

    def to_json(self, tree: EngineTree) -> dict:
        node = self.node
        if isinstance(node, ast.Assert):
            kind, message = "AssertionError", _message(node.msg)
            condition: str | None = f"not ({ast.unparse(node.test)})"
        else:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            kind = ast.unparse(exc) if exc is not None else "re-raise"
            message = _message(node.exc.args[0]) if isinstance(node.exc, ast.Call) and node.exc.args else None
            condition = self.when
        return {"raises": kind, "message": message, "when": condition, "function": self.function,
                "location": tree.loc(self.relpath, node)}


def _message(node: ast.AST | None) -> str | None:
    """The message as written: a string's text, an f-string's source, implicit concatenations joined."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"
                       for v in node.values if isinstance(v, (ast.Constant, ast.FormattedValue)))
    return ast.unparse(node)


def _test_text(test: ast.AST, negated: bool) -> str:
    text = ast.unparse(test)
    if negated:
        return f"not ({text})"
    return f"({text})" if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else text


def raises(relpath: str, func: ast.AST, function: str | None = None) -> list[Refusal]:
    """Every raise and assert in `func`, with the `if` tests it sits under."""
    name = function or str(getattr(func, "name", ""))
    out = []
    for node, tests in _walk_with_tests(func, ()):
        if isinstance(node, (ast.Raise, ast.Assert)):
            when = " and ".join(_test_text(t, negated) for t, negated in tests) or None
            out.append(Refusal(relpath, node, name, when))
    return out


# -- draft architectures a builder names ---------------------------------------------------------------------
def renamed(expression: ast.AST, method: str, base: str) -> str | None:
    """`spec_method.capitalize() + hf_config.architectures[0]` for one method and one draft architecture."""
    if isinstance(expression, ast.BinOp) and isinstance(expression.op, ast.Add):
        left, right = renamed(expression.left, method, base), renamed(expression.right, method, base)
        return left + right if left is not None and right is not None else None
    if isinstance(expression, ast.Name) and "spec_method" in expression.id:
        return method
    if isinstance(expression, ast.Call) and isinstance(expression.func, ast.Attribute) and not expression.args:
        inner = renamed(expression.func.value, method, base)
        if inner is not None and expression.func.attr in ("capitalize", "upper", "lower", "title"):
            return str(getattr(inner, expression.func.attr)())
        return None
    if "architectures" in ast.unparse(expression):
        return base
    return string(expression)


def capture_classes(tree: EngineTree, mapped: dict[str, Mapped]) -> dict[str, tuple[list[str], Capture]]:
    """target class path -> (its architectures, where it reads the layers to capture)."""
    out: dict[str, tuple[list[str], Capture]] = {}
    known: dict[str, Capture | None] = {}
    for arch, entry in mapped.items():
        if entry.module_relpath not in known:
            known[entry.module_relpath] = captures(tree, entry.module_relpath)
        found = known[entry.module_relpath]
        if found is not None:
            out.setdefault(entry.target, ([], found))[0].append(arch)
    return out


def layer_count_expression(value: str) -> str:
    """`(2, cfg.num_layers // 2, cfg.num_layers - 3)` -> `(2, n // 2, n - 3)`."""
    try:
        node = ast.parse(value, mode="eval")
    except SyntaxError:
        return value

    class _N(ast.NodeTransformer):
        def visit_Attribute(self, attr: ast.Attribute) -> ast.AST:
            return ast.Name("n") if attr.attr in ("num_layers", "num_hidden_layers") else self.generic_visit(attr)

        def visit_Name(self, name: ast.Name) -> ast.AST:
            return ast.Name("n") if name.id in ("num_layers", "num_hidden_layers") else name

    return ast.unparse(_N().visit(node))


def reads_draft_inputs(tree: EngineTree, relpath: str) -> bool:
    """A draft model's module reads what only a draft is given: the target's hidden states (EAGLE, MTP) or the
    speculative mask token (DFlash)."""
    if not tree.exists(relpath):
        return False
    data = tree.read_bytes(relpath)
    return b"target_hidden_states" in data or b"speculative_mask_token_id" in data
