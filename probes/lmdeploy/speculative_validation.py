"""What an LMDeploy release refuses on its speculative path, each raise or assert with its message and condition.

Where it checks, in the order a launch meets them:
- `cli`: `get_speculative_config` (lmdeploy/cli/utils.py: `--speculative-dflash-block-size requires
  --speculative-algorithm dflash.`, 0.18.0);
- `config`: `SpeculativeConfig.__post_init__` (lmdeploy/messages.py) and `SpecDecodeConfig.from_config`
  (lmdeploy/pytorch/config.py: DFlash needs the target's config);
- `engine`: the function that builds the SpecDecodeConfig (lmdeploy/pytorch/engine/config_builder.py in 0.18.0) and the
  DFlash validators (`validate_dflash_*`, `parse_dflash_config`: lmdeploy/pytorch/spec_decode/dflash_utils.py), the
  proposer registry (`build_specdecode_proposer`: `<method> not found in ...`);
- `builder`: the config builders of lmdeploy/pytorch/configurations, which refuse a method for a target
  (`assert spec_method == 'deepseek_mtp'`) or a draft (`Kimi-K2 EAGLE3 draft config must use architecture ...`);
- `model map`: `_get_model_class` (lmdeploy/pytorch/models/patch.py: `Can not found rewrite for architectures: [...]`),
  which a draft architecture outside the map meets.
"""

from __future__ import annotations

import ast

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes._ast import find_class, methods, safe_parse
from compat.probes.lmdeploy._source import CLI, SPEC_DECODE, config_builders, raises, registered_proposers

_DRAFTY = ("spec", "draft", "eagle", "mtp", "dflash")


@probe("lmdeploy", "speculative_validation", "Speculative refusals (raise/assert sites with their messages)", order=25)
def speculative_validation(tree: EngineTree) -> dict:
    found: list[tuple[str, list]] = []
    found += [("cli", raises(p, f)) for p, f in _functions(tree, CLI, b"def get_speculative_config", {"get_speculative_config"})]
    for name in ("SpeculativeConfig", "SpecDecodeConfig"):
        cls = find_class(tree, name, under="lmdeploy")
        if cls is not None:
            found += [("config", raises(cls[0], f, f"{name}.{fname}")) for fname, f in methods(cls[1]).items()]
    found += [("engine", raises(p, f)) for p, f in _callers(tree, b"SpecDecodeConfig.from_config", "lmdeploy/pytorch")]
    found += [("engine", raises(p, f)) for p, f in _functions(tree, SPEC_DECODE, b"def ", prefix=("validate_", "parse_", "build_specdecode"))]
    for builder in config_builders(tree):
        build = methods(builder.node).get("build")
        for refusal in raises(builder.relpath, build, f"{builder.name}.build") if build is not None else []:
            text = f"{refusal.when or ''} {ast.unparse(refusal.node)}".lower()
            if any(word in text for word in _DRAFTY):
                found.append(("builder", [refusal]))
    found += [("model map", raises(p, f)) for p, f in _functions(tree, "lmdeploy/pytorch/models", b"Can not found rewrite",
                                                                  {"_get_model_class"})]
    sites = [{"stage": stage, **r.to_json(tree)} for stage, refusals in found for r in refusals]
    sites = list({s["location"]: s for s in sites}.values())
    if not sites or not ({"cli", "config"} & {s["stage"] for s in sites} or registered_proposers(tree)):
        return {"present": False, "reason": "no speculative path (no SpeculativeConfig, no spec_decode) in this release"}
    return {"present": True, "sites": sites, "stages": sorted({s["stage"] for s in sites})}


def _functions(tree: EngineTree, under: str, needle: bytes, names: set[str] | None = None, prefix: tuple[str, ...] = ()):
    for relpath in tree.grep(needle, under=under):
        module = safe_parse(tree, relpath)
        for func in (n for n in ast.walk(module) if isinstance(n, ast.FunctionDef)) if module else ():
            if (names and func.name in names) or (prefix and func.name.startswith(prefix)):
                yield relpath, func


def _callers(tree: EngineTree, needle: bytes, under: str):
    """The functions whose body calls `needle` (`SpecDecodeConfig.from_config(...)`)."""
    text = needle.decode()
    for relpath in tree.grep(needle, under=under):
        module = safe_parse(tree, relpath)
        for func in (n for n in ast.walk(module) if isinstance(n, ast.FunctionDef)) if module else ():
            calls = [n for n in ast.walk(func) if isinstance(n, ast.Call) and ast.unparse(n.func) == text]
            if calls and func.name != "from_config":
                yield relpath, func
