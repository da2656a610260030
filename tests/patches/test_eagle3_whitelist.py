"""vllm-eagle3-whitelist (patches/vllm/eagle3_whitelist.py): the code before and after, what counts as
fixed, what is refused, and the options it declares (--model-type)."""

from __future__ import annotations

import argparse

import pytest

from compat.core.errors import UsageError
from compat.patches import Patch
from compat.patches.vllm import eagle3_whitelist
from compat.patching import option_flags, resolve_options
from patch_testing import PatchTest

ONE_LINE = '''
    def _verify_args(self):
        eagle3_target_supported = ["llama", "qwen"]
        if not any(m in self.target_model_config.hf_text_config.model_type for m in eagle3_target_supported):
            raise ValueError(f"Eagle3 is only supported for {eagle3_target_supported} models.")
'''


class TestEagle3Whitelist(PatchTest):
    PATCH = eagle3_whitelist
    ROLE = "config"

    def test_one_line_list_gets_the_types_on_the_same_line(self):
        self.assert_patch(ONE_LINE, '''
            def _verify_args(self):
                eagle3_target_supported = ["llama", "qwen", "kimi_k2", "deepseek_v3", "deepseek_v2"]
                if not any(m in self.target_model_config.hf_text_config.model_type for m in eagle3_target_supported):
                    raise ValueError(f"Eagle3 is only supported for {eagle3_target_supported} models.")
        ''')

    def test_one_per_line_list_gets_one_line_per_type(self):
        self.assert_patch('''
            def _verify_args(self):
                aux_hidden_states_supported = [
                    "llama",
                    "nemotron_h",
                ]
                if not any(m in self.target_model_config.hf_text_config.model_type for m in aux_hidden_states_supported):
                    raise ValueError(f"{self.method} is only supported for {aux_hidden_states_supported}")
        ''', '''
            def _verify_args(self):
                aux_hidden_states_supported = [
                    "llama",
                    "nemotron_h",
                    "kimi_k2",
                    "deepseek_v3",
                    "deepseek_v2",
                ]
                if not any(m in self.target_model_config.hf_text_config.model_type for m in aux_hidden_states_supported):
                    raise ValueError(f"{self.method} is only supported for {aux_hidden_states_supported}")
        ''')

    def test_adds_only_types_no_entry_matches_by_substring(self):
        # "kimi_k2" already admits kimi_k25 (vLLM tests `entry in model_type`); glm4_moe is new and then admits glm4_moe_lite.
        options = {"model_types": ("kimi_k25", "deepseek_v3", "glm4_moe", "glm4_moe_lite")}
        self.assert_patch(ONE_LINE.replace('["llama", "qwen"]', '["llama", "kimi_k2", "deepseek_v"]'),
                          ONE_LINE.replace('["llama", "qwen"]', '["llama", "kimi_k2", "deepseek_v", "glm4_moe"]'),
                          options=options)
        assert eagle3_whitelist.missing(["llama", "qwen"], ["qwen3_moe", "kimi_k2", "kimi_k25"]) == ["kimi_k2"]

    def test_a_release_that_lists_them_already_is_left_alone(self):
        self.assert_fixed(ONE_LINE.replace('["llama", "qwen"]', '["llama", "deepseek_v2", "deepseek_v3", "kimi_k2", "kimi_k25"]'))

    def test_a_file_without_a_whitelist_is_refused(self):
        self.assert_refused("def f():\n    return ['llama']\n", "no single EAGLE-3 whitelist")

    def test_two_candidate_whitelists_are_refused(self):
        source = ONE_LINE + '''
            def other(self):
                extra_supported = ["llama", "mistral"]
                return [m for m in extra_supported]
        '''
        self.assert_refused(source, "several candidate whitelists: eagle3_target_supported, extra_supported", step="transform")

    @pytest.mark.parametrize("bad", ['x"]; import os', "Kimi_K2", "", "a b"])
    def test_a_type_that_is_not_a_model_type_never_reaches_the_source(self, bad):
        for step in (eagle3_whitelist.has_fix, eagle3_whitelist.transform):
            with pytest.raises(UsageError, match="not a model_type"):
                step("config", ONE_LINE, {"model_types": ("kimi_k2", bad)})


# -- the options it declares --------------------------------------------------------------------------
PATCH = Patch.from_module(eagle3_whitelist)


def test_add_args_declares_a_repeatable_model_type_under_the_options_key():
    parser = argparse.ArgumentParser()
    PATCH.add_args(parser.add_argument_group(PATCH.id))
    args = parser.parse_args(["--model-type", "glm4_moe", "--model-type", "minimax_m2"])
    assert args.model_types == ["glm4_moe", "minimax_m2"] and "model_types" in PATCH.options
    assert parser.parse_args([]).model_types == []


def test_given_types_extend_the_defaults():
    assert resolve_options(PATCH, {"model_types": ["glm4_moe", "kimi_k2"]})["model_types"] == (
        "kimi_k2", "kimi_k25", "deepseek_v3", "deepseek_v2", "glm4_moe")
    assert resolve_options(PATCH, {"model_types": []}) == PATCH.options
    assert resolve_options(PATCH, {"unrelated": 1}) == PATCH.options


@pytest.mark.parametrize("model_type, architecture, expected", [
    ("glm4_moe", "Glm4MoeForCausalLM", {"model_types": ("glm4_moe",)}),
    ("kimi_k2", "DeepseekV3ForCausalLM", {}),      # a default
    ("kimi_k25", "KimiK25ForConditionalGeneration", {}),  # admitted by kimi_k2 (substring)
    ("deepseek_v32", "DeepseekV32ForCausalLM", {}),  # admitted by deepseek_v3
    (None, "LlamaForCausalLM", {}),
    ('x"]; import os', None, {}),                   # never a value the patch would refuse
], ids=["new", "default", "k25-by-substring", "v32-by-substring", "no-model-type", "hostile"])
def test_options_for_target(model_type, architecture, expected):
    assert PATCH.options_for_target(model_type, architecture) == expected


def test_option_flags_spell_the_options_back():
    assert option_flags(PATCH, {"model_types": ("kimi_k25",)}) == ["--model-type", "kimi_k25"]
    assert option_flags(PATCH, {"model_types": ["a", "b"]}) == ["--model-type", "a", "--model-type", "b"]
    assert option_flags(PATCH, {}) == [] and option_flags(PATCH, {"other": "x"}) == []
