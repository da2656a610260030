"""The facts doctor's drafter and target checks read from LMDeploy, on small trees written by the tests: the EAGLE-3
draft architectures and classes, how each class loads a checkpoint (drafter_loader), the registered targets, whether a
target captures the last layer's output, and the dtype the draft runs in.

Shaped like LMDeploy 0.18.0 (lmdeploy/pytorch/models/{module_map,llama,llama_eagle3,kimi_k25_eagle3}.py,
configurations/{llama,kimi_k2}.py, pytorch/config.py, engine/config_builder.py), cut to what the probes read, the
loaders' loops as written upstream. The files are written with CRLF line endings, as the release's win_amd64 wheel
(the one compat reads) holds them. What is modelled: the code the probes read; LMDeploy needs CUDA, nothing runs.
"""

from __future__ import annotations

from compat.probes.drafter_replay import land
from compat.probes.lmdeploy.draft_dtype import draft_dtype
from compat.probes.lmdeploy.drafter_loader import drafter_loader
from compat.probes.lmdeploy.eagle3_drafters import eagle3_drafter_classes, eagle3_drafters
from compat.probes.lmdeploy.final_layer_capture import final_layer_capture
from compat.probes.lmdeploy.target_architectures import target_architectures

import probe_trees

line = probe_trees.line
MODELS, CONFIGS = "lmdeploy/pytorch/models", "lmdeploy/pytorch/configurations"

MODULE_MAP = '''
LMDEPLOY_PYTORCH_MODEL_PATH = 'lmdeploy.pytorch.models'
MODULE_MAP = dict()
REMOVED_MODEL_MAP = {
    'InternLMForCausalLM': 'InternLM',
}
MODULE_MAP.update({
    'LlamaForCausalLM': f'{LMDEPLOY_PYTORCH_MODEL_PATH}.llama.LlamaForCausalLM',
    'KimiK25ForConditionalGeneration': f'{LMDEPLOY_PYTORCH_MODEL_PATH}.kimi_k25.KimiK25ForConditionalGeneration',
    'InternLMForCausalLM': f'{LMDEPLOY_PYTORCH_MODEL_PATH}.internlm.InternLMForCausalLM',
})
MODULE_MAP.update({'Eagle3LlamaForCausalLM': f'{LMDEPLOY_PYTORCH_MODEL_PATH}.llama_eagle3.Eagle3LlamaForCausalLM'})
MODULE_MAP.update({'Eagle3DeepseekV2ForCausalLM': f'{LMDEPLOY_PYTORCH_MODEL_PATH}.kimi_k25_eagle3.Eagle3DeepseekV2ForCausalLM'})
'''

LLAMA_BUILDER = '''
class LlamaModelConfigBuilder(AutoModelConfigBuilder):

    @classmethod
    def condition(cls, hf_config):
        return hf_config.architectures[0] in ['LlamaForCausalLM']

    @classmethod
    def build(cls, hf_config, model_path=None, is_draft_model=False, spec_method=None, **kwargs):
        if is_draft_model:
            hf_config.architectures[0] = spec_method.capitalize() + hf_config.architectures[0]
        elif spec_method == 'eagle3':
            hf_config.aux_hidden_state_layers = (2, num_layers // 2, num_layers - 3)
        return cfg
'''

KIMI_BUILDER = '''
_EAGLE3_DEEPSEEK_ARCH = 'Eagle3DeepseekV2ForCausalLM'


class KimiK2ModelConfigBuilder(AutoModelConfigBuilder):

    @classmethod
    def condition(cls, hf_config):
        return getattr(hf_config, 'model_type', None) == 'kimi_k2'

    @classmethod
    def build(cls, hf_config, model_path=None, is_draft_model=False, spec_method=None, **kwargs):
        supported_spec_methods = {'deepseek_mtp', 'eagle3'}
        if is_draft_model:
            architectures = getattr(hf_config, 'architectures', None) or []
            if not architectures or architectures[0] != _EAGLE3_DEEPSEEK_ARCH:
                raise ValueError('Kimi-K2 EAGLE3 draft config must use architecture')
        else:
            hf_config.aux_hidden_state_layers = (2, cfg.num_layers // 2, cfg.num_layers - 3)
        return cfg
'''

LLAMA_MODEL = '''
class LlamaModel(nn.Module):

    def __init__(self, config):
        self.aux_hidden_state_layers = getattr(config, 'aux_hidden_state_layers', tuple())

    def forward(self, hidden_states, residual=None):
        aux_hidden_states = []

        for idx, decoder_layer in enumerate(self.layers):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = decoder_layer(hidden_states, residual)
        return hidden_states


class LlamaForCausalLM(nn.Module):

    def __init__(self, config):
        self.model = LlamaModel(config)
'''

KIMI_LANGUAGE = '''
class KimiK2Model(nn.Module):

    def forward(self, hidden_states):
        aux_hidden_state_layers = self.aux_hidden_state_layers
        for idx, layer in enumerate(self.layers):
            capture_input_residual = idx in aux_hidden_state_layers

            hidden_states = layer(hidden_states)
        return hidden_states


class KimiK2ForCausalLM(nn.Module):

    def __init__(self, config):
        self.aux_hidden_state_layers = getattr(config, 'aux_hidden_state_layers', ())
        self.model = KimiK2Model(config)
'''

KIMI_K25 = '''
from .kimi_k2_language import KimiK2ForCausalLM


class KimiK25ForConditionalGeneration(nn.Module):

    def __init__(self, config):
        self.language_model = KimiK2ForCausalLM(config.text_config)
'''

EAGLE3_LLAMA = '''
class Eagle3LlamaModel(nn.Module):

    def __init__(self, config, dtype=None, device=None):
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, self.padding_idx)
        self.midlayer = Eagle3LlamaDecoderLayer(config, layer_idx=0, dtype=dtype, device=device)
        target_hidden_size = getattr(config, 'target_hidden_size', config.hidden_size)
        self.fc = build_rowwise_linear(target_hidden_size * 3, config.hidden_size, bias=False)
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps, dtype=dtype, device=device)


class Eagle3LlamaForCausalLM(nn.Module, CudaGraphMixin):

    def __init__(self, config, ctx_mgr, dtype=None, device=None):
        if config.num_hidden_layers != 1:
            raise ValueError('eagle3 only supports 1 decode layer')
        self.model = Eagle3LlamaModel(config, dtype=dtype, device=device)
        self.lm_head = build_rowwise_linear(config.hidden_size, config.draft_vocab_size, bias=False)
        self.draft_id_to_target_id = nn.Parameter(torch.zeros(self.config.draft_vocab_size), requires_grad=False)
        self.include_embed_tokens = False

    def load_weights(self, weights):
        stacked_params_mapping = [
            ('.qkv_proj', '.q_proj', 'q'),
            ('.qkv_proj', '.k_proj', 'k'),
            ('.qkv_proj', '.v_proj', 'v'),
        ]
        params_dict = dict(self.named_parameters())
        for name, loaded_weight in weights:
            if 'd2t' in name:
                name = 'draft_id_to_target_id'
                loaded_weight += base
            elif 'lm_head.weight' not in name:
                name = 'model.' + name
            if 'embed_tokens' in name:
                self.include_embed_tokens = True
            if 't2d' in name:
                continue
            if 'rotary_emb.inv_freq' in name:
                continue
            if self.config.tie_word_embeddings and 'lm_head.weight' in name:
                continue
            for (param_name, weight_name, shard_id) in stacked_params_mapping:
                if weight_name not in name:
                    continue
                name = name.replace(weight_name, param_name)
                param = params_dict[name]
                load_weight(param, loaded_weight, shard_id=shard_id)
                break
            else:
                param = params_dict[name]
                load_weight(param, loaded_weight)
'''

EAGLE3_KIMI = '''
class Eagle3MLAModel(nn.Module):

    def __init__(self, config, dtype=None, device=None):
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, self.padding_idx)
        self.fc = build_colwise_linear(config.hidden_size * 3, config.hidden_size, bias=getattr(config, 'bias', False))
        self.midlayer = Eagle3MLADecoderLayer(config)
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)


class Eagle3DeepseekV2ForCausalLM(nn.Module, CudaGraphMixin):

    def __init__(self, config, ctx_mgr, dtype=None, device=None):
        self.model = Eagle3MLAModel(config, dtype=dtype, device=device)
        self.lm_head = build_colwise_linear(config.hidden_size, config.draft_vocab_size, bias=False)
        self.draft_id_to_target_id = nn.Parameter(torch.arange(config.draft_vocab_size), requires_grad=False)

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for checkpoint_name, loaded_weight in weights:
            name = checkpoint_name.removeprefix('model.')
            if name == 't2d' or name.endswith('.t2d'):
                continue
            if name == 'd2t' or name.endswith('.d2t'):
                load_weight(self.draft_id_to_target_id, token_ids)
                continue
            if name == 'embed_tokens.weight':
                continue
            name = name.replace('layers.0.', 'midlayer.', 1)
            if not name.startswith('lm_head.'):
                name = f'model.{name}'
            if '.self_attn.kv_b_proj.' in name:
                if not name.endswith('.weight'):
                    raise ValueError(f'unsupported quantized draft kv_b tensor {checkpoint_name}')
                load_weight(params_dict[name.replace('.kv_b_proj.', '.kc.')], w_kc)
                continue
            try:
                param = params_dict[name]
            except KeyError:
                raise KeyError(f'unexpected Kimi EAGLE3 checkpoint weight {checkpoint_name!r}') from None
            load_weight(param, loaded_weight)
'''

CONFIG = '''
def _update_torch_dtype(config, dtype, device_type='auto'):
    torch_dtype = getattr(config.hf_config, 'torch_dtype', None)
    if torch_dtype is None:
        torch_dtype = 'float16' if dtype == 'auto' else dtype
    else:
        if dtype == 'auto':
            torch_dtype = torch_dtype if torch_dtype in ['float16', 'bfloat16'] else 'float16'
        else:
            torch_dtype = dtype
    return config
'''

CONFIG_BUILDER = '''
def build_specdecode_config(engine_config, speculative_config, cache_config):
    specdecode_config = SpecDecodeConfig.from_config(
        method=speculative_config.method,
        model=draft_model,
        dtype=engine_config.dtype,
    )
    return specdecode_config
'''


def release(tmp_path, *, kimi: bool = True):
    files = {
        f"{MODELS}/module_map.py": MODULE_MAP if kimi else MODULE_MAP.replace("'KimiK25", "# 'KimiK25").replace(
            "MODULE_MAP.update({'Eagle3Deepseek", "# MODULE_MAP.update({'Eagle3Deepseek"),
        f"{MODELS}/llama.py": LLAMA_MODEL, f"{MODELS}/kimi_k2_language.py": KIMI_LANGUAGE, f"{MODELS}/kimi_k25.py": KIMI_K25,
        f"{MODELS}/llama_eagle3.py": EAGLE3_LLAMA, f"{MODELS}/kimi_k25_eagle3.py": EAGLE3_KIMI,
        f"{CONFIGS}/builder.py": "class AutoModelConfigBuilder:\n    @classmethod\n    def condition(cls, c):\n"
                                 "        raise NotImplementedError('')\n",
        f"{CONFIGS}/llama.py": LLAMA_BUILDER, f"{CONFIGS}/kimi_k2.py": KIMI_BUILDER,
        "lmdeploy/pytorch/config.py": CONFIG, "lmdeploy/pytorch/engine/config_builder.py": CONFIG_BUILDER,
        "lmdeploy/pytorch/spec_decode/proposers/eagle3.py":
            "@SPEC_PROPOSERS.register_module(name='eagle3')\nclass Eagle3(DeepseekMTP):\n    pass\n",
    }
    tree = probe_trees.write_tree(tmp_path, "lmdeploy", files, strip_first_newline=True)
    for relpath in files:  # as the win_amd64 wheel holds them
        path = tmp_path / relpath
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    return tree  # (read lazily: the files as they are now)


def test_a_draft_declares_the_architecture_the_builder_renames(tmp_path):
    tree = release(tmp_path)
    assert eagle3_drafters(tree) == ["Eagle3DeepseekV2ForCausalLM", "LlamaForCausalLM"]  # not LlamaForCausalLMEagle3
    classes = {c["architecture"]: c for c in eagle3_drafter_classes(tree)}
    llama = classes["LlamaForCausalLM"]
    assert (llama["class"], llama["how"]) == ("Eagle3LlamaForCausalLM", "renamed from LlamaForCausalLM")
    assert llama["built_by"] == f"{CONFIGS}/llama.py:{line(LLAMA_BUILDER, 'capitalize()')}"
    assert llama["location"] == f"{MODELS}/llama_eagle3.py:{line(EAGLE3_LLAMA, 'class Eagle3LlamaForCausalLM')}"
    assert classes["Eagle3DeepseekV2ForCausalLM"]["model_types"] == ["kimi_k2"]  # the builder's condition


def test_no_eagle3_draft_without_its_map_entry(tmp_path):
    tree = release(tmp_path, kimi=False)
    assert eagle3_drafters(tree) == ["LlamaForCausalLM"]
    assert "KimiK25ForConditionalGeneration" not in target_architectures(tree)


def test_the_llama_drafter_loads_midlayer_names_and_refuses_layers_0(tmp_path):
    entry = drafter_loader(release(tmp_path))["drafters"]["Eagle3LlamaForCausalLM"]
    assert entry["architectures"] == ["LlamaForCausalLM"]
    assert {m["path"] for m in entry["modules"]} >= {"model.fc", "lm_head", "model.midlayer", "draft_id_to_target_id"}
    fate = {name: land(entry, name, {"num_hidden_layers": 1})["fate"] for name in (
        "midlayer.self_attn.q_proj.weight", "fc.weight", "norm.weight", "lm_head.weight", "d2t", "t2d",
        "embed_tokens.weight", "layers.0.self_attn.q_proj.weight", "model.fc.weight")}
    assert fate == {"midlayer.self_attn.q_proj.weight": "load", "fc.weight": "load", "norm.weight": "load",
                    "lm_head.weight": "load", "d2t": "load", "t2d": "skip", "embed_tokens.weight": "load",
                    "layers.0.self_attn.q_proj.weight": "raise", "model.fc.weight": "raise"}  # KeyError in params_dict
    assert land(entry, "lm_head.weight", {"tie_word_embeddings": True})["fate"] == "skip"
    d2t = entry["vocab_map"]["d2t"]
    assert (d2t["fate"], d2t["to"]) == ("rename", "draft_id_to_target_id")
    assert d2t["location"] == f"{MODELS}/llama_eagle3.py:{line(EAGLE3_LLAMA, 'name = ' + chr(39) + 'draft_id')}"
    assert entry["layers"]["rejects"]["error"] == "eagle3 only supports 1 decode layer"
    assert entry["fc"]["fixed_aux_count"] == 3 and entry["fc"]["bias"] == [{"default": False}]


def test_the_kimi_drafter_strips_model_and_maps_layers_0(tmp_path):
    entry = drafter_loader(release(tmp_path))["drafters"]["Eagle3DeepseekV2ForCausalLM"]
    fate = {name: land(entry, name, {"num_hidden_layers": 1})["fate"] for name in (
        "model.layers.0.self_attn.q_b_proj.weight", "midlayer.mlp.down_proj.weight", "layers.1.mlp.down_proj.weight",
        "d2t", "embed_tokens.weight", "model.fc.weight")}
    assert fate == {"model.layers.0.self_attn.q_b_proj.weight": "load", "midlayer.mlp.down_proj.weight": "load",
                    "layers.1.mlp.down_proj.weight": "raise", "d2t": "consume", "embed_tokens.weight": "skip",
                    "model.fc.weight": "load"}
    assert entry["vocab_map"]["d2t"] == {"fate": "consume", "into": "draft_id_to_target_id",
                                         "location": f"{MODELS}/kimi_k25_eagle3.py:{line(EAGLE3_KIMI, 'if name == ' + chr(39) + 'd2t')}"}
    assert not any(s["op"] == "prefix" and "unsupported" in s["prefix"] for s in entry["steps"])  # a message, not a name


def test_targets_are_the_model_map_less_the_removed(tmp_path):
    found = target_architectures(release(tmp_path))
    assert found["LlamaForCausalLM"] == f"{MODELS}/module_map.py:{line(MODULE_MAP, chr(39) + 'LlamaForCausalLM' + chr(39) + ':')}"
    assert "InternLMForCausalLM" not in found  # REMOVED_MODEL_MAP: refused by name


def test_no_target_captures_the_last_layers_output(tmp_path):
    fact = final_layer_capture(release(tmp_path))
    before = fact["before_final"]
    assert set(before) == {"LlamaForCausalLM", "KimiK25ForConditionalGeneration"} and fact["unresolved"] == {}
    assert before["LlamaForCausalLM"]["location"] == f"{MODELS}/llama.py:{line(LLAMA_MODEL, 'if idx in')}"
    assert before["KimiK25ForConditionalGeneration"]["model"] == "KimiK2Model"  # through the language model, a local copy


AUTO_BRANCH = "if dtype == 'auto':"


def test_the_draft_runs_in_the_servers_dtype_auto_on_its_own_config(tmp_path):
    fact = draft_dtype(release(tmp_path))
    assert fact == {"present": True, "from_target": False, "given_by": "engine_config.dtype",
                    "location": f"lmdeploy/pytorch/engine/config_builder.py:{line(CONFIG_BUILDER, 'from_config(')}",
                    "auto_from": "draft", "auto_location": f"lmdeploy/pytorch/config.py:{line(CONFIG, AUTO_BRANCH)}"}


def test_a_proposer_that_imports_an_optional_package_needs_it_and_so_does_its_subclass(tmp_path):
    """Modelled: no LMDeploy release imports a package beyond its own for a method (the pinned releases say so in
    test_lmdeploy_releases.py); a proposer that did would need it, and a method whose proposer extends it too."""
    from compat.probes.lmdeploy.method_packages import method_packages

    mtp = """
@SPEC_PROPOSERS.register_module(name='deepseek_mtp')
class DeepseekMTP(BaseSpecProposer):

    def build_model(self):
        import fancy_kernels
        return fancy_kernels
"""
    home = "lmdeploy/pytorch/spec_decode/proposers"
    tree = probe_trees.write_tree(tmp_path, "lmdeploy", {
        f"{home}/deepseek_mtp.py": mtp,
        f"{home}/eagle3.py": "@SPEC_PROPOSERS.register_module(name='eagle3')\nclass Eagle3(DeepseekMTP):\n    pass\n",
        f"{home}/dflash.py": "@SPEC_PROPOSERS.register_module(name='dflash')\nclass DFlash(BaseSpecProposer):\n    pass\n",
    }, strip_first_newline=True)
    fact = method_packages(tree)
    assert [r["module"] for r in fact["methods"]["eagle3"]] == ["fancy_kernels"]  # through DeepseekMTP
    assert fact["methods"]["eagle3"][0]["location"] == f"{home}/deepseek_mtp.py:{line(mtp, 'import fancy')}"
    assert fact["methods"]["dflash"] == []
