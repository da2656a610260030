"""How each registered EAGLE-3 drafter class of this vLLM release loads a checkpoint.

One entry per class, keyed by class name; `architectures` lists every registered name that
resolves to it (`Eagle3DeepseekV3ForCausalLM` -> `Eagle3DeepseekV2ForCausalLM` included). Read
from the class's module with probes/drafter_loading.py; the shape (shared with SGLang):

    {"present": true, "auto_weights_loader": {"result": "raise", "by": "AutoWeightsLoader",
                                              "location", "ignored_suffixes": [".bias"]},
     "drafters": {"Eagle3LlamaForCausalLM": {
        "class", "module": "llama_eagle3", "architectures": [...], "registered": "registry.py:N",
        "aliases"?: ["Eagle3DeepseekV3ForCausalLM"] (registered class names that are aliases of this one),
        "location": "vllm/model_executor/models/llama_eagle3.py:306",
        "inner_attr": "model", "inner_class": "LlamaModel",
        "modules": [{"path": "model.fc", "kind": "module"|"list"|"parameter"|"buffer",
                     "when"?: [clause], "absent_when"?: [clause], "count"?: [source],
                     "tied_to"?, "tied_when"?, "location"}, ...],
        "steps": [{"op": "skip"|"consume"|"rename"|"prefix", "match"?: {...}, "from"?, "to"?,
                   "stacked"?, "into"?, "prefix"?, "mode"?: "always"|"if_missing", "unless"?: [...],
                   "stage": "drafter"|"loader"|"model"|"base", "when"?: [clause], "location"}, ...],
        "unknown": {"result": "raise"|"skip"|"warn"|"mixed", "stacked"?, "other"?, "by", "location"},
        "model_prefix": {"mode", "unless", "location"} | null,
        "vocab_map": {"d2t": {"fate": "rename", "to": "draft_id_to_target_id", "parameter_when": [clause]|null,
                              "only_when_vocab_differs": bool, "location", "parameter_location"},
                      "t2d": {"fate": "skip", "location"}},
        "fc": {"per_aux_width": [source], "aux_count": [source], "fixed_aux_count": 3|null,
               "bias": [source], "built_when"?: [clause], "input_width": "as written", "location"},
        "layers": {"attribute": "model.layers", "count": [source], "honours_num_hidden_layers": bool,
                   "multi_layer": bool, "rejects": {"condition", "error", "location"}|null, "location"},
        "samples": {"model_prefixed": fate, "midlayer": fate, "layers_0": fate, "layers_1_of_2": fate},
        "config_reads": [{"key", "where", "access": [...], "default", "written",
                          "read_without_default", "location"}, ...]}}}

A source is {"key", "where": "top-level"|<nested dict key>, "use": "value"|"len"} or {"default": v};
a list of sources is a fallback chain (the first key the drafter config.json has wins). A clause is
{"test": source text} with {"config": [source], "truthy": bool} when it is a config switch,
{"draft_vocab_differs": bool}, or {"unless_checkpoint_has": match}; a condition holds when all of
its clauses do. A match is {"contains"|"equals"|"startswith"|"endswith"|"regex": s} or
{"any"|"all": [match]} / {"not": match}. A fate is "load", "skip", "consume", "raise", "warn".

`compat.probes.drafter_replay.land(entry, tensor_name, config, names, target_vocab)` replays an
entry on one tensor name (the `samples` are made with it); `holds(condition, config, ...)` and
`config_value(sources, config)` evaluate the data above for a drafter config.json.
"""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.probes.drafter_loading import describe
from compat.probes.drafter_code import ModuleCode
from compat.probes.vllm._common import registry_file, registry_module_file
from compat.probes.vllm.eagle3_drafters import eagle3_entries
from compat.core.tree import EngineTree

UTILS_HOME = "vllm/model_executor/models/utils.py"


@probe("vllm", "drafter_loader", "EAGLE-3 drafter loaders: tensor names, fc width, layers, config keys", order=62)
def drafter_loader(tree: EngineTree) -> dict:
    groups: dict[tuple[str, str], list] = {}
    for entry in eagle3_entries(tree):
        groups.setdefault((entry.module, entry.cls), []).append(entry)
    registry = registry_file(tree)
    if not groups or registry is None:  # (no registry, no entries)
        return {"present": False, "reason": "no EAGLE-3 drafter in _SPECULATIVE_DECODING_MODELS", "drafters": {}}
    loader = auto_weights_loader(tree)
    drafters: dict[str, dict] = {}
    for (module, cls), entries in groups.items():
        relpath = registry_module_file(tree, module)
        fact: dict = {"class": cls, "module": module, "architectures": [e.architecture for e in entries],
                "registered": tree.loc(registry, entries[0].lineno)}
        fact.update(describe(ModuleCode(tree, relpath), cls, loader) if relpath else {"error": f"module {module} not found"})
        known = drafters.get(fact["class"])
        if known is not None and known.get("location") == fact.get("location"):
            # registered under a module-level alias (`Eagle3DeepseekV3ForCausalLM = Eagle3DeepseekV2ForCausalLM`)
            known["architectures"] += fact["architectures"]
            known.setdefault("aliases", []).append(cls)
            continue
        drafters[fact["class"]] = fact
    return {"present": True, "drafters": drafters, "auto_weights_loader": loader}


def auto_weights_loader(tree: EngineTree) -> dict | None:
    """What vLLM's AutoWeightsLoader does with a name no module or parameter has (and what it ignores)."""
    relpath = UTILS_HOME if tree.exists(UTILS_HOME) else next(iter(tree.grep(b"class AutoWeightsLoader", "vllm/model_executor")), None)
    if relpath is None:
        return None
    code = ModuleCode(tree, relpath)
    cls = code.classes.get("AutoWeightsLoader")
    if cls is None:
        return None
    messages = {t.id: ast.unparse(n.value) for n in ast.walk(cls) if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name)}
    raised = None
    for node in ast.walk(cls):
        if isinstance(node, ast.Raise) and node.exc is not None:
            text = ast.unparse(node.exc)
            arg = node.exc.args[0] if isinstance(node.exc, ast.Call) and node.exc.args else None
            if isinstance(arg, ast.Name):
                text += messages.get(arg.id, "")
            if "no module or parameter" in text:
                raised = node
                break
    ignored = [n.args[0].value for n in ast.walk(cls)
               if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("append", "extend")
               and "ignore_unexpected_suffixes" in ast.unparse(n.func.value) and n.args and isinstance(n.args[0], ast.Constant)]
    return {"result": "raise" if raised is not None else "skip", "by": "AutoWeightsLoader",
            "location": code.loc(raised if raised is not None else cls), "ignored_suffixes": ignored}
