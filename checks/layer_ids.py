"""Which physical hidden states this release feeds the drafter, against the ones it was trained on.

A one-layer shift launches fine and silently halves acceptance (vllm#43671), so a mismatch fails.
The layers fed come from compat/aux_layers.py (the probe's facts, evaluated); the layers trained on
come from the drafter's settled layer ids (Drafter.settled, checkpoints.settle). When they are not
known (ids whose convention nothing settles; no ids at all, which every release answers with its
default), the check fails with what each answer would mean and asks (compat/doctor/fixes.py).
"""

from __future__ import annotations

from typing import Any

from compat import aux_layers
from compat import engines
from compat.checkpoints import LAYER_IDS_FLAG, default_layer_ids
from compat.checks import FAIL, PASS, WARN, Ctx, Result, check
from compat.checks._drafter import loaded_config
from compat.runner_choice import choose, feeds_for


@check("layer-ids", "layer ids: the hidden states this release feeds = the ones the drafter was trained on", order=60,
       needs=("layer ids", "eagle3 targets"), fixes=("convert", "patch"), methods=("eagle3", "peagle"))
def layer_ids(ctx: Ctx) -> Result:
    aux = ctx.fact("aux_layer_ids")
    n = ctx.target.num_hidden_layers
    if not n:
        return Result(WARN, "the target config has no num_hidden_layers: cannot compute the layers fed", None)
    default = aux_layers.default_ids(ctx.report, n)
    # only the runners the release takes on this platform feed it (compat/runner_choice.py: the method-path check)
    feeds = feeds_for(aux_layers.fed_layers(ctx.report, loaded_config(ctx), n, ctx.target.architecture),
                      choose(ctx.report, ctx.options.platform))
    fed = [f.to_json() for f in feeds]
    trained = ctx.drafter.trained_ids
    reads = key_locations(ctx, aux)
    location = aux.get("default_location") or aux.get("location")
    fed_text = "; ".join(f"{f.by}: {f.ids} ({f.how})" for f in feeds)
    branches = ctx.drafter.branches
    if trained is None and ctx.drafter.settled is not None and ctx.drafter.settled.source == "default":
        return _undeclared(ctx, n, feeds, fed, reads, location)
    if trained is None and branches and any(f.ids is not None for f in feeds):
        return _both_readings(ctx, branches, feeds, fed, reads, location)
    if trained is None:
        return Result(WARN, f"cannot tell what the drafter was trained on ({ctx.drafter.read_error or 'no ids'}); "
                      f"this release feeds {fed_text}. Reads: {reads}", location,
                      evidence={"fed": fed, "trained": None, "reads": reads})
    evidence = {"fed": fed, "trained": trained, "reads": reads}
    if all(f.ids is None for f in feeds):
        return Result(WARN, f"nothing is fed: {fed_text}; trained on {trained}. Reads: {reads}", location, evidence=evidence)
    wrong = [f for f in feeds if f.ids != trained]
    extra = ""
    if aux.get("cuda_graph_defaults_quirk") and default and trained != default:  # SGLang's probe finds it
        extra = (f"; CUDA-graph replays use the default {default} here "
                 f"({aux.get('cuda_graph_defaults_location')}), so graphs and eager passes disagree "
                 "(eager only, e.g. --disable-cuda-graph, avoids it at a speed cost)")
        wrong = wrong or [aux_layers.Feed("cuda graphs", default, "defaults")]
    detail = f"trained on {trained} ({ctx.drafter.trained_origin}); fed {fed_text}{extra}. Reads: {reads}"
    if wrong:
        return Result(FAIL, "silent off-by-one / wrong layers (launches, low acceptance, no error): " + detail,
                      location, evidence=evidence)
    return Result(PASS, detail, location, evidence=evidence)


UNDECLARED = "declares no layer ids"
BRANCH_TRAINERS = {"output-of": "SpecForge, AngelSlim, ModelOpt HF training", "capture-before": "vLLM, speculators"}


def _both_readings(ctx: Ctx, branches: dict[str, list[int]], feeds: list[aux_layers.Feed], fed: list[dict[str, Any]],
                   reads: str, location: str | None) -> Result:
    """Nothing says how the ids were written: show what each reading trained on against what is fed, and ask."""
    parts = []
    for convention, trained in branches.items():
        verdicts = [f"{f.by} feeds {f.ids} ({f.how}): {_compare(trained, f.ids)}" for f in feeds]
        parts.append(f"if the ids are {convention} ({BRANCH_TRAINERS.get(convention, '?')}): trained on {trained}; "
                     + "; ".join(verdicts))
    detail = (f"cannot tell without the convention the ids were written in ({ctx.drafter.read_error}). "
              + " | ".join(parts) + f". Reads: {reads}")
    return Result(FAIL, detail, location, evidence={"fed": fed, "trained": None, "branches": branches, "reads": reads},
                  needs_input=True)


TRAINERS_DEFAULT = ("SafeAILab EAGLE-3, SpecForge ([1, n//2 - 1, n - 4] output-of) and speculators train on it "
                    "when given no ids")


def _undeclared(ctx: Ctx, n: int, feeds: list[aux_layers.Feed], fed: list[dict[str, Any]], reads: str,
                location: str | None) -> Result:
    """The drafter declares no ids: the release feeds its default, which may or may not be what it was trained on."""
    default = default_layer_ids(n)
    verdicts = "; ".join(f"{f.by} feeds {f.ids} ({f.how}): {_compare(default, f.ids)}" for f in feeds)
    detail = (f"cannot tell which layers the drafter was trained on: it {UNDECLARED} (no compat record, no "
              f"{LAYER_IDS_FLAG}, no trainer fingerprint). If on the trainers' default {default} ({TRAINERS_DEFAULT}): "
              f"{verdicts} | if on any other layers: nothing here records them, and no release reads them from this "
              f"drafter. Reads: {reads}")
    return Result(FAIL, detail, location, evidence={"fed": fed, "trained": None, "branches": {"default": default},
                                                   "reads": reads}, needs_input=True)


def _compare(trained: list[int], fed: list[int] | None) -> str:
    if fed is None:
        return "nothing fed"
    if fed == trained:
        return "matches"
    if len(fed) == len(trained) and all(f - t == fed[0] - trained[0] for f, t in zip(fed, trained)):
        shift = fed[0] - trained[0]
        return f"{abs(shift)} layer{'s' if abs(shift) > 1 else ''} {'low' if shift < 0 else 'high'}"
    return "other layers"


def key_locations(ctx: Ctx, aux: dict[str, Any]) -> str:
    """The drafter config keys the release reads for the ids, with offset and location, in words."""
    if not aux.get("read_from_config"):
        return "no drafter key (ids are never read from the drafter config)"
    if engines.get(ctx.engine).layer_ids_fed_by == "runners":
        parts = []
        for runner in aux.get("runners") or []:
            keys = ", ".join(f"{aux_layers.key_name(k)} (+{k.get('offset') or 0}, {k.get('location')})"
                             for k in runner.get("keys") or [])
            parts.append(f"runner {runner.get('runner')}: {keys or 'none'}")
        return "; ".join(parts) or "none"
    return ", ".join(f"{aux_layers.key_name(k)} ({k.get('location')})" for k in aux.get("keys") or []) or "none"
