"""The `eagle3_targets`, `eagle3_drafters` and `eagle3_drafter_classes` probes on fake model trees."""


from compat.probes.vllm.eagle3_drafter_classes import eagle3_drafter_classes
from compat.probes.vllm.eagle3_drafters import eagle3_drafters
from compat.probes.vllm.eagle3_targets import eagle3_targets
from probe_trees import write_tree

MODELS = "vllm/model_executor/models"


def make_tree(tmp_path, files):
    return write_tree(tmp_path, "vllm", files)


INTERFACES = """
    from typing import Protocol, runtime_checkable

    @runtime_checkable
    class SupportsEagle3(Protocol):
        def set_aux_hidden_state_layers(self, layers): ...
"""

REGISTRY = """
    _TEXT_GENERATION_MODELS = {
        "DeepseekV2ForCausalLM": ("deepseek_v2", "DeepseekV2ForCausalLM"),
        "DeepseekV3ForCausalLM": ("deepseek_v2", "DeepseekV3ForCausalLM"),
        "DeepseekV32ForCausalLM": ("vllm.models.deepseek_v32", "DeepseekV32ForCausalLM"),
        "GemmaForCausalLM": ("gemma", "GemmaForCausalLM"),
    }
    _MULTIMODAL_MODELS = {
        "KimiK25ForConditionalGeneration": ("kimi_k25", "KimiK25ForConditionalGeneration"),
    }
    _EMBEDDING_MODELS = {
        "DeepseekV2Model": ("deepseek_v2", "DeepseekV2ForCausalLM"),
    }
    _SPECULATIVE_DECODING_MODELS = {
        "EagleLlamaForCausalLM": ("llama_eagle", "EagleLlamaForCausalLM"),
        "Eagle3LlamaForCausalLM": ("llama_eagle3", "Eagle3LlamaForCausalLM"),
        "LlamaForCausalLMEagle3": ("llama_eagle3", "Eagle3LlamaForCausalLM"),
        "Eagle3DeepseekV3ForCausalLM": ("deepseek_eagle3", "Eagle3DeepseekV2ForCausalLM"),
        "DeepSeekMTPModel": ("deepseek_mtp", "DeepSeekMTP"),
    }
"""


def deepseek_tree(tmp_path):
    return make_tree(tmp_path, {
        f"{MODELS}/interfaces.py": INTERFACES,
        f"{MODELS}/registry.py": REGISTRY,
        f"{MODELS}/deepseek_v2.py": """
            from torch import nn
            from .interfaces import SupportsEagle3, SupportsPP

            class DeepseekV2Model(nn.Module):
                pass

            class DeepseekV2ForCausalLM(
                nn.Module,
                SupportsPP,
                SupportsEagle3,
            ):
                pass

            class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):
                pass
        """,
        # 0.24+ layout: a package under vllm/models/ whose class inherits across folders.
        "vllm/models/deepseek_v32/__init__.py": "from .nvidia.model import DeepseekV32ForCausalLM\n",
        "vllm/models/deepseek_v32/nvidia/model.py": """
            from vllm.model_executor.models.deepseek_v2 import DeepseekV3ForCausalLM

            class DeepseekV32ForCausalLM(DeepseekV3ForCausalLM):
                pass
        """,
        f"{MODELS}/kimi_k25.py": """
            class KimiK25ForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsEagle3):
                def set_aux_hidden_state_layers(self, layers):
                    self.language_model.set_aux_hidden_state_layers(layers)
        """,
        # Syntax newer than this Python (PEP 695): headers are still read without parsing the file.
        f"{MODELS}/gemma.py": """
            def first[T](items: list[T]) -> T:
                return items[0]

            class GemmaForCausalLM(nn.Module, SupportsEagle3):
                pass
        """,
        f"{MODELS}/llama_eagle3.py": """
            class Eagle3LlamaForCausalLM(LlamaForCausalLM):
                pass
        """,
        f"{MODELS}/deepseek_eagle3.py": """
            class Eagle3DeepseekV2ForCausalLM(DeepseekV2ForCausalLM):
                pass

            Eagle3DeepseekV3ForCausalLM = Eagle3DeepseekV2ForCausalLM
        """,
        f"{MODELS}/unrelated.py": """
            class OtherForCausalLM(nn.Module):
                pass
        """,
    })


def by_class(targets):
    return {(t["class"], t["location"].split(":")[0]): t for t in targets}


def test_interface_inherited_across_files_and_mapped_to_registered_names(tmp_path):
    targets = by_class(eagle3_targets(deepseek_tree(tmp_path)))
    v2 = targets[("DeepseekV2ForCausalLM", f"{MODELS}/deepseek_v2.py")]
    assert v2["location"] == f"{MODELS}/deepseek_v2.py:8"
    assert v2["interface"] == "SupportsEagle3" and v2["inherits_from"] is None
    assert v2["architectures"] == ["DeepseekV2ForCausalLM"]  # the pooling table is not a target table
    assert v2["layer_id_offset"] == 0 and v2["role"] == "target"
    v3 = targets[("DeepseekV3ForCausalLM", f"{MODELS}/deepseek_v2.py")]
    assert v3["inherits_from"] == "DeepseekV2ForCausalLM" and v3["architectures"] == ["DeepseekV3ForCausalLM"]
    v32 = targets[("DeepseekV32ForCausalLM", "vllm/models/deepseek_v32/nvidia/model.py")]
    assert v32["inherits_from"] == "DeepseekV3ForCausalLM"
    assert v32["architectures"] == ["DeepseekV32ForCausalLM"]  # module "vllm.models.deepseek_v32" is the package


def test_multimodal_wrapper_and_drafter_subclasses(tmp_path):
    targets = by_class(eagle3_targets(deepseek_tree(tmp_path)))
    kimi = targets[("KimiK25ForConditionalGeneration", f"{MODELS}/kimi_k25.py")]
    assert kimi["architectures"] == ["KimiK25ForConditionalGeneration"]
    drafter = targets[("Eagle3DeepseekV2ForCausalLM", f"{MODELS}/deepseek_eagle3.py")]
    assert drafter["architectures"] == [] and drafter["role"] == "drafter"
    names = {name for name, _ in targets}
    assert "OtherForCausalLM" not in names and "SupportsEagle3" not in names and "DeepseekV2Model" not in names
    # Eagle3LlamaForCausalLM's base is not an implementer in this tree.
    assert "Eagle3LlamaForCausalLM" not in names


def test_file_with_newer_syntax_does_not_hide_its_classes(tmp_path):
    targets = by_class(eagle3_targets(deepseek_tree(tmp_path)))
    gemma = targets[("GemmaForCausalLM", f"{MODELS}/gemma.py")]
    assert gemma["location"] == f"{MODELS}/gemma.py:5"
    assert gemma["architectures"] == ["GemmaForCausalLM"]


def test_before_the_protocol_a_class_with_the_hook_methods_qualifies(tmp_path):
    tree = make_tree(tmp_path, {
        f"{MODELS}/registry.py": """
            _TEXT_GENERATION_MODELS = {
                "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
                "MistralForCausalLM": ("llama", "LlamaForCausalLM"),
                "PhiForCausalLM": ("phi3", "Phi3ForCausalLM"),
            }
        """,
        f"{MODELS}/llama.py": """
            class LlamaModel(nn.Module):
                def forward(self, x):
                    return x

            class LlamaForCausalLM(nn.Module, SupportsPP):
                def set_aux_hidden_state_layers(self, layers):
                    self.model.aux_hidden_state_layers = layers

                def get_eagle3_aux_hidden_state_layers(self):
                    return (2, 3, 4)
        """,
        f"{MODELS}/phi3.py": "class Phi3ForCausalLM(LlamaForCausalLM):\n    pass\n",
    })
    targets = by_class(eagle3_targets(tree))
    llama = targets[("LlamaForCausalLM", f"{MODELS}/llama.py")]
    assert llama["interface"] == "methods"
    assert llama["architectures"] == ["LlamaForCausalLM", "MistralForCausalLM"]
    phi = targets[("Phi3ForCausalLM", f"{MODELS}/phi3.py")]
    assert phi["interface"] == "methods" and phi["architectures"] == ["PhiForCausalLM"]
    assert ("LlamaModel", f"{MODELS}/llama.py") not in targets


def test_no_model_folders_means_no_targets(tmp_path):
    assert eagle3_targets(make_tree(tmp_path, {})) == []


def test_eagle3_drafters_from_the_speculative_table(tmp_path):
    tree = deepseek_tree(tmp_path)
    assert eagle3_drafters(tree) == ["Eagle3LlamaForCausalLM", "LlamaForCausalLMEagle3", "Eagle3DeepseekV3ForCausalLM"]
    classes = {c["architecture"]: c for c in eagle3_drafter_classes(tree)}
    assert classes["LlamaForCausalLMEagle3"] == {
        "architecture": "LlamaForCausalLMEagle3",
        "module": "llama_eagle3",
        "class": "Eagle3LlamaForCausalLM",
        "registered": f"{MODELS}/registry.py:17",
        "location": f"{MODELS}/llama_eagle3.py:2",
    }
    assert classes["Eagle3DeepseekV3ForCausalLM"]["location"] == f"{MODELS}/deepseek_eagle3.py:2"
