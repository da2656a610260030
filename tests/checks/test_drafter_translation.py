"""drafter-translation: a speculators-format drafter's behaviour keys against what the release's updater carries
(a hand-written `speculators_carried` fact in the probe's shape; the real tables of 0.18-0.34 are in
tests/matrix/test_speculators_translation_matrix.py)."""

from __future__ import annotations

from check_inputs import HIDDEN, VOCAB, drafter, tensors

SPECULATORS_FORMAT = {
    "present": True, "config_class": {"name": "SpeculatorsConfig", "location": "speculators/base.py:10"},
    "routing": {"location": "config.py:5", "needs_no_model_type": True},
    "types": {"eagle3": {"function": "update_eagle3", "location": "speculators/algos.py:16"}},
    "eagle3": {"location": "speculators/algos.py:16", "architecture": {"value": "Eagle3LlamaForCausalLM", "location": "a.py:1"},
               "copies": [{"key": "draft_vocab_size", "from": "draft_vocab_size", "default": None, "when": "always"},
                          {"key": "norm_before_residual", "from": "norm_before_residual", "default": True, "when": "always"}]},
    "requires": [],
}
CARRIED = {"eagle3.draft_vocab_size": {"to": "draft_vocab_size", "default": None, "when": "always", "location": "algos.py:25"},
           "eagle3.norm_before_residual": {"to": "norm_before_residual", "default": True, "when": "always",
                                           "location": "algos.py:26"}}


def speculators_config(**top) -> dict:
    """The config.json speculators writes for an EAGLE-3 head (speculators v0.7.0 src/speculators/models/eagle3/config.py:
    draft_vocab_size :38, norm_before_residual :43, target_hidden_size :48, eagle_aux_hidden_state_layer_ids :53,
    norm_before_fc :58, fc_norm :66, norm_output :76)."""
    return {"architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3",
            "transformer_layer_config": {"model_type": "llama", "hidden_size": HIDDEN, "vocab_size": VOCAB,
                                         "num_hidden_layers": 1},
            "draft_vocab_size": 256, "norm_before_residual": False,
            "speculators_config": {"algorithm": "eagle3", "verifier": {"name_or_path": "t", "architectures": ["X"]}},
            **top}


def run_with(ctx, run, config, carried=CARRIED, **kw):
    d = drafter(config, tensors(prefix="layers.0."))
    return run("drafter-translation", ctx("vllm", "0.18.0", draft=d,
                                          report_changes={"speculators_format": SPECULATORS_FORMAT,
                                                          "speculators_carried": carried}, **kw))


def test_a_plain_drafter_has_nothing_translated(ctx, run):
    assert run("drafter-translation", ctx())["verdict"] == "pass"


def test_every_key_carried_passes(ctx, run):
    result = run_with(ctx, run, speculators_config())
    assert result["verdict"] == "pass" and "draft_vocab_size, norm_before_residual carried" in result["detail"]


def test_a_key_the_updater_drops_is_named(ctx, run):
    result = run_with(ctx, run, speculators_config(norm_before_fc=True, fc_norm=False))
    assert result["verdict"] == "fail"
    assert "norm_before_fc = True" in result["detail"] and "fc_norm" not in result["detail"]  # False changes nothing
    assert "update_eagle3" in result["detail"] and result["location"] == "speculators/algos.py:16"
    assert result["dropped"] == ["norm_before_fc"]


def test_the_release_that_carries_it_is_the_fix(ctx, run):
    from compat.checks import get_check

    d = drafter(speculators_config(norm_before_fc=True), tensors(prefix="layers.0."))
    c = ctx("vllm", "0.18.0", draft=d, report_changes={"speculators_format": SPECULATORS_FORMAT, "speculators_carried": CARRIED})
    c.releases = lambda fact, key: "0.20.0" if key == "eagle3.norm_before_fc" else ""
    result = get_check("drafter-translation")(c)
    assert "norm_before_fc = True (carried from 0.20.0)" in result.detail and result.release.specifier == ">=0.20.0"
