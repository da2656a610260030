"""Each patch's libcst transform on small snippets written here: the code before and after
(libcst's CodemodTest style), the check that tells a fixed file, and what is refused."""

from __future__ import annotations

import ast
import textwrap
from types import SimpleNamespace

import pytest

from compat.patches import FileNotAsExpected
from compat.patches.vllm import cpu_attn_block16, deepseek_eagle3_aux, eagle3_whitelist, kimi_k25_eagle3


def assert_transform(patch, role: str, before: str, after: str, options=None) -> None:
    """The CodemodTest contract: exact output, a fixed file is recognised, a second run changes nothing."""
    options = patch.OPTIONS if options is None else options
    before, after = textwrap.dedent(before).lstrip(), textwrap.dedent(after).lstrip()
    assert not patch.has_fix(role, before, options)
    out = patch.transform(role, before, options)
    assert out == after, "\n" + out
    compile(out, role, "exec")
    assert patch.has_fix(role, out, options)
    assert patch.transform(role, out, options) == out


# -- vllm-eagle3-whitelist ---------------------------------------------------------------------
WHITELIST_ONE_LINE = '''
    def _verify_args(self):
        eagle3_target_supported = ["llama", "qwen"]
        if not any(m in self.target_model_config.hf_text_config.model_type for m in eagle3_target_supported):
            raise ValueError(f"Eagle3 is only supported for {eagle3_target_supported} models.")
'''


def test_whitelist_one_line_list_gets_the_types_on_the_same_line():
    assert_transform(eagle3_whitelist, "config", WHITELIST_ONE_LINE, '''
        def _verify_args(self):
            eagle3_target_supported = ["llama", "qwen", "kimi_k2", "deepseek_v3", "deepseek_v2"]
            if not any(m in self.target_model_config.hf_text_config.model_type for m in eagle3_target_supported):
                raise ValueError(f"Eagle3 is only supported for {eagle3_target_supported} models.")
    ''')


def test_whitelist_one_per_line_list_gets_one_line_per_type():
    assert_transform(eagle3_whitelist, "config", '''
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


def test_whitelist_adds_only_types_no_entry_matches_by_substring():
    # "kimi_k2" already admits kimi_k25 (vLLM tests `entry in model_type`); glm4_moe is new.
    source = WHITELIST_ONE_LINE.replace('["llama", "qwen"]', '["llama", "kimi_k2", "deepseek_v"]')
    options = {"model_types": ("kimi_k25", "deepseek_v3", "glm4_moe", "glm4_moe_lite")}
    out = eagle3_whitelist.transform("config", textwrap.dedent(source), options)
    assert '["llama", "kimi_k2", "deepseek_v", "glm4_moe"]' in out
    assert eagle3_whitelist.missing(["llama", "qwen"], ["qwen3_moe", "kimi_k2", "kimi_k25"]) == ["kimi_k2"]


def test_whitelist_already_supported_release_is_recognised():
    source = WHITELIST_ONE_LINE.replace('["llama", "qwen"]', '["llama", "deepseek_v2", "deepseek_v3", "kimi_k2", "kimi_k25"]')
    assert eagle3_whitelist.has_fix("config", textwrap.dedent(source), eagle3_whitelist.OPTIONS)


def test_whitelist_refuses_a_file_without_one():
    with pytest.raises(FileNotAsExpected, match="no single EAGLE-3 whitelist"):
        eagle3_whitelist.has_fix("config", "def f():\n    return ['llama']\n", eagle3_whitelist.OPTIONS)


# -- vllm-deepseek-eagle3-aux ------------------------------------------------------------------
DEEPSEEK_BEFORE = '''
    from itertools import islice

    from .interfaces import SupportsLoRA, SupportsPP


    class DeepseekV2Model(nn.Module):
        def __init__(self, config):
            self.layers = make_layers(config)

        def forward(self, input_ids, positions, intermediate_tensors, inputs_embeds=None):
            if get_pp_group().is_first_rank:
                hidden_states = self.embed_input_ids(input_ids)
                residual = None
            else:
                hidden_states = intermediate_tensors["hidden_states"]
                residual = intermediate_tensors["residual"]

            for layer in islice(self.layers, self.start_layer, self.end_layer):
                hidden_states, residual = layer(positions, hidden_states, residual)

            if not get_pp_group().is_last_rank:
                return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})

            hidden_states, _ = self.norm(hidden_states, residual)
            return hidden_states


    class DeepseekV2ForCausalLM(nn.Module, SupportsPP,
                                SupportsLoRA):
        def embed_input_ids(self, input_ids):
            return self.model.embed_input_ids(input_ids)

        def forward(self, input_ids, positions):
            return self.model(input_ids, positions)
'''

DEEPSEEK_AFTER = '''
    from itertools import islice

    from .interfaces import SupportsLoRA, SupportsPP, SupportsEagle3


    class DeepseekV2Model(nn.Module):
        def __init__(self, config):
            self.layers = make_layers(config)
            self.aux_hidden_state_layers: tuple[int, ...] = ()  # compat patch vllm-deepseek-eagle3-aux

        def forward(self, input_ids, positions, intermediate_tensors, inputs_embeds=None):
            if get_pp_group().is_first_rank:
                hidden_states = self.embed_input_ids(input_ids)
                residual = None
            else:
                hidden_states = intermediate_tensors["hidden_states"]
                residual = intermediate_tensors["residual"]

            aux_hidden_states = []  # compat patch vllm-deepseek-eagle3-aux
            for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer):
                # compat patch vllm-deepseek-eagle3-aux: the residual stream entering layer idx (at layer 0 there is no residual yet)
                if idx in self.aux_hidden_state_layers:
                    aux_hidden_states.append(hidden_states if residual is None else hidden_states + residual)
                hidden_states, residual = layer(positions, hidden_states, residual)

            if not get_pp_group().is_last_rank:
                return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})

            hidden_states, _ = self.norm(hidden_states, residual)
            if len(aux_hidden_states) > 0:  # compat patch vllm-deepseek-eagle3-aux
                return hidden_states, aux_hidden_states
            return hidden_states


    class DeepseekV2ForCausalLM(nn.Module, SupportsPP,
                                SupportsLoRA, SupportsEagle3):
        def embed_input_ids(self, input_ids):
            return self.model.embed_input_ids(input_ids)

        def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
            # compat patch vllm-deepseek-eagle3-aux: EAGLE-3 reads the residual stream entering these layers.
            self.model.aux_hidden_state_layers = layers

        def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
            # compat patch vllm-deepseek-eagle3-aux: the default ids every EAGLE-3 target uses.
            num_layers = len(self.model.layers)
            return (2, num_layers // 2, num_layers - 3)

        def forward(self, input_ids, positions):
            return self.model(input_ids, positions)
'''


def test_deepseek_gains_the_interface_and_the_capture():
    assert_transform(deepseek_eagle3_aux, "model", DEEPSEEK_BEFORE, DEEPSEEK_AFTER, {})


def test_deepseek_slice_loop_of_0_10_1_is_enumerated_too():
    before = DEEPSEEK_BEFORE.replace("islice(self.layers, self.start_layer, self.end_layer)", "self.layers[self.start_layer:self.end_layer]")
    out = deepseek_eagle3_aux.transform("model", textwrap.dedent(before), {})
    assert "for idx, layer in enumerate(self.layers[self.start_layer:self.end_layer], start=self.start_layer):" in out


def test_deepseek_half_fixed_file_is_refused():
    half = DEEPSEEK_BEFORE.replace("SupportsLoRA):", "SupportsLoRA, SupportsEagle3):")
    with pytest.raises(FileNotAsExpected, match=r"part of the EAGLE-3 support \(interface\)"):
        deepseek_eagle3_aux.has_fix("model", textwrap.dedent(half), {})


def test_deepseek_unexpected_forward_is_refused():
    other = DEEPSEEK_BEFORE.replace("for layer in islice", "for block in islice")
    with pytest.raises(FileNotAsExpected, match="decoder-layer loop"):
        deepseek_eagle3_aux.transform("model", textwrap.dedent(other), {})


def patched_forward(source: str, class_name: str = "DeepseekV2Model", method: str = "forward", **names):
    """`class_name.method` of a patched module, compiled on its own with stub globals (no torch, no vLLM)."""
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    func = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == method)
    code = "from __future__ import annotations\n" + textwrap.dedent(ast.get_source_segment(source, func))
    namespace = {"islice": __import__("itertools").islice, **names}
    exec(compile(code, f"<{class_name}.{method}>", "exec"), namespace)
    return namespace[method]


class FakeDecoder:
    """Numbers instead of tensors: layer i turns (h, r) into (2 * (h + r) + i, h + r)."""

    def __init__(self, n_layers: int, aux=()):
        self.layers = [self._layer(i) for i in range(n_layers)]
        self.start_layer, self.end_layer = 0, n_layers
        self.aux_hidden_state_layers = tuple(aux)
        self.config = SimpleNamespace()

    @staticmethod
    def _layer(i):
        def layer(positions, hidden_states, residual, *extra):
            stream = hidden_states + (residual or 0)
            return 2 * stream + i, stream
        return layer

    def norm(self, hidden_states, residual):
        return hidden_states + residual, None

    def embed_input_ids(self, input_ids):  # releases that embed here, whatever inputs_embeds says
        return self.embeds

    get_input_embeddings = embed_input_ids

    def expected_aux(self, embeds: float) -> list[float]:
        """The residual stream entering each configured layer, computed without the patch."""
        out, h, r = [], embeds, None
        for i, layer in enumerate(self.layers):
            if i in self.aux_hidden_state_layers:
                out.append(h if r is None else h + r)
            h, r = layer(None, h, r)
        return out


PP_LAST = SimpleNamespace(is_first_rank=True, is_last_rank=True)


def run_forward(forward, decoder: FakeDecoder, embeds: float = 1.0):
    decoder.embeds = embeds
    return forward(decoder, input_ids=None, positions=None, intermediate_tensors=None, inputs_embeds=embeds)


def test_patched_forward_collects_the_state_entering_each_layer_including_layer_0():
    out = deepseek_eagle3_aux.transform("model", textwrap.dedent(DEEPSEEK_BEFORE), {})
    forward = patched_forward(out, get_pp_group=lambda: PP_LAST, IntermediateTensors=dict)
    decoder = FakeDecoder(6, aux=(0, 2, 5))
    hidden, aux = run_forward(forward, decoder)
    assert aux == decoder.expected_aux(1.0) and len(aux) == 3
    assert aux[0] == 1.0  # layer 0: the embeddings (residual is None there)
    plain = FakeDecoder(6)
    assert run_forward(forward, plain) == hidden  # no aux layers: the single tensor, as before


# -- vllm-kimi-k25-eagle3 ----------------------------------------------------------------------
def test_kimi_k25_wrapper_forwards_the_interface():
    assert_transform(kimi_k25_eagle3, "wrapper", '''
        from vllm.model_executor.models.interfaces import (
            SupportsMultiModal,
            SupportsPP,
        )


        class KimiK25ForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsPP):
            def compute_logits(self, hidden_states):
                return self.language_model.compute_logits(hidden_states)

            def load_weights(self, weights):
                return loader.load_weights(weights)
    ''', '''
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
    ''', {})


@pytest.mark.parametrize("inner_is_causal_lm", [False, True], ids=["0.15: DeepseekV2Model", "0.16+: DeepseekV2ForCausalLM"])
def test_kimi_k25_forwarding_reaches_the_decoder(inner_is_causal_lm):
    source = "from .interfaces import SupportsPP\n\nclass KimiK25ForConditionalGeneration(SupportsPP):\n    pass\n"
    out = kimi_k25_eagle3.transform("wrapper", source, {})
    setter = patched_forward(out, "KimiK25ForConditionalGeneration", "set_aux_hidden_state_layers")
    getter = patched_forward(out, "KimiK25ForConditionalGeneration", "get_eagle3_aux_hidden_state_layers")
    decoder = FakeDecoder(61)
    wrapper = SimpleNamespace(language_model=SimpleNamespace(model=decoder) if inner_is_causal_lm else decoder)
    assert getter(wrapper) == (2, 30, 58)
    setter(wrapper, (2, 30, 58))
    assert decoder.aux_hidden_state_layers == (2, 30, 58)


def test_kimi_k25_proposer_gets_a_branch_before_the_fallback():
    assert_transform(kimi_k25_eagle3, "proposer", '''
        def load_model(self, target_model):
            if self.get_model_name(target_model) in ["Qwen2_5_VLForConditionalGeneration"]:
                self.model.config.image_token_index = target_model.config.image_token_id
            else:
                self.model.config.image_token_index = (
                    target_model.config.image_token_index
                )
    ''', '''
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
    ''', {})


def test_kimi_k25_proposer_without_the_fallback_is_refused():
    with pytest.raises(FileNotAsExpected, match="expected one `else"):
        kimi_k25_eagle3.transform("proposer", "def f(target_model):\n    x = target_model.config.image_token_index\n", {})


# -- vllm-cpu-attn-block16 ---------------------------------------------------------------------
CPU_BEFORE = '''
    class CPUAttentionBackend(AttentionBackend):
        @staticmethod
        def get_supported_kernel_block_sizes() -> list[int | MultipleOf]:
            return [MultipleOf(32)]


    def _get_attn_isa(block_size):
        return "amx" if block_size % 32 == 0 else "vec16"
'''


def test_cpu_attention_also_declares_block_16():
    assert_transform(cpu_attn_block16, "backend", CPU_BEFORE, '''
        class CPUAttentionBackend(AttentionBackend):
            @staticmethod
            def get_supported_kernel_block_sizes() -> list[int | MultipleOf]:
                # compat patch vllm-cpu-attn-block16: the kernel's vec16 path serves CPU_MLA's block size
                return [16, MultipleOf(32)]


        def _get_attn_isa(block_size):
            return "amx" if block_size % 32 == 0 else "vec16"
    ''', {})


def test_cpu_attention_that_already_accepts_16_is_left_alone():
    # 0.28.0 declared MultipleOf(16): 16 is accepted, nothing to do.
    assert cpu_attn_block16.has_fix("backend", textwrap.dedent(CPU_BEFORE).replace("MultipleOf(32)", "MultipleOf(16)"), {})


def test_cpu_attention_without_a_block_16_kernel_path_is_refused():
    with pytest.raises(FileNotAsExpected, match="vec16"):
        cpu_attn_block16.has_fix("backend", textwrap.dedent(CPU_BEFORE).replace('"vec16"', '"vec"'), {})
