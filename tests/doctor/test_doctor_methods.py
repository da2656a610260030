"""doctor per method on real releases (network: fetched once into the user cache), with drafters built from each
trainer's real config keys (SpecForge configs/qwen3-8b-dflash.json and qwen3-8b-dspark.json; speculators'
dflash config) and the release's own source, before and after each upstream change:
- vllm#40727 (DFlash ids +1): 0.20.0 feeds SpecForge's ids one layer low on runner V1 and the default on V2; a
  conversion fixes it; 0.24.0 feeds them as trained;
- sglang#30982 (DSpark gamma vs gamma + 1): 0.5.18 reads no layout key (a release fix), 0.5.23 reads
  sample_from_anchor (a conversion writes it); vLLM 0.34.0 likewise;
- a method without a drafter (SGLang NGRAM, vLLM suffix), MTP heads in the target (vLLM deepseek_mtp), P-EAGLE on
  vLLM 0.33.0 and 0.34.0, a name the release lacks (DFLASH on SGLang 0.5.10)."""

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from doctor_helpers import check

pytestmark = pytest.mark.network

QWEN3 = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 36, "hidden_size": 64,
         "vocab_size": 1024}
DFLASH = {"architectures": ["DFlashDraftModel"], "auto_map": {"AutoModel": "dflash.DFlashDraftModel"}, "block_size": 16,
          "dflash_config": {"mask_token_id": 1000, "target_layer_ids": [1, 9, 17, 25, 33]}, "model_type": "qwen3",
          "num_hidden_layers": 5, "num_target_layers": 36, "hidden_size": 64, "vocab_size": 1024}
DSPARK = {**DFLASH, "architectures": ["DSparkDraftModel"], "block_size": 7,
          "dflash_config": {"projector_type": "dspark", "markov_rank": 16, "mask_token_id": 1000, "enable_confidence_head": True,
                            "target_layer_ids": [1, 9, 17, 25, 33]}}
PEAGLE = {"architectures": ["PEagleDraftModel"], "model_type": "llama", "num_hidden_layers": 1, "hidden_size": 64,
          "vocab_size": 1024, "draft_vocab_size": 256}
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 61,
               "num_nextn_predict_layers": 1, "hidden_size": 64, "vocab_size": 1024}


def _model(root: Path, config: dict, tensors: dict | None = None) -> Path:
    root.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps(config))
    if tensors is not None:
        save_file(tensors, str(root / "model.safetensors"))
    return root


def _dflash_tensors():
    return {"fc.weight": np.zeros((64, 320), np.float32), "norm.weight": np.ones(64, np.float32),
            "layers.0.self_attn.q_proj.weight": np.zeros((64, 64), np.float32)}


@pytest.fixture
def pair(tmp_path):
    def make(target: dict, drafter: dict | None, tensors=None):
        t = _model(tmp_path / "target", target)
        d = _model(tmp_path / "drafter", drafter, tensors or _dflash_tensors()) if drafter is not None else None
        return t, d
    return make


def test_dflash_before_and_after_vllm_40727(diagnose, pair, tmp_path):
    target, drafter = pair(QWEN3, DFLASH)
    old = diagnose("vllm", "0.20.0", target, drafter)
    assert {k: old["method"][k] for k in ("family", "launched", "from")} == {"family": "dflash", "launched": None, "from": "the drafter"}
    assert old["method"]["resolved"]["runs_as"] == "dflash" and old["method"]["platform"] == "cuda"
    layer = check(old, "method-layer-ids")
    assert layer["verdict"] == "fail" and layer["fix"]["kind"] == "convert" and old["verdict"] == "needs a converted drafter"
    assert old["launch"]["speculative_config"]["method"] == "dflash"
    assert check(diagnose("vllm", "0.24.0", target, drafter), "method-layer-ids")["verdict"] == "pass"


def test_the_conversion_doctor_prints_makes_it_work(diagnose, pair, tmp_path, release):
    from compat.convert.blocks import execute_blocks, plan_blocks
    from compat.report import build_report
    from compat.target import read_target

    target, drafter = pair(QWEN3, DFLASH)
    plan = plan_blocks(drafter, tmp_path / "converted", build_report(release("vllm", "0.20.0")), read_target(target))
    execute_blocks(plan)
    assert diagnose("vllm", "0.20.0", target, tmp_path / "converted")["verdict"] == "works as is"


def test_dspark_block_width_across_releases(diagnose, pair):
    target, drafter = pair(QWEN3, DSPARK)
    old = diagnose("sglang", "0.5.18", target, drafter)
    block = check(old, "method-block")
    assert block["verdict"] == "fail" and block["fix"] == {"kind": "release", "releases": ">=0.5.19", "text": "sglang >= 0.5.19"}
    for engine, version in (("sglang", "0.5.23"), ("vllm", "0.34.0")):
        new = check(diagnose(engine, version, target, drafter), "method-block")
        assert new["verdict"] == "fail" and new["fix"]["kind"] == "convert", (engine, version)


def test_methods_without_a_drafter(doctor_cli, pair):
    target, _ = pair(QWEN3, None)
    code, out, err = doctor_cli(str(target), "--engine", "sglang==0.5.23", "--method", "NGRAM", "--offline")
    assert "drafter none (the method takes none)" in out and "--speculative-algorithm NGRAM" in out, err
    assert "--speculative-draft-model-path" not in out.split("launch")[-1]
    code, out, err = doctor_cli(str(target), "--engine", "vllm==0.33.0", "--method", "suffix", "--offline", "--json")
    venv = check(json.loads(out), "method-venv")
    assert venv["verdict"] == "warn" and "arctic-inference==0.1.1" in venv["detail"]


def test_mtp_heads_in_the_target(diagnose, pair):
    target, _ = pair(DEEPSEEK_V3, None)
    from compat.doctor import Options, diagnose as run, no_drafter, read_target
    from doctor_helpers import open_release

    t = read_target(target)
    result = run(open_release("vllm", "0.34.0"), t, no_drafter(t), Options(method="deepseek_mtp"))
    assert check(result, "method-target")["verdict"] == "pass" and result["method"]["family"] == "mtp"
    assert "model" not in result["launch"]["speculative_config"]


@pytest.mark.parametrize("engine, version, method", [("sglang", "0.5.9", "NEXTN"), ("vllm", "0.16.0", "deepseek_mtp")])
def test_mtp_without_heads_is_not_fixed_by_a_release_that_fixes_eagle3_for_the_family(diagnose, pair, engine, version,
                                                                                       method):
    """A Kimi-K2.5 target ships no MTP layers. The known issues of its family on these releases (EAGLE-3's capture hook,
    fixed in SGLang 0.5.10; its interface, fixed in vLLM 0.18.0) are about another check: their release gives it no
    heads, and doctor said "fix: sglang >= 0.5.10" for it."""
    kimi_k25 = {"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
                "text_config": {**DEEPSEEK_V3, "model_type": "kimi_k2", "num_nextn_predict_layers": 0}}
    target, _ = pair(kimi_k25, None)
    from compat.doctor import Options, diagnose as run, no_drafter, read_target
    from doctor_helpers import open_release

    t = read_target(target)
    result = run(open_release(engine, version), t, no_drafter(t), Options(method=method))
    mtp = check(result, "method-target")
    assert mtp["verdict"] == "fail" and "no MTP layers" in mtp["detail"], mtp
    assert mtp["fix"]["kind"] != "release" and "ships MTP heads" in mtp["fix"]["text"], mtp["fix"]


def test_a_method_named_as_another_release_names_it_is_the_release_name_doctor_prints(diagnose, pair):
    """`--method mtp` on vLLM 0.10.0, which names DeepSeek's heads 'deepseek_mtp' (its Literal has no 'mtp'): doctor
    --method takes the family's name in any release and either engine's (issue 38), and the command it prints runs
    'deepseek_mtp'; it was "does not work" with no fix (issue 30), then a line fix of doctor's own line."""
    target, _ = pair(DEEPSEEK_V3, None)
    from compat.doctor import WORKS, Options, diagnose as run, no_drafter, read_target
    from doctor_helpers import open_release

    t = read_target(target)
    result = run(open_release("vllm", "0.10.0"), t, no_drafter(t), Options(method="mtp"))
    name = check(result, "method-name")
    assert name["verdict"] == "pass" and "vllm 0.10.0 names it 'deepseek_mtp'" in name["detail"]
    assert result["verdict"] == WORKS and result["launch"]["speculative_config"]["method"] == "deepseek_mtp"
    unknown = run(open_release("vllm", "0.10.0"), t, no_drafter(t), Options(method="mtp_of_my_own"))
    assert unknown["verdict"] != WORKS  # the control: a name no release has is not taken as the family


def test_p_eagle_on_0_33_and_0_34(diagnose, pair):
    target, drafter = pair({**QWEN3, "architectures": ["LlamaForCausalLM"], "model_type": "llama"}, PEAGLE,
                           {"fc.weight": np.zeros((64, 192), np.float32), "mask_hidden": np.zeros((1, 192), np.float32)})
    old = diagnose("vllm", "0.33.0", target, drafter, method="eagle3")
    assert check(old, "method-name")["verdict"] == "pass" and old["launch"]["speculative_config"]["parallel_drafting"] is True
    new = check(diagnose("vllm", "0.34.0", target, drafter, method="eagle3"), "method-name")
    assert new["verdict"] == "fail" and "not supported" in new["detail"]


def test_a_name_the_release_lacks(diagnose, pair):
    target, drafter = pair(QWEN3, DFLASH)
    result = check(diagnose("sglang", "0.5.10", target, drafter, method="DFLASH"), "method-name")
    assert result["verdict"] == "fail" and result["fix"]["releases"] == ">=0.5.11"
