"""method-venv: suffix decoding needs arctic-inference in the serving venv on vLLM 0.11.1 to 0.33.0 (the release's own
check, install line and lazy import, read from it: the method_packages fact); 0.34.0's GPU speculator needs nothing.
The serving venv is asked when doctor has it (a real interpreter: this test's, which has no arctic_inference);
without one the answer is unknown, with the command that asks, and the verdict is not "works as is"."""

import sys

from compat.checks import WARN, Result
from compat.core.interpreter import Interpreter
from compat.doctor import DEPENDS_VENV, WORKS, classify

from method_inputs import ctx


def test_vllm_0_33_needs_arctic_inference_and_gives_the_command_without_a_venv(run):
    result = run("method-venv", ctx("vllm", "0.33.0", None, method="suffix"))
    assert result["verdict"] == "warn" and result["detail"].startswith("unknown: suffix needs arctic_inference (==0.1.1)")
    assert result["location"] == "vllm/config/speculative.py:1727"  # the raise of _validate_suffix_decoding
    command = result["venv_question"]["command"]
    assert command.startswith("python -E -c ") and 'find_spec("arctic_inference")' in command
    assert 'm.version("arctic-inference")' in command


def test_the_command_really_asks_a_venv(run, tmp_path):
    """The command doctor prints runs, and answers for this interpreter (no arctic_inference here)."""
    import subprocess

    command = run("method-venv", ctx("vllm", "0.33.0", None, method="suffix"))["venv_question"]["command"]
    out = subprocess.run(command.replace("python", sys.executable, 1), shell=True, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "arctic_inference False"


def test_a_serving_venv_without_it_fails(run):
    result = run("method-venv", ctx("vllm", "0.33.0", None, method="suffix", python=Interpreter.current()))
    assert result["verdict"] == "fail" and "no arctic_inference" in result["detail"]
    assert "-m pip install arctic-inference==0.1.1" in result["fix"]["text"] if result["fix"] else True


def test_vllm_0_34_needs_nothing(run):
    assert run("method-venv", ctx("vllm", "0.34.0", None, method="suffix"))["verdict"] == "pass"


def test_methods_that_import_nothing_optional_pass_on_both_engines(run):
    assert run("method-venv", ctx("vllm", "0.33.0", None, method="ngram"))["verdict"] == "pass"
    assert run("method-venv", ctx("sglang", "0.5.23", None, method="NGRAM"))["verdict"] == "pass"


def test_an_unknown_venv_makes_the_verdict_depend_on_it():
    from compat.checks import VenvQuestion

    asked = Result(WARN, "unknown", venv=VenvQuestion(("arctic_inference",), "python -E -c ..."))
    assert classify([asked]) == DEPENDS_VENV
    assert classify([Result(WARN, "something else")]) == WORKS
