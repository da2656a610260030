"""speculative-backend: an LMDeploy line that does not say `--backend pytorch` serves without its drafter.

Modelled on LMDeploy 0.18.0's `speculative_backend` fact (probes/lmdeploy/speculative_backend.py reads it from
lmdeploy/cli/utils.py:397, cli/serve.py:238 and serve/core/async_engine.py:148); LMDeploy needs CUDA, so nothing
runs. Upstream's own example passes `--backend pytorch` (InternLM/lmdeploy#3945).
"""

from __future__ import annotations

from check_inputs import drafter, report, target

from compat.checks import Ctx, Options
from compat.launch_line import read_line

FACT = {"present": True, "speculates": "pytorch",
        "flag": {"name": "--backend", "default": "turbomind", "location": "lmdeploy/cli/utils.py:397"},
        "drops": {"message": "speculative decoding is not supported by turbomind ", "raises": False,
                  "location": "lmdeploy/serve/core/async_engine.py:148"}}
LINE = "lmdeploy serve api_server /m/t --speculative-algorithm eagle3 --speculative-draft-model /m/d"


def lmdeploy(line: str, fact: dict = FACT) -> Ctx:
    tgt = target()
    facts = {**report("sglang"), "engine": "lmdeploy", "version": "0.18.0", "speculative_backend": fact}
    return Ctx(facts, tgt, drafter(tgt=tgt), Options(launch=read_line(line)))


def test_the_default_backend_drops_the_drafter(run):
    result = run("speculative-backend", lmdeploy(LINE))
    assert result["verdict"] == "fail" and "the default (lmdeploy/cli/utils.py:397) is --backend turbomind" in result["detail"]
    assert result["location"] == "lmdeploy/serve/core/async_engine.py:148"
    assert result["line_edits"][0]["option"] == "--backend" and result["line_edits"][0]["value"] == "pytorch"


def test_turbomind_given_fails_and_pytorch_passes(run):
    assert "the line gives --backend turbomind" in run("speculative-backend", lmdeploy(LINE + " --backend turbomind"))["detail"]
    assert run("speculative-backend", lmdeploy(LINE + " --backend=pytorch"))["verdict"] == "pass"


def test_a_line_without_speculation_or_an_engine_without_the_fact_passes(run):
    assert run("speculative-backend", lmdeploy("lmdeploy serve api_server /m/t"))["verdict"] == "pass"
    assert run("speculative-backend", lmdeploy(LINE, {"present": False}))["verdict"] == "pass"
