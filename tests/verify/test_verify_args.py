"""`compat verify` argument handling: every usage error is caught before an engine runs (no engine here)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from compat.cli import main


def run(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "compat", "verify", *args], capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def pair(tmp_path):
    for name in ("target", "drafter"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "vocab_size": 64}))
    return str(tmp_path / "target"), str(tmp_path / "drafter")


@pytest.mark.parametrize("extra, message", [
    ([], "name the engine"),
    (["--engine", "sglang"], "verify runs vLLM only"),
    (["--engine", "vllm==0.11.0"], "not a release from the index"),
    (["--engine", "vllm", "--prompt", "hi", "--prompt-ids"], "one of --prompt texts, --prompt-ids or --prompts"),
    (["--engine", "vllm", "--min-acceptance", "1.5"], "a rate between 0 and 1"),
    (["--engine", "vllm", "--num-speculative-tokens", "0"], "--num-speculative-tokens must be at least 1"),
    (["--engine", "vllm", "--max-tokens", "0"], "--max-tokens must be at least 1"),
    (["--engine", "vllm", "--timeout", "0"], "--timeout must be positive"),
    (["--engine", "vllm", "--family", "llama"], "--family goes with --canary"),
])
def test_usage_errors_exit_2_with_the_flag_named(capsys, pair, extra, message):
    assert main(["verify", *pair, *extra]) == 2
    assert message in capsys.readouterr().err


def test_target_and_drafter_are_required_without_canary(capsys):
    assert main(["verify", "--engine", "vllm"]) == 2
    assert "give TARGET and DRAFTER (or --canary)" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [["T"], ["--prompt", "x"], ["--prompt-ids"], ["--min-acceptance", "0.5"]])
def test_canary_refuses_the_pair_options(capsys, extra):
    assert main(["verify", "--canary", "--engine", "vllm", *extra]) == 2
    assert "--canary builds its own models: drop" in capsys.readouterr().err


def test_unknown_family_is_an_argparse_error():
    code, _, err = run("--canary", "--engine", "vllm", "--family", "gpt2")
    assert code == 2 and "invalid choice: 'gpt2'" in err


def test_an_interpreter_without_vllm_is_exit_3_with_json(pair):
    code, out, err = run(*pair, "--engine", "vllm", "--python", sys.executable, "--json")
    assert code == 3
    assert json.loads(out)["error"].startswith("vLLM is not installed in")
    assert "--python" in err


def test_a_missing_interpreter_is_exit_2(pair, tmp_path):
    code, _, err = run(*pair, "--engine", "vllm", "--python", str(tmp_path / "nope" / "python"))
    assert code == 2 and "no such interpreter" in err  # a path that names nothing (the exit-code table)


def test_help_teaches_the_two_modes():
    code, out, _ = run("--help")
    assert code == 0
    for text in ("--canary", "--min-acceptance", "--prompt-ids", "HF_HUB_OFFLINE=1", "exit codes:"):
        assert text in out


def test_main_sys_path_never_imports_torch_numpy_or_safetensors(pair):
    """The runtime path up to the engine launch works on a plain `pip install .`."""
    code = ("import sys; from compat.cli import main; main(['verify', *sys.argv[1:3], '--engine', 'vllm', '--python', sys.executable]);"
            "print(sorted(m for m in ('torch', 'numpy', 'safetensors') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code, *pair], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout + proc.stderr
