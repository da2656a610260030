"""Run the installed vLLM offline, greedily, once per run of a job; report through an events file.

Runs in the engine's interpreter (compat is not installed there; this file only needs the stdlib
and vLLM). As a script:

    python vllm_run.py JOB.json EVENTS.jsonl

JOB: {"runs": [{"label", "model", "speculative_config" | null, "prompts": [[ids]] | ["text"],
       "max_tokens", "max_model_len", "dtype", "per_prompt": bool, "warmup": bool}]}

Each event is one JSON line appended to EVENTS (vLLM's own logging goes to stdout/stderr, which
the caller keeps in a log file): {"event": "platform" | "importing" | "loading" | "generating" |
"result" | "done", ...}. A "result" carries {"label", "ok", "outputs", "spec", "per_prompt",
"seconds", "generated_tokens", "runner_modules"} or {"ok": false, "error", "traceback"}.

Settings: on a CPU build the CPU recipe (threads not bound, a 1 GiB KV cache, the engine core in
this process, eager mode) unless the environment already sets them; other builds keep vLLM's
defaults. Nothing here touches the network (the caller sets HF_HUB_OFFLINE=1).
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import sys
import time
import traceback

CPU_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
}
SPEC_COUNTERS = {
    "vllm:spec_decode_num_drafts": "num_drafts",
    "vllm:spec_decode_num_draft_tokens": "num_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens": "num_accepted_tokens",
}


class Events:
    def __init__(self, path: str):
        self.path = path

    def emit(self, event: str, **fields) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"event": event, "t": round(time.time(), 3), **fields}) + "\n")


def setup_platform(events: Events) -> dict:
    """Detect the build (CPU or not) and apply the settings it needs before the engine starts."""
    from vllm.platforms import current_platform

    device = str(getattr(current_platform, "device_type", "") or "unknown")
    applied: dict = {}
    if device == "cpu":
        for name, value in CPU_ENV.items():
            if name not in os.environ:
                os.environ[name] = value
            applied[name] = os.environ[name]
    platform = {"device": device, "env": applied, "enforce_eager": device == "cpu"}
    events.emit("platform", **platform)
    return platform


def import_engine(events: Events) -> dict:
    """Import vLLM (what takes long: say so before), apply the platform's settings, freeze the heap."""
    platform = setup_platform(events)
    import vllm
    from vllm import LLM  # noqa: F401  (most of vLLM loads here, lazily)

    freeze_heap()
    events.emit("imported", version=getattr(vllm, "__version__", None))
    return platform


def spec_counters(llm) -> dict | None:
    """The spec-decode counters (summed over label sets), or None when the engine has none."""
    try:
        metrics = llm.get_metrics()
    except Exception:  # noqa: BLE001 - a release without get_metrics: no counters
        return None
    stats: dict = {}
    for metric in metrics:
        if metric.name in SPEC_COUNTERS:
            key = SPEC_COUNTERS[metric.name]
            stats[key] = stats.get(key, 0) + int(metric.value)
        elif metric.name == "vllm:spec_decode_num_accepted_tokens_per_pos":
            previous = stats.get("accepted_per_pos", [0] * len(metric.values))
            stats["accepted_per_pos"] = [a + int(b) for a, b in zip(previous, metric.values)]
    return stats or None


def counter_delta(before: dict | None, after: dict | None) -> dict | None:
    if not after:
        return None
    before = before or {}
    out = {k: after.get(k, 0) - before.get(k, 0) for k in SPEC_COUNTERS.values()}
    per_pos = after.get("accepted_per_pos") or []
    previous = before.get("accepted_per_pos") or [0] * len(per_pos)
    out["accepted_per_pos"] = [a - b for a, b in zip(per_pos, previous)]
    return out


def engine_arg_names() -> set[str]:
    from vllm.engine.arg_utils import EngineArgs

    return {f.name for f in dataclasses.fields(EngineArgs)}


def make_llm(run: dict, platform: dict, per_prompt: bool):
    from vllm import LLM

    kwargs = {
        "model": run["model"],
        "speculative_config": run.get("speculative_config"),
        "max_model_len": run.get("max_model_len"),
        "skip_tokenizer_init": not _text_prompts(run),
        "dtype": run.get("dtype") or "auto",
        "seed": 0,
        "disable_log_stats": False,  # the spec-decode counters live in the stats
        "max_num_seqs": max(1, len(run["prompts"])),
    }
    if platform.get("enforce_eager"):
        kwargs["enforce_eager"] = True
    if per_prompt and run.get("speculative_config"):
        kwargs["per_request_spec_decode_metrics"] = "summary"
    return LLM(**{k: v for k, v in kwargs.items() if v is not None})


def _text_prompts(run: dict) -> bool:
    return bool(run["prompts"]) and isinstance(run["prompts"][0], str)


def _inputs(run: dict) -> list:
    if _text_prompts(run):
        return list(run["prompts"])
    from vllm.inputs import TokensPrompt

    return [TokensPrompt(prompt_token_ids=list(p)) for p in run["prompts"]]


def _params(max_tokens: int, text: bool):
    from vllm import SamplingParams

    return SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True, detokenize=text)


def runner_modules(llm) -> list[str] | None:
    """The modules of the model runner's classes (which runner a release used), when the engine lets us ask."""
    try:
        found = llm.collective_rpc(lambda self: [c.__module__ for c in type(self.model_runner).__mro__])
        return list(found[0]) if found else None
    except Exception:  # noqa: BLE001 - an engine without collective_rpc or a worker without model_runner
        return None


def request_histograms(results) -> list[list[int] | None]:
    """Per prompt: how many verify steps accepted j draft tokens (vLLM >= 0.32 per-request metrics)."""
    out = []
    for r in results:
        metrics = getattr(r.outputs[0], "spec_decode_metrics", None)
        out.append(list(metrics.histogram) if metrics is not None else None)
    return out


def run_one(run: dict, platform: dict, events: Events, last: bool = False) -> dict:
    label = run["label"]
    per_prompt = bool(run.get("per_prompt")) and "per_request_spec_decode_metrics" in engine_arg_names()
    events.emit("loading", label=label)
    seconds: dict = {}
    start = time.monotonic()
    llm = make_llm(run, platform, per_prompt)
    try:
        seconds["load"] = round(time.monotonic() - start, 3)
        text = _text_prompts(run)
        if run.get("warmup", True):
            start = time.monotonic()
            llm.generate(_inputs(run)[:1], _params(2, text), use_tqdm=False)
            seconds["warmup"] = round(time.monotonic() - start, 3)
        events.emit("generating", label=label)
        before = spec_counters(llm)
        start = time.monotonic()
        if per_prompt or not run.get("per_prompt"):
            results = llm.generate(_inputs(run), _params(run["max_tokens"], text), use_tqdm=False)
            histograms = request_histograms(results) if per_prompt else None
            per_prompt_stats = None
        else:  # no per-request metrics in this release: one prompt at a time, counters diffed
            results, per_prompt_stats, histograms = [], [], None
            for one in _inputs(run):
                mark = spec_counters(llm)
                results += llm.generate([one], _params(run["max_tokens"], text), use_tqdm=False)
                per_prompt_stats.append(counter_delta(mark, spec_counters(llm)))
        seconds["generate"] = round(time.monotonic() - start, 4)
        spec = counter_delta(before, spec_counters(llm)) if run.get("speculative_config") else None
        outputs = [list(r.outputs[0].token_ids) for r in results]
        modules = runner_modules(llm)
        return {"label": label, "ok": True, "outputs": outputs, "spec": spec, "histograms": histograms,
                "per_prompt_counters": per_prompt_stats, "seconds": seconds,
                "generated_tokens": sum(len(o) for o in outputs), "runner_modules": modules,
                "texts": [r.outputs[0].text for r in results] if text else None}
    finally:
        if not last:  # the process exits after the last run: nothing to free for
            shutdown(llm)
            del llm
            release_engine()


def release_engine() -> None:
    """Free the engine so the next run of the job can build its own (same process, same distributed state)."""
    gc.collect()
    try:
        from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

        cleanup_dist_env_and_memory()
    except Exception:  # noqa: BLE001 - older releases: best effort
        pass
    freeze_heap()


def freeze_heap() -> None:
    """Move every live object out of the collector's sight. vLLM calls gc.collect() several times while it
    builds an engine; with torch and vLLM loaded each call walks ~10^6 objects (0.4 s here, 3 s per engine)."""
    gc.collect()
    gc.freeze()


def shutdown(llm) -> None:
    """Stop the engine core (a child process on GPU builds) before the next run builds its own."""
    core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    try:
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
    except Exception:  # noqa: BLE001 - best effort; the process exits soon anyway
        pass


def run_guarded(run: dict, platform: dict, events: Events, last: bool = False) -> dict:
    try:
        result = run_one(run, platform, events, last)
    except BaseException as exc:  # report anything, SystemExit from deep inside included
        release_engine()
        result = {"label": run["label"], "ok": False, "error": f"{type(exc).__name__}: {exc}",
                  "traceback": traceback.format_exc()[-6000:]}
        print(f"compat: {run['label']} failed:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
    events.emit("result", **result)
    return result


def main(argv: list[str]) -> int:
    job = json.loads(open(argv[1], encoding="utf-8").read())
    events = Events(argv[2])
    events.emit("importing")
    try:
        platform = import_engine(events)
    except BaseException as exc:  # noqa: BLE001
        events.emit("result", label="import", ok=False, error=f"{type(exc).__name__}: {exc}",
                    traceback=traceback.format_exc()[-6000:])
        events.emit("done", ok=False)
        return 1
    ok = True
    for index, run in enumerate(job["runs"]):
        ok = run_guarded(run, platform, events, last=index == len(job["runs"]) - 1)["ok"] and ok
    events.emit("done", ok=ok)
    sys.stdout.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
