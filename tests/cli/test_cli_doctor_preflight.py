"""doctor's preflight (the release's own configuration build of the line, in the serving interpreter): `--json` carries
it whenever an interpreter is known; one that cannot run (the engine does not import, the child hangs or dies) is one
line, and doctor keeps its reading of the release's code with the same exit code. Where it runs on a real engine it is
held to that reading line by line (tests/engine/test_validation_agreement.py)."""

from __future__ import annotations

import os
import stat

from cli_helpers import compat, fake_serving_venv
from compat.launch_line import read_line
from compat.preflight import run

SPEC = "--speculative-config '{\"method\": \"eagle3\", \"model\": \"%s\", \"num_speculative_tokens\": 3}'"


def test_a_preflight_that_cannot_import_the_engine_is_one_line_and_changes_no_exit_code(tmp_path, pair, env):
    target, drafter = pair
    python = fake_serving_venv(tmp_path / "venv")  # a vllm package that is no engine: it does not import its parts
    line = f"vllm serve {target} {SPEC % drafter}"
    ran = compat("doctor", target, drafter, "--engine", "vllm", "--python", python, "--offline", "--launch", line,
                 "--json", env=env, cwd=tmp_path)
    preflight = ran.json()["preflight"]
    assert preflight["ran"] is False and "does not import" in preflight["why"], preflight
    assert preflight["python"] == str(python)
    without = compat("doctor", target, drafter, "--engine", "vllm", "--python", python, "--offline", "--launch", line,
                     "--json", "--no-preflight", env=env, cwd=tmp_path)
    assert "preflight" not in without.json() and ran.code == without.code
    human = compat("doctor", target, drafter, "--engine", "vllm", "--python", python, "--offline", "--launch", line,
                   env=env, cwd=tmp_path)
    said = [text for text in human.out.splitlines() if text.strip().startswith("preflight")]
    assert len(said) == 1 and "not run:" in said[0] and "reads the release's code alone" in said[0]


def _fake_python(where, body: str):
    where.write_text("#!/bin/sh\n" + body + "\n")
    where.chmod(where.stat().st_mode | stat.S_IXUSR)
    return where


def test_a_preflight_that_hangs_is_stopped_and_said(tmp_path):
    python = _fake_python(tmp_path / "python", "sleep 30")
    found = run(python, read_line("vllm serve /m/t"), timeout=1.0)
    assert found.ran is False and "did not finish within 1 s" in found.why


def test_a_preflight_that_dies_is_said(tmp_path):
    python = _fake_python(tmp_path / "python", "exit 3")
    found = run(python, read_line("vllm serve /m/t"), timeout=30.0)
    assert found.ran is False and "exited with code 3" in found.why
    assert os.path.exists(found.log)  # where its output went, kept as evidence
