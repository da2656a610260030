"""SGLang's draft-tree settings on the launch line (--speculative-num-steps, --speculative-eagle-topk,
--speculative-num-draft-tokens) against the rules the release's EAGLE start-up code states (the
speculative_tree_rules probe, each with its file:line): a rule that refuses them (topk > 1 where spec v2 or
trtllm_mha needs topk 1, topk without steps) fails as the server would at start-up; one that rewrites them
(draft tokens reset to steps + 1 when topk is 1) warns, and the printed line says what really runs. A rule
whose condition the line does not settle (the GPU's backend, a page size chosen at start-up) is listed, not
guessed. vLLM proposes one chain (no topk, no tree): nothing to check there."""

from __future__ import annotations

from compat import engines
from compat.checks import FAIL, PASS, WARN, Ctx, Result, check
from compat.checks._launch_args import env_switches, read_against, settings
from compat.checks._rules import UNKNOWN, fill, holds
from compat.launch_line import LineEdit



@check("speculative-tree", "draft tree: steps, topk and draft tokens are ones this release runs as given", order=6,
       needs=("speculative tree",), fixes=("line",), when="launch")
def speculative_tree(ctx: Ctx) -> Result:
    read = read_against(ctx)
    unit = engines.get(ctx.engine)
    if unit.draft_shape == "chain" or read is None:
        return Result(PASS, f"{unit.display_name} drafts one chain of num_speculative_tokens (no topk, no tree)", None)
    fact = ctx.fact("speculative_tree_rules")
    if not fact.get("present"):
        return Result(WARN, f"cannot tell: {fact.get('reason', 'the rules were not found')}", None)
    values = settings(read, ctx.fact("cli_arguments"))
    env = env_switches(read.line, fact.get("env_defaults") or {})
    refused, adjusted, open_rules, edits = [], [], [], []
    for rule in fact.get("rules") or []:
        verdict = holds(rule["when"], values, env, last_negated=bool(rule.get("fails_unless_last")))
        if verdict is UNKNOWN:
            open_rules.append(rule)
        elif verdict and rule["kind"] == "refuse":
            refused.append(f"{fill(rule['message'], values)} ({rule['location']})")
            edits += _tree_edits(unit, rule, values)
        elif verdict and rule["kind"] == "adjust" and rule.get("message"):
            adjusted.append(f"{rule['message']} ({rule['location']})")
            edits += _tree_edits(unit, rule, values)
    evidence = {"settings": {k: values.get(k) for k in ("speculative_num_steps", "speculative_eagle_topk",
                                                        "speculative_num_draft_tokens")},
                "env": env, "undecided": [f"{' and '.join(r['when'])} ({r['location']})" for r in open_rules]}
    unique = list({(e.option, e.value): e for e in edits}.values())
    if refused:
        return Result(FAIL, "the server refuses these settings at start-up: " + "; ".join(refused), fact.get("location"),
                      evidence=evidence, edits=tuple(unique))
    if adjusted:
        return Result(WARN, "the server changes these settings at start-up: " + "; ".join(adjusted), fact.get("location"),
                      evidence=evidence, edits=tuple(unique))
    tail = f"; {len(open_rules)} depend on what the line does not settle (in --json)" if open_rules else ""
    return Result(PASS, f"{len(fact.get('rules') or []) - len(open_rules)} rules of {fact.get('function')} hold for "
                  f"these settings{tail}", fact.get("location"), evidence=evidence)


def _tree_edits(unit: engines.Engine, rule: dict, values: dict) -> list[LineEdit]:
    """What makes the rule hold: topk 1 (and draft tokens steps + 1) for a topk rule, steps for topk without steps; each
    set by the option the engine's unit gives the setting (SGLang's --speculative-num-steps, -eagle-topk, -num-draft-tokens)."""
    steps_option, topk_option, draft_option = (unit.setting_option(s) or "" for s in
                                               ("num_speculative_tokens", "topk", "num_draft_tokens"))
    steps = values.get("speculative_num_steps")
    text = " and ".join(rule["when"])
    why = f"{rule['location']}"
    if isinstance(steps, int) and "speculative_eagle_topk == 1" in text and "speculative_num_steps + 1" in text:
        return [LineEdit("set", f"draft tokens = steps + 1 with topk 1 ({why})", option=draft_option, value=steps + 1)]
    if isinstance(steps, int) and ("speculative_eagle_topk > 1" in text or "speculative_eagle_topk != 1" in text):
        return [LineEdit("set", f"topk 1 ({why})", option=topk_option, value=1),
                LineEdit("set", f"draft tokens = steps + 1 with topk 1 ({why})", option=draft_option, value=steps + 1)]
    if steps is None and "speculative_num_steps is None" in text:
        draft = values.get("speculative_num_draft_tokens")
        return [LineEdit("set", f"steps with topk / draft tokens ({why})", option=steps_option,
                         value=draft - 1 if isinstance(draft, int) and draft > 1 else 3)]
    return []
