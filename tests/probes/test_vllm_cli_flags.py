"""The `cli_flags` probe: explicit and generated add_argument calls of EngineArgs.add_cli_args."""


from compat.probes.vllm.cli_flags import cli_flags
from probe_trees import write_tree

ARGS = "vllm/engine/arg_utils.py"


def make_tree(tmp_path, files):
    return write_tree(tmp_path, "vllm", files)


def test_explicit_json_flag_in_its_own_group(tmp_path):
    tree = make_tree(tmp_path, {ARGS: """
        import json

        class EngineArgs:
            @staticmethod
            def add_cli_args(parser):
                speculative_group = parser.add_argument_group(
                    title="SpeculativeConfig",
                    description="...",
                )
                speculative_group.add_argument(
                    "--speculative-config",
                    type=json.loads,
                    default=None,
                    help="Should be a JSON string.")
                parser.add_argument("--seed", type=int)
                return parser
    """})
    assert cli_flags(tree) == [{
        "name": "--speculative-config",
        "aliases": [],
        "parse": "json.loads",
        "choices": None,
        "group": "SpeculativeConfig",
        "location": f"{ARGS}:11",
    }]


GENERATED = """
    import json

    class EngineArgs:
        @staticmethod
        def add_cli_args(parser):
            lora_kwargs = get_kwargs(LoRAConfig)
            lora_group = parser.add_argument_group(title="LoRAConfig")
            lora_group.add_argument("--specialize-active-lora", **lora_kwargs["specialize_active_lora"])
            vllm_kwargs = get_kwargs(VllmConfig)
            vllm_group = parser.add_argument_group(title="VllmConfig")
            vllm_kwargs["speculative_config"]["type"] = optional_type(json.loads)
            vllm_group.add_argument("--speculative-config", "-sc", **vllm_kwargs["speculative_config"])
            speculative_kwargs = get_kwargs(SpeculativeConfig)
            vllm_group.add_argument("--spec-method", **speculative_kwargs["method"])
            vllm_group.add_argument("--spec-tokens", **speculative_kwargs["num_speculative_tokens"])
            return parser

    class AsyncEngineArgs(EngineArgs):
        @staticmethod
        def add_cli_args(parser):
            parser.add_argument("--spec-ignored-here")
"""


def test_generated_flags_read_the_override_and_the_field_annotations(tmp_path):
    tree = make_tree(tmp_path, {
        ARGS: GENERATED,
        "vllm/config/vllm.py": """
            class VllmConfig:
                \"\"\"Everything.\"\"\"

                model_config: ModelConfig = None
                speculative_config: SpeculativeConfig | None = None
                \"\"\"Speculative decoding configuration.\"\"\"
        """,
        "vllm/config/speculative.py": """
            from typing import Literal

            SpeculativeMethod = Literal["ngram", "eagle3"]

            class SpeculativeConfig:
                num_speculative_tokens: int = None
                method: SpeculativeMethod | None = None
        """,
    })
    flags = {f["name"]: f for f in cli_flags(tree)}
    assert list(flags) == ["--speculative-config", "--spec-method", "--spec-tokens"]  # not --specialize-active-lora
    sc = flags["--speculative-config"]
    assert sc["aliases"] == ["-sc"]
    assert sc["parse"] == "optional_type(json.loads)"
    assert sc["parse_location"] == f"{ARGS}:12"
    assert sc["group"] == "VllmConfig"
    assert sc["field"] == "VllmConfig.speculative_config"
    assert sc["annotation"] == "SpeculativeConfig | None"
    assert sc["annotation_location"] == "vllm/config/vllm.py:6"
    method = flags["--spec-method"]
    assert method["choices"] == ["ngram", "eagle3", "None"]
    assert method["parse"] == "optional_type(str)"
    assert method["annotation_location"] == "vllm/config/speculative.py:8"
    assert flags["--spec-tokens"]["parse"] == "int"


def test_no_engine_args_means_no_flags(tmp_path):
    assert cli_flags(make_tree(tmp_path, {})) == []
