"""LMDeploy's CLI flags, methods, SpeculativeConfig, refusals and backend, on small trees written by the tests.

The trees are shaped like LMDeploy 0.18.0's files (lmdeploy/cli/utils.py, cli/serve.py, messages.py,
pytorch/spec_decode/proposers/*.py, serve/core/async_engine.py), cut to what each probe reads; the probes must find
each fact by what the code does, wherever it sits (the flags are moved to another file in one test).
"""

from __future__ import annotations

from compat.probes.lmdeploy.cli_flags import cli_flags
from compat.probes.lmdeploy.methods import speculative_methods
from compat.probes.lmdeploy.speculative_backend import speculative_backend
from compat.probes.lmdeploy.speculative_config import speculative_config
from compat.probes.lmdeploy.speculative_validation import speculative_validation

import probe_trees

line = probe_trees.line

UTILS = '''
def get_speculative_config(args):
    from lmdeploy.messages import SpeculativeConfig
    speculative_config = None
    if args.speculative_algorithm is not None:
        speculative_config = SpeculativeConfig(method=args.speculative_algorithm)
    elif args.speculative_dflash_block_size is not None:
        raise ValueError('--speculative-dflash-block-size requires --speculative-algorithm dflash.')
    return speculative_config


class ArgumentHelper:

    @staticmethod
    def backend(parser):
        return parser.add_argument('--backend', type=str, default='turbomind', choices=['pytorch', 'turbomind'])

    @staticmethod
    def add_spec_group(parser):
        spec_group = parser.add_argument_group('Speculative decoding arguments')
        spec_group.add_argument('--speculative-algorithm',
                                type=str,
                                default=None,
                                choices=['eagle', 'eagle3', 'dflash'])
        spec_group.add_argument('--speculative-draft-model', type=str, default=None)
        spec_group.add_argument('--speculative-num-draft-tokens', type=int, default=1)
        return spec_group
'''

SERVE = '''
from .utils import ArgumentHelper


class SubCliServe:

    @staticmethod
    def add_parser_api_server():
        parser = SubCliServe.subparsers.add_parser('api_server')
        ArgumentHelper.add_spec_group(parser)

    @staticmethod
    def api_server(args):
        from lmdeploy.archs import autoget_backend
        backend = args.backend
        if backend != 'pytorch':
            backend = autoget_backend(args.model_path)
'''

MESSAGES = '''
from dataclasses import dataclass


@dataclass
class SpeculativeConfig:
    method: str
    model: str = ''
    num_speculative_tokens: int = 1
    dflash_block_size: int | None = None

    def __post_init__(self):
        if self.dflash_block_size is not None:
            if self.method != 'dflash':
                raise ValueError('dflash_block_size is supported only when method="dflash".')
            self.num_speculative_tokens = self.dflash_block_size - 1
'''

BASE = '''
SPEC_PROPOSERS = Registry('spec_proposers')


class BaseSpecProposer:
    pass


def build_specdecode_proposer(specdecode_config, device='cuda'):
    method = specdecode_config.method
    if method in SPEC_PROPOSERS.module_dict:
        return SPEC_PROPOSERS.module_dict[method](specdecode_config)
    raise ValueError(f'{method} not found in {SPEC_PROPOSERS.module_dict.keys()}')
'''

EAGLE3 = '''
from .base import SPEC_PROPOSERS
from .eagle import Eagle


@SPEC_PROPOSERS.register_module(name='eagle3')
class Eagle3(Eagle):
    pass
'''

EAGLE = '''
from .base import SPEC_PROPOSERS, BaseSpecProposer


@SPEC_PROPOSERS.register_module(name='eagle')
class Eagle(BaseSpecProposer):
    pass


@SPEC_PROPOSERS.register_module(name='deepseek_mtp')
class DeepseekMTP(BaseSpecProposer):
    pass
'''

ENGINE = '''
class AsyncEngine:

    def __init__(self, model_path, backend, speculative_config=None):
        if speculative_config is not None and backend == 'turbomind':
            logger.warning('speculative decoding is not supported by turbomind ')
'''

PROPOSERS = "lmdeploy/pytorch/spec_decode/proposers"


def release(tmp_path, utils_at: str = "lmdeploy/cli/utils.py"):
    return probe_trees.write_tree(tmp_path, "lmdeploy", {
        utils_at: UTILS, "lmdeploy/cli/serve.py": SERVE, "lmdeploy/messages.py": MESSAGES,
        f"{PROPOSERS}/base.py": BASE, f"{PROPOSERS}/eagle3.py": EAGLE3, f"{PROPOSERS}/eagle.py": EAGLE,
        "lmdeploy/serve/core/async_engine.py": ENGINE, "lmdeploy/version.py": "__version__ = '0.18.0'\n",
    }, strip_first_newline=True)


def test_flags_with_their_types_defaults_choices_and_the_commands_that_take_them(tmp_path):
    flags = {f["name"]: f for f in cli_flags(release(tmp_path))}
    assert list(flags) == ["--speculative-algorithm", "--speculative-draft-model", "--speculative-num-draft-tokens"]
    algorithm = flags["--speculative-algorithm"]
    assert algorithm["choices"] == ["eagle", "eagle3", "dflash"] and algorithm["default"] is None
    where = line(UTILS, "add_argument('--speculative-algorithm'")
    assert algorithm["location"] == f"lmdeploy/cli/utils.py:{where}"
    assert flags["--speculative-num-draft-tokens"]["type"] == "int" and flags["--speculative-num-draft-tokens"]["default"] == 1
    assert algorithm["commands"] == [{"command": "api_server",
                                      "location": f"lmdeploy/cli/serve.py:{line(SERVE, 'ArgumentHelper.add_spec_group')}"}]


def test_flags_moved_to_another_file_are_still_read(tmp_path):
    tree = release(tmp_path, utils_at="lmdeploy/cli/arguments/speculative.py")
    assert [f["location"].rsplit(":", 1)[0] for f in cli_flags(tree)] == ["lmdeploy/cli/arguments/speculative.py"] * 3


def test_methods_are_the_choices_and_each_registered_proposer(tmp_path):
    fact = speculative_methods(release(tmp_path))
    assert fact["accepted"] == ["eagle", "eagle3", "dflash"] and fact["accepted_from"] == "argparse choices"
    assert [n["name"] for n in fact["names"]] == ["eagle", "deepseek_mtp", "eagle3"]
    assert fact["workers"]["eagle3"] == {"class": "Eagle3", "module": "lmdeploy.pytorch.spec_decode.proposers.eagle3",
                                         "location": f"{PROPOSERS}/eagle3.py:{line(EAGLE3, 'class Eagle3')}"}
    # dflash is on the CLI with no proposer (the engine would refuse it); deepseek_mtp only through the Python API
    assert fact["without_proposer"] == ["dflash"] and fact["python_api_only"] == ["deepseek_mtp"]


def test_speculative_config_fields_checks_and_the_api_that_takes_it(tmp_path):
    tree = release(tmp_path)
    (tmp_path / "lmdeploy/api.py").write_text("def pipeline(model_path, backend_config=None, speculative_config=None):\n"
                                              "    pass\n\n\ndef client(api_server_url):\n    pass\n")
    fact = speculative_config(tree)
    assert [(f["name"], f["required"]) for f in fact["fields"]] == [
        ("method", True), ("model", False), ("num_speculative_tokens", False), ("dflash_block_size", False)]
    check = fact["checks"][0]
    assert (check["raises"], check["message"]) == ("ValueError", 'dflash_block_size is supported only when method="dflash".')
    assert check["when"] == "self.dflash_block_size is not None and self.method != 'dflash'"
    assert check["location"] == f"lmdeploy/messages.py:{line(MESSAGES, 'raise ValueError')}"
    assert fact["taken_by"] == [{"function": "lmdeploy.pipeline", "location": "lmdeploy/api.py:1"}]


def test_refusals_along_the_speculative_path(tmp_path):
    sites = speculative_validation(release(tmp_path))["sites"]
    by_stage = {s["stage"]: s for s in sites}
    assert by_stage["cli"]["message"] == "--speculative-dflash-block-size requires --speculative-algorithm dflash."
    assert by_stage["cli"]["when"] == ("not (args.speculative_algorithm is not None) and "
                                       "args.speculative_dflash_block_size is not None")
    assert by_stage["engine"]["message"] == "{method} not found in {SPEC_PROPOSERS.module_dict.keys()}"
    assert by_stage["engine"]["location"] == f"{PROPOSERS}/base.py:{line(BASE, 'raise ValueError')}"


def test_turbomind_drops_the_drafter_with_a_warning(tmp_path):
    fact = speculative_backend(release(tmp_path))
    assert fact["flag"]["default"] == "turbomind" and fact["flag"]["choices"] == ["pytorch", "turbomind"]
    assert fact["auto"] == {"when": "backend != 'pytorch'", "location": f"lmdeploy/cli/serve.py:{line(SERVE, 'if backend')}"}
    drops = fact["drops"]
    assert drops["raises"] is False and drops["how"] == "logger.warning"
    assert drops["location"] == f"lmdeploy/serve/core/async_engine.py:{line(ENGINE, 'if speculative_config')}"


def test_a_release_before_speculative_decoding_has_none_of_it(tmp_path):
    tree = probe_trees.write_tree(tmp_path, "lmdeploy", {"lmdeploy/cli/utils.py": UTILS.split("class ArgumentHelper")[0],
                                                         "lmdeploy/version.py": "__version__ = '0.10.0'\n"})
    assert cli_flags(tree) == [] and speculative_methods(tree)["present"] is False
    assert speculative_config(tree)["present"] is False and speculative_backend(tree)["present"] is False
