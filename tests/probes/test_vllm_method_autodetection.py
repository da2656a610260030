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


# The 0.34.0 shape: SpeculativeConfig presets only a missing or ngram model; a registry of speculator configs
# detects the method from the checkpoint, each class answering `matches` (one inherited here, the table's
# values built by a helper), in the order of a module-level tuple. Names and folders differ from vLLM's.
REGISTRY_CONFIG = '''
class SpeculativeConfig:
    method: str = None

    def __post_init__(self):
        if self.method is None and self.model in ("ngram", "[ngram]"):
            self.method = "ngram"
        elif self.method is None and self.model is None:
            self.method = "draft_model"
'''
REGISTRY_TABLE = '''
def _qual(module, name):
    return f"vllm.spec.{module}.{name}"


_BY_METHOD = {"draft_model": "vllm.spec.base.DraftConfig", "eagle": _qual("eagle", "EagleConfig"),
              "eagle3": _qual("eagle", "Eagle3Config"), "eagle3_alias": _qual("eagle", "Eagle3AliasConfig")}
_ORDER = ("eagle", "eagle3", "eagle3_alias")


def _method_class(spec):
    method = spec.method
    if method is None:
        method = "draft_model"
    return method


def _pick(spec, configured):
    declared_cls = getattr(spec.draft_model_config, "speculator_config_class", None)
    if declared_cls is not None:
        return declared_cls
    for method in _ORDER:
        cls = load(_BY_METHOD[method])
        if cls.matches(spec):
            return cls
    return configured  # marker: otherwise
'''
REGISTRY_CLASSES = '''
class EagleConfig:
    @classmethod
    def matches(cls, spec):
        return "eagle-" in spec.draft_model_config.model.lower()


class Eagle3Config(EagleConfig):
    @classmethod
    def matches(cls, spec):
        return "eagle3" in spec.draft_model_config.model.lower()  # marker: eagle3


class Eagle3AliasConfig(Eagle3Config):
    pass
'''


def test_the_034_registry_shape_is_read_into_the_same_fact(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/config/speculative.py": REGISTRY_CONFIG,
                                         "vllm/spec/table.py": REGISTRY_TABLE, "vllm/spec/eagle.py": REGISTRY_CLASSES},
                      strip_first_newline=True)
    fact = method_autodetection(tree)
    assert fact["present"] and fact["function"] == "_pick" and fact["method_none"] is None
    assert fact["explicit_methods"] == ["draft_model", "eagle", "eagle3", "eagle3_alias"]
    assert [b["sets"] for b in fact["branches"]] == ["eagle", "eagle3", "eagle3_alias"]
    assert fact["branches"][1]["location"] == f"vllm/spec/eagle.py:{line(REGISTRY_CLASSES, 'marker: eagle3')}"
    assert fact["branches"][2]["when"] == {"path_contains": "eagle3"}  # inherited matches followed
    assert fact["otherwise"]["sets"] == "draft_model"
    assert fact["otherwise"]["location"] == f"vllm/spec/table.py:{line(REGISTRY_TABLE, 'marker: otherwise')}"
    assert fact["declared"] is not None
    assert detect_method(fact, None, "/m/my-eagle3-head")["method"] == "eagle3"
    assert detect_method(fact, None, "/m/plain")["method"] == "draft_model"
    assert detect_method(fact, "eagle", "/m/my-eagle3-head")["method"] == "eagle"  # explicit wins
