"""The aux hidden states the release feeds must fit the drafter's fc, under the release's own fc rule.

Three ways this goes wrong, each read from the release's facts (drafter_loader's fc rule, the layers
aux_layers says are fed) against the checkpoint's `fc.weight`:
- the checkpoint's fc width is not the width the release builds: loading fails (shape mismatch);
- the number of aux states fed is not the number fc was built for: the first draft step crashes;
- an id the target does not have (beyond its layers) is never captured.
A four-id list against a three-aux fc is what trainers write for their data dumps: the last id is the
loss-target layer, not an input; the fix is to convert with the first three.
"""

from __future__ import annotations

from typing import Any

from compat import aux_layers
from compat.checks import FAIL, PASS, WARN, ConvertWith, Ctx, Result, check
from compat.checks._drafter import find_tensor, loaded_config, loader_entry
from compat.probes.drafter_replay import fc_input_width


@check("aux-inputs", "the aux hidden states the release feeds fit the drafter's fc", order=65,
       needs=("drafter loader", "layer ids"), fixes=("convert",), methods=("eagle3", "peagle"))
def aux_inputs(ctx: Ctx) -> Result:
    cls, entry = loader_entry(ctx)
    fc = find_tensor(ctx.drafter.tensors, "fc.weight")
    if entry is None or fc is None or len(fc[1]) != 2 or not ctx.target.num_hidden_layers:
        return Result(WARN, "cannot tell: " + ("no drafter class of this release takes the drafter" if entry is None else
                      "no 2-d fc.weight in the drafter" if fc is None or len(fc[1]) != 2 else "the target has no layer count"), None)
    built = fc_input_width(entry, loaded_config(ctx))
    width, location = fc[1][1], (entry.get("fc") or {}).get("location")
    feeds = aux_layers.fed_layers(ctx.report, loaded_config(ctx), ctx.target.num_hidden_layers, ctx.target.architecture)
    problems = _problems(cls, built, width, feeds, ctx.target.num_hidden_layers)
    convert_with = None
    declared, key = aux_layers.declared_ids(ctx.report, loaded_config(ctx))
    if declared and built["per_aux"] and width == (len(declared) - 1) * built["per_aux"]:
        problems.append(f"{key} = {declared} names {len(declared)} layers but fc.weight takes {len(declared) - 1} aux "
                        f"states: trainers' data dumps list the loss-target layer last ({declared[-1]} is not an input)")
        convert_with = ConvertWith(declared[:-1])
    if problems:
        return Result(FAIL, "; ".join(problems), location, evidence={"fc": {"checkpoint_width": width, **built}},
                      convert_with=convert_with)
    return Result(PASS, f"fc.weight takes {width} = {built['aux_count']} aux states x {built['per_aux']}, as {cls} builds it "
                  f"and as many as are fed ({'; '.join(f'{f.by}: {f.ids}' for f in feeds)})", location,
                  evidence={"fc": {"checkpoint_width": width, **built}})


def _problems(cls: str | None, built: dict[str, Any], width: int, feeds: list[aux_layers.Feed], n: int) -> list[str]:
    problems = []
    if built["width"] is not None and width != built["width"]:
        problems.append(f"fc.weight takes {width} inputs but {cls} builds fc for {built['width']} ({built['aux_count']} aux "
                        f"states x {built['per_aux']}): loading fails on the shape")
    for feed in feeds:
        if feed.ids is None:
            continue
        beyond = [i for i in feed.ids if i > n]
        if beyond:
            problems.append(f"{feed.by} is given ids {beyond} beyond the target's {n} layers: never captured, fewer aux "
                            "states than fc takes")
        elif built["aux_count"] is not None and len(feed.ids) != built["aux_count"]:
            problems.append(f"{feed.by} feeds {len(feed.ids)} aux states {feed.ids} into an fc built for "
                            f"{built['aux_count']}: the first draft step crashes")
    return problems
