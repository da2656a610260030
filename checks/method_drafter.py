"""The drafter was trained for the method launched (its trainer's keys say which: compat.methods' recognisers).

A drafter run as another method loads with the wrong head or is refused: SGLang runs an EAGLE-3 drafter as EAGLE at
accept length 1.00 with no warning (sglang#21272); vLLM 0.34.0 refuses a draft whose checkpoint declares another
method ("requested method=... but the draft model is a 'dflash' checkpoint", speculator_config.py:414-425), earlier
releases build whatever the configured method says. A drafter no method file recognises is answered with the keys
that were read. EAGLE-3's own check is `method`.
"""

from __future__ import annotations

from compat.checks import FAIL, PASS, WARN, Ctx, Result, check
from compat.checks._method import drafter_words, launched_match, method_edit, other_families, release_name, spec_value
from compat.methods import Recognition, Unrecognised, get_method


@check("method-drafter", "method: the drafter was trained for the method launched", order=69, needs=("methods",),
       fixes=("line",), methods=other_families())
def method_drafter(ctx: Ctx) -> Result:
    family = get_method(ctx.method.family)
    if not ctx.drafter.present:
        if family.takes_drafter:
            return Result(FAIL, f"{family.title} needs a drafter: give DRAFTER (or the draft model in the launch line)")
        return Result(PASS, f"{family.title} takes no drafter" + (f" ({family.target_needs})" if family.target_needs else ""))
    found = ctx.drafter.recognised
    if isinstance(found, Unrecognised) or found is None:
        return Result(WARN, f"cannot tell which method the drafter was trained for: {drafter_words(found)}",
                      str(ctx.drafter.path / "config.json"))
    if not family.takes_drafter and found.family != family.family:
        return Result(WARN, f"{family.title} takes no drafter: the one given ({drafter_words(found)}) is not used",
                      str(ctx.drafter.path / "config.json"))
    return _compare(ctx, found)


def _compare(ctx: Ctx, found: Recognition) -> Result:
    drafter = get_method(found.family)
    match = launched_match(ctx)
    where = str(ctx.drafter.path / "config.json")
    words = drafter_words(found)
    if match is None or match.method.family == found.family or found.family in match.name.serves:
        if not found.certain and ctx.method.launched is None:
            return Result(WARN, f"{words}: only a weak sign; say the method (--method)", where)
        return _parallel(ctx, found, words, where) if found.family == "peagle" else Result(
            PASS, f"{words}; run as {ctx.method.launched or 'its own method'}", where)
    shared = next((n for n in drafter.engine_names(ctx.engine) if n.shared and n.name == ctx.method.launched), None)
    if shared is not None:
        return _parallel(ctx, found, words, where)
    own = release_name(ctx, found.family)
    edits = (method_edit(ctx, own.name, f"the drafter is a {drafter.title} drafter"),) if own is not None else ()
    return Result(FAIL, f"{words}, launched as {ctx.method.launched!r} ({match.method.title}): it drafts with the wrong "
                  "head or the server refuses it (SGLang runs an EAGLE-3 drafter as EAGLE at accept length 1.00, "
                  "sglang#21272)" + (f"; this release runs {drafter.title} as {own.name!r}" if own else
                                     f"; this release has no {drafter.title} method"), where, edits=edits,
                  remedy=None if own else f"a release with {drafter.title}")


def _parallel(ctx: Ctx, found: Recognition, words: str, where: str) -> Result:
    """P-EAGLE: vLLM runs it as "eagle3" only with "parallel_drafting": true (0.22.0-0.33.0)."""
    from compat.launch_line import LineEdit

    fields = {f.get("name") for f in ctx.fact("speculative_config").get("fields") or []}
    if "parallel_drafting" not in fields:
        return Result(FAIL, f"{words}: this release has no \"parallel_drafting\" key", where,
                      remedy="vllm >=0.22.0,<=0.33.0 serves P-EAGLE")
    if ctx.options.launch is None or spec_value(ctx, "parallel_drafting") is True:
        return Result(PASS, f"{words}; run as eagle3 with \"parallel_drafting\": true", where)
    return Result(FAIL, f"{words}, launched without \"parallel_drafting\": true: it drafts one token per pass with a head "
                  "trained to draft them all at once", where,
                  edits=(LineEdit("spec", "a P-EAGLE drafter drafts in parallel", key="parallel_drafting", value=True),))
