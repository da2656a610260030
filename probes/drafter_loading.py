"""How an EAGLE-3 drafter class turns checkpoint tensors into parameters, read from its code.

Shared by the vLLM and SGLang `drafter_loader` probes (the drafter classes of both engines
are torch modules with the same shape: a `*ForCausalLM` holding `self.model = <inner>(...)`,
an `fc`, decoder layer(s), `lm_head`, and a `load_weights` loop). Everything is found by
shape, not by name. `describe(code, class_name)` is the probes' entry; each part of its answer
is read by the module named:

- `modules` (drafter_modules): the attributes `__init__` creates (`model.fc`, `model.layers`,
  `lm_head`, ...), each with the condition it is created under (`if self.norm_before_fc:`) as
  source text and, when the condition reads the drafter config, as config sources the doctor can
  evaluate (drafter_class reads conditions);
- `steps` (drafter_steps): what `load_weights` does to each name, in order, as data: skip, consume
  (d2t into `hot_token_id`), rename (`.replace`, `re.sub`, `legacy_name_map`, stacked q/k/v mappings,
  `WeightsMapper`), prefix (`"model." + name` always, or only when the bare name is not a
  parameter); conditional skips carry their condition;
- `unknown` (drafter_unknown): what happens to a name no parameter has: every `params_dict[...]`
  lookup in the loop is classified as guarded (skipped, or warned and skipped) or not (KeyError),
  separately for the stacked branch and the others; a loop that hands names to a loader class
  instead reports that class (the engine probe says what it does);
- `fc` (drafter_modules): the input width rule (`sources` chains from drafter_values), and its bias;
- `layers` (drafter_modules): how many decoder layers are built (from `num_hidden_layers` or fixed)
  and the `raise` that refuses other counts;
- `config_reads` (drafter_config_reads): every key the module reads from the drafter config;
- `returns_loaded`, `completeness`, `prologue` (drafter_complete): what it does about what the checkpoint lacks.

Every method's model class is read the same way (an MTP predictor, a Medusa or MLP head, a DFlash/DSpark drafter, a
whole causal LM run as a draft model): compat.probes.model_loader.class_loader finds the class a release registers
under an architecture and describes it; drafter_helpers keeps the helpers its loop calls, name_eval runs them.

`drafter_replay.land(entry, name, config)` replays the steps on one checkpoint name against the
modules, so a doctor check (and the probes' `samples`) need no engine knowledge of their own.
Conditions are lists of clauses (all must hold), see probes/vllm/drafter_loader.py for the shape.
"""

from __future__ import annotations

import re
from typing import Any

from compat.probes.drafter_class import DrafterCode, drafter_code, find_base
from compat.probes.drafter_code import ModuleCode, methods
from compat.probes.drafter_complete import completeness, mtp_layers, prologue, returns_loaded
from compat.probes.drafter_config_reads import config_reads
from compat.probes.drafter_modules import fc_rule, layers_rule, modules
from compat.probes.drafter_replay import land, module_index, name_matches
from compat.probes.drafter_steps import load_steps
from compat.probes.drafter_unknown import unknown_names


SAMPLE_CONFIG = {"num_hidden_layers": 2}


def describe(code: ModuleCode, class_name: str, fallback_unknown: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything this module reads about one drafter class (the drafter_loader probes' entry)."""
    d = drafter_code(code, class_name, find_base)
    if d is None:
        return {"error": f"no class {class_name} in {code.relpath}", "location": code.relpath}
    module_map = modules(d)
    out: dict[str, Any] = {
        "class": d.cls.name,
        "location": code.loc(d.cls),
        "inner_attr": d.inner_attr,
        "inner_class": d.inner.name if d.inner is not None else None,
        "modules": [{"path": path, **entry} for path, entry in module_map.items()],
        "steps": load_steps(d),
        "unknown": effective_unknown(d, fallback_unknown),
    }
    if d.base is not None:
        out["delegates_to"] = {"class": d.base[1].name, "location": d.base[0].loc(d.base[1])}
    out["model_prefix"] = next(({k: s[k] for k in ("mode", "unless", "location")} for s in out["steps"] if s["op"] == "prefix"), None)
    out["vocab_map"] = vocab_map(out)
    out["fc"] = fc_rule(d)
    out["layers"] = layers_rule(d, module_map)
    out["samples"] = samples(out)
    out["config_reads"] = [_required(r) for r in config_reads(code)]
    out["returns_loaded"] = returns_loaded(d)
    out["completeness"] = completeness(d)
    out["prologue"] = prologue(d)
    out["mtp_layers"] = mtp_layers(d)
    return out


def effective_unknown(d: DrafterCode, fallback: dict[str, Any] | None) -> dict[str, Any] | None:
    """Who decides about a name no parameter has: the drafter's own loop, the base class it hands
    names to (super().load_weights), its inner model's loop (vLLM's AutoWeightsLoader hands it the
    `model.*` names), or else the loader class (`fallback`, read by the engine probe)."""
    own = unknown_names(d, d.cls)
    if own is not None:
        return own
    if d.base is not None:
        base = unknown_names(DrafterCode(d.base[0], d.base[1], None, None), d.base[1], d.base[0])
        if base is not None:
            return base
    if d.inner is not None and "load_weights" in methods(d.inner):
        inner = unknown_names(d, d.inner)
        if inner is not None:
            return inner
    return fallback


def vocab_map(entry: dict[str, Any]) -> dict[str, Any]:
    """What load_weights does with d2t and t2d, and when the parameter d2t is renamed to exists."""
    out = {}
    for tensor in ("d2t", "t2d"):
        step = next((s for s in entry["steps"] if s["op"] in ("skip", "consume", "rename") and "when" not in s
                     and "match" in s and name_matches(s["match"], tensor)), None)
        if step is None:
            out[tensor] = {"fate": None}
            continue
        fact = {"fate": step["op"], "location": step["location"]}
        if step["op"] == "rename":
            fact["to"] = (re.sub(step["from"], step["to"], tensor, count=1) if step.get("regex")
                          else tensor.replace(step["from"], step["to"]))
            param = module_index(entry).get(fact["to"], {})
            when = param.get("when")
            fact["parameter_when"] = when
            fact["only_when_vocab_differs"] = any(c.get("draft_vocab_differs") for c in when or [])
            fact["parameter_location"] = param.get("location")
        elif step["op"] == "consume":
            fact["into"] = step.get("into")
        out[tensor] = fact
    return out


def samples(entry: dict[str, Any]) -> dict[str, str]:
    """What the release does with the names the layouts differ on (see land)."""
    return {
        "model_prefixed": land(entry, "model.norm.weight", SAMPLE_CONFIG)["fate"],
        "midlayer": land(entry, "midlayer.hidden_norm.weight", SAMPLE_CONFIG)["fate"],
        "layers_0": land(entry, "layers.0.hidden_norm.weight", SAMPLE_CONFIG)["fate"],
        "layers_1_of_2": land(entry, "layers.1.hidden_norm.weight", SAMPLE_CONFIG)["fate"],
    }


def _required(read: dict[str, Any]) -> dict[str, Any]:
    """A key read only as `config.key` (no getattr default, no hasattr guard) has no default in this
    module: it must be in the drafter config, unless PretrainedConfig itself defines it."""
    soft = {"getattr", "hasattr", "get", "in"}
    read["read_without_default"] = "attribute" in read["access"] and not soft & set(read["access"])
    return read
