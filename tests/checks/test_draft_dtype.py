"""draft-dtype: the server's dtype (the line's --dtype, else the target's torch_dtype) against the drafter's."""

from __future__ import annotations

import pytest

from compat.checks import Options
from compat.launch_line import read_line
from check_inputs import drafter, specforge_config, target

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
