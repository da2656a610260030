"""`lmdeploy serve api_server`'s arguments (the cli_arguments probe) on a small tree written by the test, and a launch
line read against them: its model is the positional argparse takes, wherever the line puts it.

Shaped like LMDeploy 0.18.0's lmdeploy/cli/serve.py (add_parser_api_server: a positional model_path, its own
options, ArgumentHelper calls on the parser and on argument groups) and cli/utils.py (ArgumentHelper's static
methods, one with a default parameter; FlexibleArgumentParser), cut to what the probe reads. The release's own parser
is held to the same reading on pinned releases by test_lmdeploy_cli_parser.py; LMDeploy needs CUDA, nothing runs here.
"""

from __future__ import annotations

import pytest

from compat.checks import served_model
from compat.checks._launch_args import read_words
from compat.core.errors import UsageError
from compat.launch_line import read_line
from compat.probes.lmdeploy.cli_arguments import cli_arguments

import probe_trees

line = probe_trees.line

UTILS = '''
import json


class ArgumentHelper:

    @staticmethod
    def dtype(parser, default: str = 'auto'):
        return parser.add_argument('--dtype', type=str, default=default, choices=['auto', 'float16', 'bfloat16'])

    @staticmethod
    def tp(parser):
        return parser.add_argument('--tp', type=int, default=1)

    @staticmethod
    def trust_remote_code(parser):
        return parser.add_argument('--trust-remote-code', action='store_false', default=True)

    @staticmethod
    def hf_overrides(parser):
        return parser.add_argument('--hf-overrides', type=json.loads, default=None)

    @staticmethod
    def log_level(parser):
        import logging
        return parser.add_argument('--log-level', type=str, default='WARNING', choices=list(logging._nameToLevel.keys()))

    @staticmethod
    def add_spec_group(parser):
        spec_group = parser.add_argument_group('Speculative decoding arguments')
        spec_group.add_argument('--speculative-algorithm', type=str, default=None, choices=['eagle', 'eagle3'])
        spec_group.add_argument('--speculative-draft-model', type=str, default=None)
        spec_group.add_argument('--speculative-num-draft-tokens', type=int, default=1)
        return spec_group


class FlexibleArgumentParser(argparse.ArgumentParser):

    def parse_args(self, args=None, namespace=None):
        def repl(match):
            return match.group(0).replace('_', '-')
        return super().parse_args(args, namespace)
'''

SERVE = '''
from .utils import ArgumentHelper


class SubCliServe:

    @staticmethod
    def add_parser_api_server():
        parser = SubCliServe.subparsers.add_parser('api_server', help='serve')
        parser.add_argument('model_path', type=str, help='The path of a model.')
        parser.add_argument('--server-port', type=int, default=23333)
        parser.add_argument('--allow-origins', nargs='+', type=str, default=['*'])
        ArgumentHelper.log_level(parser)
        ArgumentHelper.trust_remote_code(parser)
        pt_group = parser.add_argument_group('PyTorch engine arguments')
        dtype_act = ArgumentHelper.dtype(pt_group)
        ArgumentHelper.tp(pt_group)
        ArgumentHelper.hf_overrides(pt_group)
        ArgumentHelper.add_spec_group(parser)

    @staticmethod
    def add_parser_proxy():
        parser = SubCliServe.subparsers.add_parser('proxy')
        parser.add_argument('--server-port', type=int, default=8000)
'''


@pytest.fixture
def fact(tmp_path):
    tree = probe_trees.write_tree(tmp_path, "lmdeploy", {"lmdeploy/cli/utils.py": UTILS, "lmdeploy/cli/serve.py": SERVE},
                                  strip_first_newline=True)
    return cli_arguments(tree)


def test_every_argument_in_the_order_the_parser_adds_them(fact):
    names = [a["name"] for a in fact["arguments"]]
    assert names == ["model_path", "--server-port", "--allow-origins", "--log-level", "--trust-remote-code", "--dtype", "--tp",
                     "--hf-overrides", "--speculative-algorithm", "--speculative-draft-model", "--speculative-num-draft-tokens"]
    assert fact["location"] == f"lmdeploy/cli/serve.py:{line(SERVE, 'help=')}"
    assert fact["parser"]["underscores_to_dashes"] is True and fact["parser"]["class"] == "FlexibleArgumentParser"
    args = {a["name"]: a for a in fact["arguments"]}
    assert args["model_path"]["value"] == "positional"
    assert args["--server-port"] == {"name": "--server-port", "aliases": [], "value": "int", "default": 23333,
                                     "location": f"lmdeploy/cli/serve.py:{line(SERVE, '--server-port')}"}
    # the helper's parameter, bound as the call binds it (its default), with the helper's own line
    assert args["--dtype"]["default"] == "auto" and args["--dtype"]["choices"] == ["auto", "float16", "bfloat16"]
    assert args["--dtype"]["location"] == f"lmdeploy/cli/utils.py:{line(UTILS, '--dtype')}"
    assert (args["--trust-remote-code"]["value"], args["--trust-remote-code"]["default"]) == ("flag", True)
    assert args["--hf-overrides"]["value"] == "json" and args["--allow-origins"]["value"] == "list"
    assert args["--log-level"]["choices_from"] == "list(logging._nameToLevel.keys())"  # computed: never judged
    assert "--server-port" in names and names.count("--server-port") == 1  # proxy's is another sub-command's


@pytest.mark.parametrize("words, model", [
    (["/m/target", "--backend-less"], "/m/target"),
    (["--tp", "2", "/m/target"], "/m/target"),  # --tp takes a value: the next word is its
    (["--trust-remote-code", "/m/target"], "/m/target"),  # a flag: the next word is the model
    (["--speculative-algorithm", "eagle3", "/m/target"], "/m/target"),
    (["--allow-origins", "a", "b"], None),  # a list takes every word up to the next option: no model
])
def test_the_model_is_the_positional_the_parser_takes(fact, words, model):
    typed = read_line(["lmdeploy", "serve", "api_server", *words])
    found = typed.target or (served_model(typed, fact) if typed.model_unread else None)
    assert found == model


def test_a_line_read_against_the_release(fact):
    typed = read_line("lmdeploy serve api_server /m/t --speculative_algorithm EAGLE3 --spec 3 --dtype float32 --tp two")
    read = read_words(typed, fact)
    problems = [g.problem for g in read.problems if g.problem]
    assert problems[0] == ("argument --speculative-algorithm: invalid choice: 'EAGLE3' (choose from 'eagle', 'eagle3')")
    assert problems[1].startswith("ambiguous option: --spec could match --speculative-algorithm")
    assert "argument --dtype: invalid choice: 'float32'" in problems[2] and problems[3] == "argument --tp: invalid int value: 'two'"
    assert typed.target == "/m/t" and typed.drafter is None


def test_the_first_word_is_the_model_and_model_path_is_no_option_of_it():
    typed = read_line("lmdeploy serve api_server --model-path /m/x /m/t --speculative-draft-model /m/d")
    assert typed.target is None and typed.model_unread and typed.drafter == "/m/d"  # which word: the release's parser
    assert read_line("lmdeploy serve api_server /m/t --speculative-draft-model /m/d").target == "/m/t"
    with pytest.raises(UsageError, match="api_server"):
        read_line("lmdeploy serve")  # not the api_server sub-command: no entry point doctor reads
