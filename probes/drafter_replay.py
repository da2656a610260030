"""Replaying a drafter_loader entry on a drafter checkpoint: what happens to each tensor name.

The drafter_loader probes of both engines report data (modules, steps, unknown-name rule,
conditions as clause lists, sources chains); these functions evaluate that data for one
drafter (its config.json, its tensor names, the target's vocab size), with no engine
knowledge of their own. Doctor checks call `land` per tensor; the probes use it for their
`samples`.
"""

from __future__ import annotations

import re
from typing import Any

from compat.probes.name_eval import Params, Unsupported, evaluate


def _helper_args(step: dict, name: str, bound: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for param, given in step["args"].items():
        if given == "name":
            out[param] = name
        elif isinstance(given, dict) and "var" in given:
            out[param] = bound.get(given["var"])
        elif isinstance(given, dict) and "const" in given:
            out[param] = given["const"]
    return out


def name_matches(match: dict, name: str) -> bool:
    if "any" in match:
        return any(name_matches(m, name) for m in match["any"])
    if "all" in match:
        return all(name_matches(m, name) for m in match["all"])
    if "not" in match:
        return not name_matches(match["not"], name)
    if "contains" in match:
        return match["contains"] in name
    if "equals" in match:
        return name == match["equals"]
    if "startswith" in match:
        return name.startswith(match["startswith"])
    if "endswith" in match:
        return name.endswith(match["endswith"])
    if "regex" in match:
        return re.search(match["regex"], name) is not None
    return False


def config_value(sources_chain: list[dict], config: dict | None):
    """The value a sources chain gives for a drafter config.json (nested dicts by their key)."""
    config = config or {}
    for s in sources_chain:
        if "key" in s:
            holder = config if s["where"] == "top-level" else config.get(s["where"])
            if isinstance(holder, dict) and holder.get(s["key"]) is not None:
                value = holder[s["key"]]
                return len(value) if s["use"] == "len" and isinstance(value, (list, tuple)) else value
        elif "default" in s:
            return s["default"]
    return None


def holds(when: list | None, config: dict | None, names: set[str] | None = None,
          target_vocab: int | None = None) -> bool | None:
    """Whether a condition (a list of clauses, all must hold) holds for this drafter:
    True/False, or None when it depends on something `config`, `names` and `target_vocab` do not give."""
    values = [_clause(c, config, names, target_vocab) for c in when or []]
    return False if False in values else None if None in values else True


PIPELINE_RANK = ("is_last_rank", "is_first_rank")  # one pipeline stage (doctor's case) is both the first and the last


def _clause(clause: dict, config, names, target_vocab) -> bool | None:
    if any(rank in clause.get("test", "") for rank in PIPELINE_RANK):
        return not clause["test"].startswith("not ")
    if "unless_checkpoint_has" in clause:
        return None if names is None else not any(name_matches(clause["unless_checkpoint_has"], n) for n in names)
    if "config" in clause:
        return bool(config_value(clause["config"], config)) == clause["truthy"]
    if "draft_vocab_differs" in clause:
        cfg = config or {}
        draft = cfg.get("draft_vocab_size") or cfg.get("vocab_size")
        if draft is None or target_vocab is None:
            return None
        return (draft != target_vocab) == clause["draft_vocab_differs"]
    return None


def entries(module: dict, config: dict | None) -> range:
    """The indices a list (`range(count)`) or dict (`range(first, first + count)`) module holds for this config;
    every index when the config does not say."""
    count = config_value(module.get("count", []), config)
    first = config_value(module.get("first", [{"default": 0}]), config)
    if not isinstance(first, int) or isinstance(first, bool):
        return range(0, 1 << 30)
    if not isinstance(count, int) or isinstance(count, bool):
        return range(first, 1 << 30)
    return range(first, first + count)


def module_index(entry: dict) -> dict[str, dict]:
    """An entry's modules by path."""
    mods = entry["modules"]
    return {m["path"]: m for m in mods} if isinstance(mods, list) else mods


def _module_for(name: str, module_map: dict[str, dict], config: dict | None) -> tuple[str | None, dict | None]:
    best = None
    for path, entry in module_map.items():
        if entry.get("kind") == "absent" and "absent_when" not in entry:
            continue
        if entry.get("kind") in ("list", "dict"):
            m = re.match(re.escape(path) + r"\.(\d+)\.", name)
            if not m:
                continue
            if int(m.group(1)) not in entries(entry, config):
                continue
        elif not (name == path or name.startswith(path + ".")):
            continue
        if best is None or len(path) > len(best):
            best = path
    return best, (module_map.get(best) if best else None)


def land(entry: dict, name: str, config: dict | None = None, names: set[str] | None = None,
         target_vocab: int | None = None) -> dict:
    """Replay a drafter_loader entry on checkpoint tensor `name`: {"fate", "name", ...}.

    fate: "load" (a module of the drafter takes it), "skip" / "consume" (a step drops it, or
    takes it as something else: d2t -> hot_token_id), else what the loop does with a name no
    module has: "raise", "warn" (logged and dropped) or "skip" (dropped silently); "depends"
    when a condition cannot be decided from `config` (the drafter config.json), `names` (all
    tensor names of the checkpoint) and `target_vocab`. Renames inside a decoder layer
    (q/k/v -> qkv) do not change which module a name lands in and are not replayed.
    """
    module_map = module_index(entry)
    inner = (entry.get("inner_attr") or "model") + "."
    current, stacked, pending = name, False, []
    bound: dict[str, Any] = {}
    for step in entry["steps"]:
        scoped = step["stage"] == "model" and current.startswith(inner)
        subject = current[len(inner):] if scoped else current
        if "helper" in step:
            try:
                result = evaluate(step["helper"], _helper_args(step, subject, bound), config,
                                  Params(lambda n: _module_for(n, module_map, config)[0] is not None))
            except Unsupported as err:
                return {"fate": "depends", "name": current, "depends_on": [{"helper": step["helper"]["name"], "why": str(err),
                                                                            "location": step["location"]}]}
            if step["op"] == "skip":
                if result:
                    return {"fate": "skip", "name": current, "step": step}
                continue
            if step["op"] == "select":
                if result is None and not any(name_matches(m, subject) for m in step.get("keeps") or []):
                    if "params_dict" in step["helper"]["source"]:  # no parameter has the name: dropped
                        return {"fate": "skip", "name": current, "unknown": step["helper"]["name"],
                                "location": step["location"]}
                    return {"fate": "skip", "name": current, "step": step}
                bound[step["binds"]] = result
                if not isinstance(result, str):
                    continue
                # a helper that gives the name to look up (`resolve_param_name`): the name from here on
            if not isinstance(result, str):
                continue
            subject = result
        elif step["op"] == "prefix":
            # `unless` tests come from the if/elif chain around the prefix: earlier branches (`if "d2t" in
            # name:` renames it) were tested on the name before their own rename, later ones on the current name
            if any(name_matches(m, subject) or name_matches(m, name) for m in step.get("unless", [])):
                continue
            if step["mode"] == "if_missing" and _module_for(subject, module_map, config)[0] is not None:
                continue
            subject = step["prefix"] + subject
        elif name_matches(step["match"], subject):
            if step.get("stacked"):
                stacked = True
                continue
            decided = holds(step.get("when"), config, names, target_vocab)
            if decided is False:
                continue
            if decided is None:
                pending.append(step.get("when"))
                continue
            if step["op"] in ("skip", "consume"):
                return {"fate": step["op"], "name": current, "step": step}
            subject = (re.sub(step["from"], step["to"], subject, count=1) if step.get("regex")
                       else subject.replace(step["from"], step["to"]))
        else:
            continue
        current = inner + subject if scoped else subject
    return _landed(entry, current, stacked, pending, config, names, target_vocab)


def _landed(entry, current, stacked, pending, config, names, target_vocab) -> dict:
    path, module = _module_for(current, module_index(entry), config)
    unknown = entry.get("unknown") or {}
    missing = unknown.get("stacked" if stacked else "other") or unknown.get("result") or "raise"
    if any(current.endswith(suffix) for suffix in unknown.get("ignored_suffixes") or []):
        missing = "skip"  # AutoWeightsLoader ignores unexpected biases (vLLM 0.25+)
    if path is None:
        return {"fate": missing, "name": current, "unknown": unknown.get("by"), "location": unknown.get("location")}
    assert module is not None  # _module_for gives a path with its entry
    fc = entry.get("fc") or {}
    if current == f"{path}.bias" and path.rsplit(".", 1)[-1] == "fc" and fc.get("bias") is not None:
        if config_value(fc["bias"], config) is False:  # an fc built with bias=False has no fc.bias
            return {"fate": missing, "name": current, "module": path, "no_bias": fc.get("location")}
    built = holds(module.get("when"), config, names, target_vocab)
    if built is False and module.get("tied_to") and holds(module.get("tied_when"), config, names, target_vocab):
        return {"fate": "load", "name": current, "module": module["tied_to"], "tied": path}
    absent = module.get("absent_when")
    if built is False or (absent and holds(absent, config, names, target_vocab)):
        return {"fate": missing, "name": current, "module": path, "not_built": module.get("when") or absent,
                "location": module.get("location")}
    out = {"fate": "load" if built and not pending else "depends", "name": current, "module": path}
    if out["fate"] == "depends":
        out["depends_on"] = pending + ([module.get("when")] if built is None else [])
    return out


def fc_input_width(entry: dict, config: dict | None) -> dict:
    """The `fc` input width this release builds for a drafter config.json, under the class's own rule:
    {"width": int | None, "per_aux": int | None, "aux_count": int | None, "fixed_aux_count": 3 | None}.
    A checkpoint's `fc.weight` must be [hidden_size, width]; the runner feeds `aux_count` states."""
    fc = entry.get("fc") or {}
    if fc.get("per_aux_width") is None or fc.get("aux_count") is None:
        return {"width": None, "per_aux": None, "aux_count": None, "fixed_aux_count": None}
    per_aux, count = config_value(fc["per_aux_width"], config), config_value(fc["aux_count"], config)
    width = per_aux * count if isinstance(per_aux, int) and isinstance(count, int) else None
    return {"width": width, "per_aux": per_aux, "aux_count": count, "fixed_aux_count": fc.get("fixed_aux_count")}
