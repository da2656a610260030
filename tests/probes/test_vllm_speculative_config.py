"""The `speculative_config` probe on small fake vLLM trees written by the tests."""


from compat.probes.vllm.speculative_config import speculative_config
from compat.report import build_report
from probe_trees import write_tree


def make_tree(tmp_path, files):
    return write_tree(tmp_path, "vllm", files)


TYPES = """
    from typing import Literal
    MTPModelTypes = Literal["deepseek_mtp", "mtp"]
    EagleModelTypes = Literal["eagle", "eagle3", MTPModelTypes]
"""

SPECULATIVE = """
    from typing import ClassVar, Literal, Optional
    from pydantic import Field
    from vllm.config.utils import config
    from vllm.config.spec_types import EagleModelTypes

    SpeculativeMethod = Literal["ngram", EagleModelTypes, "suffix"]

    @config
    class SpeculativeConfig:
        kind: ClassVar[str] = "spec"
        num_speculative_tokens: int = Field(default=None, gt=0)
        model: Optional[str] = None
        method: SpeculativeMethod | None = None
        target_model_config: "ModelConfig" = None
"""

FORBIDDING_CONFIG = """
    from pydantic import ConfigDict
    from pydantic.dataclasses import dataclass

    def config(cls=None, *, config=None):
        merged = ConfigDict(extra="forbid")
        def decorator(cls):
            return dataclass(cls, config=merged)
        return decorator if cls is None else decorator(cls)
"""

ARG_UTILS_SPLAT = """
    class EngineArgs:
        def create_speculative_config(self, target_model_config):
            self.speculative_config.update({"target_model_config": target_model_config})
            return SpeculativeConfig(**self.speculative_config)
"""


def test_fields_in_source_order_without_classvars(tmp_path):
    tree = make_tree(tmp_path, {
        "vllm/config/speculative.py": SPECULATIVE,
        "vllm/config/spec_types.py": TYPES,
        "vllm/config/utils.py": FORBIDDING_CONFIG,
    })
    fact = speculative_config(tree)
    assert fact["present"] is True
    assert fact["location"] == "vllm/config/speculative.py:10"
    assert fact["decorators"] == ["config"]
    assert [f["name"] for f in fact["fields"]] == ["num_speculative_tokens", "model", "method", "target_model_config"]
    first = fact["fields"][0]
    assert first == {"name": "num_speculative_tokens", "type": "int", "default": "Field(default=None, gt=0)",
                     "location": "vllm/config/speculative.py:12"}


def test_methods_flatten_nested_aliases_across_modules(tmp_path):
    tree = make_tree(tmp_path, {
        "vllm/config/speculative.py": SPECULATIVE,
        "vllm/config/spec_types.py": TYPES,
        "vllm/config/utils.py": FORBIDDING_CONFIG,
    })
    fact = speculative_config(tree)
    assert fact["methods"] == ["ngram", "eagle", "eagle3", "deepseek_mtp", "mtp", "suffix"]
    assert fact["methods_location"] == "vllm/config/speculative.py:7"


def test_forbidding_decorator_and_splat_reject_unknown_keys(tmp_path):
    tree = make_tree(tmp_path, {
        "vllm/config/speculative.py": SPECULATIVE,
        "vllm/config/spec_types.py": TYPES,
        "vllm/config/utils.py": FORBIDDING_CONFIG,
        "vllm/engine/arg_utils.py": ARG_UTILS_SPLAT,
    })
    fact = speculative_config(tree)
    assert fact["rejects_unknown_keys"] is True
    assert fact["extra_keys"] == "forbid"
    assert fact["construction"]["call"] == "SpeculativeConfig(**self.speculative_config)"
    assert fact["construction"]["location"] == "vllm/engine/arg_utils.py:5"
    assert "vllm/config/utils.py:5" in fact["rejects_unknown_keys_reason"]


def test_moved_class_with_from_dict_and_plain_pydantic_dataclass_ignores_unknown_keys(tmp_path):
    # The 0.10.0 shape: one big vllm/config.py, `from_dict` returning cls(**d), no extra="forbid".
    tree = make_tree(tmp_path, {
        "vllm/config.py": """
            from pydantic.dataclasses import dataclass

            def config(cls):
                return cls

            @config
            @dataclass
            class SpeculativeConfig:
                model: str = None

                @classmethod
                def from_dict(cls, dict_value):
                    return cls(**dict_value)
        """,
        "vllm/engine/arg_utils.py": """
            class EngineArgs:
                def create_speculative_config(self):
                    return SpeculativeConfig.from_dict(self.speculative_config)
        """,
    })
    fact = speculative_config(tree)
    assert fact["location"] == "vllm/config.py:9"
    assert fact["decorators"] == ["config", "dataclass"]
    assert fact["construction"]["from_dict"] == "cls(**dict_value)"
    assert fact["construction"]["from_dict_location"] == "vllm/config.py:14"
    assert fact["extra_keys"] == "ignore"
    assert fact["rejects_unknown_keys"] is False


def test_standard_dataclass_rejects_unknown_keys(tmp_path):
    tree = make_tree(tmp_path, {
        "vllm/config/speculative.py": """
            from dataclasses import dataclass

            @dataclass
            class SpeculativeConfig:
                model: str = None
        """,
        "vllm/engine/arg_utils.py": ARG_UTILS_SPLAT,
    })
    fact = speculative_config(tree)
    assert fact["extra_keys"] == "error"
    assert fact["rejects_unknown_keys"] is True


def test_missing_class_is_absent_not_an_error(tmp_path):
    tree = make_tree(tmp_path, {"vllm/config/__init__.py": "class ModelConfig:\n    pass\n"})
    fact = speculative_config(tree)
    assert fact["present"] is False
    assert "SpeculativeConfig" in fact["reason"]


def test_file_this_python_cannot_parse_is_reported_as_absent(tmp_path):
    tree = make_tree(tmp_path, {
        "vllm/config/speculative.py": "class SpeculativeConfig:\n    model: str = None\n    def broken(:\n",
    })
    report = build_report(tree)
    fact = report["speculative_config"]
    assert fact["present"] is False
    assert "vllm/config/speculative.py:3" in fact["error"]
    assert "speculative_config" not in report["probe_errors"]


def test_class_found_in_an_unexpected_module(tmp_path):
    tree = make_tree(tmp_path, {
        "vllm/config/__init__.py": "from vllm.spec_decode.settings import SpeculativeConfig\n",
        "vllm/spec_decode/settings.py": """
            from dataclasses import dataclass

            @dataclass
            class SpeculativeConfig:
                model: str = None
                method: str = None
        """,
    })
    fact = speculative_config(tree)
    assert fact["location"] == "vllm/spec_decode/settings.py:5"
    assert [f["name"] for f in fact["fields"]] == ["model", "method"]
    assert fact["methods"] == []  # a plain str, no Literal to flatten
