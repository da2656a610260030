"""sglang-deepseek-eagle3-capture on the real deepseek_v2.py of SGLang releases: the exact code after,
the fix recognised (by us and upstream), refusals, and the patched code run on numbers.

The patched methods are compiled on their own with stub globals (no torch, no SGLang): layers are
functions of numbers, so the states captured can be compared with the ones computed by hand,
with and without two-batch overlap.
"""

from __future__ import annotations

import ast
import textwrap
from contextlib import nullcontext
from types import SimpleNamespace

import pytest
from packaging.version import Version

from compat.patches import FileNotAsExpected
from compat.patches.sglang import deepseek_eagle3_capture as patch
from patch_testing import patched_by
from patch_trees import release_source

pytestmark = pytest.mark.network

RELPATH = "sglang/srt/models/deepseek_v2.py"
MARK = "# compat patch sglang-deepseek-eagle3-capture"


def release_text(version: str, relpath: str = RELPATH) -> str:
    return (release_source("sglang", version) / relpath).read_text()


def replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"anchor found {text.count(old)} times:\n{old}"
    return text.replace(old, new)


assert_patched = patched_by(patch, options={}, filename=RELPATH)


# -- the exact code after, on real files -----------------------------------------------------------
HOOK_WITH_IDS = f'''
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        {MARK}: as LlamaForCausalLM does in this release
        if not self.pp_group.is_last_rank:
            return

        if layer_ids is None:
            self.capture_aux_hidden_states = True
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.capture_aux_hidden_states = True
            # we plus 1 here because in sglang, for the ith layer, it takes the output
            # of the (i-1)th layer as aux hidden state
            self.model.layers_to_capture = [val + 1 for val in layer_ids]
'''

HOOK_DEFAULTS = f'''
    def set_eagle3_layers_to_capture(self):
        {MARK}: as LlamaForCausalLM does in this release (the runner passes no ids)
        self.capture_aux_hidden_states = True
        num_layers = self.config.num_hidden_layers
        self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
'''

RETURN = f"""        if len(aux_hidden_states) == 0:  {MARK}
            return hidden_states
        return hidden_states, aux_hidden_states
"""

UNPACK = f"""        aux_hidden_states = None  {MARK}
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
"""


def test_0_5_4_post1_gets_the_hook_with_ids_the_capture_and_the_overlap_extension():
    before = release_text("0.5.4.post1")
    after = replace_once(before, """                )
            )

    def get_input_embeddings(self) -> torch.Tensor:
        return self.embed_tokens
""", f"""                )
            )
        self.layers_to_capture = []  {MARK}

    def get_input_embeddings(self) -> torch.Tensor:
        return self.embed_tokens
""")
    after = replace_once(after, """                normal_end_layer = normal_start_layer = 0

        for i in range(normal_start_layer, normal_end_layer):
            with get_global_expert_distribution_recorder().with_current_layer(i):
                layer = self.layers[i]
""", f"""                normal_end_layer = normal_start_layer = 0

        {MARK}: the two-batch-overlap path captures nothing, so the layers up to the last captured one run here
        if forward_batch.can_run_tbo and self.layers_to_capture:
            captured_in_overlap = [
                i for i in self.layers_to_capture if max(normal_end_layer, self.start_layer) <= i < self.end_layer
            ]
            if captured_in_overlap:
                if normal_start_layer == normal_end_layer:  # no dense layer runs before the overlap on this stage
                    normal_start_layer = self.start_layer
                normal_end_layer = max(captured_in_overlap) + 1
        aux_hidden_states = []  {MARK}
        for i in range(normal_start_layer, normal_end_layer):
            with get_global_expert_distribution_recorder().with_current_layer(i):
                if i in self.layers_to_capture:
                    aux_hidden_states.append(hidden_states + residual)
                layer = self.layers[i]
""")
    after = replace_once(after, """                    hidden_states, _ = self.norm(hidden_states, residual)
        return hidden_states


class DeepseekV2ForCausalLM(nn.Module):""", f"""                    hidden_states, _ = self.norm(hidden_states, residual)
{RETURN}

class DeepseekV2ForCausalLM(nn.Module):""")
    after = replace_once(after, """                if isinstance(layer.mlp, DeepseekV2MoE)
            }
        )

    @property
    def routed_experts_weights_of_layer(self):""", f"""                if isinstance(layer.mlp, DeepseekV2MoE)
            }}
        )
        self.capture_aux_hidden_states = False  {MARK}

    @property
    def routed_experts_weights_of_layer(self):""".replace("}}", "}"))
    after = replace_once(after, """            input_ids, positions, forward_batch, input_embeds, pp_proxy_tensors
        )

        if self.pp_group.is_last_rank:
            return self.logits_processor(
                input_ids, hidden_states, self.lm_head, forward_batch
            )""", f"""            input_ids, positions, forward_batch, input_embeds, pp_proxy_tensors
        )
{UNPACK}
        if self.pp_group.is_last_rank:
            return self.logits_processor(
                input_ids, hidden_states, self.lm_head, forward_batch, aux_hidden_states
            )""")
    after = replace_once(after, """            num_groups=config.n_group,
        )


AttentionBackendRegistry.register""", f"""            num_groups=config.n_group,
        )
{HOOK_WITH_IDS}

AttentionBackendRegistry.register""")
    assert patch.find_files(_tree("0.5.4.post1")) == {patch.WITH_IDS: RELPATH}
    assert_patched(patch.WITH_IDS, before, after)


def test_0_4_4_post2_gets_the_defaults_only_hook_and_no_overlap_code():
    before = release_text("0.4.4.post2")
    after = replace_once(before, """        residual = None
        for i in range(len(self.layers)):
            expert_distribution_recorder.set_current_layer(i)
            layer = self.layers[i]
""", f"""        residual = None
        aux_hidden_states = []  {MARK}
        for i in range(len(self.layers)):
            expert_distribution_recorder.set_current_layer(i)
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual)
            layer = self.layers[i]
""")
    after = replace_once(after, """            hidden_states, _ = self.norm(hidden_states, residual)
        return hidden_states
""", f"""            hidden_states, _ = self.norm(hidden_states, residual)
{RETURN}""")
    after = replace_once(after, """        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

        self.dp_size = get_attention_dp_size()
""", f"""        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

        self.dp_size = get_attention_dp_size()
        self.layers_to_capture = []  {MARK}
""")
    after = replace_once(after, """        self.logits_processor = LogitsProcessor(config)
        self.dp_size = get_attention_dp_size()
""", f"""        self.logits_processor = LogitsProcessor(config)
        self.dp_size = get_attention_dp_size()
        self.capture_aux_hidden_states = False  {MARK}
""")
    after = replace_once(after, """        hidden_states = self.model(input_ids, positions, forward_batch, input_embeds)

        return self.logits_processor(
            input_ids, hidden_states, self.lm_head, forward_batch
        )""", f"""        hidden_states = self.model(input_ids, positions, forward_batch, input_embeds)
{UNPACK}
        return self.logits_processor(
            input_ids, hidden_states, self.lm_head, forward_batch, aux_hidden_states
        )""")
    hook_at = after.index("\n\nclass DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):")
    after = after[:hook_at] + HOOK_DEFAULTS + after[hook_at:]
    assert patch.find_files(_tree("0.4.4.post2")) == {patch.DEFAULTS_ONLY: RELPATH}
    assert_patched(patch.DEFAULTS_ONLY, before, after)


def role_of(version: str) -> str:
    (role,) = patch.find_files(_tree(version))
    return role


def _tree(version: str):
    from compat.sources import open_path

    return open_path(release_source("sglang", version))


@pytest.mark.parametrize("version, takes_ids", [
    ("0.4.4.post2", False), ("0.4.6.post2", False), ("0.4.8.post1", False), ("0.4.9", True), ("0.5.4.post1", True),
])
def test_the_shape_follows_the_release_s_own_llama_hook(version, takes_ids):
    assert patch.reference_takes_ids(_tree(version)) is takes_ids


def test_upstream_fix_of_0_5_4_post2_is_recognised():
    assert patch.has_fix(patch.WITH_IDS, release_text("0.5.4.post2"), {})


def test_a_release_without_eagle3_capture_has_nothing_to_follow():
    with pytest.raises(FileNotFoundError, match="no LlamaForCausalLM.set_eagle3_layers_to_capture"):
        patch.find_files(_tree("0.4.4.post1"))


# -- refusals ------------------------------------------------------------------------------------
def test_half_fixed_file_is_refused():
    source = release_text("0.5.4.post1").replace(
        "    def get_model_config_for_expert_location(cls, config):",
        "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n        pass\n\n"
        "    @classmethod\n    def get_model_config_for_expert_location(cls, config):", 1)
    with pytest.raises(FileNotAsExpected, match=r"part of the EAGLE-3 capture \(hook\) but not the rest \(capture, logits\)"):
        patch.has_fix(patch.WITH_IDS, source, {})


def test_a_forward_without_the_layer_loop_is_refused():
    source = release_text("0.5.4.post1").replace("for i in range(normal_start_layer, normal_end_layer):",
                                                 "for j in range(normal_start_layer, normal_end_layer):")
    with pytest.raises(FileNotAsExpected, match="decoder-layer loop"):
        patch.transform(patch.WITH_IDS, source, {})


def test_a_causal_lm_that_does_not_call_the_logits_processor_as_expected_is_refused():
    source = release_text("0.4.9").replace("input_ids, hidden_states, self.lm_head, forward_batch\n",
                                           "input_ids, hidden_states, self.lm_head, forward_batch, None\n")
    with pytest.raises(FileNotAsExpected, match="no `self.logits_processor"):
        patch.transform(patch.WITH_IDS, source, {})


def test_a_file_without_the_classes_is_refused():
    with pytest.raises(FileNotAsExpected, match="no top-level class DeepseekV2Model"):
        patch.has_fix(patch.WITH_IDS, "class DeepseekV2ForCausalLM:\n    pass\n", {})


# -- the patched code on numbers -------------------------------------------------------------------
def compiled(source: str, class_name: str, method: str, **names):
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    func = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == method)
    code = "from __future__ import annotations\n" + textwrap.dedent(ast.get_source_segment(source, func))
    namespace = dict(names)
    exec(compile(code, f"<{class_name}.{method}>", "exec"), namespace)
    return namespace[method]


class Layer:
    """Layer i turns (h, r) into (2 * (h + r) + i, h + r), on numbers."""

    def __init__(self, i: int):
        self.i = i
        self.layer_scatter_modes = SimpleNamespace(layer_output_mode="scatter")

    def __call__(self, positions, hidden_states, forward_batch, residual, *allocators):
        stream = hidden_states + (residual or 0)
        return 2 * stream + self.i, stream


def expected_aux(n: int, ids, embeds: float = 1.0) -> list[float]:
    out, h, r = [], embeds, None
    for i in range(n):
        if i in ids:
            out.append(h + r)
        h, r = Layer(i)(None, h, None, r)
    return out


def fake_model(n: int, first_dense: int, ids=()):
    norm = lambda h, r=None: (h + (r or 0), None) if r is not None else h  # noqa: E731
    return SimpleNamespace(
        layers=[Layer(i) for i in range(n)], start_layer=0, end_layer=n, first_k_dense_replace=first_dense,
        pp_group=SimpleNamespace(is_first_rank=True, is_last_rank=True), embed_tokens=lambda ids: 1.0,
        norm=norm, layers_to_capture=list(ids), gemm_output_zero_allocator_size=0,
    )


def overlap_calls():
    calls = []

    def model_forward_maybe_tbo(layers, enable_tbo, positions, forward_batch, hidden_states, residual,
                                input_data_scatter_mode, zero_allocator=None):
        calls.append([layer.i for layer in layers])
        for layer in layers:
            hidden_states, residual = layer(positions, hidden_states, forward_batch, residual)
        return hidden_states, residual

    return calls, model_forward_maybe_tbo


def batch(tbo: bool):
    return SimpleNamespace(can_run_tbo=tbo, forward_mode=SimpleNamespace(is_idle=lambda: False))


STUBS = dict(
    BumpAllocator=lambda **kw: None, get_global_expert_distribution_recorder=lambda: SimpleNamespace(with_current_layer=lambda i: nullcontext()),
    PPProxyTensors=dict, torch=SimpleNamespace(float32="float32"),
)


@pytest.mark.parametrize("version", ["0.4.7", "0.5.4.post1"])
@pytest.mark.parametrize("tbo", [False, True], ids=["plain", "two-batch overlap"])
def test_patched_forward_captures_the_input_of_each_layer_also_under_two_batch_overlap(version, tbo):
    source = patch.transform(role_of(version), release_text(version), {})
    calls, tbo_forward = overlap_calls()
    forward = compiled(source, "DeepseekV2Model", "forward", model_forward_maybe_tbo=tbo_forward, **STUBS)
    ids = [3, 6, 9]
    model = fake_model(12, first_dense=2, ids=ids)
    input_ids = SimpleNamespace(device="cpu")  # embed_tokens turns it into 1.0
    hidden, aux = forward(model, input_ids, None, batch(tbo))
    assert aux == expected_aux(12, ids) and len(aux) == 3
    plain = fake_model(12, first_dense=2)
    calls.clear()
    assert forward(plain, input_ids, None, batch(tbo)) == hidden  # nothing captured: the bare tensor, same numbers
    assert calls == ([list(range(2, 12))] if tbo else [])  # without capture the overlap starts after the dense prefix


def test_under_overlap_only_the_layers_after_the_last_captured_one_overlap():
    source = patch.transform(patch.WITH_IDS, release_text("0.5.4.post1"), {})
    calls, tbo_forward = overlap_calls()
    forward = compiled(source, "DeepseekV2Model", "forward", model_forward_maybe_tbo=tbo_forward, **STUBS)
    model = fake_model(12, first_dense=2, ids=[3, 6, 9])
    forward(model, SimpleNamespace(device="cpu"), None, batch(True))
    assert calls == [[10, 11]]
    model = fake_model(12, first_dense=5, ids=[1, 3])  # every captured layer is dense: the overlap is untouched
    calls.clear()
    forward(model, SimpleNamespace(device="cpu"), None, batch(True))
    assert calls == [list(range(5, 12))]


@pytest.mark.parametrize("version, ids, expected", [
    ("0.5.4.post1", None, [2, 30, 58]), ("0.5.4.post1", [1, 29, 57], [2, 30, 58]), ("0.5.4.post1", [2, 30, 58], [3, 31, 59]),
    ("0.4.8.post1", None, [2, 30, 58]),
])
def test_the_hook_sets_the_release_s_llama_ids(version, ids, expected):
    hook = compiled(patch.transform(role_of(version), release_text(version), {}), "DeepseekV2ForCausalLM", "set_eagle3_layers_to_capture")
    target = SimpleNamespace(config=SimpleNamespace(num_hidden_layers=61), model=SimpleNamespace(),
                             pp_group=SimpleNamespace(is_last_rank=True), capture_aux_hidden_states=False)
    hook(target) if ids is None else hook(target, ids)
    assert target.capture_aux_hidden_states and target.model.layers_to_capture == expected
    if Version(version) >= Version("0.5.1"):  # the class has a pipeline group: not the last rank, nothing is captured there
        other = SimpleNamespace(pp_group=SimpleNamespace(is_last_rank=False), model=SimpleNamespace(), capture_aux_hidden_states=False)
        hook(other, ids)
        assert not other.capture_aux_hidden_states


def test_the_causal_lm_hands_the_states_to_the_logits_processor():
    source = patch.transform(patch.WITH_IDS, release_text("0.5.4.post1"), {})
    forward = compiled(source, "DeepseekV2ForCausalLM", "forward")
    seen = []
    lm = SimpleNamespace(model=lambda *a: ("h", ["a1", "a2"]), capture_aux_hidden_states=True, lm_head="head",
                         pp_group=SimpleNamespace(is_last_rank=True), logits_processor=lambda *a: seen.append(a) or "logits")
    assert forward(lm, "ids", "pos", "batch") == "logits"
    assert seen == [("ids", "h", "head", "batch", ["a1", "a2"])]
    lm.capture_aux_hidden_states, lm.model = False, lambda *a: "h"
    forward(lm, "ids", "pos", "batch")
    assert seen[-1] == ("ids", "h", "head", "batch", None)
