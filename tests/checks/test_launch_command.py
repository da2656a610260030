"""launch-command: only keys SpeculativeConfig has, only flags the release has."""

import json

from compat.checks import Options


def test_vllm_command_holds_the_accepted_keys(ctx, run):
    result = run("launch-command", ctx())
    assert result["verdict"] == "pass"
    argv = result["launch"]["argv"]
    assert argv[:3] == ["vllm", "serve", "/models/target"]
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec == {"method": "eagle3", "model": "/models/drafter", "num_speculative_tokens": 3}


def test_an_unknown_key_is_dropped_and_said(ctx, run):
    result = run("launch-command", ctx(options=Options(extra_spec={"disable_by_batch_size": 4})))
    assert result["verdict"] == "warn" and "rejects unknown keys" in result["detail"]
    assert "disable_by_batch_size" not in result["launch"]["speculative_config"]


def test_a_release_without_the_flag_fails(ctx, run):
    result = run("launch-command", ctx(report_changes={"cli_flags": []}))
    assert result["verdict"] == "fail" and "no --speculative-config flag" in result["detail"]


def test_sglang_flags_and_draft_token_count(ctx, run):
    result = run("launch-command", ctx("sglang", options=Options(num_speculative_tokens=4, topk=2)))
    argv = result["launch"]["argv"]
    assert argv[:3] == ["python", "-m", "sglang.launch_server"]
    assert argv[argv.index("--speculative-num-draft-tokens") + 1] == "8"
