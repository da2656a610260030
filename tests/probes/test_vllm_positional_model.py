"""The vLLM `positional_model` probe: `vllm serve` copies its positional model to --model, the api_server module parses
it and never does (its `__main__` in place, 0.10 - 0.31; through an imported `main`, 0.32 on); the default model is
what starts instead. The real releases are read by tests/probes/test_vllm_report.py's network tests (one probe run)."""

import pytest

from compat.probes.vllm.positional_model import positional_model
from probe_trees import line, write_tree

SERVE = '''
class ServeSubcommand:
    name = "serve"

    @staticmethod
    def cmd(args):
        if hasattr(args, "model_tag") and args.model_tag is not None:
            args.model = args.model_tag  # marker: copy
'''
MODULE_0100 = '''
from vllm.entrypoints.openai.cli_args import make_arg_parser

if __name__ == "__main__":  # marker: main
    parser = make_arg_parser(FlexibleArgumentParser())
    args = parser.parse_args()
    uvloop.run(run_server(args))
'''
MODULE_0320 = '''
if __name__ == "__main__":  # marker: main
    from vllm.entrypoints.launchers.api_server.entry import main

    main()
'''
ENTRY_COPIES = '''
def main():
    args = make_parser().parse_args()
    args.model = args.model_tag  # marker: entry
    run(args)
'''
CONFIG = '''
class ModelConfig:
    model: str = "Qwen/Qwen3-0.6B"  # marker: default
'''


def _tree(tmp_path, module, entry=None):
    files = {"vllm/entrypoints/cli/serve.py": SERVE, "vllm/entrypoints/openai/api_server.py": module,
             "vllm/config/model.py": CONFIG}
    if entry is not None:
        files["vllm/entrypoints/launchers/api_server/entry.py"] = entry
    return write_tree(tmp_path, "vllm", files, strip_first_newline=True)


@pytest.mark.parametrize("module", [MODULE_0100, MODULE_0320])
def test_the_module_never_serves_the_positional_vllm_serve_does(tmp_path, module):
    fact = positional_model(_tree(tmp_path, module))
    assert fact["serve_copies"] == f"vllm/entrypoints/cli/serve.py:{line(SERVE, 'copy')}"
    assert fact["module_copies"] is None
    assert fact["module_location"] == f"vllm/entrypoints/openai/api_server.py:{line(module, 'main')}"
    assert fact["default_model"] == "Qwen/Qwen3-0.6B"
    assert fact["default_location"] == f"vllm/config/model.py:{line(CONFIG, 'default')}"


def test_a_main_the_module_imports_that_copies_it_is_seen(tmp_path):
    fact = positional_model(_tree(tmp_path, MODULE_0320, ENTRY_COPIES))
    assert fact["module_copies"] == f"vllm/entrypoints/launchers/api_server/entry.py:{line(ENTRY_COPIES, 'entry')}"
