"""The vLLM `method_autodetection` probe: the if/elif chain that guesses the method from the draft
path, in the 0.10.0 shape (the "eagle3-" trap), the 0.10.2+ shape, a moved and renamed variant."""

from compat.probes.vllm.method_autodetection import detect_method, method_autodetection
from probe_trees import line, write_tree

CHAIN_0100 = '''
class SpeculativeConfig:
    method: str = None

    def __post_init__(self):
        if self.method in ("eagle", "eagle3"):
            pass
        elif "eagle-" in self.draft_model_config.model.lower() or "eagle3-" in self.draft_model_config.model.lower():
            self.method = "eagle"  # marker: trap
        elif self.draft_model_config.hf_config.model_type == "medusa":
            self.method = "medusa"
        elif self.draft_model_config.hf_config.model_type in ("deepseek_mtp", "mimo_mtp"):
            self.method = "deepseek_mtp"
        else:
            self.method = "draft_model"
            raise NotImplementedError("draft model")
'''

CHAIN_MOVED = '''
MTPModelTypes = Literal["deepseek_mtp", "mtp"]


class SpeculativeConfig:
    method: str = None

    def _resolve(self):
        if self.method is None:
            if self.model in ("ngram", "[ngram]"):
                self.method = "ngram"
            else:
                self.method = "draft_model"
        if self.method in ("eagle", "eagle3", "dflash"):
            pass
        elif "eagle-" in self.draft_model_config.model.lower():
            self.method = "eagle"
        elif "eagle3" in self.draft_model_config.model.lower():
            self.method = "eagle3"
        elif "DFlashModel" in self.draft_model_config.architectures:
            self.method = "dflash"
        elif self.draft_model_config.hf_config.model_type in get_args(MTPModelTypes):
            self.method = "mtp"
        elif self.method == "draft_model":
            pass
        else:
            raise NotImplementedError(self.method)
'''


def test_before_0102_an_eagle3_path_runs_as_eagle(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/config.py": CHAIN_0100}, strip_first_newline=True)
    fact = method_autodetection(tree)
    assert fact["explicit_methods"] == ["eagle", "eagle3"] and fact["method_none"] is None
    trap = fact["branches"][0]
    assert trap["when"] == {"any": [{"path_contains": "eagle-"}, {"path_contains": "eagle3-"}]} and trap["sets"] == "eagle"
    assert trap["location"] == f"vllm/config.py:{line(CHAIN_0100, 'marker: trap') - 1}"
    assert fact["branches"][2]["when"] == {"model_type": ["deepseek_mtp", "mimo_mtp"]}
    assert fact["otherwise"] == {"sets": "draft_model", "raises": "NotImplementedError", "location": fact["otherwise"]["location"]}
    assert fact["samples"]["yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"] == "eagle"
    assert detect_method(fact, None, "x/medusa-head", "medusa")["method"] == "medusa"
    assert detect_method(fact, "eagle3", "x/eagle3-head")["method"] == "eagle3"  # an explicit method is kept


def test_a_moved_chain_with_the_method_none_preset(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/config/speculative.py": CHAIN_MOVED}, strip_first_newline=True)
    fact = method_autodetection(tree)
    assert fact["function"] == "SpeculativeConfig._resolve"
    assert fact["method_none"]["sets"] == ["ngram", "draft_model"]
    assert fact["explicit_methods"] == ["eagle", "eagle3", "dflash"]
    assert fact["samples"] == {"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B": "eagle3", "AngelSlim/Qwen3-8B_eagle3": "eagle3",
                               "yuhuili/EAGLE-LLaMA3-Instruct-8B": "eagle", "lightseekorg/kimi-k2.5-eagle3": "eagle3"}
    assert {"model_type": ["deepseek_mtp", "mtp"]} in [b["when"] for b in fact["branches"]]  # Literal alias followed
    assert detect_method(fact, None, "/m/drafter", architectures=["DFlashModel"])["method"] == "dflash"
    assert detect_method(fact, None, "/m/drafter")["method"] == "draft_model"


def test_no_detection_chain(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/config.py": "class SpeculativeConfig:\n    method: str = None\n"})
    fact = method_autodetection(tree)
    assert fact["present"] is False and fact["location"] == "vllm/config.py:1"
    nothing = method_autodetection(write_tree(tmp_path / "none", "vllm", {}))
    assert nothing == {"present": False, "reason": "no class SpeculativeConfig in vllm/"}
