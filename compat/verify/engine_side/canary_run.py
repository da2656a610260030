"""Build the tiny oracle pairs and measure on the installed vLLM which target layers it feeds a drafter.

Runs in the engine's interpreter (torch, safetensors and vLLM; compat is not installed there):

    python canary_run.py JOB.json EVENTS.jsonl

JOB: {"work_dir": DIR, "max_tokens": N, "num_layers": 8, "families": [{"family", "seed", "dtype",
      "cases": [{"name", "where", "ids", "num_aux"}]}]}

For each family a target is written (oracle_models.py), then for each case a canary drafter
declaring `ids` at `where` (top-level, eagle_config, or nowhere), and the engine runs the pair
once with EAGLE-3 (one draft token per step) on one prompt per class. The "case" event carries,
per class, the verify-step histogram of that prompt (accepted or not), whether the target produced
the walk it was built for, and the runner's modules; the caller decodes the layers from it.
Every case is tried, also after one failed: a failure may be the case's own (its fc, its ids).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import oracle_models
import vllm_run


def case_run(manifest: dict, drafter: Path, max_tokens: int, dtype: str = "float32") -> dict:
    prompts = oracle_models.class_prompts(manifest)
    return {"label": f"{manifest['family']} canary", "model": manifest["path"],
            "speculative_config": {"method": "eagle3", "model": str(drafter), "num_speculative_tokens": 1},
            "prompts": list(prompts.values()), "max_tokens": max_tokens, "max_model_len": 128, "dtype": dtype,
            "per_prompt": True, "warmup": False}  # nothing is timed: no warm-up call


def measure_case(manifest: dict, embed, family_dir: Path, case: dict, platform: dict, events, max_tokens: int,
                 dtype: str, last: bool) -> dict:
    drafter = oracle_models.canary_drafter(manifest, embed, family_dir / f"drafter-{case['name']}",
                                           where=case.get("where"), ids=case.get("ids"), num_aux=int(case["num_aux"]))
    run = case_run(manifest, drafter, max_tokens, dtype)
    run["label"] = f"{manifest['family']}: {case['name']}"
    result = vllm_run.run_guarded(run, platform, events, last)
    names = list(oracle_models.class_prompts(manifest))
    out = {"family": manifest["family"], "case": case["name"], "ok": result["ok"],
           "drafter_config": json.loads((drafter / "config.json").read_text()), "classes": names,
           "error": result.get("error"), "traceback": result.get("traceback"), "seconds": result.get("seconds")}
    if result["ok"]:
        prompts = run["prompts"]
        out["walk_ok"] = [o == oracle_models.walk(manifest, p, len(o)) for p, o in zip(prompts, result["outputs"])]
        out["histograms"] = result.get("histograms")
        out["per_prompt_counters"] = result.get("per_prompt_counters")
        out["runner_modules"] = result.get("runner_modules")
    return out


def describe(manifest: dict) -> dict:
    """What the caller needs to predict and decode: the target's shape and the classes' meaning."""
    return {"family": manifest["family"], "architecture": manifest["config"]["architectures"][0],
            "model_type": manifest["config"]["model_type"], "num_layers": manifest["num_layers"],
            "hidden_size": manifest["hidden_size"],
            "classes": [{k: c.get(k) for k in ("name", "slot", "depth", "control")} for c in manifest["classes"]]}


def main(argv: list[str]) -> int:
    job = json.loads(open(argv[1], encoding="utf-8").read())
    events = vllm_run.Events(argv[2])
    events.emit("importing")
    try:
        platform = vllm_run.import_engine(events)
    except BaseException as exc:  # noqa: BLE001
        events.emit("result", label="import", ok=False, error=f"{type(exc).__name__}: {exc}")
        events.emit("done", ok=False)
        return 1
    work = Path(job["work_dir"])
    if int(job.get("num_layers", oracle_models.NUM_LAYERS)) != oracle_models.NUM_LAYERS:
        events.emit("result", label="job", ok=False,
                    error=f"the oracle targets have {oracle_models.NUM_LAYERS} layers, the job expects {job['num_layers']}")
        events.emit("done", ok=False)
        return 1
    last_case = (len(job["families"]) - 1, len(job["families"][-1]["cases"]) - 1) if job["families"] else None
    for family_index, family in enumerate(job["families"]):
        name = family["family"]
        events.emit("building", family=name)
        start = time.monotonic()
        family_dir = work / name
        manifest = oracle_models.write_target(name, family_dir / "target", int(family.get("seed", 0)))
        _, embed = oracle_models.read_target(family_dir / "target")
        events.emit("built", family=name, seconds=round(time.monotonic() - start, 3), target=describe(manifest))
        for case_index, case in enumerate(family["cases"]):
            out = measure_case(manifest, embed, family_dir, case, platform, events, int(job.get("max_tokens", 8)),
                               family.get("dtype") or "float32", (family_index, case_index) == last_case)
            events.emit("case", **out)
    events.emit("done", ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
