"""The SGLang `methods` probe on trees in each shape SGLang has declared its algorithms in (names written as the
real releases write them; each shape's release named): the NEXTN alias in every form, workers, plugins, the
DSpark block key. The real releases are read in tests/matrix/test_methods_matrix.py."""

from compat.probes.sglang.methods import speculative_methods
from probe_trees import write_tree

INT_ENUM = {  # 0.4.5 - 0.5.3: IntEnum, argparse choices, ServerArgs rewrites NEXTN (server_args.py:325 in 0.4.5)
    "sglang/srt/speculative/spec_info.py": '''
from enum import IntEnum, auto


class SpeculativeAlgorithm(IntEnum):
    NONE = auto()
    EAGLE = auto()
    EAGLE3 = auto()

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE or self == SpeculativeAlgorithm.EAGLE3

    @staticmethod
    def from_string(name: str):
        name_map = {"EAGLE": SpeculativeAlgorithm.EAGLE, "EAGLE3": SpeculativeAlgorithm.EAGLE3, None: SpeculativeAlgorithm.NONE}
        if name is not None:
            name = name.upper()
        return name_map[name]
''',
    "sglang/srt/server_args.py": '''
import dataclasses


@dataclasses.dataclass
class ServerArgs:
    speculative_algorithm: str = None

    def __post_init__(self):
        if self.speculative_algorithm == "NEXTN":
            # NEXTN shares the same implementation of EAGLE
            self.speculative_algorithm = "EAGLE"

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--speculative-algorithm", type=str, choices=["EAGLE", "EAGLE3", "NEXTN"], help="x")
''',
    "sglang/srt/managers/scheduler.py": '''
class Scheduler:
    def __init__(self):
        if self.spec_algorithm.is_eagle():
            from sglang.srt.speculative.eagle_worker import EAGLEWorker
            self.draft_worker = EAGLEWorker()
''',
}

REGISTRY = {  # 0.5.4.post2 - 0.5.7: a registry-backed class (spec_info.py:294-299 in 0.5.4.post2)
    "sglang/srt/speculative/spec_info.py": '''
class _SpeculativeAlgorithmMeta(type):
    pass


class SpeculativeAlgorithm(metaclass=_SpeculativeAlgorithmMeta):
    @classmethod
    def register(cls, name, *, aliases=None, value=None, draft_worker_factory=None):
        pass

    @classmethod
    def from_string(cls, name):
        return cls._registry_by_name[name.upper()]


def register_speculative_algorithm(name, worker_cls, *, aliases=None, flags=None):
    pass


def _create_eagle_worker(**kwargs):
    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2
    return EAGLEWorkerV2(**kwargs)


SpeculativeAlgorithm.register("NONE")

register_speculative_algorithm(
    "EAGLE",
    aliases=("NEXTN",),
    worker_cls=_create_eagle_worker,
    flags=("EAGLE",),
)

register_speculative_algorithm("EAGLE3", worker_cls=_create_eagle_worker, flags=("EAGLE", "EAGLE3"))
''',
}

ENUM_REGISTRY = {  # 0.5.13 - 0.5.23: Enum + plugin registry, NEXTN in a resolver and in _RESERVED_ALIASES
    "sglang/srt/speculative/spec_registry.py": '''
_RESERVED_ALIASES = frozenset({"NEXTN"})
''',
    "sglang/srt/speculative/spec_info.py": '''
from enum import Enum, auto

from sglang.srt.speculative.spec_registry import _RESERVED_ALIASES


class SpeculativeAlgorithm(Enum):
    DFLASH = auto()
    UNO = auto()
    DSPARK = auto()
    EAGLE = auto()
    EAGLE3 = auto()
    FROZEN_KV_MTP = auto()
    STANDALONE = auto()
    NGRAM = auto()
    NONE = auto()

    @classmethod
    def from_string(cls, name):
        upper = name.upper()
        try:
            return cls[upper]
        except KeyError:
            pass
        if upper in _RESERVED_ALIASES:
            return cls.EAGLE
        raise ValueError(name)

    @classmethod
    def register(cls, name, *, supports_overlap=False):
        pass

    def is_dspark(self):
        return self == SpeculativeAlgorithm.DSPARK

    def create_worker(self, server_args):
        if self.is_dspark():
            from sglang.srt.speculative.dspark_components.dspark_worker_v2 import DSparkWorkerV2
            return DSparkWorkerV2
''',
    "sglang/srt/arg_groups/speculative_hook.py": '''
def _resolve_speculative_algorithm_alias(speculative_algorithm, speculative_draft_model_path):
    is_gemma4_draft = any(arch in ("Gemma4AssistantForCausalLM", "Gemma4UnifiedAssistantForCausalLM") for arch in archs)
    if speculative_algorithm == "NEXTN" or speculative_algorithm == "EAGLE":
        if is_gemma4_draft:
            return "FROZEN_KV_MTP"
        return "EAGLE"
    return speculative_algorithm
''',
    "sglang/srt/speculative/dspark_components/dspark_config.py": '''
def get_dspark_sample_from_anchor(draft_hf_config):
    return bool(_cfg_get(draft_hf_config, "sample_from_anchor", True))
''',
}


def test_int_enum_with_choices_and_the_server_args_rewrite(tmp_path):
    fact = speculative_methods(write_tree(tmp_path, "sglang", INT_ENUM))
    assert fact["declared_by"] == "IntEnum" and [n["name"] for n in fact["names"]] == ["EAGLE", "EAGLE3"]
    assert fact["accepted"] == ["EAGLE", "EAGLE3", "NEXTN"] and fact["accepted_from"] == "argparse choices"
    (alias,) = fact["aliases"]
    assert alias["name"] == "NEXTN" and alias["runs_as"] == "EAGLE" and alias["location"].startswith("sglang/srt/server_args.py:")
    assert fact["case"] == "folded" and fact["plugins"] is None
    assert fact["workers"]["EAGLE"]["class"] == fact["workers"]["EAGLE3"]["class"] == "EAGLEWorker"


def test_registry_class_with_a_registered_alias(tmp_path):
    fact = speculative_methods(write_tree(tmp_path, "sglang", REGISTRY))
    assert fact["declared_by"] == "registry class" and [n["name"] for n in fact["names"]] == ["EAGLE", "EAGLE3"]
    assert fact["accepted"] == ["EAGLE", "EAGLE3", "NEXTN"]  # no choices: members and aliases
    assert fact["aliases"][0]["forms"][0]["how"] == "a registered alias"
    assert fact["workers"]["EAGLE"]["class"] == "EAGLEWorkerV2"
    assert fact["plugins"]["register"] == "SpeculativeAlgorithm.register"


def test_enum_plugin_registry_both_alias_forms_and_the_promotion(tmp_path):
    fact = speculative_methods(write_tree(tmp_path, "sglang", ENUM_REGISTRY))
    names = [n["name"] for n in fact["names"]]
    assert names == ["DFLASH", "UNO", "DSPARK", "EAGLE", "EAGLE3", "FROZEN_KV_MTP", "STANDALONE", "NGRAM"]
    assert fact["accepted"] == names + ["NEXTN"]
    (alias,) = fact["aliases"]
    assert {f["how"] for f in alias["forms"]} == {"rewritten to it before the worker is made",
                                                  "a reserved alias from_string maps to it"}
    (promotion,) = fact["promotions"]
    assert promotion["from"] == ["NEXTN", "EAGLE"] and promotion["to"] == "FROZEN_KV_MTP"
    assert promotion["decided_by"] == ["Gemma4AssistantForCausalLM", "Gemma4UnifiedAssistantForCausalLM"]
    assert fact["plugins"]["reserved"] == ["NEXTN"]
    assert fact["workers"]["DSPARK"]["class"] == "DSparkWorkerV2"
    assert fact["block"]["DSPARK"][0]["key"] == "sample_from_anchor" and fact["block"]["DSPARK"][0]["default"] is True


def test_a_release_without_the_dspark_key_reads_no_block_key(tmp_path):
    files = dict(ENUM_REGISTRY)
    del files["sglang/srt/speculative/dspark_components/dspark_config.py"]
    fact = speculative_methods(write_tree(tmp_path, "sglang", files))
    assert fact["block"] == {"DSPARK": []}


def test_no_algorithm_class(tmp_path):
    fact = speculative_methods(write_tree(tmp_path, "sglang", {"sglang/srt/server_args.py": "x = 1\n"}))
    assert fact == {"present": False, "reason": "no class SpeculativeAlgorithm under sglang/srt/speculative"}
