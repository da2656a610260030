"""method-venv: suffix decoding needs arctic-inference in the serving venv up to vLLM 0.33.0 (the release's own check
and install line, read from it); 0.34.0's GPU speculator needs nothing. The serving venv is asked (a real
interpreter: this test's, which has no arctic_inference)."""

from compat.core.interpreter import Interpreter

from method_inputs import ctx


def test_vllm_0_33_needs_arctic_inference_and_asks_without_a_venv(run):
    result = run("method-venv", ctx("vllm", "0.33.0", None, method="suffix"))
    assert result["verdict"] == "warn" and "pip install arctic-inference==0.1.1" in result["detail"]
    assert result["location"] == "vllm/config/speculative.py:1333"


def test_a_serving_venv_without_it_fails(run):
    result = run("method-venv", ctx("vllm", "0.33.0", None, method="suffix", python=Interpreter.current()))
    assert result["verdict"] == "fail" and "has no arctic_inference" in result["detail"]


def test_vllm_0_34_needs_nothing(run):
    assert run("method-venv", ctx("vllm", "0.34.0", None, method="suffix"))["verdict"] == "pass"
