"""The draft's tensor parallel size against the target's. vLLM: --speculative-config draft_tensor_parallel_size
is checked by SpeculativeConfig's own rules (probe draft_parallel_rules: only 1 or the target's -tp; the
misnamed key tensor_parallel_size refused from the release that says so), evaluated on the line's values.
SGLang: the draft worker runs at the target's --tp-size; no release has an option for another."""

from __future__ import annotations

from compat import engines
from compat.checks import ANY_METHOD, FAIL, PASS, WARN, Ctx, Result, check
from compat.checks._draft_settings import argument, line
from compat.checks._launch_args import settings
from compat.checks._rules import UNKNOWN, fill, holds
from compat.launch_line import LineEdit


@check("draft-tensor-parallel", "draft tensor parallel size: one this release runs beside the target's", order=8,
       needs=("draft parallelism", "launch options"),
       fixes=("line",), when="launch", methods=ANY_METHOD)
def draft_tensor_parallel(ctx: Ctx) -> Result:
    read = line(ctx)
    if read is None:
        return Result(PASS, "no launch line given", None)
    if engines.get(ctx.engine).draft_inherits:
        targets = engines.get(ctx.engine).draft_option("tensor_parallel_size")[1]  # the target's (--tp-size, ...)
        tp = (read.value(*targets) if targets else None) or "1 (default)"
        found = next((a for a in (argument(ctx, t) for t in targets) if a), None)
        return Result(PASS, f"the draft runs at the target's tensor parallel size ({tp}); this release has no option "
                      "for another", (found or {}).get("location"))
    fact = ctx.fact("draft_parallel_rules")
    values = settings(read, ctx.fact("cli_arguments"))
    spec = read.line.spec
    target_tp = values.get("tensor_parallel_size")
    draft_tp = spec.get("draft_tensor_parallel_size")
    env = {"speculative_draft_tensor_parallel_size": draft_tp, "self.draft_tensor_parallel_size": draft_tp,
           "self.tensor_parallel_size": spec.get("tensor_parallel_size"),
           "target_parallel_config.tensor_parallel_size": target_tp}
    refused, undecided, edits = [], [], []
    for rule in fact.get("rules") or []:
        if rule["kind"] != "refuse":
            continue
        verdict = holds(rule["when"], env, {})
        if verdict is UNKNOWN:
            undecided.append(rule["location"])
        elif verdict:
            refused.append(f"{fill(rule['message'], env)} ({rule['location']})")
            if "self.tensor_parallel_size" in " ".join(rule["when"]):
                edits.append(LineEdit("spec", f"the draft's TP key is draft_tensor_parallel_size ({rule['location']})",
                                      key="tensor_parallel_size", value=None))
                edits.append(LineEdit("spec", "the draft TP the line meant", key="draft_tensor_parallel_size",
                                      value=spec.get("tensor_parallel_size")))
            else:
                edits.append(LineEdit("spec", f"1 or the target's tensor parallel size ({rule['location']})",
                                      key="draft_tensor_parallel_size", value=target_tp))
    evidence = {"target_tp": target_tp, "draft_tp": draft_tp, "undecided": undecided}
    if refused:
        return Result(FAIL, "the engine refuses the draft's tensor parallel size at start-up: " + "; ".join(refused),
                      fact.get("location"), evidence=evidence, edits=tuple(edits))
    shown = draft_tp if draft_tp is not None else f"the target's ({target_tp})"
    if undecided:
        return Result(WARN, f"draft TP {shown}: {len(undecided)} rules depend on what the line does not settle", fact.get("location"),
                      evidence=evidence)
    return Result(PASS, f"draft tensor parallel size {shown} with target -tp {target_tp}: SpeculativeConfig's rules hold",
                  fact.get("location"), evidence=evidence)
