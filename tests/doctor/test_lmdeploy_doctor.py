"""doctor on LMDeploy 0.18.0 (pinned, read from its released source): the drafter and target checks run on the facts
compat reads from it, and a drafter LMDeploy cannot load gets the conversion that makes it load.

The drafters are the ones trainers write (doctor_models.py): SpecForge's `LlamaForCausalLMEagle3` with `midlayer.*`,
vLLM's layout (`layers.0.*`), and one in LMDeploy's own layout (`LlamaForCausalLM`, `midlayer.*`). What LMDeploy does
with each is its source's (probes/lmdeploy/: llama_eagle3.py load_weights, configurations/llama.py's rename); the
upstream example that serves an EAGLE-3 draft this way is InternLM/lmdeploy#3945 (`--speculative-algorithm eagle3
--speculative-draft-model yuhuili/EAGLE3-LLaMA3.1-Instruct-8B`, whose config says LlamaForCausalLM). LMDeploy needs
CUDA: nothing runs; a tiny 8-layer Llama target, whose (2, n//2, n-3) is [2, 4, 5].
"""

from __future__ import annotations

import pytest

from doctor_helpers import check
from doctor_models import specforge_drafter, tiny_llama_target, vllm_drafter

pytestmark = pytest.mark.network
VERSION = "0.18.0"


@pytest.fixture
def diagnose(release):
    """diagnose(target_dir, drafter_dir, convention) -> doctor's dict on LMDeploy 0.18.0."""
    from compat.doctor import Options, diagnose as run, read_drafter, read_target

    def go(target, drafter, convention):
        t = read_target(target)
        return run(release("lmdeploy", VERSION), t, read_drafter(drafter, t, convention), Options())

    return go


@pytest.fixture
def llama(tmp_path):
    return tiny_llama_target(tmp_path / "Llama-3.1-8B-Instruct")


def lmdeploy_drafter(directory, **kw):
    """LMDeploy's layout: SpecForge's names and output-of ids [1, 3, 4] (capture-before [2, 4, 5]), LlamaForCausalLM."""
    return specforge_drafter(directory, layer_ids=(1, 3, 4), architecture="LlamaForCausalLM", **kw)


def test_a_drafter_in_its_layout_works_and_every_check_runs(diagnose, llama, tmp_path):
    found = diagnose(llama, lmdeploy_drafter(tmp_path / "EAGLE3-LLaMA3.1-Instruct-8B"), "output-of")
    assert found["verdict"] == "works as is", [(c["check"], c["detail"]) for c in found["checks"] if c["verdict"] != "pass"]
    assert not [c["check"] for c in found["checks"] if c.get("unread")]
    assert check(found, "drafter-architecture")["detail"].startswith("LlamaForCausalLM is registered")
    tensors = check(found, "drafter-tensors")
    assert tensors["verdict"] == "pass" and tensors["location"].startswith("lmdeploy/pytorch/models/llama_eagle3.py:")
    assert check(found, "target-architecture")["location"].startswith("lmdeploy/pytorch/models/module_map.py:")
    assert found["launch"]["argv"][3:6] == [found["launch"]["argv"][3], "--backend", "pytorch"]


def test_specforges_architecture_is_converted_to_the_one_lmdeploy_renames(diagnose, llama, tmp_path):
    """`LlamaForCausalLMEagle3` is taken by no config builder and is not in MODULE_MAP: `RuntimeError: Can not found
    rewrite for architectures` at start-up (lmdeploy/pytorch/models/patch.py). `--to lmdeploy` writes LlamaForCausalLM."""
    found = diagnose(llama, specforge_drafter(tmp_path / "specforge", layer_ids=(1, 3, 4)), "output-of")
    arch = check(found, "drafter-architecture")
    assert arch["verdict"] == "fail" and "LlamaForCausalLMEagle3 is not a registered EAGLE-3 drafter" in arch["detail"]
    assert "--to lmdeploy" in arch["fix"]["command"] and "--engine lmdeploy==0.18.0" in arch["fix"]["command"]
    assert found["verdict"] == "needs a converted drafter"


def test_vllms_layer_names_miss_lmdeploys_parameters(diagnose, llama, tmp_path):
    """Eagle3LlamaForCausalLM.load_weights prefixes `model.`: `layers.0.*` becomes `model.layers.0.*`, which no
    parameter has (its decoder layer is `midlayer`): KeyError in params_dict (llama_eagle3.py:317)."""
    drafter = vllm_drafter(tmp_path / "vllm-layout")
    found = diagnose(llama, drafter, "capture-before")
    tensors = check(found, "drafter-tensors")
    assert tensors["verdict"] == "fail" and "layers.0." in tensors["detail"]
    assert "--to lmdeploy" in (tensors.get("fix") or {}).get("command", "")


def test_a_launch_line_whose_model_follows_its_options(doctor_cli, llama, tmp_path):
    drafter = lmdeploy_drafter(tmp_path / "drafter")
    code, out, err = doctor_cli("--engine", f"lmdeploy=={VERSION}", "--layer-ids-convention", "output-of", "--launch",
                                f"lmdeploy serve api_server --backend pytorch --dtype float16 {llama} "
                                f"--speculative-algorithm eagle3 --speculative-draft-model {drafter}")
    assert f"target  {llama}" in out, out + err  # the positional the release's parser takes
    row = next(r for r in out.splitlines() if " draft-dtype " in r)
    assert row.startswith("WARN") and "the draft runs in float16" in row  # --dtype as given: the bfloat16 head overflows
