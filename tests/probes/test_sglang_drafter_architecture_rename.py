"""The SGLang `drafter_architecture_rename` probe: ModelConfig's NextN rewrites of draft
architectures, inline in __init__ (0.4.x shape) and in a method with a list constant and a
nested choice (0.5.x shape)."""

from compat.probes.sglang.drafter_architecture_rename import drafter_architecture_rename
from probe_trees import line, write_tree

HOME = "sglang/srt/configs/model_config.py"

INIT = '''
class ModelConfig:
    def __init__(self, model_path, is_draft_model=False):
        if (
            is_draft_model
            and self.hf_config.architectures[0] == "DeepseekV3ForCausalLM"
        ):
            self.hf_config.architectures[0] = "DeepseekV3ForCausalLMNextN"
        if is_draft_model and self.hf_config.architectures[0] == "MiMoForCausalLM":
            self.hf_config.architectures[0] = "MiMoMTP"
'''

METHOD = '''
MIMO_ARCHS = ["MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM"]


class ModelConfig:
    def _config_draft_model(self):
        is_draft_model = self.is_draft_model
        if is_draft_model and self.hf_config.architectures[0] in ["DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM"]:
            self.hf_config.architectures[0] = "DeepseekV3ForCausalLMNextN"
        if is_draft_model and self.hf_config.architectures[0] in MIMO_ARCHS:
            self.hf_config.architectures[0] = "MiMoV2MTP"
        if is_draft_model and self.hf_config.architectures[0] == "DeepseekV4ForCausalLM":  # marker: v4
            if self.speculative_algorithm == "DSPARK":
                self.hf_config.architectures[0] = "DeepseekV4ForCausalLMDSpark"
            else:
                self.hf_config.architectures[0] = "DeepseekV4ForCausalLMNextN"
        if is_draft_model and self.speculative_algorithm == "X" and self.hf_config.architectures[0] == "Step":
            self.hf_config.architectures = ["StepMTP"]
        if is_draft_model and isinstance(self.hf_text_config, SomeConfig):
            self.hf_config.architectures[0] = self.hf_text_config.configure_draft_model()
'''


def test_inline_rewrites_in_init(tmp_path):
    tree = write_tree(tmp_path, "sglang", {HOME: INIT}, strip_first_newline=True)
    fact = drafter_architecture_rename(tree)
    assert fact["function"] == "ModelConfig.__init__" and fact["eagle3_rename"] is None
    assert fact["architectures"] == {
        "DeepseekV3ForCausalLM": {"to": ["DeepseekV3ForCausalLMNextN"], "conditional": False, "location": f"{HOME}:3"},
        "MiMoForCausalLM": {"to": ["MiMoMTP"], "conditional": False, "location": f"{HOME}:{line(INIT, 'MiMoForCausalLM')}"},
    }


def test_a_method_with_a_list_constant_and_a_nested_choice(tmp_path):
    tree = write_tree(tmp_path, "sglang", {HOME: METHOD}, strip_first_newline=True)
    fact = drafter_architecture_rename(tree)
    archs = fact["architectures"]
    assert fact["function"] == "ModelConfig._config_draft_model"
    assert archs["DeepseekV32ForCausalLM"]["to"] == ["DeepseekV3ForCausalLMNextN"]
    assert archs["MiMoV2FlashForCausalLM"]["to"] == ["MiMoV2MTP"]  # MIMO_ARCHS followed to its list
    assert archs["DeepseekV4ForCausalLM"] == {"to": ["DeepseekV4ForCausalLMDSpark", "DeepseekV4ForCausalLMNextN"],
                                              "conditional": True, "location": f"{HOME}:{line(METHOD, 'marker: v4')}"}
    step = next(r for r in fact["rules"] if r["architectures"] == ["Step"])
    assert step["extra_condition"] == "self.speculative_algorithm == 'X'" and step["to"] == ["StepMTP"]
    assert "SomeConfig" not in str(fact["rules"])  # no architecture test: not a rename rule


def test_no_model_config(tmp_path):
    fact = drafter_architecture_rename(write_tree(tmp_path, "sglang", {}))
    assert fact == {"present": False, "reason": "no class ModelConfig under sglang/srt/configs", "rules": [], "architectures": {}}
    tree = write_tree(tmp_path / "empty", "sglang", {HOME: "class ModelConfig:\n    pass\n"})
    empty = drafter_architecture_rename(tree)
    assert empty["present"] is True and empty["rules"] == [] and empty["location"] == f"{HOME}:1"
