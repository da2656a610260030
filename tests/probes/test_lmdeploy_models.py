"""LMDeploy's draft classes, the rename of a draft's architecture, the EAGLE-3 targets, their layer ids and the
targets' gates, on small trees written by the tests.

Shaped like LMDeploy 0.18.0 (lmdeploy/pytorch/models/module_map.py, configurations/{llama,deepseek_v2,kimi_k2,
kimi_k25}.py, models/{llama,llama_eagle3,deepseek_mtp,kimi_k25,kimi_k2_language,qwen3,qwen3_dflash}.py), cut to
what the probes read. What is modelled: the config builders' `condition`/`build`, the model map's f-string entries
and the target classes' capture reads; LMDeploy needs CUDA, so nothing here runs its code.
"""

from __future__ import annotations

from compat.aux_layers import evaluate_default
from compat.probes.lmdeploy.aux_layer_ids import aux_layer_ids
from compat.probes.lmdeploy.draft_models import draft_models
from compat.probes.lmdeploy.drafter_architecture_rename import drafter_architecture_rename
from compat.probes.lmdeploy.eagle3_targets import eagle3_targets
from compat.probes.lmdeploy.target_gates import target_gates

import probe_trees

line = probe_trees.line

MODULE_MAP = '''
LMDEPLOY_PYTORCH_MODEL_PATH = 'lmdeploy.pytorch.models'
MODULE_MAP = dict()
MODULE_MAP.update({
    'LlamaForCausalLM': f'{LMDEPLOY_PYTORCH_MODEL_PATH}.llama.LlamaForCausalLM',
    'DeepseekV3ForCausalLM': f'{LMDEPLOY_PYTORCH_MODEL_PATH}.deepseek_v2.DeepseekV2ForCausalLM',
    'KimiK25ForConditionalGeneration': f'{LMDEPLOY_PYTORCH_MODEL_PATH}.kimi_k25.KimiK25ForConditionalGeneration',
    'Qwen3ForCausalLM': f'{LMDEPLOY_PYTORCH_MODEL_PATH}.qwen3.Qwen3ForCausalLM',
})
MODULE_MAP.update({'Eagle3LlamaForCausalLM': f'{LMDEPLOY_PYTORCH_MODEL_PATH}.llama_eagle3.Eagle3LlamaForCausalLM'})
MODULE_MAP.update({'DeepseekMTPModel': f'{LMDEPLOY_PYTORCH_MODEL_PATH}.deepseek_mtp.DeepseekMTPModel'})
MODULE_MAP.update({'DFlashDraftModel': f'{LMDEPLOY_PYTORCH_MODEL_PATH}.qwen3_dflash.DFlashDraftModel'})
'''

BUILDER = '''
class AutoModelConfigBuilder:

    @classmethod
    def condition(cls, hf_config):
        raise NotImplementedError('not implemented.')
'''

LLAMA = '''
from .builder import AutoModelConfigBuilder


class LlamaModelConfigBuilder(AutoModelConfigBuilder):

    @classmethod
    def condition(cls, hf_config):
        return hf_config.architectures[0] in ['LlamaForCausalLM']

    @classmethod
    def build(cls, hf_config, model_path=None, is_draft_model=False, spec_method=None, **kwargs):
        cfg = DefaultModelConfigBuilder.build(hf_config, model_path, **kwargs)
        if is_draft_model:
            assert spec_method is not None
            hf_config.architectures[0] = spec_method.capitalize() + hf_config.architectures[0]
        elif spec_method is not None:
            if spec_method == 'eagle3':
                num_layers = cfg.num_layers
                hf_config.aux_hidden_state_layers = (2, num_layers // 2, num_layers - 3)
        return cfg
'''

DEEPSEEK = '''
class DeepseekV2ModelConfigBuilder(AutoModelConfigBuilder):

    @classmethod
    def condition(cls, hf_config):
        return hf_config.model_type in ['deepseek_v3', 'deepseek_v2']

    @classmethod
    def build(cls, hf_config, model_path=None, is_draft_model=False, spec_method=None, **kwargs):
        if spec_method is not None:
            assert spec_method == 'deepseek_mtp'
        if is_draft_model:
            hf_config.architectures[0] = 'DeepseekMTPModel'
        return cfg
'''

KIMI = '''
_EAGLE3_DEEPSEEK_ARCH = 'Eagle3DeepseekV2ForCausalLM'


class KimiK2ModelConfigBuilder(DeepseekV2ModelConfigBuilder):

    @classmethod
    def condition(cls, hf_config):
        return getattr(hf_config, 'model_type', None) == 'kimi_k2'

    @classmethod
    def build(cls, hf_config, model_path=None, is_draft_model=False, spec_method=None, **kwargs):
        supported_spec_methods = {'deepseek_mtp', 'eagle3'}
        if spec_method is not None and spec_method not in supported_spec_methods:
            raise ValueError(f'Unsupported speculative method for Kimi-K2: {spec_method}')
        if spec_method != 'eagle3':
            return super().build(hf_config, model_path, is_draft_model=is_draft_model, spec_method=spec_method)
        cfg = super().build(hf_config, model_path, is_draft_model=False, spec_method=None)
        if is_draft_model:
            architectures = getattr(hf_config, 'architectures', None) or []
            if not architectures or architectures[0] != _EAGLE3_DEEPSEEK_ARCH:
                raise ValueError(f'Kimi-K2 EAGLE3 draft config must use architecture {_EAGLE3_DEEPSEEK_ARCH}.')
        else:
            hf_config.aux_hidden_state_layers = (2, cfg.num_layers // 2, cfg.num_layers - 3)
        return cfg


class KimiK25ModelConfigBuilder(AutoModelConfigBuilder):

    @classmethod
    def condition(cls, hf_config):
        return getattr(hf_config, 'model_type', None) == 'kimi_k25'

    @classmethod
    def build(cls, hf_config, model_path=None, **kwargs):
        return KimiK2ModelConfigBuilder.build(hf_config.text_config, model_path, **kwargs)
'''

LLAMA_MODEL = '''
class LlamaModel(nn.Module):

    def __init__(self, config):
        self.aux_hidden_state_layers = getattr(config, 'aux_hidden_state_layers', tuple())


class LlamaForCausalLM(nn.Module):
    pass
'''

KIMI_LANGUAGE = '''
class KimiK2ForCausalLM(nn.Module):

    def __init__(self, config):
        self.aux_hidden_state_layers = tuple(getattr(config, 'aux_hidden_state_layers', ()) or ())
'''

KIMI_K25 = '''
from .kimi_k2_language import KimiK2ForCausalLM


class KimiK25ForConditionalGeneration(nn.Module):
    pass
'''

KIMI_EAGLE3 = '''
def _get_eagle_aux_layer_ids(config):
    eagle_config = getattr(config, 'eagle_config', None)
    return eagle_config.get('eagle_aux_hidden_state_layer_ids')


class Eagle3DeepseekV2ForCausalLM(nn.Module):

    def forward(self, target_hidden_states=None):
        pass
'''

QWEN3 = '''
class Qwen3Model(nn.Module):

    def __init__(self, config):
        self.aux_hidden_state_layers = get_build_model_context().spec_model_ctx.target_aux_hidden_state_layers


class Qwen3ForCausalLM(nn.Module):
    pass
'''

DFLASH = '''
class DFlashDraftModel(nn.Module):

    def __init__(self, config):
        self.target_layer_ids = build_ctx.spec_model_ctx.target_aux_hidden_state_layers
        self.mask = build_ctx.spec_model_ctx.speculative_mask_token_id
'''

EAGLE3_DRAFT = '''
class Eagle3LlamaForCausalLM(nn.Module):

    def forward(self, target_hidden_states=None):
        pass
'''

PROPOSERS = '''
@SPEC_PROPOSERS.register_module(name='eagle')
class Eagle(BaseSpecProposer):
    pass


@SPEC_PROPOSERS.register_module(name='eagle3')
class Eagle3(Eagle):
    pass


@SPEC_PROPOSERS.register_module(name='deepseek_mtp')
class DeepseekMTP(BaseSpecProposer):
    pass
'''

MODELS, CONFIGS = "lmdeploy/pytorch/models", "lmdeploy/pytorch/configurations"


def release(tmp_path, kimi_map: bool = True):
    module_map = MODULE_MAP + ("MODULE_MAP.update({'Eagle3DeepseekV2ForCausalLM': "
                               "f'{LMDEPLOY_PYTORCH_MODEL_PATH}.kimi_k25_eagle3.Eagle3DeepseekV2ForCausalLM'})\n"
                               if kimi_map else "")
    return probe_trees.write_tree(tmp_path, "lmdeploy", {
        f"{MODELS}/module_map.py": module_map, f"{MODELS}/llama.py": LLAMA_MODEL, f"{MODELS}/qwen3.py": QWEN3,
        f"{MODELS}/kimi_k2_language.py": KIMI_LANGUAGE, f"{MODELS}/kimi_k25.py": KIMI_K25,
        f"{MODELS}/kimi_k25_eagle3.py": KIMI_EAGLE3, f"{MODELS}/qwen3_dflash.py": DFLASH,
        f"{MODELS}/llama_eagle3.py": EAGLE3_DRAFT, f"{MODELS}/deepseek_mtp.py": "class DeepseekMTPModel:\n    pass\n",
        f"{MODELS}/deepseek_v2.py": "class DeepseekV2ForCausalLM:\n    pass\n",
        f"{CONFIGS}/builder.py": BUILDER, f"{CONFIGS}/llama.py": LLAMA, f"{CONFIGS}/deepseek_v2.py": DEEPSEEK,
        f"{CONFIGS}/kimi_k2.py": KIMI, "lmdeploy/pytorch/spec_decode/proposers/all.py": PROPOSERS,
    }, strip_first_newline=True)


def test_draft_classes_and_what_each_is_built_from(tmp_path):
    drafts = {d["architecture"]: d for d in draft_models(release(tmp_path))}
    assert set(drafts) == {"Eagle3LlamaForCausalLM", "DeepseekMTPModel", "Eagle3DeepseekV2ForCausalLM", "DFlashDraftModel"}
    eagle3 = drafts["Eagle3LlamaForCausalLM"]
    assert eagle3["location"] == f"{MODELS}/llama_eagle3.py:1"
    assert eagle3["built_from"] == [{"how": "renamed from LlamaForCausalLM", "builder": "LlamaModelConfigBuilder",
                                     "location": f"{CONFIGS}/llama.py:{line(LLAMA, 'capitalize()')}",
                                     "draft_architectures": ["LlamaForCausalLM"], "draft_model_types": [],
                                     "methods": ["eagle3"]}]
    mtp = drafts["DeepseekMTPModel"]["built_from"][0]
    assert (mtp["how"], mtp["draft_model_types"], mtp["methods"]) == ("set by the builder", ["deepseek_v3", "deepseek_v2"],
                                                                     ["deepseek_mtp"])
    kimi = drafts["Eagle3DeepseekV2ForCausalLM"]["built_from"][0]  # the constant resolved, the methods its set admits
    assert kimi["how"] == "the draft's own architecture, required by the builder" and kimi["methods"] == ["deepseek_mtp", "eagle3"]
    assert drafts["DFlashDraftModel"]["built_from"][0]["builder"] is None  # no builder: its own architecture


def test_a_required_draft_the_map_lacks_is_said(tmp_path):
    drafts = {d["architecture"]: d for d in draft_models(release(tmp_path, kimi_map=False))}
    assert drafts["Eagle3DeepseekV2ForCausalLM"]["in_module_map"] is False and drafts["Eagle3DeepseekV2ForCausalLM"]["class"] is None


def test_the_rename_and_the_names_it_makes(tmp_path):
    fact = drafter_architecture_rename(release(tmp_path))
    rule = fact["rules"][0]
    assert rule["applies_to"] == ["LlamaForCausalLM"] and rule["expression"] == "spec_method.capitalize() + hf_config.architectures[0]"
    assert rule["produces"]["eagle3:LlamaForCausalLM"] == {"architecture": "Eagle3LlamaForCausalLM", "in_module_map": True}
    assert rule["produces"]["eagle:LlamaForCausalLM"] == {"architecture": "EagleLlamaForCausalLM", "in_module_map": False}
    assert rule["produces"]["deepseek_mtp:LlamaForCausalLM"]["architecture"] == "Deepseek_mtpLlamaForCausalLM"


def test_eagle3_targets_capture_what_their_builder_sets(tmp_path):
    targets = {t["class"]: t for t in eagle3_targets(release(tmp_path))}
    assert set(targets) == {"LlamaForCausalLM", "KimiK25ForConditionalGeneration"}  # Qwen3 captures DFlash's ids only
    llama = targets["LlamaForCausalLM"]
    assert llama["capture_location"] == f"{MODELS}/llama.py:{line(LLAMA_MODEL, 'getattr(config')}"
    assert llama["admitted_when"] == "architectures[0] in ['LlamaForCausalLM']" and llama["accepts_layer_ids"] is False
    assert llama["layers_set_by"][0]["when"] == "not (is_draft_model) and spec_method is not None and spec_method == 'eagle3'"
    kimi = targets["KimiK25ForConditionalGeneration"]  # captures through the language model it imports
    assert kimi["capture_location"].startswith(f"{MODELS}/kimi_k2_language.py:")
    assert kimi["admitted_when"] == "model_type in ['kimi_k2', 'kimi_k25']"  # Kimi-K2.5's builder hands its text config on


def test_layer_ids_are_the_builders_default_never_the_drafters(tmp_path):
    fact = aux_layer_ids(release(tmp_path))
    assert fact["read_from_config"] is False and fact["default"] == "(2, n // 2, n - 3)"
    assert evaluate_default(fact["default"], 32) == [2, 16, 29]
    assert {d["builder"] for d in fact["defaults"]} == {"LlamaModelConfigBuilder", "KimiK2ModelConfigBuilder"}
    assert fact["drafter_reads"] == [{"key": "eagle_aux_hidden_state_layer_ids", "read_by": "lmdeploy.pytorch.models.kimi_k25_eagle3",
                                      "location": f"{MODELS}/kimi_k25_eagle3.py:{line(KIMI_EAGLE3, 'eagle_config.get')}"}]


def test_target_gates_per_builder(tmp_path):
    fact = target_gates(release(tmp_path))
    gates = {b["builder"]: b for b in fact["builders"]}
    assert gates["DeepseekV2ModelConfigBuilder"]["methods"] == ["deepseek_mtp"]
    assert gates["KimiK2ModelConfigBuilder"]["methods"] == ["deepseek_mtp", "eagle3"]
    assert gates["LlamaModelConfigBuilder"]["methods"] is None and len(gates["LlamaModelConfigBuilder"]["eagle3_layers"]) == 1
    assert "KimiK25ModelConfigBuilder" not in gates  # it checks nothing itself: it delegates
    assert [t["class"] for t in fact["dflash_targets"]] == ["Qwen3ForCausalLM"]  # the DFlash draft is not a target
