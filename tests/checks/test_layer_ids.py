"""layer-ids: the layers the release feeds (probe facts, evaluated) against the layers the drafter was trained on."""

from pathlib import Path

import pytest

from compat.checks import Drafter
from compat.doctor.inputs import recognise
from check_inputs import drafter, specforge_config, target, tensors

NESTED_V1 = [{"runner": "v1", "keys": [
    {"key": "eagle_aux_hidden_state_layer_ids", "where": "top-level", "offset": 0, "location": "r.py:1"},
    {"key": "eagle_aux_hidden_state_layer_ids", "where": "eagle_config", "offset": 0, "location": "r.py:2"}]}]


def aux(**changes):
    from check_inputs import VLLM_REPORT

    return {**VLLM_REPORT["aux_layer_ids"], **changes}


def test_ids_not_read_feed_the_default_which_a_specforge_drafter_was_trained_on(ctx, run):
    result = run("layer-ids", ctx(report_changes={"aux_layer_ids": aux(read_from_config=False, runners=[])}))
    assert result["verdict"] == "pass" and result["trained"] == [2, 30, 58]
    assert result["fed"] == [{"by": "every runner", "ids": [2, 30, 58], "how": "drafter ids are not read; the target's default"}]


def test_nested_ids_read_as_capture_before_are_one_layer_low(ctx, run):
    result = run("layer-ids", ctx(report_changes={"aux_layer_ids": aux(runners=NESTED_V1)}))
    assert result["verdict"] == "fail" and "silent off-by-one" in result["detail"]
    assert result["fed"][0]["ids"] == [1, 29, 57] and result["trained"] == [2, 30, 58]


def test_top_level_ids_are_not_capture_before_by_assumption(ctx, run):
    d = drafter(specforge_config(eagle_config=None, eagle_aux_hidden_state_layer_ids=[2, 30, 58]), tensors("layers.0."))
    result = run("layer-ids", ctx(draft=d))
    assert result["verdict"] == "fail" and result["needs_input"] and result["trained"] is None
    assert result["branches"] == {"capture-before": [2, 30, 58], "output-of": [3, 31, 59]}
    assert "if the ids are capture-before" in result["detail"] and "matches" in result["detail"]
    assert "if the ids are output-of" in result["detail"] and "1 layer low" in result["detail"]


@pytest.mark.parametrize("convention, trained, verdict", [
    ("capture-before", [2, 30, 58], "pass"), ("output-of", [3, 31, 59], "fail")])
def test_top_level_ids_read_in_the_convention_the_user_gives(ctx, run, convention, trained, verdict):
    config = specforge_config(eagle_config=None, eagle_aux_hidden_state_layer_ids=[2, 30, 58])
    d = recognise(Drafter(Path("/models/drafter"), config, tensors("layers.0.")), None, convention)
    result = run("layer-ids", ctx(draft=d))
    assert result["trained"] == trained and result["verdict"] == verdict and result["fed"][0]["ids"] == [2, 30, 58]


def test_speculators_ids_are_capture_before_by_its_trainer(ctx, run):
    config = {"speculators_model_type": "eagle3", "architectures": ["Eagle3Speculator"], "draft_vocab_size": 256,
              "transformer_layer_config": {"hidden_size": 64, "vocab_size": 1024, "num_hidden_layers": 1},
              "eagle_aux_hidden_state_layer_ids": [2, 30, 58]}
    d = drafter(config, tensors("layers.0."))
    result = run("layer-ids", ctx(draft=d))
    assert result["verdict"] == "pass" and d.settled_by == "fingerprint" and "speculators" in d.trained_origin


@pytest.mark.parametrize("declared, fed, verdict", [
    pytest.param([1, 29, 57], [2, 30, 58], "pass", id="first-id-1-gets-plus-1"),
    pytest.param([2, 30, 58], [2, 30, 58], "fail", id="otherwise-unshifted"),
])
def test_sglang_conditional_offset_is_the_probes_rule(ctx, run, declared, fed, verdict):
    rule = {"offset": 1, "when": "layer_ids[0] == 1", "otherwise": 0}
    targets = [{"class": "DeepseekV3ForCausalLM", "architectures": ["DeepseekV3ForCausalLM"], "layer_id_offset": rule}]
    d = drafter(specforge_config(eagle_config={"eagle_aux_hidden_state_layer_ids": declared}))
    result = run("layer-ids", ctx("sglang", "0.5.13", report_changes={"eagle3_targets": targets}, draft=d))
    assert result["fed"][0]["ids"] == fed and result["verdict"] == verdict


def test_sglang_cuda_graph_quirk_fails_ids_other_than_the_default(ctx, run):
    quirk = {**ctx("sglang").report["aux_layer_ids"], "cuda_graph_defaults_quirk": True, "cuda_graph_defaults_location": "c.py:9"}
    d = drafter(specforge_config(eagle_config={"eagle_aux_hidden_state_layer_ids": [2, 30, 58]}))
    result = run("layer-ids", ctx("sglang", report_changes={"aux_layer_ids": quirk}, draft=d))
    assert result["verdict"] == "fail" and "CUDA-graph replays use the default [2, 30, 58]" in result["detail"]


def test_unknown_layer_count_or_training_warns(ctx, run):
    assert run("layer-ids", ctx(tgt=target(layers=None)))["verdict"] == "warn"
    d = drafter(specforge_config(eagle_config=None), tgt=None)
    d.settled = None  # nothing says what it was trained on
    assert run("layer-ids", ctx(draft=d))["verdict"] == "warn"


def test_specforge_fingerprint_settles_output_of(ctx, run):
    d = drafter()  # midlayer.*, LlamaForCausalLMEagle3, ids only in eagle_config, no ModelOpt flags
    assert d.settled_by == "fingerprint" and d.trained_ids == [2, 30, 58] and "SpecForge" in d.trained_origin
    assert run("layer-ids", ctx(report_changes={"aux_layer_ids": aux(read_from_config=False, runners=[])}))["verdict"] == "pass"


def test_a_modelopt_drafter_is_not_taken_for_specforge(ctx, run):
    nested = {"eagle_aux_hidden_state_layer_ids": [1, 29, 57], "use_last_layernorm": True}
    d = drafter(specforge_config(eagle_config=nested))
    assert d.settled_by is None and d.branches == {"capture-before": [1, 29, 57], "output-of": [2, 30, 58]}


def test_compat_record_gives_the_physical_layers(ctx, run):
    from compat.checkpoints import RECORD_KEY

    config = specforge_config(eagle_config=None, eagle_aux_hidden_state_layer_ids=[3, 31, 59])
    config[RECORD_KEY] = {"layout": "vllm", "layer_ids": {"capture_before": [3, 31, 59]}}
    d = drafter(config, tensors("layers.0."))
    assert d.settled_by == "record" and d.trained_ids == [3, 31, 59]
    assert run("layer-ids", ctx(draft=d))["verdict"] == "pass"


def undeclared(tgt=None, layer_ids=None):
    """A drafter that declares no layer ids (SafeAILab's EAGLE-3 heads, yuhuili/*): vLLM layout, no key at all."""
    config = specforge_config(eagle_config=None, architectures=["Eagle3LlamaForCausalLM"])
    return recognise(Drafter(Path("/models/noids"), config, tensors("layers.0.")), tgt or target(), layer_ids=layer_ids)


def test_no_ids_asks_which_layers_it_was_trained_on_with_what_the_default_would_mean(ctx, run):
    d = undeclared()
    assert d.settled_by == "default" and d.trained_ids is None
    result = run("layer-ids", ctx(draft=d))
    assert result["verdict"] == "fail" and result["needs_input"] and result["trained"] is None
    assert result["branches"] == {"default": [2, 30, 58]}
    assert "If on the trainers' default [2, 30, 58]" in result["detail"]
    assert "runner v1 feeds [2, 30, 58] (no key it reads is set: default): matches" in result["detail"]
    assert "if on any other layers: nothing here records them" in result["detail"]


def test_no_ids_on_sglang_asks_too(ctx, run):
    result = run("layer-ids", ctx("sglang", draft=undeclared()))
    assert result["verdict"] == "fail" and result["needs_input"] and "target feeds [2, 30, 58]" in result["detail"]


def test_the_users_layer_ids_answer_it(ctx, run):
    assert run("layer-ids", ctx(draft=undeclared(layer_ids=[2, 30, 58])))["verdict"] == "pass"
    told = run("layer-ids", ctx(draft=undeclared(layer_ids=[3, 31, 59])))
    assert told["verdict"] == "fail" and told["trained"] == [3, 31, 59] and "given on the command line" in told["detail"]
