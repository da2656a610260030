"""draft-dtype: the server's dtype (the line's --dtype, else the target's torch_dtype) against the drafter's."""

from __future__ import annotations

import pytest

from compat.checks import Ctx, Options
from compat.launch_line import read_line
from check_inputs import drafter, report, specforge_config, target

FACT = {"draft_dtype": {"present": True, "from_target": True, "location": "vllm/config/speculative.py:1301"},
        "cli_arguments": {"present": True, "parser": {}, "arguments": [
            {"name": "--dtype", "aliases": [], "value": "unknown", "location": "arg_utils.py:1"},
            {"name": "--speculative-config", "aliases": [], "value": "json", "location": "arg_utils.py:2"}]}}
LINE = "vllm serve /m/t --speculative-config '{\"method\": \"eagle3\", \"model\": \"/m/d\"}'"


@pytest.mark.parametrize("dtype, target_dtype, drafter_dtype, verdict", [
    ("float16", None, "bfloat16", "warn"),
    ("bfloat16", None, "bfloat16", "pass"),
    (None, "float16", "bfloat16", "warn"),  # auto: the target's
    (None, "bfloat16", "bfloat16", "pass"),
    ("half", None, "float32", "pass"),
])
def test_the_draft_runs_in_the_servers_dtype(ctx, run, dtype, target_dtype, drafter_dtype, verdict):
    tgt = target(config={"torch_dtype": target_dtype} if target_dtype else {})
    draft = drafter(config=specforge_config(torch_dtype=drafter_dtype), tgt=tgt)
    text = LINE + (f" --dtype {dtype}" if dtype else "")
    result = run("draft-dtype", ctx(tgt=tgt, draft=draft, report_changes=FACT, options=Options(launch=read_line(text))))
    assert result["verdict"] == verdict, result["detail"]
    assert "vllm/config/speculative.py:1301" in result["detail"]


def test_without_the_fact_it_cannot_tell(ctx, run):
    result = run("draft-dtype", ctx(report_changes={"draft_dtype": {"present": False, "reason": "moved"}},
                                    options=Options(launch=read_line(LINE))))
    assert result["verdict"] == "warn" and "cannot tell" in result["detail"]


LMDEPLOY = {"draft_dtype": {"present": True, "from_target": False, "given_by": "engine_config.dtype", "auto_from": "draft",
                            "location": "lmdeploy/pytorch/engine/config_builder.py:254",
                            "auto_location": "lmdeploy/pytorch/config.py:119"},
            "cli_arguments": {"present": True, "parser": {}, "arguments": [
                {"name": "model_path", "aliases": [], "value": "positional", "location": "lmdeploy/cli/serve.py:35"},
                {"name": "--dtype", "aliases": [], "value": "str", "choices": ["auto", "float16", "bfloat16"],
                 "location": "lmdeploy/cli/utils.py:124"},
                {"name": "--speculative-algorithm", "aliases": [], "value": "str", "location": "lmdeploy/cli/utils.py:835"},
                {"name": "--speculative-draft-model", "aliases": [], "value": "str", "location": "lmdeploy/cli/utils.py:841"}]}}


@pytest.mark.parametrize("dtype, target_dtype, drafter_dtype, verdict", [
    (None, "float16", "bfloat16", "pass"),  # auto: the draft's own bfloat16, whatever the target's
    ("float16", "float16", "bfloat16", "warn"),  # --dtype is used as given
    (None, "bfloat16", "float32", "pass"),  # auto on a float32 draft: float16 (config.py's else branch)
])
def test_lmdeploy_resolves_auto_on_the_drafts_own_config(ctx, run, dtype, target_dtype, drafter_dtype, verdict):
    """Modelled on LMDeploy 0.18.0's draft_dtype fact (probes/lmdeploy/draft_dtype.py: SpecDecodeConfig.from_config
    is given the server's --dtype, _update_torch_dtype resolves auto on the draft checkpoint's config)."""
    tgt = target(config={"torch_dtype": target_dtype})
    draft = drafter(config=specforge_config(torch_dtype=drafter_dtype), tgt=tgt)
    text = ("lmdeploy serve api_server /m/t --speculative-algorithm eagle3 --speculative-draft-model /m/d"
            + (f" --dtype {dtype}" if dtype else ""))
    facts = {**report("sglang"), "engine": "lmdeploy", "version": "0.18.0", **LMDEPLOY}
    result = run("draft-dtype", Ctx(facts, tgt, draft, Options(launch=read_line(text))))
    assert result["verdict"] == verdict, result["detail"]
    if dtype is None:
        assert "auto: the drafter's own torch_dtype, lmdeploy/pytorch/config.py:119" in result["detail"]
