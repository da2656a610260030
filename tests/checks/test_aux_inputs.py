"""aux-inputs: the aux states fed, the fc the release builds and the checkpoint's fc.weight must agree."""

import pytest

from check_inputs import HIDDEN, drafter, specforge_config, tensors


def fc(width: int) -> dict:
    return {**tensors("layers.0."), "fc.weight": ("F32", (HIDDEN, width))}


def top_level(ids, **changes):
    return specforge_config(eagle_config=None, eagle_aux_hidden_state_layer_ids=list(ids), **changes)


def test_three_ids_and_a_three_aux_fc_pass(ctx, run):
    d = drafter(top_level([2, 30, 58]), fc(3 * HIDDEN))
    result = run("aux-inputs", ctx("vllm", "0.18.0", draft=d))
    assert result["verdict"] == "pass" and result["fc"]["width"] == 3 * HIDDEN


def test_four_ids_with_a_three_aux_fc_is_a_data_dump_list(ctx, run):
    d = drafter(top_level([2, 30, 58, 60]), fc(3 * HIDDEN))
    result = run("aux-inputs", ctx("vllm", "0.18.0", draft=d))
    assert result["verdict"] == "fail"
    assert "feeds 4 aux states" in result["detail"] and "first draft step crashes" in result["detail"]
    assert "60 is not an input" in result["detail"] and result["convert_with"] == {"layer_ids": [2, 30, 58]}


def test_from_0_22_the_fc_follows_the_nested_id_count_so_a_narrow_fc_fails_to_load(ctx, run):
    config = specforge_config(eagle_config={"eagle_aux_hidden_state_layer_ids": [1, 29, 57, 59]})
    d = drafter(config, {**tensors(), "fc.weight": ("F32", (HIDDEN, 3 * HIDDEN))})
    result = run("aux-inputs", ctx("vllm", "0.22.0", draft=d))
    assert result["verdict"] == "fail" and "builds fc for 256" in result["detail"] and "loading fails" in result["detail"]
    before = run("aux-inputs", ctx("vllm", "0.18.0", draft=d))  # fixed 3 aux states; nested ids not read: default fed
    assert before["verdict"] == "pass"


def test_an_id_beyond_the_target_is_never_captured(ctx, run):
    d = drafter(top_level([2, 30, 70]), fc(3 * HIDDEN))
    result = run("aux-inputs", ctx("vllm", "0.18.0", draft=d))
    assert result["verdict"] == "fail" and "ids [70] beyond the target's 61 layers" in result["detail"]


@pytest.mark.parametrize("shape", [(HIDDEN,), None])
def test_without_a_2d_fc_it_cannot_tell(ctx, run, shape):
    names = tensors("layers.0.")
    if shape is None:
        names.pop("fc.weight")
    else:
        names["fc.weight"] = ("F32", shape)
    assert run("aux-inputs", ctx(draft=drafter(top_level([2, 30, 58]), names)))["verdict"] == "warn"
