"""The engine's side of LMDeploy's speculative path, read into a spec_validation program (the spec_validation probe's
second stage): what the PyTorch engine builds from the line's config when it starts, before any weight loads.

Found by what the code does: `ConfigBuilder` (lmdeploy/pytorch/engine/config_builder.py, 0.12.0+) with its
`build_cache_config(engine_config)`, `build_dist_config(engine_config)` and `build_specdecode_config(target_model,
speculative_config, engine_config, cache_config, dist_config)` (the order Engine.__init__ runs them in,
pytorch/engine/engine.py), `SpecDecodeConfig.from_config` and the config dataclasses they build (CacheConfig,
DistConfig, SpecDecodeConfig: their fields), and the DFlash validators those functions call (spec_decode/). The
engine config is `PytorchEngineConfig(...)` as the CLI builds it (lmdeploy/cli/serve.py: `dp=args.dp, ...`): its
fields' defaults and the keywords the CLI gives from the line's arguments; its `__post_init__` is not walked (it
checks other settings). The CLI builds it under `if backend == 'pytorch':` (the release picks the backend from the
model when the line says another): the stage's `when`.

A function a nested definition calls (`_build_draft_dist_ctx`) is not walked: the walk does not enter nested
definitions; its raises stay in the fact's `unwalked`.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from compat.core.tree import EngineTree
from compat.probes._ast import class_fields, field_name, methods, safe_parse
from compat.probes._validation import Program, field_entry
from compat.probes.lmdeploy._source import CLI, SPEC_DECODE, call_name

BUILDER = "ConfigBuilder"
STEPS = ("build_cache_config", "build_dist_config", "build_specdecode_config")
CONFIGS = ("CacheConfig", "DistConfig", "SpecDecodeConfig")
ENGINE_CONFIG = "PytorchEngineConfig"


def engine_stage(tree: EngineTree, program: Program) -> tuple[dict[str, Any], list[dict]] | None:
    """Reads the engine's side into `program`: (the fact's "engine" stage, the config classes' specs), or None."""
    builder = _class(tree, BUILDER, "lmdeploy/pytorch")
    engine_config = _class(tree, ENGINE_CONFIG, "lmdeploy")
    from_args = _from_args(tree)
    if builder is None or engine_config is None or from_args is None:
        return None
    steps = methods(builder[1])
    if any(step not in steps for step in STEPS):
        return None
    specs = [_dataclass(*engine_config)]
    for name in CONFIGS:
        found = _class(tree, name, "lmdeploy/pytorch")
        if found is not None:
            program.add_class(*found)
            specs.append(_dataclass(*found))
    program.add_class(*builder)
    for step in STEPS:
        program.function(builder[0], steps[step], f"{BUILDER}.{step}", BUILDER, whole=True)
    _validators(tree, program)
    keywords, when = from_args
    stage = {"config_class": ENGINE_CONFIG, "from_args": keywords, "when": when,
             "cache": f"{BUILDER}.build_cache_config", "dist": f"{BUILDER}.build_dist_config",
             "function": f"{BUILDER}.build_specdecode_config", "location": tree.loc(builder[0], steps[STEPS[-1]])}
    return stage, specs


def _class(tree: EngineTree, name: str, under: str) -> tuple[str, ast.ClassDef] | None:
    for relpath in tree.grep(f"class {name}".encode(), under=under):
        module = safe_parse(tree, relpath)
        for node in module.body if module else ():
            if isinstance(node, ast.ClassDef) and node.name == name:
                return relpath, node
    return None


def _dataclass(relpath: str, cls: ast.ClassDef) -> dict:
    """A dataclass's fields with their defaults; its __post_init__ is not run (construction left empty)."""
    return {"name": cls.name, "file": relpath, "line": cls.lineno, "construction": [],
            "fields": {field_name(f): field_entry(f) for f in class_fields(cls)}}


def _from_args(tree: EngineTree) -> tuple[dict[str, str], dict[str, str]] | None:
    """{field: dest} of the CLI's `PytorchEngineConfig(field=args.dest, ...)`, and the test it is built under
    (`if backend == 'pytorch':` -> {"setting": "backend", "equals": "pytorch", "location"})."""
    for relpath in tree.grep(ENGINE_CONFIG.encode() + b"(", under=CLI):
        module = safe_parse(tree, relpath)
        for node in ast.walk(module) if module else ():
            if not isinstance(node, ast.If):
                continue
            test = node.test
            if not (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and len(test.comparators) == 1
                    and isinstance(test.ops[0], ast.Eq) and isinstance(test.comparators[0], ast.Constant)):
                continue
            for call in (n for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Call)):
                if call_name(call) == ENGINE_CONFIG:
                    keywords = {k.arg: k.value.attr for k in call.keywords if k.arg and isinstance(k.value, ast.Attribute)
                                and isinstance(k.value.value, ast.Name) and k.value.value.id == "args"}
                    return keywords, {"setting": test.left.id, "equals": str(test.comparators[0].value),
                                      "location": tree.loc(relpath, node)}
    return None


def _validators(tree: EngineTree, program: Program) -> None:
    """The functions of spec_decode/ the read functions call by name (imported inside them: `from ...dflash_utils
    import validate_dflash_cache_config`), read with what they call in their module."""
    text = json.dumps([f.get("body") for f in program.functions.values()])
    called = set(re.findall(r"\b([a-z_]\w*)\(", text))
    for relpath in tree.grep(b"def validate_dflash", under=SPEC_DECODE):
        module = safe_parse(tree, relpath)
        for node in module.body if module else ():
            if isinstance(node, ast.FunctionDef) and node.name in called:
                program.function(relpath, node, node.name)
