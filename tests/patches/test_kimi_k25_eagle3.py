"""vllm-kimi-k25-eagle3 (patches/vllm/kimi_k25_eagle3.py): the wrapper forwards the EAGLE-3 interface to
the DeepSeek decoder inside, the proposer gets a branch for the K2.5 image token; before and after, refusals."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from compat.patches.vllm import kimi_k25_eagle3
from patch_testing import FakeDecoder, PatchTest, patched_forward

WRAPPER_BEFORE = '''
    from vllm.model_executor.models.interfaces import (
        SupportsMultiModal,
        SupportsPP,
    )


    class KimiK25ForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsPP):
        def compute_logits(self, hidden_states):
            return self.language_model.compute_logits(hidden_states)

        def load_weights(self, weights):
            return loader.load_weights(weights)
'''

WRAPPER_AFTER = '''
    from vllm.model_executor.models.interfaces import (
        SupportsMultiModal,
        SupportsPP,
        SupportsEagle3,
    )


    class KimiK25ForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsPP, SupportsEagle3):
        def compute_logits(self, hidden_states):
            return self.language_model.compute_logits(hidden_states)

        def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
            # compat patch vllm-kimi-k25-eagle3: the DeepSeek decoder inside records the aux hidden states.
            decoder = getattr(self.language_model, "model", self.language_model)
            decoder.aux_hidden_state_layers = layers

        def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
            # compat patch vllm-kimi-k25-eagle3: the default ids every EAGLE-3 target uses.
            decoder = getattr(self.language_model, "model", self.language_model)
            num_layers = len(decoder.layers)
            return (2, num_layers // 2, num_layers - 3)

        def load_weights(self, weights):
            return loader.load_weights(weights)
'''

PROPOSER_BEFORE = '''
    def load_model(self, target_model):
        if self.get_model_name(target_model) in ["Qwen2_5_VLForConditionalGeneration"]:
            self.model.config.image_token_index = target_model.config.image_token_id
        else:
            self.model.config.image_token_index = (
                target_model.config.image_token_index
            )
'''

PROPOSER_AFTER = '''
    def load_model(self, target_model):
        if self.get_model_name(target_model) in ["Qwen2_5_VLForConditionalGeneration"]:
            self.model.config.image_token_index = target_model.config.image_token_id
        elif self.get_model_name(target_model) == "KimiK25ForConditionalGeneration":
            # compat patch vllm-kimi-k25-eagle3: Kimi-K2.5 names its image token media_placeholder_token_id
            self.model.config.image_token_index = (
                target_model.config.media_placeholder_token_id
            )
        else:
            self.model.config.image_token_index = (
                target_model.config.image_token_index
            )
'''


class TestKimiK25Wrapper(PatchTest):
    PATCH = kimi_k25_eagle3
    ROLE = "wrapper"

    def test_forwards_the_interface(self):
        self.assert_patch(WRAPPER_BEFORE, WRAPPER_AFTER)

    def test_a_fixed_wrapper_is_left_alone(self):
        self.assert_fixed(WRAPPER_AFTER)

    def test_a_wrapper_with_half_the_interface_is_refused(self):
        self.assert_refused(WRAPPER_BEFORE.replace("SupportsPP):", "SupportsPP, SupportsEagle3):"), "part of the EAGLE-3 interface")

    def test_a_file_without_the_wrapper_is_refused(self):
        self.assert_refused("class Other:\n    pass\n", "no top-level class KimiK25ForConditionalGeneration")


class TestKimiK25Proposer(PatchTest):
    PATCH = kimi_k25_eagle3
    ROLE = "proposer"

    def test_gets_a_branch_before_the_fallback(self):
        self.assert_patch(PROPOSER_BEFORE, PROPOSER_AFTER)

    def test_a_proposer_that_knows_k25_is_left_alone(self):
        self.assert_fixed(PROPOSER_AFTER)

    def test_a_proposer_without_the_fallback_is_refused(self):
        self.assert_refused("def f(target_model):\n    x = target_model.config.image_token_index\n", "expected one `else",
                            step="transform")


@pytest.mark.parametrize("inner_is_causal_lm", [False, True], ids=["0.15: DeepseekV2Model", "0.16+: DeepseekV2ForCausalLM"])
def test_the_forwarding_reaches_the_decoder(inner_is_causal_lm):
    source = "from .interfaces import SupportsPP\n\nclass KimiK25ForConditionalGeneration(SupportsPP):\n    pass\n"
    out = kimi_k25_eagle3.transform("wrapper", source, {})
    setter = patched_forward(out, "KimiK25ForConditionalGeneration", "set_aux_hidden_state_layers")
    getter = patched_forward(out, "KimiK25ForConditionalGeneration", "get_eagle3_aux_hidden_state_layers")
    decoder = FakeDecoder(61)
    wrapper = SimpleNamespace(language_model=SimpleNamespace(model=decoder) if inner_is_causal_lm else decoder)
    assert getter(wrapper) == (2, 30, 58)
    setter(wrapper, (2, 30, 58))
    assert decoder.aux_hidden_state_layers == (2, 30, 58)
