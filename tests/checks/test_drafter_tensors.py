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


def test_a_tensor_skipped_while_a_switch_is_off_is_named_at_the_skip(ctx, run):
    """vLLM 0.18.0 llama_eagle3.py:418 `if not self.model.norm_before_fc: skip_substrs.append("input_norm.")`: a head
    trained with the norm (speculators' input_norm.weight, core.py:122) loses it without a word when the config the
    class is built from does not set the switch."""
    names = {**tensors(), "input_norm.weight": ("F32", (192,))}
    result = run("drafter-tensors", ctx("vllm", "0.18.0", draft=drafter(specforge_config(), names)))
    assert result["verdict"] == "fail" and "skipped by the loader (trained weights unused): input_norm.weight" in result["detail"]
    assert "skipped while not self.model.norm_before_fc" in result["detail"]
    assert result["location"] == "vllm/model_executor/models/llama_eagle3.py:418"  # the skip, not the loader's def
    switched_on = drafter(specforge_config(norm_before_fc=True), names)
    assert run("drafter-tensors", ctx("vllm", "0.18.0", draft=switched_on))["verdict"] == "pass"


class LaterReleases:
    """What doctor's finder answers for the releases after the one checked: here, each report's own drafter facts
    (the captured ones) decide, so the answer is the replay's, not a number written in the test."""

    def __init__(self, versions: list[str]) -> None:
        self.versions = versions
        self.asked: list[str] = []

    def __call__(self, fact: str, key: str) -> str | None:
        return None

    def where(self, name: str, holds) -> str | None:
        from check_inputs import report

        self.asked.append(name)
        return next((v for v in self.versions if holds(report("vllm", v))), "")


def test_each_tensor_lost_is_named_with_the_first_release_that_loads_it(ctx, run):
    """A second decoder layer: 0.11.0's LlamaModel.load_weights raises on layers.1.* (KeyError); the replay on each
    later report finds the first that loads it (0.18.0 of the captured ones), which becomes the check's release fix."""
    from compat.checks import get_check

    names = {**tensors(), **{f"layers.1.{k[len('midlayer.'):]}": v for k, v in tensors().items() if k.startswith("midlayer.")}}
    c = ctx("vllm", "0.11.0", draft=drafter(specforge_config(num_hidden_layers=2), names))
    c.releases = later = LaterReleases(["0.11.0", "0.18.0", "0.22.0"])
    result = get_check("drafter-tensors")(c)
    assert result.verdict == "fail" and "loading fails on: layers.1.hidden_norm.weight (" in result.detail
    assert "; loaded from 0.18.0)" in result.detail and result.release is not None and result.release.first == "0.18.0"
    assert result.evidence["loaded_from"]["layers.1.mlp.up_proj.weight"] == "0.18.0"
    assert all(name.startswith("drafter tensor /models/drafter:layers.1.") for name in later.asked)
