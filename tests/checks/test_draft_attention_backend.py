"""draft-attention-backend: an MHA drafter handed an MLA-only backend (sglang#23490), from the line's own flags
(hand-written cli_arguments / speculative_config facts; the real releases are in tests/doctor)."""

from __future__ import annotations

import pytest

from compat.checks import Options
from compat.launch_line import read_line
from check_inputs import target

SGLANG_ARGS = {"present": True, "parser": {"allow_abbrev": True}, "arguments": [
    {"name": "--model-path", "aliases": ["--model"], "value": "str", "location": "server_args.py:1"},
    {"name": "--attention-backend", "aliases": [], "value": "str", "location": "server_args.py:2",
     "choices": ["triton", "flashinfer", "fa3", "trtllm_mla", "flashmla"]},
    {"name": "--speculative-algorithm", "aliases": [], "value": "str", "location": "server_args.py:3"},
    {"name": "--speculative-draft-model-path", "aliases": [], "value": "str", "location": "server_args.py:4"},
    {"name": "--speculative-draft-attention-backend", "aliases": [], "value": "str", "location": "server_args.py:5"},
]}
LINE = ("python -m sglang.launch_server --model-path /m/kimi --speculative-algorithm EAGLE3 "
        "--speculative-draft-model-path /m/d")
MLA_TARGET = {"kv_lora_rank": 512, "qk_rope_head_dim": 64}


def run_line(ctx, run, text, args=SGLANG_ARGS):
    return run("draft-attention-backend", ctx("sglang", "0.5.8", report_changes={"cli_arguments": args},
                                              tgt=target(config=MLA_TARGET), options=Options(launch=read_line(text))))


def test_an_inherited_mla_backend_fails_and_the_line_gets_a_draft_backend(ctx, run):
    result = run_line(ctx, run, LINE + " --attention-backend trtllm_mla")
    assert result["verdict"] == "fail" and "MLA-only backend 'trtllm_mla', inherited from the target" in result["detail"]
    assert [(e["option"], e["value"]) for e in result["line_edits"]] == [("--speculative-draft-attention-backend", "flashinfer")]


def test_the_drafts_own_backend_wins(ctx, run):
    result = run_line(ctx, run, LINE + " --attention-backend trtllm_mla --speculative-draft-attention-backend fa3")
    assert result["verdict"] == "pass" and "'fa3'" in result["detail"]


def test_a_release_without_the_draft_option_has_no_line_fix(ctx, run):
    args = {**SGLANG_ARGS, "arguments": SGLANG_ARGS["arguments"][:-1]}
    result = run_line(ctx, run, LINE + " --attention-backend flashmla", args)
    assert result["verdict"] == "fail" and "no option for the draft's own backend" in result["detail"]
    assert "line_edits" not in result


def test_no_backend_on_the_line_asks_for_one_on_sglang(ctx, run):
    result = run_line(ctx, run, LINE)
    assert result["verdict"] == "warn" and "the release picks one for the target on your GPU" in result["detail"]


@pytest.mark.parametrize("spec_field, verdict", [(True, "fail"), (False, "fail")])
def test_vllm_draft_backend_in_the_speculative_config(ctx, run, spec_field, verdict):
    fields = [{"name": n, "location": f"speculative.py:{i}"} for i, n in
              enumerate(["method", "model", "num_speculative_tokens"] + (["attention_backend"] if spec_field else []))]
    args = {"present": True, "parser": {}, "arguments": [
        {"name": "--attention-backend", "aliases": [], "value": "unknown", "location": "arg_utils.py:9"},
        {"name": "--speculative-config", "aliases": [], "value": "json", "location": "arg_utils.py:10"}]}
    line = read_line("vllm serve /m/kimi --attention-backend FLASHMLA --speculative-config "
                     "'{\"method\": \"eagle3\", \"model\": \"/m/d\"}'")
    result = run("draft-attention-backend", ctx("vllm", "0.32.0", tgt=target(config=MLA_TARGET), options=Options(launch=line),
                                                report_changes={"cli_arguments": args, "speculative_config": {"fields": fields}}))
    assert result["verdict"] == verdict
    assert bool(result.get("line_edits")) is spec_field  # only a release with the key can give the draft its own


def test_mtp_heads_without_a_drafter_attend_as_the_target(ctx, run):
    """`--speculative-algorithm NEXTN` with no draft path on an MLA target (a manifest's DeepSeek-V3, SGLang 0.5.9):
    the heads are the target's own MLA layers, not an MHA drafter handed the target's backend."""
    from compat.doctor.inputs import no_drafter

    tgt = target(config=MLA_TARGET)
    line = "python -m sglang.launch_server --model-path /m/dsv3 --speculative-algorithm NEXTN"
    result = run("draft-attention-backend", ctx("sglang", "0.5.8", report_changes={"cli_arguments": SGLANG_ARGS}, tgt=tgt,
                                                draft=no_drafter(tgt), options=Options(launch=read_line(line))))
    assert result["verdict"] == "pass"
