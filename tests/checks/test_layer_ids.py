"""layer-ids: the layers the release feeds (probe facts, evaluated) against the layers the drafter was trained on."""

import pytest

from check_inputs import drafter, specforge_config, target

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


def test_top_level_capture_before_ids_are_fed_as_declared(ctx, run):
    d = drafter(specforge_config(eagle_config=None, eagle_aux_hidden_state_layer_ids=[2, 30, 58]))
    result = run("layer-ids", ctx(draft=d))
    assert result["verdict"] == "pass" and result["fed"][0]["ids"] == [2, 30, 58]


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
    d.trained_ids = None
    assert run("layer-ids", ctx(draft=d))["verdict"] == "warn"
