"""The explain and matrix scenarios of tools/record_behaviour.py (issue 29 asks for their JSON too).

explain reads texts and logs compat's catalog recognises (each cause of compat/explain/causes.py, acceptance
lines of both engines, unrelated failures, text that matches nothing), against releases of the spread, and
with the release named every way a user names it (a release, the installed engine through --python, the
installed engine with the log naming the release). matrix runs over small cached ranges (--offline), as JSON
and markdown, with and without the user's own column. The logs are written into the recording's directory.
"""

from __future__ import annotations

from pathlib import Path

WHITELIST = ("ValueError: Eagle3 is only supported for ['llama', 'qwen', 'minicpm', 'gpt_oss'] models. "
             "Got self.target_model_config.hf_text_config.model_type='kimi_k2'")
INTERFACE = "RuntimeError: Model does not support EAGLE3 interface"
UNKNOWN_KEY = ("pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig\n"
               "num_speculative_token\n"
               "  Unexpected keyword argument [type=unexpected_keyword_argument, input_value=3, input_type=int]")
SHAPES = ("Traceback (most recent call last):\n"
          '  File "/opt/venv/lib/python3.11/site-packages/vllm/model_executor/models/llama_eagle3.py", line 250, '
          "in load_weights\n"
          "    weight_loader(param, loaded_weight)\n"
          "RuntimeError: size mismatch for fc.weight: copying a param with shape torch.Size([64, 128]) from "
          "checkpoint, the shape in current model is torch.Size([64, 192]).")
NO_WEIGHTS = "RuntimeError: Cannot find any model weights with `/models/drafter`"
KERNELS = ("WARNING 12-02 11:00:00 [_custom_ops.py:20] Failed to import from vllm._C with "
           "ImportError('/opt/venv/lib/python3.11/site-packages/vllm/_C.abi3.so: undefined symbol: _ZN3c10')")
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
USER_CODE = ("Traceback (most recent call last):\n"
             '  File "/home/me/serve.py", line 2, in <module>\n'
             "    print(config['speculative_model'])\n"
             "KeyError: 'speculative_model'")
NOTHING = "hello world"
SGLANG_CAPTURE = "AttributeError: 'DeepseekV2ForCausalLM' object has no attribute 'set_eagle3_layers_to_capture'"

VLLM_METRICS = ("INFO 12-02 11:00:{s:02d} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: {length}, "
                "Accepted throughput: 1.00 tokens/s, Drafted throughput: 4.00 tokens/s, Accepted: {acc} tokens, "
                "Drafted: 300 tokens, Per-position acceptance rate: {per}, Avg Draft acceptance rate: 50.0%")
SGLANG_METRICS = ("[2026-12-02 11:00:{s:02d} TP0] Decode batch. #running-req: 1, #token: 90, token usage: 0.00, "
                  "accept len: {length}, cuda graph: False, gen throughput (token/s): 20.00, #queue-req: 0")


def write_logs(work: Path) -> None:
    """The log files the explain scenarios read (as a server writes them: a version line, then the failure)."""
    healthy = [VLLM_METRICS.format(s=s, length="2.40", acc="140", per="0.700, 0.450, 0.250") for s in range(6)]
    collapsed = [VLLM_METRICS.format(s=s, length="1.05", acc="15", per="0.030, 0.010, 0.010") for s in range(6)]
    sglang = [SGLANG_METRICS.format(s=s, length=length) for s, length in enumerate(("2.10", "2.30", "1.02", "1.01"))]
    logs = {
        "vllm-healthy.log": healthy,
        "vllm-collapsed.log": collapsed,
        "sglang-accept.log": sglang,
        "vllm-startup.log": ["INFO 12-02 10:59:00 [__init__.py:100] vLLM API server version 0.17.1",
                             "INFO 12-02 10:59:01 [model.py:200] Resolved architecture: DeepseekV3ForCausalLM",
                             "ERROR 12-02 10:59:02 [core.py:700] EngineCore failed to start.", INTERFACE],
        "vllm-startup-kimi25.log": ["INFO 12-02 10:59:00 [__init__.py:100] vLLM API server version 0.16.0",
                                    "INFO 12-02 10:59:01 [model.py:200] Resolved architecture: "
                                    "KimiK25ForConditionalGeneration", WHITELIST],
        "mixed.log": [KERNELS, *healthy[:3], OOM],
    }
    for name, lines in logs.items():
        (work / name).write_text("\n".join(lines) + "\n")


def explain_scenarios(add, vllm: list[str], sglang: list[str], serve_python: str) -> None:
    texts = {"whitelist": WHITELIST, "interface": INTERFACE, "unknown-key": UNKNOWN_KEY, "shapes": SHAPES,
             "no-weights": NO_WEIGHTS, "kernels": KERNELS, "oom": OOM, "user-code": USER_CODE, "nothing": NOTHING}
    picks = sorted({vllm[0], vllm[len(vllm) // 2], vllm[-1]}, key=vllm.index)
    for name, text in texts.items():
        for version in picks:
            add(f"explain/{name}/vllm=={version}", "explain", text, "--engine", f"vllm=={version}", "--offline", "--json")
    for name in ("interface", "nothing", "user-code"):
        for version in (sglang[0], sglang[-1]):
            add(f"explain/{name}/sglang=={version}", "explain", texts[name], "--engine", f"sglang=={version}",
                "--offline", "--json")
    for version in (sglang[0], sglang[-1]):
        add(f"explain/sglang-capture/sglang=={version}", "explain", SGLANG_CAPTURE, "--engine", f"sglang=={version}",
            "--offline", "--json")
        add(f"explain/sglang-accept/sglang=={version}", "explain", "--log", "sglang-accept.log", "--engine",
            f"sglang=={version}", "--offline", "--json")
    for log in ("vllm-healthy.log", "vllm-collapsed.log", "vllm-startup.log", "vllm-startup-kimi25.log", "mixed.log"):
        add(f"explain-log/{log}/vllm=={vllm[-1]}", "explain", "--log", log, "--engine", f"vllm=={vllm[-1]}",
            "--offline", "--json")
        add(f"explain-log/{log}/vllm-by-log", "explain", "--log", log, "--engine", "vllm", "--offline", "--json")
    for name in ("whitelist", "interface", "kernels", "shapes"):
        add(f"explain-python/{name}", "explain", texts[name], "--engine", "vllm", "--python", serve_python, "--json")
    add("explain-python/relative", "explain", WHITELIST, "--engine", "vllm", "--python", "./venv-serve/bin/python",
        "--json")
    add("explain-python/log", "explain", "--log", "vllm-startup.log", "--engine", "vllm", "--python", serve_python,
        "--json")
    for name in ("whitelist", "interface", "nothing"):
        add(f"explain-human/{name}", "explain", texts[name], "--engine", f"vllm=={vllm[len(vllm) // 2]}", "--offline")
    add("explain-human/python", "explain", WHITELIST, "--engine", "vllm", "--python", "./venv-serve/bin/python")
    add("explain-human/log", "explain", "--log", "vllm-collapsed.log", "--engine", f"vllm=={vllm[-1]}", "--offline")


def matrix_scenarios(add, vllm: list[str], sglang: list[str]) -> None:
    def between(versions: list[str], count: int) -> str:
        window = versions[-count:]
        return f">={window[0]},<={window[-1]}"

    small = ("--family", "kimi-k2", "--family", "llama", "--kind", "specforge", "--kind", "speculators")
    add("matrix/vllm/json", "matrix", "--engine", "vllm", "--releases", between(vllm, 3), *small, "--format",
        "json", "--offline", "-q")
    add("matrix/sglang/json", "matrix", "--engine", "sglang", "--releases", between(sglang, 2), *small, "--format",
        "json", "--offline", "-q")
    add("matrix/both/md", "matrix", "--engine", "vllm", "--engine", "sglang", "--releases",
        "vllm:" + between(vllm, 2), "--releases", "sglang:" + between(sglang, 1), "--family", "kimi-k2.5",
        "--format", "md", "--offline", "-q")
    add("matrix/user-column/json", "matrix", "--engine", "vllm", "--releases", between(vllm, 2), "--family",
        "deepseek-v3", "--kind", "no-ids", "--target", "Kimi-K2-Instruct", "--drafter", "sf-Kimi-K2-Instruct",
        "--format", "json", "--offline", "-q")
    add("matrix/user-column/convention", "matrix", "--engine", "vllm", "--releases", between(vllm, 2), "--family",
        "qwen3", "--kind", "modelopt", "--target", "Kimi-K2.5", "--drafter", "vllm-nested-Kimi-K2.5",
        "--layer-ids-convention", "output-of", "--format", "json", "--offline", "-q")
