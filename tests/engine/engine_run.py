"""Run the real vLLM engine once, greedily, on token-id prompts; print one result line.

Run BY the engine venv's python (the test process has no torch/vllm):

    <venv>/bin/python engine_run.py '<json spec>'

spec: {"model": DIR, "prompts": [[ids]], "max_tokens": N,
       "speculative_config": {...} | null, "max_model_len": 256}

The last stdout line is `ENGINE_RESULT <json>` (vLLM logs to stdout too, so callers look for the
prefix): {"ok": true, "outputs": [[ids]], "spec": {...} | null, "seconds": {...}} or, on failure
(exit 1), {"ok": false, "error": "<exception type: message>", "traceback": "..."}.

Kept apart from the product's runner (compat/verify/engine_side/vllm_run.py) on purpose, though they
read the same counters: these tests judge what compat predicts and measures, so they run the engine
through code compat does not share; a bug in the product's runner cannot hide itself here.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

RESULT_PREFIX = "ENGINE_RESULT "

# Set before vllm is imported: the CPU recipe (see ../shared/research/README.md).
ENGINE_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}

SPEC_COUNTERS = {
    "vllm:spec_decode_num_drafts": "num_drafts",
    "vllm:spec_decode_num_draft_tokens": "num_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens": "num_accepted_tokens",
}


def spec_decode_stats(metrics) -> dict | None:
    """Spec-decode counters from `LLM.get_metrics()`, summed over label sets."""
    stats: dict = {}
    for metric in metrics:
        if metric.name in SPEC_COUNTERS:
            key = SPEC_COUNTERS[metric.name]
            stats[key] = stats.get(key, 0) + int(metric.value)
        elif metric.name == "vllm:spec_decode_num_accepted_tokens_per_pos":
            previous = stats.get("accepted_per_pos", [0] * len(metric.values))
            stats["accepted_per_pos"] = [a + int(b) for a, b in zip(previous, metric.values)]
    if not stats:
        return None
    drafted = stats.get("num_draft_tokens", 0)
    stats["acceptance_rate"] = stats.get("num_accepted_tokens", 0) / drafted if drafted else 0.0
    return stats


def run(spec: dict) -> dict:
    seconds: dict = {}
    start = time.monotonic()
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    seconds["import"] = round(time.monotonic() - start, 2)
    start = time.monotonic()
    llm = LLM(
        model=spec["model"],
        speculative_config=spec.get("speculative_config"),
        enforce_eager=True,
        max_model_len=spec.get("max_model_len", 256),
        skip_tokenizer_init=True,
        dtype="float32",  # no rounding noise between the speculative and the plain run
        seed=0,
        disable_log_stats=False,  # the spec-decode counters live in the stats
        max_num_seqs=len(spec["prompts"]),
        **({"attention_backend": spec["attention_backend"]} if spec.get("attention_backend") else {}),
    )
    seconds["load"] = round(time.monotonic() - start, 2)
    start = time.monotonic()
    params = SamplingParams(temperature=0.0, max_tokens=spec["max_tokens"], ignore_eos=True,
                            detokenize=False)
    results = llm.generate([TokensPrompt(prompt_token_ids=p) for p in spec["prompts"]], params,
                           use_tqdm=False)
    seconds["generate"] = round(time.monotonic() - start, 2)
    outputs = [list(r.outputs[0].token_ids) for r in results]
    return {"ok": True, "outputs": outputs, "spec": spec_decode_stats(llm.get_metrics()),
            "seconds": seconds}


def main(argv: list[str]) -> int:
    for name, value in ENGINE_ENV.items():
        os.environ.setdefault(name, value)
    try:
        result = run(json.loads(argv[1]))
    except BaseException as exc:  # report anything, including SystemExit from deep inside
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                  "traceback": traceback.format_exc()}
        traceback.print_exc()  # on stderr, as an uncaught exception would be: what a user sees (and pastes)
    sys.stdout.flush()
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
