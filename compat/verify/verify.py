"""`compat verify TARGET [DRAFTER]`: run the installed vLLM twice (plain, then speculative: EAGLE-3 with the drafter,
or the method of --method: compat/verify/methods.py),
greedily, on the same prompts, and report what the engine measured.

Greedy speculative decoding must give exactly the tokens of the plain run: that is its correctness
property, so unequal outputs fail. Acceptance (overall, per draft position, mean accepted length)
comes from the engine's own spec-decode counters; tokens/s from the wall time of each generate call
(after a short warm-up call, so neither run pays for first-call set-up).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from compat.core.interpreter import Interpreter
from compat.core.output import plural
from compat.verify.engine import (
    DEFAULT_TIMEOUT_S, EngineRun, EngineRunError, describe, explain_command, installed_vllm, new_log_path, run_script,
)
from compat.verify.inputs import ModelDir, plan_prompts, read_model_dir, read_prompts_file

if TYPE_CHECKING:
    from compat.sources.installed import InstalledEngine

DEFAULT_SPEC_TOKENS = 3
DEFAULT_MAX_TOKENS = 32
DEFAULT_PROMPTS = 4
PLAIN, SPECULATIVE = "plain run", "speculative run"
TEXT_MAX_MODEL_LEN = 1024


def max_model_len(target: ModelDir, prompts: list, max_tokens: int) -> int:
    """Room for the longest prompt and the generated tokens, within what the target allows."""
    if prompts and isinstance(prompts[0], str):
        wanted = TEXT_MAX_MODEL_LEN
    else:
        wanted = max(256, max((len(p) for p in prompts), default=0) + max_tokens + 64)
    return min(wanted, target.max_positions) if target.max_positions else wanted


def run_verify(target: str | Path, drafter: str | Path | None, *, python: Interpreter | str | None = None,
               method: str | None = None, prompts_file: str | Path | None = None,
               prompts: list[str] | None = None, prompt_ids: bool = False, num_prompts: int = DEFAULT_PROMPTS,
               num_speculative_tokens: int = DEFAULT_SPEC_TOKENS, max_tokens: int = DEFAULT_MAX_TOKENS,
               min_acceptance: float | None = None, dtype: str | None = None, timeout: float = DEFAULT_TIMEOUT_S,
               log_dir: str | Path | None = None, progress: Callable[[str], None] | None = None) -> dict:
    """Run the pair on the engine of `python`; the `compat verify --json` document (without `schema`).

    `method` is a compat.methods family (default: the one the drafter was recognised as, else eagle3); n-gram and
    suffix run without a drafter, MTP with the heads inside the target. Raises a CompatError when the inputs cannot be read (exit 2/4), vLLM is not installed in `python`
    (3) or the engine fails or times out (1, the message names the log). The document's `passed` is
    False when the outputs differ or acceptance is below `min_acceptance`; `failures` says why.
    """
    from compat.verify import methods

    # what the user gave is read first: a path naming nothing (2) or the wrong kind (4) is said before the engine
    target_dir = read_model_dir(target, "target")
    drafter_dir = read_model_dir(drafter, "drafter") if drafter is not None else None
    recognised = methods.recognised_family(drafter_dir) if drafter_dir and not method else None
    family = method or recognised or methods.DEFAULT_METHOD
    any_release = methods.resolve(family, None)  # the method's needs that no release changes, checked now
    methods.check_inputs(any_release, target_dir, drafter_dir)
    if prompts_file is not None:
        plan = read_prompts_file(prompts_file, num_prompts)
    else:
        plan = plan_prompts(target_dir, drafter_dir, texts=prompts, prompt_ids=prompt_ids, count=num_prompts,
                            repeating=any_release.repeating_prompts)
    log = new_log_path("verify", log_dir)
    engine = installed_vllm(python)  # only now: looking for vLLM (a subprocess in the serving venv)
    run_of = methods.resolve(family, engine.version)
    methods.check_venv(run_of, engine.python)
    spec = run_of.speculative_config(drafter_dir.path if drafter_dir else None, num_speculative_tokens)
    common = {"model": str(target_dir.path), "prompts": plan.prompts, "max_tokens": max_tokens,
              "max_model_len": max_model_len(target_dir, plan.prompts, max_tokens), "dtype": dtype, "warmup": True}
    job = {"runs": [{"label": PLAIN, "speculative_config": None, **common},
                    {"label": SPECULATIVE, "speculative_config": spec, **common}]}
    with tempfile.TemporaryDirectory(prefix="compat-verify-") as work:
        run = run_script(engine.interpreter, "vllm_run.py", job, work=Path(work), log=log, timeout=timeout,
                         on_event=_progress(progress))
    plain, speculative = (_succeeded(run, label, engine, log) for label in (PLAIN, SPECULATIVE))
    document = {
        "engine": engine.engine, "version": engine.version, "distribution": engine.distribution, "python": engine.python,
        "platform": run.platform,
        "method": {"family": run_of.family, "title": run_of.title, "name": run_of.name,
                   "chosen_by": "asked" if method else ("the drafter" if recognised else "default")},
        "target": target_dir.to_json(), "drafter": drafter_dir.to_json() if drafter_dir else None,
        "prompts": {**plan.to_json(), "max_tokens": max_tokens, "sampling": "greedy (temperature 0), ignore_eos"},
        "speculative_config": spec,
        **summarize(plain, speculative),
        "log": str(log), "seconds": run.seconds, "import_seconds": run.import_seconds,
    }
    document["min_acceptance"] = min_acceptance
    document["failures"] = failures(document, min_acceptance)
    document["passed"] = not document["failures"]
    return document


def _succeeded(run: EngineRun, label: str, engine: InstalledEngine, log: Path) -> dict[str, Any]:
    """The engine's result of run `label`; an EngineRunError naming the log, and the `compat explain` line that
    reads it, when it failed or is missing."""
    result = run.result(label)
    if result is None or not result.get("ok"):
        error = (result or {}).get("error") or "no result"
        raise EngineRunError(f"vLLM {engine.version} failed in the {label}: {error}; its log: {log}",
                             hint=f"{explain_command(log, engine.python, engine.engine)} maps the engine's error to its source and a "
                                  "fix; for the speculative run, `compat doctor` says whether this release can load "
                                  "the drafter")
    return result


def _progress(progress: Callable[[str], None] | None) -> Callable[[dict[str, Any]], None] | None:
    if progress is None:
        return None

    def on_event(event: dict) -> None:
        text = describe(event)
        if text:
            progress(text)

    return on_event


# -- the engine's numbers, summarised (pure: tested offline) ---------------------------------------

def summarize(plain: dict, speculative: dict) -> dict:
    equal, mismatches = compare_outputs(plain["outputs"], speculative["outputs"])
    return {"outputs_equal": equal, "mismatches": mismatches, "acceptance": acceptance(speculative.get("spec")),
            "throughput": throughput(plain, speculative)}


def compare_outputs(plain: list[list[int]], speculative: list[list[int]]) -> tuple[bool, list[dict]]:
    """Equal token for token; else, per differing prompt, where the first difference is."""
    mismatches = []
    for index, (a, b) in enumerate(zip(plain, speculative)):
        if a != b:
            at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            mismatches.append({"prompt": index, "first_difference_at": at,
                               "plain": a[at:at + 4], "speculative": b[at:at + 4]})
    if len(plain) != len(speculative):
        mismatches.append({"prompt": None, "detail": f"{len(plain)} plain outputs, {len(speculative)} speculative"})
    return not mismatches, mismatches


def acceptance(counters: dict | None) -> dict:
    """Rate = accepted / drafted tokens; per position = accepted at position i / drafts;
    mean accepted length = 1 + accepted / drafts (vLLM's definition: the target's own token counts)."""
    if not counters or not counters.get("num_drafts"):
        return {"rate": None, "per_position": [], "mean_accepted_length": None, "num_drafts": 0,
                "num_draft_tokens": 0, "num_accepted_tokens": 0,
                "note": "the engine reported no drafts (no spec-decode counters)"}
    drafts = counters["num_drafts"]
    drafted, accepted = counters.get("num_draft_tokens", 0), counters.get("num_accepted_tokens", 0)
    per_pos = counters.get("accepted_per_pos") or []
    return {"rate": round(accepted / drafted, 4) if drafted else None,
            "per_position": [round(a / drafts, 4) for a in per_pos],
            "mean_accepted_length": round(1 + accepted / drafts, 4),
            "num_drafts": drafts, "num_draft_tokens": drafted, "num_accepted_tokens": accepted,
            "accepted_per_position": list(per_pos)}


def throughput(plain: dict, speculative: dict) -> dict:
    def rate(result: dict) -> float | None:
        seconds = (result.get("seconds") or {}).get("generate")
        return round(result["generated_tokens"] / seconds, 2) if seconds else None

    base, spec = rate(plain), rate(speculative)
    return {"plain_tokens_per_s": base, "speculative_tokens_per_s": spec,
            "speedup": round(spec / base, 3) if base and spec else None,
            "generated_tokens": speculative.get("generated_tokens"),
            "seconds": {"plain": plain.get("seconds"), "speculative": speculative.get("seconds")}}


def failures(document: dict, min_acceptance: float | None) -> list[str]:
    out = []
    if not document["outputs_equal"]:
        count = len([m for m in document["mismatches"] if m.get("prompt") is not None])
        out.append(f"greedy outputs differ with speculation on {plural(count, 'prompt')}: the engine's speculative decoding "
                   "is not exact here")
    rate = document["acceptance"]["rate"]
    if min_acceptance is not None and (rate is None or rate < min_acceptance):
        shown = "no drafts" if rate is None else f"{rate:.3f}"
        out.append(f"acceptance {shown} is below --min-acceptance {min_acceptance}")
    return out
