"""A speculators-format drafter: every key it sets that changes the network must be carried over by the release's
translation (SpeculatorsConfig and the updater registered for its speculators_model_type).

vLLM builds the drafter's config from `transformer_layer_config` plus the top-level keys its updater copies
(probe `speculators_carried`, one entry per key with its file:line). A key the updater does not copy is dropped
without a word: the drafter is built as if it were unset (a gpt-oss head's `norm_before_fc` before 0.19.0, an
EAGLE-3.1 head's `fc_norm` / `norm_output` before 0.25.0, the layer ids before 0.11.1). It launches and serves at collapsed acceptance.
The keys are checked where the release reads them after translation (drafter-config then checks that the class
reads them); the fix names the first release that carries the key, or a conversion to a form this release reads.
"""

from __future__ import annotations

from typing import Any

from compat.checks import ANY_METHOD, FAIL, PASS, Ctx, LaterRelease, Result, check
from compat.checks._drafter import speculators_reading

# The top-level keys of a speculators config that change what the drafter computes (speculators'
# Eagle3SpeculatorConfig fields, speculators 0.9.0 src/speculators/models/eagle3/config.py; its
# `embed_requires_grad` is training only, `architectures` and `speculators_config` are bookkeeping).
BEHAVIOUR_KEYS = ("draft_vocab_size", "target_hidden_size", "eagle_aux_hidden_state_layer_ids", "norm_before_residual",
                  "norm_before_fc", "fc_norm", "norm_output", "use_aux_norm", "num_aux_hidden_states")
FACT = "speculators_carried"


@check("drafter-translation", "the release carries every key the speculators-format drafter sets into its config",
       order=44, needs=("speculators translation",), fixes=("convert", "release"),
       methods=ANY_METHOD, when="speculators")
def drafter_translation(ctx: Ctx) -> Result:
    config = ctx.drafter.config
    kind = config.get("speculators_model_type")
    if not isinstance(kind, str):  # the registry runs it on speculators-format drafters only (when="speculators")
        return Result(PASS, "not a speculators-format drafter read by a translation", None)
    reading = speculators_reading(ctx)  # SGLang has no reader: nothing is translated there
    if reading is None or reading.config is None:
        return Result(PASS, "the release does not translate this config (drafter-architecture says why)", None)
    carried = ctx.fact(FACT)
    dropped = [(key, config[key]) for key in BEHAVIOUR_KEYS if changes_network(config.get(key))
               and f"{kind}.{key}" not in carried]
    if not dropped:
        keys = [k for k in BEHAVIOUR_KEYS if f"{kind}.{k}" in carried and k in config]
        where = next((carried[f"{kind}.{k}"]["location"] for k in keys), reading.location)
        return Result(PASS, f"speculators_model_type {kind}: {', '.join(keys) or 'no behaviour key'} carried into the "
                      "drafter's config", where)
    arrivals = {key: ctx.first_release_with(FACT, f"{kind}.{key}") for key, _ in dropped}
    said = [f"{key} = {value!r}" + _arrival(arrivals[key]) for key, value in dropped]
    firsts = [a for a in arrivals.values() if a]
    release = LaterRelease(max(firsts, key=_version) if len(firsts) == len(dropped) else None)
    updater = (ctx.fact("speculators_format").get("types") or {}).get(kind) or {}
    return Result(FAIL, f"speculators_model_type {kind}: this release's {updater.get('function') or 'translation'} does "
                  f"not carry {'; '.join(said)} into the drafter's config: it is dropped without a word and the drafter "
                  "is built as if unset (it launches and runs with wrong numerics or layers, no error)",
                  updater.get("location") or reading.location, release=release,
                  evidence={"dropped": [k for k, _ in dropped], "carried_from": arrivals})


def changes_network(value: Any) -> bool:
    """A value that makes the network differ from the one built without the key."""
    return value not in (None, False, 0, [], {})


def _arrival(first: str | None) -> str:
    return f" (carried from {first})" if first else " (no later release known here carries it)" if first == "" else ""


def _version(text: str) -> Any:
    from packaging.version import Version

    return Version(text)
