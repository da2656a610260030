"""draft-quantization: the draft's quantization (SGLang inherits the target's --quantization; vLLM reads its own
config) and KV-cache dtype, from the line, on real SGLang 0.5.8 / vLLM 0.32.0 facts."""

from __future__ import annotations

import json

import pytest

from compat.checks import Options
from compat.launch_line import read_line
from check_inputs import drafter, specforge_config

SGLANG = ("python -m sglang.launch_server --model-path /m/t --speculative-algorithm EAGLE3 "
          "--speculative-draft-model-path /m/d ")


def facts(release, engine, version, keys):
    from compat.report import build_report

    report = build_report(release(engine, version))
    return {k: report[k] for k in keys}


@pytest.fixture(scope="module")
def sglang_facts(pinned_release):
    return facts(pinned_release, "sglang", "0.5.8", ("cli_arguments", "draft_quantization"))


@pytest.fixture(scope="module")
def vllm_facts(pinned_release):
    return facts(pinned_release, "vllm", "0.32.0", ("cli_arguments", "speculative_config"))


def run_line(ctx, run, engine, version, report, text, draft=None):
    return run("draft-quantization", ctx(engine, version, report_changes=report, draft=draft,
                                         options=Options(launch=read_line(text))))


@pytest.mark.parametrize("extra, verdict", [
    ("--quantization modelopt_fp4", "fail"),  # inherited: a bf16 drafter loaded as fp4 checkpoint
    ("--quantization modelopt_fp4 --speculative-draft-model-quantization unquant", "pass"),
    ("--quantization fp8", "warn"),  # fp8 quantizes at load
    ("", "pass"),
])
def test_sglang_the_draft_inherits_the_targets_quantization(ctx, run, sglang_facts, extra, verdict):
    result = run_line(ctx, run, "sglang", "0.5.8", sglang_facts, SGLANG + extra)
    assert result["verdict"] == verdict, result["detail"]
    if verdict == "fail":
        assert "sglang/srt/server_args.py:851" in result["detail"]
        assert result["line_edits"][0]["option"] == "--speculative-draft-model-quantization"
        assert result["line_edits"][0]["value"] == "unquant"


def test_a_quantized_drafter_loaded_as_another_method(ctx, run, sglang_facts):
    quantized = drafter(config=specforge_config(quantization_config={"quant_method": "fp8"}))
    result = run_line(ctx, run, "sglang", "0.5.8", sglang_facts, SGLANG + "--quantization awq", draft=quantized)
    assert result["verdict"] == "fail" and "quantized with fp8" in result["detail"]
    assert result["line_edits"][0]["value"] == "fp8"


def vllm_line(spec=None, extra=""):
    body = {"method": "eagle3", "model": "/m/d", "num_speculative_tokens": 3, **(spec or {})}
    return f"vllm serve /m/t {extra} --speculative-config '{json.dumps(body)}'"


@pytest.mark.parametrize("spec, extra, verdict", [
    ({}, "--quantization fp8", "pass"),  # vLLM: the draft's quantization is its own config's, not the target's
    ({"quantization": "awq"}, "", "fail"),
    ({}, "--kv-cache-dtype fp8_ds_mla", "fail"),  # an MLA-only cache for the MHA drafter
    ({"kv_cache_dtype": "auto"}, "--kv-cache-dtype fp8_ds_mla", "pass"),
])
def test_vllm(ctx, run, vllm_facts, spec, extra, verdict):
    result = run_line(ctx, run, "vllm", "0.32.0", vllm_facts, vllm_line(spec, extra))
    assert result["verdict"] == verdict, result["detail"]
