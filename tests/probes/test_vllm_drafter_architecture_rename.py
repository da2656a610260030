"""The vLLM `drafter_architecture_rename` probe: EAGLEConfig's per-method rename (both spellings of
the keep test, a moved file) and SpeculativeConfig.hf_config_override's MTP rewrites."""

from compat.probes.vllm.drafter_architecture_rename import drafter_architecture_rename, eagle_architecture, mtp_rewrite
from probe_trees import line, write_tree

EAGLE_0100 = '''
class EAGLEConfig(PretrainedConfig):
    def __init__(self, model=None, method="eagle", **kwargs):
        if method == "eagle":
            kwargs["architectures"] = [
                f"Eagle{arch}" if not arch.startswith("Eagle") else arch for arch in self.model.architectures
            ]
        elif method == "eagle3":
            kwargs["architectures"] = [
                f"Eagle3{arch}" if not arch.startswith("Eagle3") else arch for arch in self.model.architectures  # marker
            ]
        else:
            raise ValueError(method)
'''

EAGLE_MOVED = '''
class EAGLEConfig(PretrainedConfig):
    def __init__(self, model=None, method="eagle", **kwargs):
        if method == "eagle3":
            kwargs["architectures"] = [
                name if name.startswith("Eagle3") or name.endswith("Eagle3") else "Eagle3" + name
                for name in self.model.architectures
            ]
        elif method == "dflash":
            kwargs["architectures"] = [
                name if name.startswith("DFlash") or name == "Special" else f"DFlash{name}" for name in self.model.architectures
            ]
'''

SPEC = '''
class SpeculativeConfig:
    method: str = None

    @staticmethod
    def hf_config_override(hf_config):
        initial_architecture = hf_config.architectures[0]
        if hf_config.model_type in ("deepseek_v3", "deepseek_v32"):  # marker: deepseek
            hf_config.model_type = "deepseek_mtp"
        if hf_config.model_type == "deepseek_mtp":
            hf_config.update({"n_predict": 1, "architectures": ["DeepSeekMTPModel"]})
        if hf_config.model_type in ("pangu_ultra_moe"):
            hf_config.model_type = "pangu_ultra_moe_mtp"
        if hf_config.model_type == "nemotron_h" and hf_config.num_nextn_predict_layers > 0:
            hf_config.model_type = "nemotron_h_mtp"
        if hf_config.architectures[0] == "MiMoForCausalLM":
            hf_config.model_type = "mimo_mtp"
            hf_config.update({"architectures": ["MiMoMTPModel"]})
        if initial_architecture == "MistralLarge3ForCausalLM":
            hf_config.update({"architectures": ["EagleMistralLarge3ForCausalLM"]})
        return hf_config

    def __post_init__(self):
        self.draft_model_config = ModelConfig(hf_overrides=SpeculativeConfig.hf_config_override)  # marker: used
'''


def test_eagle3_names_are_prefixed_unless_they_start_with_eagle3(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/transformers_utils/configs/eagle.py": EAGLE_0100}, strip_first_newline=True)
    fact = drafter_architecture_rename(tree)
    rule = fact["eagle_config"]["methods"]["eagle3"]
    assert rule == {"keep_if": {"startswith": "Eagle3"}, "prefix": "Eagle3",
                    "location": f"vllm/transformers_utils/configs/eagle.py:{line(EAGLE_0100, 'marker') - 1}"}
    assert eagle_architecture(fact, "eagle3", "LlamaForCausalLMEagle3") == "Eagle3LlamaForCausalLMEagle3"
    assert eagle_architecture(fact, "eagle", "LlamaForCausalLM") == "EagleLlamaForCausalLM"
    assert eagle_architecture(fact, "dflash", "X") is None  # no rule for it in this release
    assert fact["mtp_override"] is None


def test_a_moved_eagle_config_keeping_names_that_start_or_end_with_eagle3(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/transformers_utils/eagle_configs.py": EAGLE_MOVED}, strip_first_newline=True)
    fact = drafter_architecture_rename(tree)
    assert fact["eagle_config"]["location"].startswith("vllm/transformers_utils/eagle_configs.py:")
    assert fact["eagle_config"]["methods"]["eagle3"]["keep_if"] == {"any": [{"startswith": "Eagle3"}, {"endswith": "Eagle3"}]}
    assert eagle_architecture(fact, "eagle3", "LlamaForCausalLMEagle3") == "LlamaForCausalLMEagle3"
    assert eagle_architecture(fact, "eagle3", "DeepseekV3ForCausalLM") == "Eagle3DeepseekV3ForCausalLM"
    assert eagle_architecture(fact, "dflash", "Special") == "Special"


def test_hf_config_override_rules_replayed(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/config/speculative.py": SPEC}, strip_first_newline=True)
    fact = drafter_architecture_rename(tree)
    mtp = fact["mtp_override"]
    assert mtp["function"] == "SpeculativeConfig.hf_config_override"
    assert mtp["used_at"] == [f"vllm/config/speculative.py:{line(SPEC, 'marker: used')}"]
    first = mtp["rules"][0]
    assert first["trigger"] == {"field": "model_type", "values": ["deepseek_v3", "deepseek_v32"], "match": "equals"}
    assert first["location"] == f"vllm/config/speculative.py:{line(SPEC, 'marker: deepseek')}"
    assert mtp["rules"][2]["trigger"]["match"] == "substring_of"  # `in ("pangu_ultra_moe")` is a string
    assert mtp["model_types"]["deepseek_v3"] == {"model_type": "deepseek_mtp", "architectures": ["DeepSeekMTPModel"],
                                                 "conditional": False, "location": first["location"]}
    assert mtp["model_types"]["nemotron_h"]["conditional"] is True  # also needs num_nextn_predict_layers > 0
    assert mtp["architectures"]["MiMoForCausalLM"]["architectures"] == ["MiMoMTPModel"]
    assert mtp["architectures"]["MistralLarge3ForCausalLM"]["architectures"] == ["EagleMistralLarge3ForCausalLM"]
    assert mtp_rewrite(fact, "kimi_k2", "DeepseekV3ForCausalLM") is None
    assert mtp_rewrite(fact, "pangu", "X")["model_type"] == "pangu_ultra_moe_mtp"  # the substring trap, as the code has it


def test_nothing_to_read(tmp_path):
    tree = write_tree(tmp_path, "vllm", {})
    fact = drafter_architecture_rename(tree)
    assert fact["present"] is False and fact["eagle_config"] is None and fact["mtp_override"] is None
    assert "EAGLEConfig" in fact["reason"]
