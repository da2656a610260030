"""Surface: `compat doctor --launch LINE` (and the line after `--`) with hostile launch lines, read against the real
vLLM 0.32.0 and SGLang 0.5.8 releases (from the cache, --offline) with a tiny Kimi-K2 target and SpecForge drafter:
shell quoting gone wrong (unbalanced quotes, a backslash at the end, quotes in the JSON), lines of up to 1 MB (after
`--`, in words under Linux's 128 KiB per-argument limit), control characters and ANSI escapes, unknown flags and
entry points, --speculative-config JSON that is huge, deeply nested, not JSON, an array, or has NaN / Infinity /
5,000-digit numbers, repeated and dotted flags, `--` forms (both --launch and `--`, nothing after `--`, a second
`--` inside the line). The answer: a verdict (exit 0/1) or one clear error (2), bounded, never a traceback, and
--json is strict JSON (no NaN).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Iterator

from doctor_models import kimi_k2_target, specforge_drafter
from surfaces import Case, Outcome, surface

ARG_MAX = 100_000  # one argument stays under Linux's 128 KiB per-argument limit
LINE_MAX = 1 << 20  # a line after `--`: up to 1 MB in words
RELEASES = {"vllm": "vllm==0.32.0", "sglang": "sglang==0.5.8"}


def hostile_json(rng: random.Random, drafter: str) -> str:
    good = {"method": "eagle3", "model": drafter, "num_speculative_tokens": 3}
    if rng.random() < 0.4:  # a valid object with one hostile value: deep enough to reach the release's checks
        key = rng.choice(["num_speculative_tokens", "method", "draft_tensor_parallel_size", "max_model_len", "quantization",
                          "speculative_token_tree", "no_such_key", ""])
        value = rng.choice([float("nan"), float("inf"), -1, 0, 2**70, "3", [3], {"x": [[[]]]}, None, True, "\x1b[31mx", "x" * 5000, 2.5])
        return json.dumps({**good, key: value})
    return rng.choice([
        json.dumps(good), "{", "}", "{'method': 'eagle3'}", "[" * 50_000, "[" * 5000 + "]" * 5000, '{"a": ' * 20_000,
        '{"a":' * 2000 + "1" + "}" * 2000, "[]", "null", "3", '"eagle3"', "NaN", '{"num_speculative_tokens": NaN}',
        '{"num_speculative_tokens": Infinity, "method": "eagle3", "model": "%s"}' % drafter,
        '{"num_speculative_tokens": -Infinity}', '{"num_speculative_tokens": ' + "9" * 5000 + "}",
        '{"num_speculative_tokens": 1e999}', '{"method": "eagle3", "model": "' + "m" * 90_000 + '"}',
        json.dumps({**good, **{f"k{i}": i for i in range(5000)}})[:ARG_MAX], json.dumps({**good, "method": "\x1b[31meagle3\x1b[0m"}),
        json.dumps({**good, "model": None}), json.dumps({**good, "model": ["a"]}), json.dumps({**good, "num_speculative_tokens": "3"}),
        json.dumps({**good, "num_speculative_tokens": [3]}), json.dumps({**good, "method": {"x": 1}}), '{"\\ud800": 1}',
        json.dumps({**good, "draft_tensor_parallel_size": 2**70}), json.dumps({**good, "speculative_token_tree": "[" * 3000}),
    ])


def quoted(rng: random.Random, value: str) -> str:
    """The JSON as a shell line would carry it, quoted right or wrong."""
    return rng.choice([f"'{value}'", f'"{value}"', value, f"'{value}", f"{value}'", "'" + value.replace('"', '\\"') + "'",
                       f"$'{value}'", f"'{value}'\\"])


def junk(rng: random.Random) -> str:
    return rng.choice(["--no-such-flag", "--no-such-flag=1", "-x", "--", "---", "-", "--tensor-parallel-size", "-tp 999999999999",
                       "--tensor-parallel-size x", "--dtype \x1b[2Jfloat16", "--port -1", "--max-model-len " + "9" * 5000,
                       "--host\x01", "--quantization \u202eevil", "--kv-cache-dtype fp3", "--model", "--model ''",
                       "--speculative-config", "--speculative-config.method eagle3", "--speculative-config.model",
                       "--speculative_config '{}'", "-sc '{}'", "--num-speculative-tokens 3", "--speculative-model ./x",
                       "--speculative-algorithm EAGLE3", "--speculative-num-steps -1", "--speculative-eagle-topk 0",
                       "--speculative-num-draft-tokens " + "9" * 300, "--trust-remote-code", "\\", "'", '"', "$(reboot)",
                       "`id`", "; rm -rf /", "| tee x", "\r\n", "\t", "\x07\x08", "é" * 500, "--=", "--=x"])


def entry(rng: random.Random, engine: str) -> str:
    if rng.random() < 0.1:
        return rng.choice(["", "vllm", "serve", "python -m", "python -m vllm", "python -m no.such.module", "sglang serve",
                           "/usr/bin/python3.11 -m sglang.launch_server", "env", "A=1 B=2", "VAR=x env python -m vllm.entrypoints.api_server",
                           "python3 -c 'import vllm'", "\x1b[31mvllm\x1b[0m serve", "vllm\tserve", "ВЛЛМ serve"])
    if engine == "vllm":
        return rng.choice(["vllm serve {target}", "python -m vllm.entrypoints.openai.api_server --model {target}",
                           "CUDA_VISIBLE_DEVICES=0 VLLM_USE_V1=1 vllm serve {target}", "/opt/venv/bin/vllm serve {target}",
                           "env X=1 vllm serve --model {target}"])
    return rng.choice(["python -m sglang.launch_server --model-path {target}", "python3 -m sglang.launch_server --model {target}"])


def launch_line(rng: random.Random, engine: str, target: str, drafter: str) -> str:
    words = [entry(rng, engine).format(target=target)]
    for _ in range(rng.randint(1, 5)):
        pick = rng.random()
        if pick < 0.4 and engine == "vllm":
            words += [rng.choice(["--speculative-config", "--speculative_config", "-sc", "--speculative-config="]),
                      quoted(rng, hostile_json(rng, drafter))]
        elif pick < 0.4:
            words += [f"--speculative-draft-model-path {drafter}", "--speculative-algorithm " + rng.choice(["EAGLE3", "EAGLE", "x", "NaN", ""])]
        elif pick < 0.75:
            words.append(junk(rng))
    if rng.random() < 0.1:
        words.append(rng.choice(["\\", "'", '"']))
    line = rng.choice([" ", "  ", " \\\n ", "\t"]).join(words)
    if rng.random() < 0.08:
        word = rng.choice(["x" * 65_535, "--a=" + "\x1b[31m" * 8000, "--no-such-flag " * 4000])
        line = line + (" " + word) * (LINE_MAX // len(word))  # ~1 MB, in words an exec can carry
    return line


def _strict_json(outcome: Outcome) -> str | None:
    """--json is JSON any parser reads: no NaN or Infinity (Python's json writes them by default)."""
    def refuse(constant: str) -> None:
        raise ValueError(constant)
    try:
        json.loads(outcome.stdout, parse_constant=refuse)
    except ValueError as err:
        return f"--json printed {err} (not JSON)"
    return None


@surface("doctor launch")
def doctor_launch(rng: random.Random, workdir: Path) -> Iterator[Case]:
    engine = rng.choice(["vllm", "vllm", "vllm", "sglang"])
    target = str(kimi_k2_target(workdir / "Kimi-K2-Instruct"))
    drafter = str(specforge_drafter(workdir / "kimi-k2-eagle3"))
    line = launch_line(rng, engine, target, drafter)
    base = ["doctor", "--engine", RELEASES[engine], "--offline", "--json"]
    form = rng.random()
    if len(line) > ARG_MAX or form < 0.3:  # the line's words after `--` (a 1 MB line can only come this way)
        words = [w[:ARG_MAX] for w in line.replace("\\\n", " ").split()]
        argv = [*base, "--", *words] if rng.random() < 0.95 else [*base, "--"]
    elif form < 0.35:
        argv = [*base, "--launch", line, "--", *line.split()[:3]]  # both: a usage error
    else:
        argv = [*base, "--launch", line]
    shown = line if len(line) < 160 else f"{line[:140]}...({len(line)} chars)"
    yield Case(argv=argv, what=shown.encode("ascii", "backslashreplace").decode(), exits={0, 1, 2}, deadline=90.0,
               check=_strict_json)
