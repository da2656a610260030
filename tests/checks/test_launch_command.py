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


def test_lmdeploy_writes_its_draft_tokens_option(ctx, run):
    """LMDeploy 0.18.0's flags, as its probe reads them (lmdeploy/cli/utils.py:835-851): the draft tokens per step are
    --speculative-num-draft-tokens (get_speculative_config passes them as num_speculative_tokens, cli/utils.py:100),
    the drafter --speculative-draft-model; no --speculative-num-steps or --speculative-eagle-topk (a chain, no tree)."""
    from check_inputs import drafter, report, target

    from compat.checks import Ctx

    flags = [{"name": name, "default": default, "location": f"lmdeploy/cli/utils.py:{line}"} for name, default, line in
             (("--speculative-algorithm", None, 835), ("--speculative-draft-model", None, 841),
              ("--speculative-num-draft-tokens", 1, 846))]
    backend = {"present": True, "speculates": "pytorch", "flag": {"name": "--backend", "default": "turbomind"}}
    facts = {**report("sglang"), "engine": "lmdeploy", "version": "0.18.0", "cli_flags": flags,
             "speculative_backend": backend}
    tgt = target()
    context = Ctx(facts, tgt, drafter(tgt=tgt), Options(num_speculative_tokens=5))
    argv = run("launch-command", context)["launch"]["argv"]
    assert argv[:4] == ["lmdeploy", "serve", "api_server", "/models/target"]
    assert argv[argv.index("--speculative-num-draft-tokens") + 1] == "5"
    assert argv[argv.index("--speculative-draft-model") + 1] == "/models/drafter" and "--backend" in argv
    assert "--speculative-num-steps" not in argv and "--speculative-eagle-topk" not in argv
