"""checkpoints.settle: how a drafter's layer ids are known, settled once, as a typed value.

Its sources in order (compat's record, --layer-ids-convention, a trainer fingerprint, the layout's own
rule, the default), the ambiguity as an error that carries its data, and the value handed on to
convert (which then settles nothing again).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from ckpt_builders import TRAINED_ON, eagle_config, speculators_config, vllm_config, write_drafter
from compat import checkpoints
from compat.checkpoints import (CAPTURE_BEFORE, CONVENTIONS, OUTPUT_OF, RECORD_KEY, AmbiguousConvention, ConflictingLayerIds,
                                ConventionNeeded, Settled, from_flag, get_layout, settle)
from compat.target import Target

MIDLAYER = {"midlayer.input_layernorm.weight", "fc.weight"}
LAYERS0 = {"layers.0.input_layernorm.weight", "fc.weight"}


def target(layers: int | None = 8) -> Target:
    return Target(Path("/t"), Path("/t/config.json"), {}, "llama", "llama", ["LlamaForCausalLM"], "LlamaForCausalLM",
                  layers, 256, 64, None)


def test_compat_record_settles_the_physical_layers_before_anything_else():
    config = {**vllm_config(), RECORD_KEY: {"layer_ids": {"capture_before": [4, 6, 7]}}}
    settled = settle(get_layout("vllm"), config, LAYERS0, flag=OUTPUT_OF, target=target())
    assert (settled.source, settled.capture_before, settled.convention) == ("record", [4, 6, 7], None)
    assert settled.why == "compat convert's record: trained on capture-before [4, 6, 7]" and settled.ids is None


def test_the_flag_settles_the_convention_of_the_declared_ids():
    settled = settle(get_layout("vllm"), vllm_config(), LAYERS0, flag=OUTPUT_OF, target=target())
    assert (settled.source, settled.convention, settled.basis) == ("flag", OUTPUT_OF, "flag")
    assert settled.capture_before == [i + 1 for i in TRAINED_ON]
    assert settled.ids.origin == f"eagle_aux_hidden_state_layer_ids = {TRAINED_ON} read as output-of (--layer-ids-convention)"


def test_a_fingerprint_reads_the_ids_saying_which_trainer_wrote_them():
    settled = settle(get_layout("eagle"), eagle_config(), MIDLAYER, target=target())
    assert (settled.source, settled.convention, settled.basis) == ("fingerprint", OUTPUT_OF, "fingerprint")
    assert settled.capture_before == TRAINED_ON and settled.why.startswith("written by SpecForge (")
    assert settled.ids.origin.endswith(f"read as output-of ({settled.why})")  # not a flag nobody gave
    assert settled.ids.basis == "fingerprint"


def test_the_layout_rule_settles_agreeing_fields():
    config = {**vllm_config(), "eagle_config": {"eagle_aux_hidden_state_layer_ids": [i - 1 for i in TRAINED_ON]}}
    settled = settle(get_layout("vllm"), config, LAYERS0, target=target())
    assert (settled.source, settled.convention, settled.capture_before) == ("layout", None, TRAINED_ON)
    assert settled.why == settled.ids.origin and not settled.imposes


def test_nothing_declared_settles_no_layers_the_engines_default_is_not_what_it_was_trained_on():
    config = {k: v for k, v in vllm_config().items() if k != "eagle_aux_hidden_state_layer_ids"}
    settled = settle(get_layout("vllm"), config, LAYERS0, flag=CAPTURE_BEFORE, target=target(32))
    assert (settled.source, settled.capture_before, settled.convention) == ("default", None, CAPTURE_BEFORE)
    assert "nothing records whether it was trained on those layers" in settled.why
    unknown = settle(get_layout("vllm"), config, LAYERS0, target=None)
    assert (unknown.source, unknown.capture_before) == ("default", None)


def test_the_users_layer_ids_settle_the_layers_in_their_convention():
    config = {k: v for k, v in vllm_config().items() if k != "eagle_aux_hidden_state_layer_ids"}
    told = settle(get_layout("vllm"), config, LAYERS0, target=target(32), layer_ids=[2, 16, 29])
    assert (told.source, told.capture_before, told.convention) == ("flag", [2, 16, 29], None)
    assert told.ids.basis == "command-line" and told.ids.declared == [2, 16, 29]
    output_of = settle(get_layout("vllm"), vllm_config(), LAYERS0, flag=OUTPUT_OF, target=target(32), layer_ids=[1, 15, 28])
    assert output_of.capture_before == [2, 16, 29] and output_of.why == "--layer-ids 1 15 28 --layer-ids-convention output-of"


def test_a_record_of_a_conversion_that_only_filled_in_the_default_settles_nothing():
    """convert --target writes the engines' default into a drafter that declared none; its ids are not evidence."""
    config = {**vllm_config(), RECORD_KEY: {"layer_ids": {"capture_before": [2, 4, 5], "basis": "engine-default"}}}
    settled = settle(get_layout("vllm"), config, LAYERS0, target=target())
    assert (settled.source, settled.capture_before) == ("default", None)
    assert settle(get_layout("vllm"), config, LAYERS0, target=target(), layer_ids=[2, 4, 5]).source == "flag"


def test_a_speculators_drafter_without_ids_was_trained_on_its_trainers_default():
    config = {**speculators_config(), "eagle_aux_hidden_state_layer_ids": None}
    settled = settle(get_layout("speculators"), config, LAYERS0, target=target(32))
    assert (settled.source, settled.capture_before) == ("fingerprint", [2, 16, 29])
    assert settled.why.startswith("written by vllm-project/speculators") and "declares no ids" in settled.why


def test_ambiguity_is_an_error_carrying_both_readings():
    with pytest.raises(AmbiguousConvention, match=r"^config.json eagle_aux_hidden_state_layer_ids = \[3, 5, 6\] does not say which convention it uses: ") as caught:
        settle(get_layout("vllm"), vllm_config(), LAYERS0, target=target())
    err = caught.value
    assert isinstance(err, ConventionNeeded)
    assert (err.field, err.declared) == ("eagle_aux_hidden_state_layer_ids", TRAINED_ON)
    assert err.why.startswith("vLLM reads top-level ids as capture-before")
    assert err.readings == {CAPTURE_BEFORE: TRAINED_ON, OUTPUT_OF: [i + 1 for i in TRAINED_ON]}
    assert err.why in err.message and "--layer-ids-convention" in err.hint  # the words, for people only


def test_no_readings_when_the_config_has_more_wrong_than_the_convention():
    config = {k: v for k, v in vllm_config().items() if k != "hidden_size"}
    with pytest.raises(AmbiguousConvention, match=r"^config.json eagle_aux_hidden_state_layer_ids = \[3, 5, 6\] does not say which convention it uses: ") as caught:
        settle(get_layout("vllm"), config, LAYERS0, target=target())
    assert caught.value.readings is None


def test_fields_naming_different_layers_need_the_convention_too():
    config = {**vllm_config(), "eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 1, 2]}}
    with pytest.raises(ConflictingLayerIds, match=r"^config.json declares eagle_aux_hidden_state_layer_ids = \[3, 5, 6\] but "
                                                  r"eagle_config.eagle_aux_hidden_state_layer_ids = \[0, 1, 2\]: .+\n  fix: "
                                                  r"pass --layer-ids") as caught:
        settle(get_layout("vllm"), config, LAYERS0, target=target())
    assert isinstance(caught.value, ConventionNeeded) and (caught.value.top, caught.value.nested) == (TRAINED_ON, [0, 1, 2])
    told = settle(get_layout("vllm"), config, LAYERS0, flag=CAPTURE_BEFORE, target=target())
    assert told.capture_before == TRAINED_ON  # vLLM's layout reads the top-level field it is told about


def test_convert_takes_the_settled_value_and_settles_nothing_again(tmp_path, monkeypatch):
    from compat.convert import Options, make_plan

    src = write_drafter(tmp_path / "src", "vllm")
    monkeypatch.setattr(checkpoints, "settle", lambda *a, **k: pytest.fail("convert settled again"))
    plan = make_plan(Options(src=src, dst=tmp_path / "out", to="eagle", convention=from_flag(OUTPUT_OF)))
    assert plan.layer_ids["capture_before"] == [i + 1 for i in TRAINED_ON] and plan.layer_ids["basis"] == "flag"
    fingerprint = Settled("fingerprint", "written by someone (their file)", convention=CAPTURE_BEFORE)
    plan = make_plan(Options(src=src, dst=tmp_path / "out", to="eagle", convention=fingerprint))
    assert plan.layer_ids["basis"] == "fingerprint" and plan.layer_ids["origin"].endswith("(written by someone (their file))")


def test_the_flag_is_declared_once_with_the_conventions_as_choices():
    from compat.commands import convert, doctor

    actions = []
    for command in (doctor, convert):
        parser = argparse.ArgumentParser()
        command.add_arguments(parser)
        if command is convert:
            parser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["ckpt"]
        actions.append(next(a for a in parser._actions if "--layer-ids-convention" in a.option_strings))
    assert all(tuple(a.choices) == CONVENTIONS and a.dest == "layer_ids_convention" for a in actions)


def test_ids_that_are_not_a_list_are_named_as_the_config_holds_them():
    config = {**vllm_config(), "eagle_config": {"eagle_aux_hidden_state_layer_ids": 5}}
    del config["eagle_aux_hidden_state_layer_ids"]
    with pytest.raises(AmbiguousConvention, match=r"^config.json eagle_config.eagle_aux_hidden_state_layer_ids = 5 does not "
                                                  r"say which convention it uses") as caught:
        settle(get_layout("vllm"), config, LAYERS0, target=target())
    assert caught.value.declared == 5 and "eagle_aux_hidden_state_layer_ids = 5 does not say" in caught.value.message
    assert caught.value.readings is None  # told a convention, the layout still refuses a 5
