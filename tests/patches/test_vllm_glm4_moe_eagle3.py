"""vllm-glm4-moe-eagle3 on vLLM's real glm4_moe.py: the exact code after for both loop shapes, the fix
recognised, refusals, and the patched forward and hooks run on numbers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from compat.patches import FileNotAsExpected
from compat.patches.vllm import glm4_moe_eagle3 as patch
from patch_trees import release_source
from patch_testing import PP_LAST, FakeDecoder, patched_by, patched_forward, run_forward

pytestmark = pytest.mark.network

RELPATH = "vllm/model_executor/models/glm4_moe.py"
MARK = "# compat patch vllm-glm4-moe-eagle3"

METHODS = f"""    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        {MARK}: EAGLE-3 reads the residual stream entering these layers (n: the last layer's output).
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        {MARK}: the default ids every EAGLE-3 target uses (the runners' name up to 0.17.1).
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)

    def get_eagle3_default_aux_hidden_state_layers(self) -> tuple[int, ...]:
        {MARK}: the same, under the name the runners call from 0.18.0.
        return self.get_eagle3_aux_hidden_state_layers()

"""


def text(version: str) -> str:
    return (release_source("vllm", version) / RELPATH).read_text()


def replace_once(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, old
    return source.replace(old, new)


assert_patched = patched_by(patch, "model", options={}, filename=RELPATH)


def _common_tail(after: str, pp_return_end: str) -> str:
    after = replace_once(after, pp_return_end + """
        hidden_states, _ = self.norm(hidden_states, residual)
        return hidden_states
""", pp_return_end + f"""
        {MARK}: id n is the last layer's output
        if self.end_layer in self.aux_hidden_state_layers:
            aux_hidden_states.append(hidden_states + residual)

        hidden_states, _ = self.norm(hidden_states, residual)
        if len(aux_hidden_states) > 0:  {MARK}
            return hidden_states, aux_hidden_states
        return hidden_states
""")
    return replace_once(after, "    def compute_logits(\n", METHODS + "    def compute_logits(\n")


def test_0_16_0_islice_loop_is_enumerated_with_absolute_ids():
    before = text("0.16.0")
    after = replace_once(before, "from .interfaces import MixtureOfExperts, SupportsLoRA, SupportsPP\n",
                         "from .interfaces import MixtureOfExperts, SupportsLoRA, SupportsPP, SupportsEagle3\n")
    after = replace_once(after, """        for layer in islice(self.layers, self.start_layer, self.end_layer):
            hidden_states, residual = layer(positions, hidden_states, residual)
""", f"""        aux_hidden_states = []  {MARK}
        for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer):
            {MARK}: the residual stream entering layer idx (at layer 0 there is no residual yet)
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states if residual is None else hidden_states + residual)
            hidden_states, residual = layer(positions, hidden_states, residual)
""")
    after = replace_once(after, "class Glm4MoeForCausalLM(nn.Module, SupportsPP, SupportsLoRA, Glm4MixtureOfExperts):",
                         "class Glm4MoeForCausalLM(nn.Module, SupportsPP, SupportsLoRA, Glm4MixtureOfExperts, SupportsEagle3):")
    after = replace_once(after, """            ["hidden_states", "residual"], config.hidden_size
        )

    def embed_input_ids""", f"""            ["hidden_states", "residual"], config.hidden_size
        )
        self.aux_hidden_state_layers = ()  {MARK}

    def embed_input_ids""")
    after = _common_tail(after, """            return IntermediateTensors(
                {"hidden_states": hidden_states, "residual": residual}
            )
""")
    assert_patched(before, after)


def test_0_10_1_range_loop_captures_with_its_own_index():
    before = text("0.10.1")
    after = replace_once(before, "from .interfaces import SupportsLoRA, SupportsPP\n", "from .interfaces import SupportsLoRA, SupportsPP, SupportsEagle3\n")
    after = replace_once(after, """        for i in range(self.start_layer, self.end_layer):
            layer = self.layers[i]
""", f"""        aux_hidden_states = []  {MARK}
        for i in range(self.start_layer, self.end_layer):
            {MARK}: the residual stream entering layer i (at layer 0 there is no residual yet)
            if i in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states if residual is None else hidden_states + residual)
            layer = self.layers[i]
""")
    after = replace_once(after, "class Glm4MoeForCausalLM(nn.Module, SupportsPP, SupportsLoRA):",
                         "class Glm4MoeForCausalLM(nn.Module, SupportsPP, SupportsLoRA, SupportsEagle3):")
    after = replace_once(after, """                ["hidden_states", "residual"], config.hidden_size))
""", f"""                ["hidden_states", "residual"], config.hidden_size))
        self.aux_hidden_state_layers = ()  {MARK}
""")
    after = _common_tail(after, """                "residual": residual
            })
""")
    assert_patched(before, after)


def test_half_fixed_file_is_refused():
    half = text("0.20.0").replace("Glm4MixtureOfExperts):\n", "Glm4MixtureOfExperts, SupportsEagle3):\n", 1)
    with pytest.raises(FileNotAsExpected, match=r"part of the EAGLE-3 support \(interface\)"):
        patch.has_fix("model", half, {})


def test_a_forward_of_another_shape_is_refused():
    other = text("0.20.0").replace("for layer in islice(self.layers, self.start_layer, self.end_layer):",
                                   "for block in islice(self.layers, self.start_layer, self.end_layer):").replace(
        "hidden_states, residual = layer(positions", "hidden_states, residual = block(positions")
    with pytest.raises(FileNotAsExpected, match="0 decoder-layer loop"):
        patch.transform("model", other, {})


@pytest.mark.parametrize("version", ["0.10.1", "0.16.0", "0.33.0"])
def test_patched_forward_records_the_states_entering_each_layer_and_the_last_output(version):
    source = patch.transform("model", text(version), {})
    forward = patched_forward(source, "Glm4MoeModel", get_pp_group=lambda: PP_LAST, IntermediateTensors=dict)
    n = 8
    decoder = FakeDecoder(n, aux=(0, 3, n))
    hidden, aux = run_forward(forward, decoder)
    h, r = 1.0, None
    for layer in decoder.layers:
        h, r = layer(None, h, r)
    assert aux == [*FakeDecoder(n, aux=(0, 3)).expected_aux(1.0), h + r]
    assert aux[0] == 1.0  # layer 0: the embeddings
    assert run_forward(forward, FakeDecoder(n)) == hidden  # no aux layers: the single tensor, as before


def test_the_hooks_set_the_decoder_s_layers_and_give_the_default_ids():
    source = patch.transform("model", text("0.33.0"), {})
    names = {}
    for method in ("set_aux_hidden_state_layers", "get_eagle3_aux_hidden_state_layers", "get_eagle3_default_aux_hidden_state_layers"):
        names[method] = patched_forward(source, "Glm4MoeForCausalLM", method)
    target = SimpleNamespace(model=FakeDecoder(92))
    target.get_eagle3_aux_hidden_state_layers = lambda: names["get_eagle3_aux_hidden_state_layers"](target)
    assert names["get_eagle3_default_aux_hidden_state_layers"](target) == (2, 46, 89)
    names["set_aux_hidden_state_layers"](target, (1, 45, 92))
    assert target.model.aux_hidden_state_layers == (1, 45, 92)
