"""final-layer: an aux id at the last layer's output (capture-before n) needs a target that captures it."""

from check_inputs import drafter, specforge_config, target, tensors

DEEPSEEK_LOOP = {"model": "DeepseekV2Model", "how": "only each layer's input: idx in self.aux_hidden_state_layers",
                 "location": "vllm/model_executor/models/deepseek_v2.py:1239"}
DEEPSEEK_POST_LOOP = {"model": "DeepseekV2Model", "location": "vllm/model_executor/models/deepseek_v2.py:1586",
                      "how": "also the last layer's output: self.end_layer in self.aux_hidden_state_layers"}


def top_level(ids):
    """vllm#46788's drafter for Kimi-K2 (61 layers): the last id is the final layer's output."""
    return drafter(specforge_config(eagle_config=None, eagle_aux_hidden_state_layer_ids=list(ids)), tensors("layers.0."))


def facts(**fact):
    return {"final_layer_capture": {"before_final": {}, "unresolved": {}, **fact}}


def test_id_n_on_a_target_that_captures_each_layer_input_fails_and_names_the_release(ctx, run):
    c = ctx("vllm", "0.20.0", draft=top_level([2, 30, 61]),
            report_changes=facts(before_final={"DeepseekV3ForCausalLM": DEEPSEEK_LOOP}))
    c.releases = lambda fact, key: "0.25.0" if (fact, key) == ("final_layer_capture", "DeepseekV3ForCausalLM") else ""
    result = run("final-layer", c)
    assert result["verdict"] == "fail" and result["release"] == ">=0.25.0"
    assert "runner v1 is fed id 61" in result["detail"] and "one aux state fewer" in result["detail"]
    assert "captures it from vllm 0.25.0" in result["detail"]
    assert result["location"] == "vllm/model_executor/models/deepseek_v2.py:1239"
    assert result["final_layer"]["id"] == 61 and result["final_layer"]["model"] == "DeepseekV2Model"


def test_id_n_on_a_target_with_the_post_loop_capture_passes(ctx, run):
    c = ctx("vllm", "0.25.0", draft=top_level([2, 30, 61]), report_changes=facts(DeepseekV3ForCausalLM=DEEPSEEK_POST_LOOP))
    result = run("final-layer", c)
    assert result["verdict"] == "pass" and "self.end_layer in" in result["detail"]


def test_ids_below_n_pass_whatever_the_target_captures(ctx, run):
    c = ctx("vllm", "0.20.0", draft=top_level([2, 30, 58]),
            report_changes=facts(before_final={"DeepseekV3ForCausalLM": DEEPSEEK_LOOP}))
    result = run("final-layer", c)
    assert result["verdict"] == "pass" and "no layer id fed reaches the last layer's output (id 61)" in result["detail"]


def test_sglang_adds_one_so_output_of_n_minus_1_is_asked_as_n(ctx, run):
    """sglang#32226's shape on a Llama-capture target: nested ids [.., 60] + 1 = 61 = n, which LlamaModel never captures."""
    d = drafter(specforge_config(eagle_config={"eagle_aux_hidden_state_layer_ids": [1, 29, 60]}))
    loop = {"model": "DeepseekV2Model", "how": "only each layer's input: i in self.layers_to_capture",
            "location": "sglang/srt/models/deepseek_v2.py:3194"}
    c = ctx("sglang", "0.5.8", draft=d, report_changes=facts(before_final={"DeepseekV3ForCausalLM": loop}))
    c.releases = lambda fact, key: ""
    result = run("final-layer", c)
    assert result["verdict"] == "fail" and "target is fed id 61" in result["detail"]
    assert "no later sglang release known here captures it" in result["detail"] and "release" not in result


def test_a_capture_the_probe_could_not_resolve_warns(ctx, run):
    c = ctx("vllm", "0.20.0", draft=top_level([2, 30, 61]), report_changes=facts(unresolved={"DeepseekV3ForCausalLM": "?"}))
    assert run("final-layer", c)["verdict"] == "warn"


def test_a_wrapper_answers_through_its_text_model(ctx, run):
    """Kimi-K2.5's wrapper delegates at run time: its text_config architecture's capture is the one that runs."""
    tgt = target(model_type="kimi_k2", architecture="KimiK25ForConditionalGeneration")
    tgt.architectures = ["KimiK25ForConditionalGeneration", "DeepseekV3ForCausalLM"]
    c = ctx("vllm", "0.20.0", tgt=tgt, draft=top_level([2, 30, 61]),
            report_changes=facts(before_final={"DeepseekV3ForCausalLM": DEEPSEEK_LOOP},
                                 unresolved={"KimiK25ForConditionalGeneration": "no class with an aux capture"}))
    result = run("final-layer", c)
    assert result["verdict"] == "fail" and "DeepseekV3ForCausalLM captures only each layer's input" in result["detail"]
