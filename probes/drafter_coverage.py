"""Which modules a model class builds for a config that no checkpoint tensor lands in (the other half of a replay).

`drafter_replay.land` says where each checkpoint name goes; `missing_modules` turns it around: every module the
class builds for this config (its `when` holds, not tied to another, not absent) that holds weights (built by a
linear, an embedding, a norm, a head, a layer stack...: `WEIGHTS`) and that no name landed in, with the indices of
a layer stack (a ModuleList of `count`, a ModuleDict over `range(first, first + count)`) that got none. What the
engine shares from the target after loading (`shared`: a drafter's embed_tokens and lm_head) is not asked for.
"""

from __future__ import annotations

import re
from typing import Any

from compat.probes.drafter_replay import entries, holds, module_index, name_matches

# what a module is built by when it holds weights (a logits processor, a sampler, an activation do not)
WEIGHTS = re.compile(r"linear|embedding|lmhead|head$|norm|layer|block|predictor|parameter|model$|proj", re.I)
UNBOUNDED = 1 << 20  # a stack whose size the config does not say: asked for one entry


def missing_modules(entry: dict[str, Any], fates: dict[str, dict[str, Any]], config: dict[str, Any] | None,
                    names: set[str] | None = None, target_vocab: int | None = None,
                    shared: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """[{"module", "location", "builds", "indices"?: [missing entries of a stack], "depends"?: True}] for this config."""
    landed: dict[str, set[str]] = {}
    for fate in fates.values():
        if fate.get("fate") in ("load", "depends") and fate.get("module"):
            landed.setdefault(fate["module"], set()).add(fate["name"])
    optional = [s["match"] for s in entry.get("steps") or [] if s.get("op") == "skip" and "match" in s
                and ("when" in s or s.get("stage") == "loader")]
    out = []
    for path, module in module_index(entry).items():
        if not _holds_weights(module) or path.rsplit(".", 1)[-1] in shared:
            continue
        if any(name_matches(m, path + ".") or name_matches(m, path) for m in optional):
            continue  # the loader skips it itself in some configurations (`if not ...: skip_substrs.append(...)`)
        built = holds(module.get("when"), config, names, target_vocab)
        if built is False or (module.get("absent_when") and holds(module["absent_when"], config, names, target_vocab)):
            continue
        if module.get("tied_to") and holds(module.get("tied_when"), config, names, target_vocab):
            continue
        got = landed.get(path, set())
        found = {"module": path, "location": module.get("location"), "builds": module.get("builds")}
        if built is None:
            found["depends"] = True
        if module["kind"] in ("list", "dict"):
            indices = entries(module, config)
            if len(indices) > UNBOUNDED:
                if not got:
                    out.append(found)
                continue
            have = {int(m.group(1)) for n in got if (m := re.match(re.escape(path) + r"\.(\d+)\.", n))}
            lacking = [i for i in indices if i not in have]
            if lacking:
                out.append({**found, "indices": lacking})
        elif not got:
            out.append(found)
    return out


MANY = 2000  # a checkpoint with more names is replayed by its representatives


def representatives(names: set[str] | frozenset[str]) -> set[str]:
    """The names a replay needs of a large checkpoint: one per shape and first number (`model.layers.7.mlp.experts.#.
    gate_proj.weight` once per layer): a loader places a name by its prefix and its layer, not by an expert's index.
    A DeepSeek-V3 index (91k names) is replayed as ~2k; a small checkpoint whole."""
    if len(names) <= MANY:
        return set(names)
    chosen: dict[tuple[str, str | None], str] = {}
    for name in sorted(names):
        parts = name.split(".")
        first = next((p for p in parts if p.isdigit()), None)
        chosen.setdefault((".".join("#" if p.isdigit() else p for p in parts), first), name)
    return set(chosen.values())


def _holds_weights(module: dict[str, Any]) -> bool:
    if module.get("kind") not in ("module", "list", "dict", "parameter"):
        return False
    builds = (module.get("builds") or "").removesuffix("_cls")  # norm_cls, decoder_layer_cls: a local holding the class
    return module["kind"] == "parameter" or bool(WEIGHTS.search(builds))
