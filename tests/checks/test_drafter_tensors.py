"""drafter-tensors: the loader of this release takes every tensor under its name."""

import pytest

from check_inputs import drafter, specforge_config, tensors


def test_midlayer_names_load_everywhere(ctx, run):
    for engine, version in (("vllm", "0.18.0"), ("sglang", "0.5.8")):
        result = run("drafter-tensors", ctx(engine, version))
        assert result["verdict"] == "pass", (engine, result)
        assert "t2d (skip)" in result["detail"] and "no embed_tokens" in result["detail"]


def test_vllm_refuses_a_model_prefix(ctx, run):
    names = {("model." + n if not n.startswith(("d2t", "t2d", "lm_head")) else n): v for n, v in tensors().items()}
    result = run("drafter-tensors", ctx(draft=drafter(names=names)))
    assert result["verdict"] == "fail" and "looked up as model.model.fc.weight" in result["detail"]
    assert result["load_errors"]


@pytest.mark.parametrize("version, verdict", [("0.5.8", "fail"), ("0.5.12", "pass")])
def test_sglang_before_0_5_12_drops_layers_0_names_silently(ctx, run, version, verdict):
    d = drafter(specforge_config(), tensors("layers.0."))
    result = run("drafter-tensors", ctx("sglang", version, draft=d))
    assert result["verdict"] == verdict
    if verdict == "fail":
        assert "layers.0.self_attn.q_proj.weight" in result["random"]
        assert any(s.startswith("layers.0.input_layernorm.weight") for s in result["skipped"])


def test_a_second_layer_fails_to_load_on_single_layer_releases(ctx, run):
    names = {**tensors(), **{f"layers.1.{k[len('midlayer.'):]}": v for k, v in tensors().items() if k.startswith("midlayer.")}}
    d = drafter(specforge_config(num_hidden_layers=2), names)
    result = run("drafter-tensors", ctx("vllm", "0.11.0", draft=d))
    assert result["verdict"] == "fail" and "loading fails on: layers.1." in result["detail"]  # KeyError in 0.11.0
    assert run("drafter-tensors", ctx("vllm", "0.18.0", draft=d))["verdict"] == "pass"


def test_full_vocab_d2t_is_a_load_error_from_0_30(ctx, run):
    d = drafter(specforge_config(draft_vocab_size=1024), tensors(draft_vocab=1024))
    assert run("drafter-tensors", ctx("vllm", "0.30.0", draft=d))["verdict"] == "fail"
    assert run("drafter-tensors", ctx("vllm", "0.29.0", draft=d))["verdict"] == "pass"


def test_unknown_layout_fails_with_the_reason(ctx, run):
    d = drafter(specforge_config(), {"weird.weight": ("F32", (1,))})
    result = run("drafter-tensors", ctx(draft=d))
    assert result["verdict"] == "fail" and "no known drafter layout" in result["detail"]
