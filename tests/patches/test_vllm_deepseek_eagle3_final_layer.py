"""vllm-deepseek-eagle3-final-layer on vLLM's real deepseek_v2.py: the exact code after (0.25.0's two
lines), the upstream capture recognised, refusals, and the patched forward run on numbers."""

from __future__ import annotations

import pytest

from compat.patches import FileNotAsExpected
from compat.patches.vllm import deepseek_eagle3_final_layer as patch
from patch_trees import release_source
from patch_testing import PP_LAST, FakeDecoder, patched_forward, run_forward

pytestmark = pytest.mark.network

RELPATH = "vllm/model_executor/models/deepseek_v2.py"
MARK = "# compat patch vllm-deepseek-eagle3-final-layer"
TAIL = """                {"hidden_states": hidden_states, "residual": residual}
            )

        hidden_states, _ = self.norm(hidden_states, residual)
        if len(aux_hidden_states) > 0:
"""


def text(version: str) -> str:
    return (release_source("vllm", version) / RELPATH).read_text()


@pytest.mark.parametrize("version", ["0.18.0", "0.21.0", "0.24.0"])
def test_the_final_layer_capture_goes_before_the_final_norm(version):
    before = text(version)
    assert before.count(TAIL) == 1
    after = before.replace(TAIL, f"""                {{"hidden_states": hidden_states, "residual": residual}}
            )

        {MARK}: id n is the last layer's output (vllm#46973)
        if self.end_layer in self.aux_hidden_state_layers:
            aux_hidden_states.append(hidden_states + residual)

        hidden_states, _ = self.norm(hidden_states, residual)
        if len(aux_hidden_states) > 0:
""")
    assert not patch.has_fix("model", before, {})
    out = patch.transform("model", before, {})
    assert out == after
    compile(out, RELPATH, "exec")
    assert patch.has_fix("model", out, {})
    assert patch.transform("model", out, {}) == out


@pytest.mark.parametrize("version", ["0.25.0", "0.33.0"])
def test_upstream_capture_is_recognised(version):
    assert patch.has_fix("model", text(version), {})


def test_a_forward_without_aux_capture_is_refused():
    with pytest.raises(FileNotAsExpected, match="captures no aux hidden states"):
        patch.has_fix("model", text("0.17.1"), {})


def test_a_forward_without_the_final_norm_is_refused():
    source = text("0.24.0").replace("        hidden_states, _ = self.norm(hidden_states, residual)\n        if len(aux",
                                    "        hidden_states = self.norm(hidden_states + residual)\n        if len(aux")
    with pytest.raises(FileNotAsExpected, match="has 0 `hidden_states, _ = self.norm"):
        patch.transform("model", source, {})


def test_patched_forward_returns_the_last_layer_s_output_for_id_n():
    forward = patched_forward(patch.transform("model", text("0.24.0"), {}), get_pp_group=lambda: PP_LAST,
                              IntermediateTensors=dict, _get_llama_4_scaling=None)
    n = 8
    decoder = FakeDecoder(n, aux=(2, 5, n))
    hidden, aux = run_forward(forward, decoder)
    h, r = 1.0, None
    for layer in decoder.layers:
        h, r = layer(None, h, r)
    assert aux == [*FakeDecoder(n, aux=(2, 5)).expected_aux(1.0), h + r] and len(aux) == 3
    unpatched = patched_forward(text("0.24.0"), get_pp_group=lambda: PP_LAST, IntermediateTensors=dict, _get_llama_4_scaling=None)
    assert len(run_forward(unpatched, FakeDecoder(n, aux=(2, 5, n)))[1]) == 2  # the bug: one state fewer, silently
