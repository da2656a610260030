"""doctor reads an `lmdeploy serve api_server` line as the release's own parser does (network: pinned releases).

The parser is LMDeploy's, built from the release's source in a subprocess (lmdeploy_parser.py: `CLI.parser` with
`SubCliServe.add_parser_api_server()`; what this interpreter lacks is stubbed, argparse and the argument definitions
run for real). doctor's reading is compat.checks' `read_words` on the `cli_arguments` probe fact. The lines: every
option the probe reads, typed once with a value of its kind; and the lines users write: the model first or after
options (`--backend pytorch MODEL`: which word is the model is the parser's), underscores (FlexibleArgumentParser
turns them into dashes), `=`, a prefix (`--spec` is ambiguous once the speculative group exists), a value not among
the choices, a wrong type, a missing model, a second positional, an unknown option. For each line both agree on
whether it is taken, on what is refused (argparse's words), and on the model and the speculative settings.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import pinned
from compat.checks._launch_args import read_words, served_model
from compat.launch_line import read_line
from compat.report import build_report

pytestmark = [pytest.mark.network, pytest.mark.matrix]

SCRIPT = Path(__file__).with_name("lmdeploy_parser.py")
RELEASES = ["0.10.0", "0.11.0", "0.14.0", "0.18.0"]  # before speculative decoding, its first, the config builder's, the newest
ENTRY = ["lmdeploy", "serve", "api_server"]
VALUES = {"int": "2", "float": "0.5", "json": "{}", "list": "a", "str": "x"}
SPEC = ["--speculative-algorithm", "eagle3", "--speculative-draft-model", "/models/drafter"]
USER_LINES = [
    ("the commonest line", ["/models/target", "--backend", "pytorch", *SPEC]),
    ("options, then the model", ["--backend", "pytorch", "/models/target", *SPEC]),
    ("a flag, then the model", ["--trust-remote-code", "/models/target", *SPEC]),
    ("the speculative flags, then the model", [*SPEC, "/models/target"]),
    ("underscores", ["/models/target", "--speculative_algorithm", "eagle3", "--speculative_draft_model", "/d"]),
    ("option=value", ["/models/target", "--speculative-algorithm=eagle3", "--speculative-num-draft-tokens=4"]),
    ("a unique prefix", ["/models/target", "--speculative-alg", "eagle3"]),
    ("an ambiguous prefix", ["/models/target", "--spec", "eagle3"]),
    ("a method not among the choices", ["/models/target", "--speculative-algorithm", "EAGLE3"]),
    ("a draft-token count that is not a number", ["/models/target", *SPEC, "--speculative-num-draft-tokens", "three"]),
    ("a dtype it does not take", ["/models/target", "--dtype", "float32"]),
    ("a second positional", ["/models/target", "/models/other"]),
    ("no model", SPEC),
    ("an unknown option", ["/models/target", "--no-such-option", "3"]),
    ("an unknown option before the model", ["--no-such-option", "/models/target"]),
    ("a missing value", ["/models/target", "--backend"]),
]
_reports: dict[str, dict] = {}


def report(version: str) -> dict:
    if version not in _reports:
        _reports[version] = build_report(pinned.fetch("lmdeploy", version))
    return _reports[version]


def per_argument(fact: dict) -> list[tuple[str, list[str]]]:
    out = []
    for argument in fact["arguments"]:
        kind = argument["value"]
        if kind in ("positional", "unknown") or argument.get("choices_from") or argument["name"] in ("--help", "-h"):
            continue
        value = None if kind == "flag" else str(argument["choices"][-1]) if argument.get("choices") else VALUES[kind]
        out.append((argument["name"], ["/models/target", argument["name"], *([value] if value is not None else [])]))
    return out


def release_reads(version: str, lines: list[list[str]]) -> dict:
    done = subprocess.run([sys.executable, str(SCRIPT), str(pinned.fetch("lmdeploy", version).root)],
                          input=json.dumps({"lines": lines}), capture_output=True, text=True, timeout=600, cwd="/")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def doctor_reads(words: list[str], fact: dict) -> dict:
    line = read_line([*ENTRY, *words])
    read = read_words(line, fact)
    problems = [g.problem for g in read.problems if g.problem]
    if not read.positionals and not problems and not read.unrecognized:
        problems = ["the following arguments are required: model_path"]
    target = line.target or (served_model(line, fact) if line.model_unread else None)
    spec = {k[2:].replace("-", "_"): v for k, v in line.spec.items()}
    return {"ok": not problems and not read.unrecognized, "problems": problems, "unrecognized": read.unrecognized,
            "target": target, "spec": spec}


def disagreement(real: dict, doctor: dict) -> str | None:
    if real["ok"] != doctor["ok"]:
        return f"the release {real['error'] if not real['ok'] else 'takes it'!r}; doctor {doctor}"
    if not real["ok"]:
        error = real["error"]
        if error.startswith("unrecognized arguments: "):  # argparse names them after the parser's rewriting (dashes)
            typed = [_dashed(w) for w in doctor["unrecognized"]]
            return None if typed == error.split(": ", 1)[1].split(" ") else f"{error!r}; doctor {doctor}"
        return None if any(p.startswith(error.split(" (choose")[0]) for p in doctor["problems"]) else f"{error!r}; doctor {doctor}"
    if real["target"] != doctor["target"]:
        return f"the release serves {real['target']!r}; doctor reads {doctor['target']!r}"
    differs = {k: v for k, v in doctor["spec"].items() if v is not None and str(real["spec"].get(k)) != str(v)}
    return f"the release's speculative settings {real['spec']}; doctor's {doctor['spec']}" if differs else None


def _dashed(word: str) -> str:
    """An option as FlexibleArgumentParser hands it to argparse: underscores in its name become dashes."""
    name, eq, value = word.partition("=")
    return (name.replace("_", "-") + eq + value) if word.startswith("--") else word


@pytest.mark.parametrize("version", RELEASES)
def test_doctor_reads_a_line_as_the_release_parser_does(version):
    fact = report(version)["cli_arguments"]
    assert fact["present"] and fact["arguments"][0] == {**fact["arguments"][0], "name": "model_path", "value": "positional"}
    cases = USER_LINES + per_argument(fact)
    answer = release_reads(version, [words for _, words in cases])
    assert answer["built"], answer
    found = [f"{name}: {said}" for (name, words), real in zip(cases, answer["outcomes"])
             if (said := disagreement(real, doctor_reads(words, fact)))]
    assert not found, f"lmdeploy {version}: {len(found)} lines read otherwise than its parser:\n" + "\n".join(found)
    assert len(cases) > 50  # every option of the release was typed once
