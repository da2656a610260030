"""Drafter config fields that change the network: the release must read every one the drafter sets,
and the drafter must set every one the release reads without a default.

A flag the release does not read (`norm_before_fc`, `fc_norm`, `norm_output`, ... set by an EAGLE-3.1
trainer) builds a different network than the one trained: it loads and runs with wrong numerics and no
error. A key read without a default (`draft_vocab_size` on some releases) fails at start-up. The keys
the release reads are the drafter_loader probe's `config_reads` of the class that loads this drafter.
"""

from __future__ import annotations

from typing import Any

from compat.checks import FAIL, PASS, WARN, Ctx, Result, check
from compat.checks._drafter import loaded_config, loader_entry

# The fields that change what the drafter computes (the vocabulary of trainers' configs, not engine facts).
NETWORK_FLAGS = ("norm_before_fc", "fc_norm", "use_aux_norm", "norm_output", "num_aux_hidden_states",
                 "norm_before_residual", "target_hidden_size")
REQUIRED_KEYS = ("draft_vocab_size", "target_hidden_size", "num_aux_hidden_states", "norm_before_residual",
                 "hidden_size", "num_hidden_layers", "vocab_size")


@check("drafter-config", "the release reads every network flag the drafter sets, and has every key it needs", order=45,
       needs=("drafter loader",), fixes=("convert",))
def drafter_config(ctx: Ctx) -> Result:
    cls, entry = loader_entry(ctx)
    if entry is None:
        return Result(WARN, "cannot tell: no drafter class of this release takes this drafter (see drafter-architecture)", None)
    reads = {(r["key"], r["where"]): r for r in entry.get("config_reads") or []}
    config = loaded_config(ctx)
    ignored = [f"{where_name(where, key)} = {value!r}" for key, where, value in set_flags(config)
               if (key, where) not in reads and not (key == "target_hidden_size" and value == config.get("hidden_size"))]
    missing = [f"{key} ({reads[(key, 'top-level')]['location']})" for key in REQUIRED_KEYS
               if reads.get((key, "top-level"), {}).get("read_without_default") and key not in config]
    problems = []
    if ignored:
        problems.append(f"{cls} does not read {', '.join(ignored)}: it builds the network without them "
                        "(loads and runs with wrong numerics, no error)")
    if missing:
        problems.append(f"{cls} reads {', '.join(missing)} without a default and the drafter does not set "
                        f"{'it' if len(missing) == 1 else 'them'}: it fails at start-up")
    location = (entry.get("layers") or {}).get("location")
    if problems:
        return Result(FAIL, "; ".join(problems), location, evidence={"ignored": ignored, "missing": missing})
    flags = [where_name(w, k) for k, w, _ in set_flags(config)]
    return Result(PASS, f"{cls} reads {', '.join(flags)}" if flags else "the drafter sets no network flag", location)


def set_flags(config: dict[str, Any]) -> list[tuple[str, str, object]]:
    """(key, where, value) of every network flag the drafter sets to a value that changes the network."""
    out = []
    raw = config.get("eagle_config")
    nested = raw if isinstance(raw, dict) else {}
    for where, holder in (("top-level", config), ("eagle_config", nested)):
        for key in NETWORK_FLAGS:
            value = holder.get(key)
            if value not in (None, False, 0):
                out.append((key, where, value))
    return out


def where_name(where: str, key: str) -> str:
    return key if where == "top-level" else f"{where}.{key}"
